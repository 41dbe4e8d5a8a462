"""Subsample-and-aggregate members in single precision: whole products against row-blocked products.

A member of a part with more than D/2 rows is fitted in θ-space with float32 evaluations
(:class:`dpbench.learn.softmax._Objective32`). Each evaluation is two products of the part (rows × D) with a
(D × C) matrix; this machine's OpenBLAS packs the operands of such a product unless M·N·K ≤ 10⁶, so the same
products cut into row blocks below that (:func:`dpbench.learn.softmax.row_block`) cost less. This script fits
the same members both ways, alternated A B A B (one BLAS thread, ``time.process_time``), on parts of the MNIST
substitute at the default settings (100 L-BFGS iterations, no L2), and reports the CPU ratio blocked / whole per
member (median [range]), iterations, and how often the two members predict the same test label::

    python benchmarks/subsagg_blocked.py --data data --rows 3906 --members 12
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.learn import softmax as S
from dpbench.learn.softmax import blas_thread_limit, fit_softmax
from dpbench.studies import load_config, vdm2020


class WholeProducts(S._Objective32):
    """The evaluation before the row blocks: two whole products (revision 7bd8aa3)."""

    def _products(self, theta):
        ZT = theta.T.astype(np.float32) @ self.X32.T
        loss_sum = S._ce_transposed(ZT, self.flat_true)
        return loss_sum, (ZT @ self.X32).T.astype(np.float64) * (1.0 / self.n)


def fit(X, y, C, whole: bool):
    keep = S._Objective32
    S._Objective32 = WholeProducts if whole else keep
    try:
        t = time.process_time()
        theta, info = fit_softmax(X, y, C, 0.0, None, None, 1e-4, 100, return_info=True, float32=True)
        return theta, info, time.process_time() - t
    finally:
        S._Objective32 = keep


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data")
    ap.add_argument("--cache", default="/tmp/subsagg_blocked_cache")
    ap.add_argument("--rows", type=int, default=3906, help="rows per part (N/T; 3,906 is Fig. 4's N = 10⁶)")
    ap.add_argument("--members", type=int, default=12)
    a = ap.parse_args(argv)
    config = load_config(DEFAULT_CONFIG_PATH, overrides={"cache_dir": a.cache, "data": {"cache_dir": a.data}})
    problem = vdm2020.problem(config, config["studies"]["vdm2020"], "test")
    rng = np.random.default_rng(0)
    ratios, agree = [], []
    with blas_thread_limit(1):
        for m in range(a.members):
            rows = rng.choice(problem.n_train, a.rows, replace=False)
            X, y = problem.X_train[rows], problem.y_train[rows]
            order = (True, False) if m % 2 == 0 else (False, True)  # A B, then B A
            got = {whole: fit(X, y, problem.n_classes, whole) for whole in order}
            (tw, iw, cw), (tb, ib, cb) = got[True], got[False]
            ratios.append(cb / cw)
            same = float(np.mean((problem.X_eval @ tw).argmax(1) == (problem.X_eval @ tb).argmax(1)))
            agree.append(same)
            print(json.dumps({"member": m, "whole_cpu_s": round(cw, 3), "blocked_cpu_s": round(cb, 3),
                              "ratio": round(cb / cw, 3), "iters": [iw.n_iter, ib.n_iter],
                              "evals": [iw.n_fev, ib.n_fev], "same_test_label": same}), flush=True)
    print(json.dumps({"rows": a.rows, "block": S.row_block(problem.dim, problem.n_classes),
                      "ratio_median": float(np.median(ratios)), "ratio_min": min(ratios), "ratio_max": max(ratios),
                      "same_test_label_min": min(agree), "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
