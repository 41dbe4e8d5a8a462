"""song2018 chapter 7 — the result rows of the experiments (``method_label`` is written here) and their
preprocessing labels. Part of the chapter's compute code: :mod:`dpbench.studies.song2018.ch7_compute` imports it,
so the chapter's code hash covers it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

STUDY = "song2018"
LABELS = {"dp": "DP", "group_dp": "GroupDP", "gk16": "GK16", "mqm_approx": "MQMApprox", "mqm_exact": "MQMExact",
          "exact": "exact"}


def _row(config, figure, series, **kw) -> dict:
    row = {"study": STUDY, "figure": figure, "series": series, "method": series,
           "method_label": LABELS.get(series, series), "dataset": "", "dataset_variant": "", "is_substitute": False,
           "x_name": "epsilon", "x": np.nan, "rep": 0, "metric": "l1_error", "value": np.nan, "epsilon": np.nan,
           "group": "", "task": "", "state": "", "lipschitz": np.nan, "sigma_max": np.nan, "noise_scale": np.nan,
           "expected_error": np.nan, "applicable": True, "na_reason": "", "quilt": "", "quilt_node": -1, "quilt_card": -1,
           "quilt_influence": np.nan, "ell": -1, "influence_norm": np.nan, "theta_argmax": "", "runtime_s": np.nan,
           "n_trials": 0, "chain_length": -1, "seed": int(config["seed"]),
           "delta": 0.0, "budget": np.nan}  # ε-Pufferfish privacy (pure, δ = 0); no inference budget
    row.update(kw)
    return row


def _rec_cols(rec: dict) -> dict:
    q = rec.get("quilt")
    return {"sigma_max": rec["sigma"] if rec["applicable"] else np.inf, "applicable": rec["applicable"],
            "na_reason": rec.get("reason", ""),
            "quilt": "" if q is None else "{" + ", ".join(f"X{j}" for j in q) + "}",
            "quilt_node": rec.get("node") or -1, "quilt_card": rec.get("card") or -1,
            "quilt_influence": np.nan if rec.get("influence") is None else rec["influence"],
            "ell": rec.get("ell") or -1, "influence_norm": rec.get("norm", np.nan),
            "theta_argmax": rec.get("theta", ""), "runtime_s": rec.get("runtime_s", np.nan)}


#: series whose noise scale is computed from Θ = {(π̂, P̂)} on the real-data stand-ins (:func:`chain_model`)
THETA_FROM_DATA = ("gk16", "mqm_approx", "mqm_exact")
THETA_NOTE = ("non-private step, as in the source: Θ = {(π̂, P̂)} estimated from the same chains sets the noise "
              "scale (Song 2018, §7.6.3); no preprocessing of the state sequences")


def label_preprocessing(df: pd.DataFrame) -> pd.DataFrame:
    """Add the ``preprocessing`` / ``preprocessing_data_dependent`` columns: the state sequences are never
    transformed; on the activity/electricity stand-ins GK16, MQMApprox and MQMExact calibrate their noise with Θ
    estimated from the released chains themselves, which the ε does not cover (flagged True)."""
    df = df.copy()
    if not len(df):
        df["preprocessing"], df["preprocessing_data_dependent"] = pd.Series(dtype=str), pd.Series(dtype=bool)
        return df
    synthetic = df["dataset"].astype(str).str.startswith("synthetic")
    dep = (~synthetic & df["series"].isin(THETA_FROM_DATA)).to_numpy()
    df["preprocessing"] = np.where(dep, THETA_NOTE, np.where(
        synthetic, "none (generated chains; Θ fixed by the experiment)", "none (raw state sequences)"))
    df["preprocessing_data_dependent"] = dep
    return df
