"""Lockstep multi-model L-BFGS vs one model at a time, float32 vs float64, and the vdm2020 cells before/after.

Single core (BLAS limited to one thread), CPU seconds (``time.process_time``), on the vdm2020 test problem of the
default config with the labelled MNIST substitute (N = 60,000 rows of 785 features, 10 classes). Every ratio is
measured ALTERNATELY (A B A B …, ``--rounds`` times) so that a change of load hits both sides; the median and
the range of the per-round ratios are printed with the 1-minute load average before and after.

1. one objective+gradient evaluation per model: ``R`` models one at a time (scipy path's objective) vs one
   lockstep evaluation of R models (float64, float32), R ∈ {1, 4, 16, 64};
2. a loss-perturbation cell (ε = 1, δ = 0, λ = 1e-4, warm start = the non-private fit): the one-cell scipy fit
   (before) vs the lockstep group of ``--lp-models`` cells (repetitions 0…, one L2), float64 (``lbfgs.float32:
   false``), float32 (fixed slots, one BLAS thread) and float32 preconditioned by the Kronecker-factored
   curvature at the warm start (the default; ``lbfgs.precondition``), per cell (``--lam`` sets λ);
3. a subsample-and-aggregate repetition (T = 256 members of 234 rows): the members' fits by ``fit_softmax_many``
   in θ-space (before: one scipy run per member) vs in the row space of each part (``method="row_space"``, the
   default now: the same iterates);
2b. the non-private fit from 0 at ``--lam``: plain vs whitened by the curvature at 0 (``lbfgs.precondition``);
3b. members on parts of more than D/2 rows (θ-space; ``--sa-big-T`` members of N/T rows): float64 vs float32
   evaluations (``lbfgs.subsagg_float32``, the default);
4. the projected default-grid cost of vdm2020 (``dpbench plan``'s projection) with the unit costs now in
   dpbench/costs.py (measured directly with the default solvers by ``benchmarks/fig4_scaling.py``).

    nice -n 0 python benchmarks/lockstep_lbfgs.py --data data --rounds 3 > lockstep.txt
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits



def load() -> str:
    return "%.2f" % os.getloadavg()[0]


def timed(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def alternate(rounds, fns):
    """{name: [cpu-s per round]} running the functions in turn, ``rounds`` times."""
    out = {k: [] for k in fns}
    for i in range(rounds):
        for k, fn in fns.items():
            out[k].append(timed(fn)[0])
        print(f"   round {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in out.items()) + f"; load {load()}",
              flush=True)
    return out


def ratio_line(label, base, new, per_base=1, per_new=1):
    r = [(b / per_base) / (n / per_new) for b, n in zip(base, new)]
    return (f"{label:54s} before {statistics.median(base) / per_base:8.3f} s  after "
            f"{statistics.median(new) / per_new:8.3f} s  ratio {statistics.median(r):5.2f}x "
            f"[{min(r):.2f}-{max(r):.2f}]"), statistics.median(r)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lp-models", type=int, default=10)
    ap.add_argument("--lam", type=float, default=1e-4, help="loss perturbation's λ (section 2)")
    ap.add_argument("--sa-big-T", type=int, default=16, help="members of the float32 comparison (section 3b)")
    ap.add_argument("--skip", nargs="*", default=[], help="sections to skip: eval lp np sa sa32")
    ap.add_argument("--lp-ratio", type=float, help="with --skip lp: the loss-perturbation ratio for the projection")
    ap.add_argument("--sa-ratio", type=float, help="with --skip sa: the subsample-and-aggregate ratio")
    a = ap.parse_args(argv)

    from dpbench import plan, shards
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.learn import fit_softmax, fit_softmax_many, sensitivity_grad_norm_tol
    from dpbench.learn import lbfgs_many as lm
    from dpbench.learn.lbfgs_many import softmax_curvature
    from dpbench.learn.softmax import _Objective
    from dpbench.methods.loss_perturbation import (loss_perturbation_draw, loss_perturbation_fit,
                                                   loss_perturbation_fit_many, loss_perturbation_l2,
                                                   loss_perturbation_noise)
    from dpbench.studies import load_config, vdm2020

    config = load_config(DEFAULT_CONFIG_PATH, overrides={"data": {"cache_dir": a.data, "mnist_source": "substitute"}})
    cfg = config["studies"]["vdm2020"]
    problem = vdm2020.problem(config, cfg, "test")
    X, y, C = np.asarray(problem.X_train), problem.y_train, problem.n_classes
    n, D = X.shape
    print(f"problem {n} x {D}, {C} classes ({problem.variant}); load {load()}", flush=True)
    rng = np.random.default_rng(0)
    ratios = {k: v for k, v in (("lp", a.lp_ratio), ("sa", a.sa_ratio)) if v is not None}
    with threadpool_limits(1):
        if "eval" not in a.skip:
            print("\n1. one objective+gradient evaluation, CPU-s per model", flush=True)
            for R in (1, 4, 16, 64):
                thetas = rng.normal(size=(R, D * C)) * 0.01
                one = _Objective(X, y, C, 1e-4, None)
                f64 = lm.SharedDesign(X, y, C, 1e-4, n_models=R)
                f32 = lm.SharedDesign(X, y, C, 1e-4, n_models=R, float32=True)
                idx = np.arange(R)
                t = alternate(a.rounds, {"one": lambda: [one(th) for th in thetas],
                                         "f64": lambda: f64(idx, thetas, False),
                                         "f32": lambda: f32(idx, thetas, True)})
                print(ratio_line(f"R = {R:2d}: one at a time vs lockstep float64", t["one"], t["f64"], R, R)[0])
                print(ratio_line(f"R = {R:2d}: one at a time vs lockstep float32", t["one"], t["f32"], R, R)[0])
                print(ratio_line(f"R = {R:2d}: lockstep float64 vs float32", t["f64"], t["f32"], R, R)[0],
                      f"load {load()}", flush=True)
        if "lp" not in a.skip:
            eps, lam, R = 1.0, a.lam, a.lp_models
            rho = loss_perturbation_noise(eps, 0.0, C)[2]
            l2 = loss_perturbation_l2(cfg["loss_perturbation"]["regularizer"], rho, n, lam)
            tol = sensitivity_grad_norm_tol(n)
            t0, theta0 = timed(lambda: fit_softmax(X, y, C, l2, grad_norm_tol=tol))
            print(f"\n2. loss perturbation, ε = 1, δ = 0, λ = {lam:g} (l2 = {l2:.3g}); warm start (non-private fit, "
                  f"once per l2, not in the ratio) {t0:.1f} s; load {load()}", flush=True)
            noises = np.stack([loss_perturbation_draw(np.random.default_rng(r), eps, 0.0, C, "replace_one",
                                                      theta0.shape)[0] for r in range(R)])
            res = {}

            def before():
                res["before"] = loss_perturbation_fit(X, y, C, l2, eps, 0.0, np.random.default_rng(0), theta0,
                                                      error_fraction=0.01, maxiter=2000)[0]

            tk, curv = timed(lambda: softmax_curvature(X, theta0))
            print(f"   Kronecker-factored curvature at the warm start (once per problem and l2, cached; not in the "
                  f"ratio) {tk:.1f} s", flush=True)

            def after(float32, pre=False):
                def run():
                    res[(float32, pre)] = loss_perturbation_fit_many(
                        X, y, C, noises, [l2] * R, np.stack([theta0] * R), error_fraction=0.01, maxiter=2000,
                        float32=float32, preconditioners={float(l2): curv} if pre else None)
                return run
            t = alternate(a.rounds, {"before": before, "f64": after(False), "f32": after(True),
                                     "f32pre": after(True, True)})
            line, r64 = ratio_line(f"per cell: one-cell scipy vs lockstep x{R} float64", t["before"], t["f64"], 1, R)
            print(line)
            line, r32 = ratio_line(f"per cell: one-cell scipy vs lockstep x{R} float32 (default)", t["before"],
                                   t["f32"], 1, R)
            print(line, f"load {load()}")
            print(ratio_line("lockstep float64 vs float32", t["f64"], t["f32"])[0])
            line, rpre = ratio_line(f"per cell: one-cell scipy vs lockstep x{R} float32 preconditioned (default)",
                                    t["before"], t["f32pre"], 1, R)
            print(line, f"load {load()}")
            print(ratio_line("lockstep float32 vs float32 preconditioned", t["f32"], t["f32pre"])[0])
            ratios["lp"] = rpre  # the default: fixed float32 slots (bit-reproducible), preconditioned
            th_pre = res[(True, True)][0]
            print(f"   cell 0 preconditioned: ‖θ − θ_scipy‖ = {np.linalg.norm(th_pre - res['before']):.2e}, test "
                  f"accuracy {float(np.mean(np.argmax(problem.X_eval @ th_pre, 1) == problem.y_eval)):.4f}")
            acc = lambda th: float(np.mean(np.argmax(problem.X_eval @ th, 1) == problem.y_eval))  # noqa: E731
            f64_, f32_ = res[(False, False)][0], res[(True, False)][0]
            print(f"   cell 0: ‖θ_lockstep − θ_scipy‖ = f64 {np.linalg.norm(f64_ - res['before']):.2e}, "
                  f"f32 {np.linalg.norm(f32_ - res['before']):.2e} (certified ≤ 2τ/λ = {2 * tol / l2:.2e}); "
                  f"test accuracy scipy {acc(res['before']):.4f}, f64 {acc(f64_):.4f}, f32 {acc(f32_):.4f}", flush=True)
        if "np" not in a.skip:
            tol = sensitivity_grad_norm_tol(n)
            tk, k0 = timed(lambda: softmax_curvature(X, np.zeros((D, C))))
            print(f"\n2b. non-private fit from 0 (the artefact behind model / prediction sensitivity and loss "
                  f"perturbation's warm start), λ = {a.lam:g}: scipy L-BFGS-B plain vs whitened by the curvature at "
                  f"0 (computed once per problem, cached; not in the ratio: {tk:.1f} s); load {load()}", flush=True)
            res = {}

            def np_fit(pre):
                def run():
                    res[pre] = fit_softmax(X, y, C, a.lam, grad_norm_tol=tol, precondition=k0 if pre else None,
                                           return_info=True)
                return run
            t = alternate(a.rounds, {"plain": np_fit(False), "whitened": np_fit(True)})
            print(ratio_line("non-private fit: plain vs whitened", t["plain"], t["whitened"])[0], f"load {load()}")
            print(f"   iterations {res[False][1].n_iter} -> {res[True][1].n_iter}; ‖Δθ‖ = "
                  f"{np.linalg.norm(res[False][0] - res[True][0]):.2e} (certified ≤ 2τ/λ = {2 * tol / a.lam:.2e})",
                  flush=True)
        if "sa" not in a.skip:
            T = cfg["subsagg_models"]
            per = n // T
            parts = np.random.default_rng(1).permutation(n)[: per * T].reshape(T, per)
            Xs, ys = X[parts], y[parts]
            maxiter = cfg["lbfgs"]["subsagg_maxiter"]
            res = {}

            def sep():
                res["sep"] = fit_softmax_many(Xs, ys, C, 0.0, maxiter=maxiter)

            def row():
                res["row"] = fit_softmax_many(Xs, ys, C, 0.0, maxiter=maxiter, method="row_space")
            print(f"\n3. subsample-and-aggregate, T = {T} members of {per} rows; load {load()}", flush=True)
            t = alternate(a.rounds, {"sep": sep, "row": row})
            line, rsa = ratio_line("member fits per repetition: θ-space vs row space", t["sep"], t["row"])
            print(line, f"load {load()}")
            ratios["sa"] = rsa
            pe, le = (np.argmax(np.einsum("nd,tdc->tnc", problem.X_eval, res[k]), 2) for k in ("sep", "row"))
            print(f"   member test-label agreement θ-space vs row space {np.mean(pe == le):.4f}, "
                  f"max|Δθ| {np.abs(res['sep'] - res['row']).max():.2e} (max|θ| {np.abs(res['sep']).max():.1f})",
                  flush=True)
        if "sa32" not in a.skip:
            T = a.sa_big_T
            per = n // T
            parts = np.random.default_rng(2).permutation(n)[: per * T].reshape(T, per)
            Xs, ys = X[parts], y[parts]
            maxiter = cfg["lbfgs"]["subsagg_maxiter"]
            res = {}

            def sa64():
                res["f64"] = fit_softmax_many(Xs, ys, C, 0.0, maxiter=maxiter, method="row_space", return_info=True)

            def sa32():
                res["f32"] = fit_softmax_many(Xs, ys, C, 0.0, maxiter=maxiter, method="row_space", float32=True,
                                              return_info=True)
            print(f"\n3b. subsample-and-aggregate members of {per} rows (> D/2: θ-space; Fig. 4 at N = 10⁶ has parts "
                  f"of 3,906), {T} members, float64 vs float32 evaluations; load {load()}", flush=True)
            t = alternate(a.rounds, {"f64": sa64, "f32": sa32})
            line, r32 = ratio_line("member fits: float64 vs float32", t["f64"], t["f32"])
            print(line, f"load {load()}")
            ratios["sa32"] = r32
            pe, le = (np.argmax(np.einsum("nd,tdc->tnc", problem.X_eval, res[k][0]), 2) for k in ("f64", "f32"))
            print(f"   member test-label agreement {np.mean(pe == le):.4f}; iterations float64 "
                  f"{[i.n_iter for i in res['f64'][1]]}, float32 {[i.n_iter for i in res['f32'][1]]}", flush=True)

    print(f"\n4. projected vdm2020 default grid (dpbench plan's projection), load {load()}")
    full = load_config(DEFAULT_CONFIG_PATH)

    def projected():
        shards._MEMO.clear()  # shard plans are memoised per config, not per unit costs
        return sum(plan.figure_plan(full, "vdm2020", f).cpu_s for f in vdm2020.figure_names(full["studies"]["vdm2020"]))
    now_h = projected() / 3600
    print(f"   with the unit costs now in dpbench/costs.py (measured with the default solvers by "
          f"benchmarks/fig4_scaling.py): {now_h:.1f} CPU-h ({now_h / 2:.1f} h on 2 cores); measured ratios this run: "
          + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
