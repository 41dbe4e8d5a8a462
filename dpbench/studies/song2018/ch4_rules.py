"""song2018 chapter 4 — the rules of the experiments of Fig. 4.1 (Song 2018, §4.4–4.5; docs/studies/song2018.md):
the clean/noisy split sizes, the data order and learning rates of every method (Algorithms 1–2, the baselines of
§4.5), the per-run data sequences and the c₂ grid between the bounds of Algorithm 2. Part of the chapters' compute
code: :mod:`dpbench.studies.song2018.ch34_compute` imports it, so the chapters' code hash covers it.
"""

from __future__ import annotations

import numpy as np

from dpbench.methods import ldp_sgd as L
from dpbench.studies.song2018.ch34_data import study_config

ORDER_METHODS = ("clean_first", "noisy_first", "arbitrary")


def ch4_sizes(n: int, b: int, beta: float) -> tuple[int, int]:
    """(|D_C|, |D_N|), both multiples of the batch size b: |D_C| = b·round(β_C n / b) (≥ b), |D_N| = b·⌊(n − |D_C|)/b⌋."""
    nc = max(b, b * int(round(beta * n / b)))
    return nc, b * ((n - nc) // b)


def ch4_params(config: dict) -> dict:
    c4 = study_config(config)["ch4"]
    return {"l2": float(c4["l2"]), "b": int(c4["batch_size"]), "beta": float(c4["beta_clean"]),
            "eps_c": float(c4["epsilon_clean"])}


def gammas(d: int, eps_c: float, eps_n: float, b: int, which: str = "upper") -> tuple[float, float]:
    """(Γ_C², Γ_N²): Thm 4.2.1 upper bounds (``upper``) or the batch lower bounds of §4.5 (``lower``)."""
    if which == "upper":
        return L.gamma_sq_upper(d, eps_c), L.gamma_sq_upper(d, eps_n)
    return L.gamma_sq_lower(d, eps_c, b), L.gamma_sq_lower(d, eps_n, b)


def ch4_rule(config: dict, d: int, method: str, eps_n: float, c=None, c2=None, order=None) -> dict:
    """Data order and learning rates of one chapter-4 method (theory evaluated with the data dimension d)."""
    p = ch4_params(config)
    lam, beta = p["l2"], p["beta"]
    gc, gn = gammas(d, p["eps_c"], eps_n, p["b"])
    if method in ORDER_METHODS:
        return {"order": {"clean_first": "CN", "noisy_first": "NC", "arbitrary": "AO"}[method], "c1": c, "c2": c,
                "noise": True}
    if method == "optimal":
        return {"order": "CN", "c1": 1.0 / lam, "c2": 1.0 / lam, "noise": False}
    if method == "clean_only":
        return {"order": "C", "c1": 1.0 / lam, "c2": 1.0 / lam, "noise": True}
    if method == "same_clean":
        cc = L.same_c(gc, gn, beta, lam)
        return {"order": "CN", "c1": cc, "c2": cc, "noise": True}
    if method == "same_noisy":
        cc = L.same_c(gn, gc, 1.0 - beta, lam)
        return {"order": "NC", "c1": cc, "c2": cc, "noise": True}
    if method == "alg2":
        ch = L.algorithm2(gc, gn, beta, lam)
        return {"order": ch.order, "c1": ch.c1, "c2": ch.c2, "noise": True}
    if method == "alg1":
        return {"order": order, "c1": 1.0 / lam, "c2": c2, "noise": True}
    raise ValueError(f"unknown chapter-4 method {method!r}")


def _ch4_sequences(rng, n, nc, nn, R, order, eps_c, eps_n):
    """Per run: a fresh random clean/noisy split (first nc rows of a permutation clean) and the data order."""
    seqs, eps = [], []
    for _ in range(R):
        perm = rng.permutation(n)
        C, N = perm[:nc], perm[nc:nc + nn]
        ec, en = np.full(nc, eps_c), np.full(nn, eps_n)
        if order == "CN":
            s, e = np.r_[C, N], np.r_[ec, en]
        elif order == "NC":
            s, e = np.r_[N, C], np.r_[en, ec]
        elif order == "AO":
            pi = rng.permutation(nc + nn)
            s, e = np.r_[C, N][pi], np.r_[ec, en][pi]
        elif order == "C":
            s, e = C, ec
        else:
            raise ValueError(f"unknown order {order!r}")
        seqs.append(s.astype(np.int32))
        eps.append(e)
    return np.stack(seqs), np.stack(eps)


def c2_brackets(config: dict, d: int, eps_n: float) -> dict:
    """Algorithm 2 with the Thm 4.2.1 upper bounds (c₂(U), its order) and with the lower bounds of §4.5 (c₂(L))
    for the SAME order (the order Algorithm 2 runs), plus the order the lower bounds alone would choose."""
    p = ch4_params(config)
    up = L.algorithm2(*gammas(d, p["eps_c"], eps_n, p["b"], "upper"), p["beta"], p["l2"])
    lo = L.algorithm2(*gammas(d, p["eps_c"], eps_n, p["b"], "lower"), p["beta"], p["l2"])
    c2_lower = lo.c_CN if up.order == "CN" else lo.c_NC
    return {"order": up.order, "c2_upper": up.c2, "c2_lower": c2_lower, "order_lower": lo.order}


def c2_grid(config: dict, d: int, eps_n: float) -> list[float]:
    fc = study_config(config)["figures"]["fig4_1"]["c2"]
    br = c2_brackets(config, d, eps_n)
    lo, hi = sorted((br["c2_lower"], br["c2_upper"]))
    grid = np.geomspace(lo / fc["widen"], hi * fc["widen"], int(fc["points"]))
    return sorted({float(v) for v in np.r_[grid, lo, hi]})
