"""Audits of the estimation study's estimators (clipped mean with Laplace ℓ1 / analytic-Gaussian ℓ2 noise, the local-DP
1-D mean report) and of song2018's local-DP SGD report. Conventions: :mod:`dpbench.audit.methods`."""

from __future__ import annotations

import math

import numpy as np

from dpbench.audit import stats as S
from dpbench.audit.pairs import figure_config
from dpbench.audit.registry import chunked, factor, register


# ---------------------------------------------------------------------------------------------------------
# estimation study: clipped mean (Laplace ℓ1 / Gaussian ℓ2), local-DP 1-D mean
# ---------------------------------------------------------------------------------------------------------

def _mean_setup(config):
    fc = figure_config(config, "estimation", "mean_vs_d")
    from dpbench.methods.estimation import mean_clip
    n = int(fc["n"])
    d = int(min(fc["dims"]))
    return fc, n, d, mean_clip(fc, n, d)


#: the replaced record of the clipped-mean and local-DP pairs lies this many clip bounds outside the domain: a
#: correct implementation clips it to ±B (the same release as the in-domain pair ±B·𝟙, whose sensitivity is
#: attained), an implementation that fails to clip each record (the bug twins) is exposed
OUT_OF_DOMAIN = 10.0


def _mean_pair(n, d, B, pair="out_of_domain"):
    """Other rows 0; the replaced row ±10B·𝟙 (``out_of_domain``: clipped to ±B·𝟙) or ±B·𝟙 (``boundary``: the
    corners of the declared box, where the sensitivity is attained without any clipping)."""
    X = np.zeros((n, d))
    Xd, Xp = X.copy(), X.copy()
    r = OUT_OF_DOMAIN * B if pair == "out_of_domain" else B
    Xd[-1], Xp[-1] = r, -r
    return Xd, Xp


MEAN_PAIRS = dict(pairs=("out_of_domain", "boundary"),
                  pair_notes={"out_of_domain": "one row +10B·𝟙 vs −10B·𝟙, outside the declared box: a correct "
                                               "implementation clips it to ±B·𝟙",
                              "boundary": "one row +B·𝟙 vs −B·𝟙, opposite corners of the box: the sensitivity "
                                          "attained with nothing to clip"})


def _mean_centres(Xd, Xp, B, twin):
    """The clipped means of the pair as the audited implementation computes them (the clip-order twin clips
    after averaging)."""
    from dpbench.methods import estimation as est

    order = "mean_then_clip" if twin == "bug_clip_after_mean" else "rows"
    return est.clipped_mean(Xd, B, order=order), est.clipped_mean(Xp, B, order=order)


@register(name="mean_laplace", label="clipped mean, Laplace ℓ1 (estimation)", study="estimation",
          twins=("noise_x0.5", "bug_l2_sensitivity", "bug_clip_after_mean"),
          notes="n = 2000 and the clip bound B of the study's mean_vs_d, its smallest d = 4 (the privacy loss of "
                "d-dimensional Laplace noise concentrates as d grows). Pair: one row +10B·𝟙 vs −10B·𝟙, outside "
                "the declared domain: clipped to ±B·𝟙, where the ℓ1 sensitivity is attained. Bug twins: Laplace "
                "noise calibrated to the ℓ2 sensitivity (√d smaller); clipping after averaging "
                "(clip(mean(X)): the out-of-domain row moves the mean 10× further, ε 10× the claim on this pair).",
          **MEAN_PAIRS)
def audit_mean_laplace(config, epsilon, twin, trials, rng, pair="out_of_domain"):
    from dpbench.methods import estimation as est

    fc, n, d, B = _mean_setup(config)
    l1, l2 = est.mean_sensitivity(n, d, B)
    cal = est.calibrate("laplace", l2 if twin == "bug_l2_sensitivity" else l1, l2, epsilon)
    cal_claim = est.calibrate("laplace", l1, l2, epsilon)
    Xd, Xp = _mean_pair(n, d, B, pair)
    fD, fP = est.clipped_mean(Xd, B), est.clipped_mean(Xp, B)
    cD, cP = _mean_centres(Xd, Xp, B, twin)      # where the audited implementation centres its releases
    f = factor(twin)

    def side(c):
        return chunked(trials, lambda k: S.laplace_llr(c[None] + f * (est.release(c, cal, rng, size=k) - c[None]),
                                                        fD, fP, cal_claim.scale))

    own = float(np.abs(cD - cP).sum() / cal.scale) if twin == "bug_clip_after_mean" else float("nan")
    return {"s_d": side(cD), "s_dp": side(cP), "delta": 0.0, "eps_pair": float(np.abs(fD - fP).sum() / cal_claim.scale),
            "noise_scale": cal_claim.scale, "eps_pair_variant": own}


@register(name="mean_gaussian", label="clipped mean, analytic Gaussian ℓ2 (estimation)", study="estimation",
          pure=False, twins=("noise_x0.5", "bug_clip_after_mean"),
          notes="As mean_laplace with the analytic-Gaussian σ at the study's δ = 1e-5 (the classic σ is only "
                "defined for ε < 1, so at ε ≥ 1 the study's analytic calibration is audited); the same "
                "out-of-domain pair and clip-after-averaging twin. Statistic: the projection on f(D) − f(D′) "
                "(optimal for isotropic Gaussian noise).",
          **MEAN_PAIRS)
