"""Fuzz the library's public entry points with valid and invalid input; count how each call ends.

    .venv/bin/python benchmarks/library_fuzz.py [--calls 2700] [--seed 0] [--csv out.csv]

Targets: ``Method.train`` of every membership training method (the methods' public entry point, as the
membership and audit studies call it), :func:`dpbench.learn.mlp.fit_mlp`, :func:`dpbench.methods.mlp.dpsgd_mlp`,
:func:`dpbench.privacy.accounting.dpsgd_epsilon` and :func:`dpbench.privacy.accounting.dpsgd_replace_one_epsilon`.
Each call draws a target and one fault (or none) from a seeded generator: a row of norm 6.4 (outside the unit
ball that output/loss/objective perturbation, SCS13, BST14, bolt-on and the functional mechanism assume; DP-SGD
clips, so it is not a fault there), NaN or ∞ in X, an empty X, a label outside 0..C−1, δ ∉ [0, 1), ε ≤ 0 or NaN;
for the accountants σ ≤ 0 or NaN, q ∉ (0, 1], a non-positive or fractional step count, δ ∉ (0, 1), and two
valid corner cases (a denormal σ, for which ε = ∞ is the correct answer; a small-σ replace-one call).

Outcomes of a call with a fault: **named** (a ValueError/TypeError raised by dpbench's own code: the innermost
frame of the traceback is in the dpbench package), **silent** (it returned: the invalid input was used), **raw**
(any other exception: raised inside numpy/scipy/dp_accounting, ZeroDivisionError, MemoryError, or a call past
the 20 s limit). A call without a fault should return: otherwise it counts as a **false refusal**.

To count an older revision: ``git worktree add /tmp/old REV`` and run this file with ``PYTHONPATH=/tmp/old``
(the script prints which dpbench it imported).
"""

from __future__ import annotations

import argparse
import collections
import copy
import math
import os
import signal
import sys
import time
import traceback

import numpy as np

UNIT_BALL_FREE = {"dpsgd", "non_private"}   # DP-SGD clips per-example gradients; the baseline is not private
#: the training methods fuzzed, fixed so that two revisions draw the same calls (a method a revision lacks is
#: drawn all the same and its calls counted as "absent")
FUZZ_METHODS = ("non_private", "output_perturbation", "loss_perturbation", "dpsgd", "bolt_on", "scs13", "bst14",
                "output_perturbation_erm", "objective_perturbation", "functional_mechanism",
                "output_perturbation_erm_tight")


class CallTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CallTimeout("past the per-call limit")


def _data(g, n=24, d=4):
    X = g.standard_normal((n, d - 1))
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    X = np.c_[X, np.full(n, 0.5)]
    y = (X[:, 0] > 0).astype(np.int64)
    y[:2] = [0, 1]
    return X, y


def _apply_data_fault(fault, X, y, g):
    X, y = X.copy(), y.copy()
    i = int(g.integers(len(X)))
    if fault == "norm":
        X[i] *= 6.4 / np.linalg.norm(X[i])
    elif fault == "nan":
        X[i, int(g.integers(X.shape[1]))] = np.nan
    elif fault == "inf":
        X[i, int(g.integers(X.shape[1]))] = np.inf * (1 if g.random() < 0.5 else -1)
    elif fault == "empty":
        X, y = X[:0], y[:0]
    elif fault == "label":
        y[i] = int(g.choice([2, -1, 7]))
    return X, y


def _classify(exc):
    tb = traceback.extract_tb(exc.__traceback__)
    inner = tb[-1].filename if tb else ""
    in_dpbench = f"{os.sep}dpbench{os.sep}" in inner and f"{os.sep}benchmarks{os.sep}" not in inner
    return "named" if isinstance(exc, (ValueError, TypeError)) and in_dpbench else "raw"


