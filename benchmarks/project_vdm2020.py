"""Project the wall time of the whole vdm2020 study at the default settings from single-core unit costs.

    python benchmarks/project_vdm2020.py UNIT_COSTS.jsonl [--workers 2] [--configfile config.yaml]

UNIT_COSTS.jsonl is the output of benchmarks/vdm2020_unit_costs.py (plus, optionally, lines for N = 10⁶ from
benchmarks/fig4_million.py written in the same format). The default grid is enumerated with the harness's own
``points``/``make_method``/``depends_on`` rules: a cell shared by two figures (same setting, ε, δ, B
dependence and repetition) is counted once; tuning cells are counted per (setting, ε, δ) × grid × CV
repetitions; a trained artefact shared by many cells (the non-private fit behind model/prediction
sensitivity, an ensemble of subsample-and-aggregate, a DP-SGD block of 10 runs) is counted once.
Costs between measured sizes are interpolated log-log (N, T) or linearly (D, C); every assumption is printed.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from dpbench.studies import vdm2020

N_DEFAULT = 54_000  # 60,000 minus the 10% validation split (tuning) is 54,000; the test split trains on 60,000


def loglog(x, xs, ys):
    return float(np.exp(np.interp(np.log(x), np.log(xs), np.log(ys))))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("unit_costs")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--configfile", default=str(DEFAULT_CONFIG_PATH))
    a = ap.parse_args(argv)
    u = {}
    for line in open(a.unit_costs):
        if line.strip().startswith("{"):
            d = json.loads(line)
            # CPU-s per unit of work: a cell, except for DP-SGD whose unit is the whole block of runs
            u[d["kind"]] = d["cpu_s"] if d["kind"].startswith("dpsgd_block") else d["cpu_s"] / d["cells"]
    cfg = load_config(a.configfile)["studies"]["vdm2020"]
    lp_n = sorted((k, v) for k, v in ((1e4, u.get("lp_N1e4")), (6e4, u.get("lp_54k")), (1e5, u.get("lp_N1e5")),
                                      (1e6, u.get("lp_N1e6"))) if v)
    sa_n = sorted((k, v) for k, v in ((6e4, u.get("subsagg_T256_54k")), (1e5, u.get("subsagg_N1e5")),
                                      (1e6, u.get("subsagg_N1e6"))) if v)
    sa_t = [(8, u["subsagg_T8_54k"]), (256, u["subsagg_T256_54k"]), (2048, u["subsagg_T2048_54k"])]

    def lp_cost(setting):
        p = dict(setting[0])
        c = loglog(p.get("n_train", 6e4), *zip(*lp_n))
        if "pca_dim" in p:
            c *= np.interp(p["pca_dim"], [50, 785], [u["lp_D50"] / u["lp_54k"], 1.0])
        if "n_classes" in p:
            c *= np.interp(p["n_classes"], [5, 10], [u["lp_C5"] / u["lp_54k"], 1.0]) if p["n_classes"] >= 5 else \
                u["lp_C5"] / u["lp_54k"] * p["n_classes"] / 5
        return c

    def sa_cost(setting, t):
        p = dict(setting[0])
        c = loglog(p.get("n_train", 6e4), *zip(*sa_n)) * loglog(t, *zip(*sa_t)) / u["subsagg_T256_54k"]
        if "pca_dim" in p:
            c *= max(0.1, p["pca_dim"] / 785)
        if "n_classes" in p:
            c *= p["n_classes"] / 10
        return c

    fits = {}      # (setting, lambda-slot, split) -> cost   (shared non-private fits)
    units = {}     # unique unit of work -> (figure, method, cost)
    cv = cfg["cross_validation"]
    for fig in vdm2020.figure_names(cfg):
        for name in vdm2020.series(cfg, fig):
            for p in vdm2020.points(cfg, fig):
                m = vdm2020.make_method(cfg, name, **dict(p.method))
                if m.supports(p.epsilon, p.delta, p.budget) is not None:
                    continue
                fixed = m.tuned in dict(p.method)
                grid = [] if (m.tuned is None or fixed or not cv.get("enabled", True)) else \
                    vdm2020.tuning_grid(cfg, m)
                dep = m.depends_on
                key = lambda r, split, v: (name, p.setting, split, v, p.epsilon if "epsilon" in dep else None,  # noqa
                                           p.delta if "delta" in dep else None, p.budget if "budget" in dep else None, r)
                todo = [(key(r, "val", v), r) for v in grid for r in range(cv["repetitions"])]
                todo += [(key(r, "test", "chosen" if not fixed else dict(p.method)[m.tuned]), r)
                         for r in range(cfg["repetitions"])]
                for k, r in todo:
                    if name == "loss_perturbation":
                        units[k] = (fig, name, lp_cost(p.setting))
                    elif name in ("model_sensitivity", "prediction_sensitivity", "non_private"):
                        fits[(p.setting, k[2], k[3])] = (fig, "L2 fits (sensitivity methods)", lp_cost(p.setting) *
                                                         u["np_fit_54k"] / u["lp_54k"])
                    elif name == "subsample_aggregate":
                        t = dict(p.method).get("n_models", cfg["subsagg_models"])
                        units[(name, p.setting, k[2], t, r)] = (fig, name, sa_cost(p.setting, t))
                    elif name == "dpsgd":
                        units[(name, p.setting, k[2], k[3], p.epsilon, p.delta, r // 10)] = (fig, name,
                                                                                            u["dpsgd_block10_54k"])
                    elif name == "dpsgd_mlp":
                        units[k] = (fig, name, u["mlp_dpsgd_run"])
                    elif name == "subsample_aggregate_mlp":
                        units[(name, k[2], r)] = (fig, name, u["mlp_subsagg_rep"])
                    elif name == "non_private_mlp":
                        units[(name,)] = (fig, name, u["mlp_non_private"])
    total = defaultdict(float)
    for fig, name, c in list(units.values()) + list(fits.values()):
        total[(fig, name)] += c
    cpu = sum(total.values())
    print(f"{'figure':7s} {'series':34s} {'CPU-h':>8s}")
    for (fig, name), c in sorted(total.items(), key=lambda t: -t[1]):
        print(f"{fig:7s} {name:34s} {c / 3600:8.2f}")
    print(f"total {cpu / 3600:.1f} CPU-hours -> {cpu / 3600 / a.workers:.1f} h wall on {a.workers} cores "
          "(perfect packing; loss perturbation cost interpolated log-log in N between measured sizes)")


if __name__ == "__main__":
    main()
