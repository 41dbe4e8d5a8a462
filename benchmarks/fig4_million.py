"""Peak memory and cost of the vdm2020 Fig. 4 cells at N = 10⁶ (MNIST-1M substitute).

Prepares the N = 10⁶ problem (memory-mapped float64, one copy on disk) and computes one repetition of every
method at (ε, δ, B) = (1, 0, 100) with a fixed λ, timing each; run under ``/usr/bin/time -v`` for peak RSS:

    /usr/bin/time -v python benchmarks/fig4_million.py --cache results/cache --data data
"""

from __future__ import annotations

import argparse
import resource
import time

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from dpbench.methods import Context
from dpbench.store import Store
from dpbench.studies import vdm2020


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--data", default="data")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--lam", type=float, default=1e-4)
    ap.add_argument("--methods", nargs="*", default=["non_private", "model_sensitivity", "prediction_sensitivity",
                                                      "loss_perturbation", "subsample_aggregate"])
    a = ap.parse_args(argv)
    config = load_config(DEFAULT_CONFIG_PATH, overrides={"cache_dir": a.cache, "data": {"cache_dir": a.data,
                                                                                      "mnist_source": "substitute"}})
    cfg = config["studies"]["vdm2020"]
    t0 = time.perf_counter()
    problem = vdm2020.problem(config, cfg, "test", n_train=a.n)
    print(f"problem {problem.X_train.shape} {type(problem.X_train).__name__}: {time.perf_counter() - t0:.1f}s, "
          f"peak RSS so far {rss_gb():.2f} GB", flush=True)
    ctx = Context(store=Store(a.cache), seed=config["seed"])
    for name in a.methods:
        m = vdm2020.make_method(cfg, name)
        cell = m.make_cell(problem, a.lam if m.tuned else None, 1.0, 0.0, 100, 0)
        t = time.perf_counter()
        rec = m.run_group(problem, [cell], ctx)[0]
        print(f"{name}: accuracy {rec['accuracy']:.4f}, {time.perf_counter() - t:.1f}s, peak RSS so far "
              f"{rss_gb():.2f} GB", flush=True)


if __name__ == "__main__":
    main()