def make_calls(seed):
    """Yield (target, fault, thunk) forever from a seeded generator."""
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.learn.mlp import fit_mlp
    from dpbench.methods.mlp import dpsgd_mlp
    from dpbench.privacy.accounting import dpsgd_epsilon, dpsgd_replace_one_epsilon
    from dpbench.studies import load_config
    from dpbench.studies.membership import training as mc

    cfg = copy.deepcopy(load_config(DEFAULT_CONFIG_PATH, "config/smoke.yaml")["studies"]["membership"])
    cfg["training"]["dpsgd"]["epochs"] = 1
    methods = list(FUZZ_METHODS)
    g = np.random.default_rng(seed)
    data_faults = ["norm", "nan", "inf", "empty", "label"]
    targets = [f"train:{m}" for m in methods] + ["fit_mlp", "dpsgd_mlp", "dpsgd_epsilon", "dpsgd_replace_one"]
    while True:
        target = targets[int(g.integers(len(targets)))]
        X, y = _data(g)
        if target.startswith("train:"):
            name = target[6:]
            faults = ["none"] * 3 + data_faults + ["delta", "eps"]
            if name in UNIT_BALL_FREE:
                faults.remove("norm")
            if name == "non_private":
                faults.remove("eps")
            fault = faults[int(g.integers(len(faults)))]
            Xf, yf = _apply_data_fault(fault, X, y, g)
            eps, delta = 1.0, None
            if fault == "delta":
                delta = float(g.choice([1.0, 1.5, -0.1, np.nan]))
            elif fault == "eps":
                eps = float(g.choice([0.0, -1.0, np.nan]))
            r = np.random.default_rng(int(g.integers(2**31)))
            if name not in mc.METHODS:
                yield target, fault, None
                continue
            eps_delta = mc.method_delta(cfg, name) if fault != "delta" else delta
            m = mc.method_object(cfg, name, 2)
            yield target, fault, (lambda m=m, Xf=Xf, yf=yf, eps=eps, delta=eps_delta, r=r:
                                  m.train(Xf, yf, 2, eps, delta, r))
        elif target in ("fit_mlp", "dpsgd_mlp"):
            faults = ["none"] * 3 + ["nan", "inf", "empty", "label"]
            fault = faults[int(g.integers(len(faults)))]
            Xf, yf = _apply_data_fault(fault, X, y, g)
            r = np.random.default_rng(int(g.integers(2**31)))
            if target == "fit_mlp":
                yield target, fault, (lambda Xf=Xf, yf=yf, r=r: fit_mlp(Xf, yf, 2, 4, epochs=1, batch_size=4,
                                                                         learning_rate=0.1, rng=r))
            else:
                yield target, fault, (lambda Xf=Xf, yf=yf, r=r: dpsgd_mlp(Xf, yf, 2, 4, 1.0, 0.1, 4, 1, 0.1, r))
        else:
            sigma, q, steps, delta = float(g.uniform(0.5, 4)), float(g.uniform(0.001, 0.1)), int(g.integers(1, 300)), 1e-5
            faults = ["none"] * 3 + ["sigma", "q", "steps", "delta", "tiny_sigma_valid"]
            if target == "dpsgd_replace_one":
                faults.append("small_sigma_valid")
            fault = faults[int(g.integers(len(faults)))]
            if fault == "sigma":
                sigma = float(g.choice([0.0, -1.0, np.nan]))
            elif fault == "q":
                q = float(g.choice([0.0, 1.5, -0.1, np.nan]))
            elif fault == "steps":
                steps = g.choice([0, -3, 2.5])
                steps = float(steps) if steps == 2.5 else int(steps)
            elif fault == "delta":
                delta = float(g.choice([0.0, 1.0, 1.5, np.nan]))
            elif fault == "tiny_sigma_valid":
                sigma = 1e-310
            elif fault == "small_sigma_valid":
                sigma, q, steps, delta = 0.054, 0.054, 439, 0.054
            f = dpsgd_epsilon if target == "dpsgd_epsilon" else dpsgd_replace_one_epsilon
            yield target, fault, (lambda f=f, a=(sigma, q, steps, delta): f(*a))


def fuzz(calls: int = 2700, seed: int = 0, limit: float = 20.0, progress: bool = False):
    """Run ``calls`` fuzzed calls; returns (counts, per-target counts, first message per (target, fault,
    outcome), one (call, target, fault, outcome) row per call)."""
    signal.signal(signal.SIGALRM, _alarm)
    counts = collections.Counter()
    per_target = collections.defaultdict(collections.Counter)
    examples, rows = {}, []
    t0 = time.time()
    gen = make_calls(seed)
    for k in range(calls):
        target, fault, thunk = next(gen)
        valid = fault == "none" or fault.endswith("_valid")
        if thunk is None:
            outcome = "absent"
        else:
            signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                out = thunk()
                signal.setitimer(signal.ITIMER_REAL, 0)
                outcome = "ok" if valid else "silent"
                if valid and isinstance(out, float) and math.isnan(out):
                    outcome = "false_refusal"
                if outcome == "silent":
                    examples.setdefault((target, fault, outcome), "returned")
            except Exception as exc:  # noqa: BLE001 - every way a call can end is what is being counted
                signal.setitimer(signal.ITIMER_REAL, 0)
                outcome = "false_refusal" if valid else _classify(exc)
                examples.setdefault((target, fault, outcome), f"{type(exc).__name__}: {str(exc)[:100]}")
        counts[outcome] += 1
        per_target[target][outcome] += 1
        rows.append((k, target, fault, outcome))
        if progress and (k + 1) % 500 == 0:
            print(f"  {k + 1}/{calls} calls, {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    return counts, per_target, examples, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2700)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=20.0, help="seconds per call before it counts as raw")
    ap.add_argument("--csv", default=None, help="write one row per call")
    a = ap.parse_args(argv)
    import dpbench

    print(f"dpbench from {os.path.dirname(dpbench.__file__)}", flush=True)
    t0 = time.time()
    counts, per_target, examples, rows = fuzz(a.calls, a.seed, a.limit, progress=True)
    invalid = sum(counts[o] for o in ("named", "silent", "raw"))
    print(f"{a.calls} calls in {time.time() - t0:.0f}s: {invalid} with invalid input -> named {counts['named']}, "
          f"silent {counts['silent']}, raw {counts['raw']}; {counts['ok'] + counts['false_refusal']} valid -> "
          f"ok {counts['ok']}, false refusals {counts['false_refusal']}"
          + (f"; {counts['absent']} calls of methods this revision lacks" if counts["absent"] else ""))
    print(f"{'target':<36} {'named':>6} {'silent':>6} {'raw':>5} {'ok':>5} {'false':>5}")
    for t in sorted(per_target):
        c = per_target[t]
        print(f"{t:<36} {c['named']:>6} {c['silent']:>6} {c['raw']:>5} {c['ok']:>5} {c['false_refusal']:>5}")
    print("first example of each (target, fault) that was silent, raw or a false refusal:")
    for (t, f, o), msg in sorted(examples.items()):
        if o != "named":
            print(f"  {o:<13} {t:<32} {f:<18} {msg}")
    if a.csv:
        import pandas as pd

        pd.DataFrame(rows, columns=["call", "target", "fault", "outcome"]).to_csv(a.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
