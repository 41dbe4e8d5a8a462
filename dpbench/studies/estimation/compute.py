"""estimation — what computes a series: the synthetic data, the seeding and the runners (Lecture 19, §1–2).

This module and what it imports are the study's compute code (:mod:`dpbench.codehash`): an edit here recomputes
the series; an edit of the captions, plots or anchor checks (the sibling modules) does not. Result values are
written here, including ``method_label`` (the series' label in every row).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dpbench.methods import estimation as est
from dpbench.methods.estimation import cov_radius, ldp_clip, mean_clip
from dpbench.rng import generator

STUDY = "estimation"
DATA_VERSION = "v1"
DATASET = "synthetic_gaussian"
VARIANT = f"synthetic:gaussian-{DATA_VERSION}"
PRIVATE_D = ("laplace", "gaussian_classic", "gaussian_analytic")
#: the series each figure computes, and its x axis (what is varied)
SERIES = {"mean_vs_d": PRIVATE_D + ("non_private",), "cov_vs_d": PRIVATE_D + ("non_private",),
          "ldp_vs_n": ("local", "central", "non_private")}
X_NAME = {"mean_vs_d": "d", "cov_vs_d": "d", "ldp_vs_n": "n"}
MAIN_METRIC = {"mean_vs_d": "l2_error", "cov_vs_d": "frobenius_error", "ldp_vs_n": "abs_error"}
LABELS = {"laplace": "Laplace (pure ε-DP, ℓ1)", "gaussian_classic": "Gaussian, classic σ ((ε, δ), ℓ2)",
          "gaussian_analytic": "Gaussian, analytic σ ((ε, δ), ℓ2)", "non_private": "non-private (sampling floor)",
          "local": "local ε-DP", "central": "central ε-DP"}
PREPROCESSING = ("none (synthetic Gaussian samples); clipping to a fixed bound B set from n, d and the public "
                 "radius R inside each mechanism")


# ---------------------------------------------------------------------------------------------------------
# data and seeds
# ---------------------------------------------------------------------------------------------------------


def _key(figure_name: str, kind: str, **parts) -> str:
    return f"{STUDY}/{DATA_VERSION}/{figure_name}/{kind}/" + "/".join(f"{k}={parts[k]!r}" for k in sorted(parts))


def data_rng(config: dict, figure_name: str, rep: int, **point) -> np.random.Generator:
    """The data stream of one (grid point, repetition): shared by every series, so all series see the same
    data sets (common random numbers), and independent of the number of repetitions."""
    return generator(config["seed"], _key(figure_name, "data", rep=rep, **point))


def noise_rng(config: dict, figure_name: str, series_name: str, **point) -> np.random.Generator:
    """The noise stream of one series at one grid point (all repetitions in one draw)."""
    return generator(config["seed"], _key(figure_name, f"noise-{series_name}", **point))


def mean_data(rng: np.random.Generator, n: int, d: int, mean_range: float) -> tuple[np.ndarray, np.ndarray]:
    """μ ~ U[−R, R]^d and n samples of N(μ, I_d)."""
    mu = rng.uniform(-mean_range, mean_range, size=d)
    return mu, mu + rng.standard_normal((n, d))


def cov_data(rng: np.random.Generator, n: int, d: int, condition_number: float) -> tuple[np.ndarray, np.ndarray]:
    """Σ = Q diag(λ) Qᵀ (λ evenly spaced in [1/cond, 1], Q Haar) and n samples of N(0, Σ)."""
    lam = np.linspace(1.0 / condition_number, 1.0, d)
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    q *= np.sign(np.diag(r))  # Haar measure (sign fix of the QR factor)
    X = (rng.standard_normal((n, d)) * np.sqrt(lam)) @ q.T
    return (q * lam) @ q.T, X


def ldp_data(rng: np.random.Generator, n: int, mean_range: float) -> tuple[float, np.ndarray]:
    """μ ~ U[−R, R] and n samples of N(μ, 1)."""
    mu = float(rng.uniform(-mean_range, mean_range))
    return mu, mu + rng.standard_normal(n)


# ---------------------------------------------------------------------------------------------------------
# running one series
# ---------------------------------------------------------------------------------------------------------


def _row(config, figure_name, series_name, **kw) -> dict:
    row = {"study": STUDY, "figure": figure_name, "series": series_name, "method": series_name,
           "method_label": LABELS[series_name], "dataset": DATASET, "dataset_variant": VARIANT,
           "is_substitute": False, "x_name": X_NAME[figure_name], "curve": "", "neighbouring": est.NEIGHBOURING,
           "mechanism": "none", "noise_kind": "none", "calibration": "", "noise_scale": np.nan,
           "sensitivity": np.nan, "sensitivity_norm": "", "expected_privacy_rms": np.nan,
           "epsilon_achieved": np.inf, "seed": config["seed"], "budget": np.nan}  # no inference budget
    row.update(kw)
    return row


def _calib_cols(calib: est.Calibration | None) -> dict:
    if calib is None:
        return {}
    return {"mechanism": calib.mechanism, "noise_kind": calib.kind,
            "calibration": calib.mechanism.replace("gaussian_", "") if calib.kind == "gaussian" else "laplace",
            "noise_scale": calib.scale, "sensitivity": calib.sensitivity, "sensitivity_norm": calib.norm,
            "epsilon_achieved": calib.epsilon}


def _dims_rows(config, figure_name, series_name, fc, stats_fn, rms_fn, release_fn, err_fn, calib_fn, extra_fn):
    """Shared loop of ``mean_vs_d`` / ``cov_vs_d``: per d, every repetition's data → statistics; one noise draw
    for all repetitions; rows for the total error and the privacy term (or the non-private errors)."""
    rows = []
    n, eps, delta, reps = fc["n"], fc["epsilon"], fc["delta"], fc["repetitions"]
    main = MAIN_METRIC[figure_name]
    for d in fc["dims"]:
        t0 = time.perf_counter()
        truth, emp, clipped = stats_fn(d)
        common = dict(x=float(d), n=n, d=d, **extra_fn(d))
        if series_name == "non_private":
            dt = (time.perf_counter() - t0) / reps
            for r in range(reps):
                base = _row(config, figure_name, series_name, rep=r, epsilon=np.inf, delta=0.0, runtime_s=dt,
                            **common)
                rows.append({**base, "metric": main, "value": err_fn(emp[r] - truth[r])})
                rows.append({**base, "metric": "clipped_error", "value": err_fn(clipped[r] - truth[r])})
            continue
        calib = calib_fn(series_name, n, d, eps, delta)
        private = release_fn(clipped, calib, noise_rng(config, figure_name, series_name, n=n, d=d, epsilon=eps,
                                                       delta=calib.delta, reps=reps, **extra_fn(d)))
        dt = (time.perf_counter() - t0) / reps
        for r in range(reps):
            base = _row(config, figure_name, series_name, rep=r, epsilon=eps, delta=calib.delta, runtime_s=dt,
                        expected_privacy_rms=rms_fn(calib, d), **_calib_cols(calib), **common)
            rows.append({**base, "metric": main, "value": err_fn(private[r] - truth[r])})
            rows.append({**base, "metric": "privacy_error", "value": err_fn(private[r] - clipped[r])})
    return rows


def run_mean_vs_d(config: dict, series_name: str) -> list[dict]:
    fc = config["studies"][STUDY]["figures"]["mean_vs_d"]
    n, R, reps = fc["n"], fc["mean_range"], fc["repetitions"]

    def stats(d):
        truth, emp, clipped = np.empty((reps, d)), np.empty((reps, d)), np.empty((reps, d))
        B = mean_clip(fc, n, d)
        for r in range(reps):
            truth[r], X = mean_data(data_rng(config, "mean_vs_d", r, n=n, d=d, R=R), n, d, R)
            emp[r], clipped[r] = X.mean(axis=0), est.clipped_mean(X, B)
        return truth, emp, clipped

    return _dims_rows(config, "mean_vs_d", series_name, fc, stats, est.noise_rms_vector,
                      lambda s, c, rng: est.release(s, c, rng), lambda v: float(np.linalg.norm(v)),
                      lambda m, n_, d, e, dl: est.mean_calibration(m, n_, d, mean_clip(fc, n_, d), e, dl),
                      lambda d: {"clip": mean_clip(fc, n, d)})


def run_cov_vs_d(config: dict, series_name: str) -> list[dict]:
    fc = config["studies"][STUDY]["figures"]["cov_vs_d"]
    n, cond, reps = fc["n"], fc["condition_number"], fc["repetitions"]

    def stats(d):
        truth, emp, trunc = np.empty((reps, d, d)), np.empty((reps, d, d)), np.empty((reps, d, d))
        c = cov_radius(fc, d)
        for r in range(reps):
            truth[r], X = cov_data(data_rng(config, "cov_vs_d", r, n=n, d=d, cond=cond), n, d, cond)
            emp[r] = X.T @ X / n
            trunc[r] = est.truncated_covariance(X, c)
        return truth, emp, trunc

    return _dims_rows(config, "cov_vs_d", series_name, fc, stats, est.noise_rms_symmetric,
                      lambda s, c, rng: est.release_symmetric(s, c, rng), lambda v: float(np.linalg.norm(v)),
                      lambda m, n_, d, e, dl: est.covariance_calibration(m, n_, d, cov_radius(fc, d), e, dl),
                      lambda d: {"clip": cov_radius(fc, d)})


LDP_CHUNK = 1 << 21  # floats per noise block of the local series (memory bound at n = 1e6)


def run_ldp_vs_n(config: dict, series_name: str) -> list[dict]:
    fc = config["studies"][STUDY]["figures"]["ldp_vs_n"]
    R, reps = fc["mean_range"], fc["repetitions"]
    rows = []
    for n in fc["ns"]:
        B = ldp_clip(fc, n)
        t0 = time.perf_counter()
        per = max(1, LDP_CHUNK // n)  # repetitions per block; depends on n only, so draws are deterministic
        mus, emp, clipped = np.empty(reps), np.empty(reps), np.empty(reps)
        local = {e: np.empty(reps) for e in fc["epsilons"]}
        rngs = {e: noise_rng(config, "ldp_vs_n", "local", n=n, epsilon=e, reps=reps, clip=B) for e in fc["epsilons"]}
        for lo in range(0, reps, per):
            block = range(lo, min(reps, lo + per))
            X = np.empty((len(block), n))
            for i, r in enumerate(block):
                mus[r], X[i] = ldp_data(data_rng(config, "ldp_vs_n", r, n=n, R=R), n, R)
            emp[lo:lo + len(block)] = X.mean(axis=1)
            clipped[lo:lo + len(block)] = np.clip(X, -B, B).mean(axis=1)
            if series_name == "local":
                for e in fc["epsilons"]:  # every user's report: clip(x) + Lap(2B/ε); one draw per block
                    local[e][lo:lo + len(block)] = est.ldp_mean(X, B, e, rngs[e])
        dt = (time.perf_counter() - t0) / reps
        common = dict(x=float(n), n=n, d=1, clip=B)
        if series_name == "non_private":
            for r in range(reps):
                base = _row(config, "ldp_vs_n", series_name, rep=r, epsilon=np.inf, delta=0.0, runtime_s=dt, **common)
                rows.append({**base, "metric": "abs_error", "value": abs(emp[r] - mus[r])})
                rows.append({**base, "metric": "clipped_error", "value": abs(clipped[r] - mus[r])})
            continue
        for e in fc["epsilons"]:
            if series_name == "local":
                released = local[e]
                b = est.ldp_scale(B, e)
                extra = dict(mechanism="laplace_local", noise_kind="laplace", calibration="laplace", noise_scale=b,
                             sensitivity=2 * B, sensitivity_norm="l1", epsilon_achieved=e,
                             neighbouring="local: any two values of one user",
                             expected_privacy_rms=est.noise_rms_ldp(B, e, n))
            else:
                calib = est.mean_calibration("laplace", n, 1, B, e)
                released = est.release(clipped, calib, noise_rng(config, "ldp_vs_n", "central", n=n, epsilon=e,
                                                                 reps=reps, clip=B))
                extra = dict(expected_privacy_rms=est.noise_rms_vector(calib, 1), **_calib_cols(calib))
            for r in range(reps):
                base = _row(config, "ldp_vs_n", series_name, rep=r, epsilon=e, delta=0.0, curve=f"ε = {e:g}",
                            runtime_s=dt, **common, **extra)
                rows.append({**base, "metric": "abs_error", "value": abs(released[r] - mus[r])})
                rows.append({**base, "metric": "privacy_error", "value": abs(released[r] - clipped[r])})
    return rows


RUNNERS = {"mean_vs_d": run_mean_vs_d, "cov_vs_d": run_cov_vs_d, "ldp_vs_n": run_ldp_vs_n}


def series_code_hash(series_name: str) -> str:
    """Every series: this module and, transitively, what it imports (estimators, calibrations, seeding)."""
    from dpbench.codehash import code_hash

    return code_hash(__name__)


def run_series(config: dict, figure_name: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    """Long-format rows of one series: identifiers, parameters as columns, ``metric``/``value`` per repetition."""
    from threadpoolctl import threadpool_limits

    if figure_name not in SERIES:
        raise ValueError(f"unknown figure {figure_name!r} of study {STUDY!r}; known: {list(SERIES)}")
    if series_name not in SERIES[figure_name]:
        raise ValueError(f"method {series_name!r} is not a series of {STUDY}/{figure_name}; "
                         f"known: {list(SERIES[figure_name])}")
    if config["studies"][STUDY]["figures"].get(figure_name) is None:
        raise ValueError(f"figure {figure_name!r} is disabled in the configuration (studies.{STUDY}.figures)")
    with threadpool_limits(max(1, int(n_jobs))):
        df = pd.DataFrame(RUNNERS[figure_name](config, series_name))
    # privacy as labelled: the samples are generated, and every clip bound B comes from n, d and the public
    # radius R of the configuration, never from the samples
    df["preprocessing"] = PREPROCESSING
    df["preprocessing_data_dependent"] = False
    return df

