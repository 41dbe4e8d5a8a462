"""Catch rate of a DP-SGD audit twin against the number of runs, by simulating the audited transcript directly.

The DP-SGD audits (``dpbench.audit.sgd``) observe, per step t of T, y_t = B_t + σZ_t on D and −B_t + σZ_t on D′
(B_t ~ Bernoulli(q_a), Z_t ~ N(0, 1), in units of lr·ν): that is what the real runs give on the audited pair, so
drawing y directly and applying the same statistic (σ estimated per run) and the same bounds (split-half
Clopper–Pearson and μ-GDP at α, ε̂ the larger) gives the audit's catch rate at any number of runs in seconds
instead of minutes per seed. σ, q_a and T are the twin's own, from ``dpbench.audit.sgd._dpsgd_setup`` on the
default config.

    python benchmarks/dpsgd_twin_simulation.py dpsgd_softmax bug_sampling_rate --epsilon 4 --runs 4000 8000 --seeds 40
"""

from __future__ import annotations

import argparse

import numpy as np


def main(argv=None):
    from dpbench.audit import stats as S
    from dpbench.audit.sgd import _dpsgd_setup
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.studies import load_config

    ap = argparse.ArgumentParser()
    ap.add_argument("method", choices=["dpsgd_softmax", "dpsgd_mlp"])
    ap.add_argument("twin")
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--runs", type=int, nargs="+", default=[4000])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--alpha", type=float, default=0.05)
    a = ap.parse_args(argv)
    config = load_config(DEFAULT_CONFIG_PATH)
    v = config["studies"]["vdm2020"]
    block = v["dpsgd"] if a.method == "dpsgd_softmax" else v["mlp"]["dpsgd"]
    p = _dpsgd_setup(config, block, a.epsilon, a.twin)
    q_a, T, sigma = 1.0 / p["N"], p["T"], p["sigma"]
    print(f"{a.method} {a.twin} at claimed ε = {a.epsilon:g}: σ = {sigma:.4f} (claimed calibration "
          f"{p['cal_claim'].noise_multiplier:.4f}), q_a = {q_a:.6f}, T = {T}")
    for runs in a.runs:
        eps, caught = [], 0
        for seed in range(a.seeds):
            rng = np.random.default_rng([seed, runs])
            stats = []
            for sign in (1.0, -1.0):
                s = np.empty(runs)
                for c in range(0, runs, 500):
                    k = min(500, runs - c)
                    y = sign * (rng.random((k, T)) < q_a) + sigma * rng.standard_normal((k, T))
                    s[c : c + k] = S.subsampled_gaussian_transcript_llr(y, q_a)
                stats.append(s)
            b = S.epsilon_lower_bound_split(stats[0], stats[1], p["delta"], rng, a.alpha)["eps_lower"]
            g = S.gdp_epsilon_lower_bound(stats[0], stats[1], p["delta"], a.alpha)["eps_lower"]
            e = max(b, g)
            eps.append(e)
            caught += e > a.epsilon
        print(f"  {runs} runs per side: caught {caught} of {a.seeds} ({caught / a.seeds:.0%}); "
              f"ε̂ median {np.median(eps):.3f}, min {min(eps):.3f}, max {max(eps):.3f}", flush=True)


if __name__ == "__main__":
    main()