def audit_mean_gaussian(config, epsilon, twin, trials, rng, pair="out_of_domain"):
    from dpbench.methods import estimation as est

    fc, n, d, B = _mean_setup(config)
    delta = float(fc["delta"])
    l1, l2 = est.mean_sensitivity(n, d, B)
    cal = est.calibrate("gaussian_analytic", l1, l2, epsilon, delta)
    Xd, Xp = _mean_pair(n, d, B, pair)
    fD, fP = est.clipped_mean(Xd, B), est.clipped_mean(Xp, B)
    cD, cP = _mean_centres(Xd, Xp, B, twin)
    f = factor(twin)

    def side(c):
        return chunked(trials, lambda k: S.gaussian_llr(c[None] + f * (est.release(c, cal, rng, size=k) - c[None]),
                                                         fD, fP, cal.scale))

    mu = float(np.linalg.norm(fD - fP) / cal.scale)
    own = (S.gaussian_epsilon(float(np.linalg.norm(cD - cP) / cal.scale), delta) if twin == "bug_clip_after_mean"
           else float("nan"))
    return {"s_d": side(cD), "s_dp": side(cP), "delta": delta, "eps_pair": S.gaussian_epsilon(mu, delta),
            "noise_scale": cal.scale, "eps_pair_variant": own}


@register(name="ldp_mean", label="local-DP report, clip + Lap(2B/ε) (estimation)", study="estimation",
          twins=("noise_x0.5", "bug_no_clip"),
          notes="One user's report (ε-LDP in that user's value): the study's ldp_vs_n clip bound at its largest "
                "n; pair: values +10B vs −10B, outside the declared range: clipped to ±B, where the range 2B is "
                "attained. Bug twin: the value reported without clipping (ε 10× the claim on this pair).",
          pairs=("out_of_range", "boundary"),
          pair_notes={"out_of_range": "values +10B vs −10B: a correct report clips them to ±B",
                      "boundary": "values +B vs −B, the ends of the declared range: nothing to clip"})
def audit_ldp_mean(config, epsilon, twin, trials, rng, pair="out_of_range"):
    from dpbench.methods import estimation as est
    from dpbench.methods.estimation import ldp_clip

    fc = figure_config(config, "estimation", "ldp_vs_n")
    B = ldp_clip(fc, int(max(fc["ns"])))
    scale = est.ldp_scale(B, epsilon)
    f = factor(twin)
    fD, fP = np.array([B]), np.array([-B])                       # the correct reports' centres
    xD, xP = (OUT_OF_DOMAIN if pair == "out_of_range" else 1.0) * np.array([fD, fP])   # the users' values
    clip = twin != "bug_no_clip"

    def side(x):
        def draw(k):
            r = est.ldp_release(x, B, epsilon, rng, size=k, clip_values=clip)   # (k, 1): the implementation's
            c = np.clip(x, -B, B) if clip else x                                # reports, noise scaled by f
            return S.laplace_llr(c[None] + f * (r - c[None]), fD, fP, scale)
        return chunked(trials, draw)

    own = float(np.abs(xD - xP).sum() / scale) if not clip else float("nan")
    return {"s_d": side(xD), "s_dp": side(xP), "delta": 0.0, "eps_pair": 2 * B / scale, "noise_scale": scale,
            "eps_pair_variant": own}


# ---------------------------------------------------------------------------------------------------------
# song2018 ch. 4: local-DP SGD reports (oracle (4.5))
# ---------------------------------------------------------------------------------------------------------

@register(name="ldp_sgd_report", label="local-DP SGD report (song2018 oracle (4.5))", study="song2018",
          notes="One report λw + ∇ℓ(w; x, y) + Z, Z ∝ exp(−(ε/2)‖z‖) (the calibration, Δ = 2, does not depend "
                "on d; two features). λ of ch. 4. The auditor picks the public model w = (0, −W) and the records "
                "x = (±cos a, sin a), y = +1 with W·sin a ≫ 1: both gradients have norm ≈ 1 and are nearly "
                "opposite, so they differ by ≈ 2 = Δ.",
          pairs=("opposite_gradients", "label_flip"),
          pair_notes={"opposite_gradients": "x = (±cos a, sin a), y = +1 at w = (0, −400): gradients of norm ≈ 1, "
                                            "nearly opposite (≈ Δ apart)",
                      "label_flip": "x = (cos a, sin a) with y = +1 vs y = −1 at the same w: one side's margin "
                                    "saturates, the gradients differ by ≈ 1 = Δ/2"})
def audit_ldp_sgd_report(config, epsilon, twin, trials, rng, pair="opposite_gradients"):
    from dpbench.methods.ldp_sgd import gdp_reports

    lam = float(config["studies"]["song2018"]["ch4"]["l2"])
    a = 0.05
    w = np.array([0.0, -400.0])
    xD = np.array([[math.cos(a), math.sin(a)]])
    xP = np.array([[-math.cos(a), math.sin(a)]]) if pair == "opposite_gradients" else xD.copy()
    y = np.array([1.0])
    yP = y if pair == "opposite_gradients" else -y
    f = factor(twin)
    zero = np.random.default_rng(0)
    cD = gdp_reports(w, xD, y, 1e300, lam, zero)[0]     # ε → ∞: the noiseless report (noise ∝ 1/ε ≈ 0)
    cP = gdp_reports(w, xP, yP, 1e300, lam, zero)[0]
    beta = epsilon / 2.0

    def side(x, yy, c):
        def draw(k):
            z = gdp_reports(w, np.repeat(x, k, axis=0), np.repeat(yy, k), epsilon, lam, rng)
            return S.l2_laplace_llr(c[None] + f * (z - c[None]), cD, cP, beta)
        return chunked(trials, draw)

    return {"s_d": side(xD, y, cD), "s_dp": side(xP, yP, cP), "delta": 0.0,
            "eps_pair": float(beta * np.linalg.norm(cD - cP)), "noise_scale": 2.0 / epsilon}
