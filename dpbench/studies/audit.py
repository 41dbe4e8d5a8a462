"""The privacy audit study: for every private training method of the project, the empirical ε lower bound (95 %
confidence) of a white-box likelihood-ratio test on a worst-case neighbouring pair at the method's default
calibration, against the claimed ε, with broken twins beside (:mod:`dpbench.audit`).

One figure, ``fig_audit``; one series per audited method; one row per cell (method, claimed ε, variant, seed).
Anchor rows: per (method, ε) the correct implementation must not fire ("PRIVACY BUG" otherwise); per (method, ε,
twin) the twin must be caught (ε̂ > claimed ε) in at least ``caught_rate`` of the seeds."""

from __future__ import annotations

import hashlib
import inspect
import json

import numpy as np
import pandas as pd

from dpbench import verdicts as V
from dpbench.config import ConfigError
from dpbench.studies.base import FigureSpec, lookup_figure

STUDY = "audit"
VARIANT = "synthetic:audit-pairs-v1"
DATA_NOTE = ("Data: auditor-chosen worst-case neighbouring pairs built in code per method (no download); the "
             "calibration of each method (ε, δ, λ, clip, q, steps, n where the analysis depends on it) is read "
             "from its study's configuration.")


def _methods() -> tuple[str, ...]:
    from dpbench.audit import REGISTRY
    return tuple(REGISTRY)


FIGURES = {"fig_audit": FigureSpec(
    STUDY, "fig_audit", "Privacy audit: empirical ε lower bound vs claimed ε", "epsilon", "claimed ε",
    "ε̂ (95 % lower confidence bound)", _methods(),
    "White-box audit of every private training method at its study's default calibration: worst-case "
    "neighbouring pair (methods with several pairs — label flip, domain boundary, out-of-domain record — audit "
    "the one a pilot on separate trials separates most; column pair), likelihood-ratio statistic of the "
    "release, threshold chosen on half of the trials and "
    "Clopper–Pearson bounds on the other half (Jagielski et al. 2020; Nasr et al. 2021, 2023). DP-SGD, SCS13 "
    "and BST14: the whole transcript of iterates (what their analyses bound); for DP-SGD and BST14 the larger of "
    "that bound and the μ-GDP bound from the AUC (a GDP model of the composition, as in Nasr et al. 2023; column "
    "eps_lower_gdp). Every cell first runs the release twice with two independent generators: a release "
    "that ignores its generator (twin 'bug: fixed seed', noise from a constant seed) gives identical outputs, "
    "a deterministic function of the data, ε̂ = ∞ (drawn at the panel's top, ↑∞). Filled "
    "markers: correct implementation; open markers: broken twins (noise × f, known bugs), which must land "
    "above the line ε̂ = ε. ε_pair (crosses): the exact ε of the audited pair at the correct calibration, the "
    "most any test can show on it.",
    xscale="linear")}

MARKERS = {"correct": ("o", "tab:green"), "noise_x0.5": ("s", "tab:red"), "noise_x0.25": ("D", "tab:purple"),
           "noise_x0.1": ("D", "tab:purple")}


# ---------------------------------------------------------------------------------------------------------
# configuration and workflow hooks
# ---------------------------------------------------------------------------------------------------------

def validate(cfg: dict, prefix: str = "studies.audit") -> None:
    from dpbench.audit.core import same_epsilon, twins

    def check_twin(m: str, t: str, where: str) -> None:
        if t not in twins(m):
            raise ConfigError(f"invalid config: {prefix}.methods.{m}.{where}: {m} has no twin {t!r}; "
                              f"twins: {list(twins(m))}")

    known = set(_methods())
    for m, block in (cfg.get("methods") or {}).items():
        if m not in known:
            raise ConfigError(f"invalid config: {prefix}.methods.{m}: unknown audit method; known: {sorted(known)}")
        for t, n in ((block or {}).get("twin_trials") or {}).items():
            check_twin(m, t, f"twin_trials.{t}")
            for e in (n if isinstance(n, dict) else {}):
                if not any(same_epsilon(e, c) for c in cfg.get("epsilons") or []):
                    raise ConfigError(f"invalid config: {prefix}.methods.{m}.twin_trials.{t}.{e}: not one of the "
                                      f"audit's claimed epsilons {cfg.get('epsilons')} (a map's keys are claimed ε)")
        for i, t in enumerate((block or {}).get("twins") or []):
            check_twin(m, t, f"twins[{i}]")
    for i, m in enumerate(cfg.get("series") or []):
        if m not in known:
            raise ConfigError(f"invalid config: {prefix}.series[{i}]: unknown audit method {m!r}")


def figure_names(cfg: dict) -> list[str]:
    return [f for f in FIGURES if (cfg.get("figures") or {}).get(f) is not None]


def figure(name: str) -> FigureSpec:
    return lookup_figure(FIGURES, STUDY, name)


def series(cfg: dict, name: str) -> list[str]:
    wanted = cfg.get("series")
    return [m for m in figure(name).methods if wanted is None or m in wanted]


def series_threads(cfg: dict, figure_name: str, series_name: str) -> int:
    """One: a series' cells run one after the other in its job, and ``--cores N`` runs N series side by side,
    longest first (``series_priority``). With two workers per series every job idled one core on its last cell:
    the default audit used 88 % of 2 cores (20 min 19 s for 2,157 CPU-s, 2026-11-27)."""
    return 1


def dataset_signature(config: dict) -> str:
    return json.dumps({"seed": config["seed"], "variant": VARIANT}, sort_keys=True)


def prepare_dataset(config: dict) -> dict:
    return {"study": STUDY, "dataset": "audit_pairs", "dataset_variant": VARIANT, "is_substitute": False,
            "seed": config["seed"], "note": "worst-case pairs are built in code per method (dpbench.audit.methods)"}


def series_code_hash(series_name: str) -> str:
    """What computes a series: :func:`dpbench.audit.run_cell` and, transitively, what it imports (the pairs, the
    statistics, the methods' own implementations; :mod:`dpbench.codehash`), and :func:`run_series` below, which
    assembles the rows (this module's captions and checks are not part of it)."""
    from dpbench.codehash import code_hash

    h = hashlib.sha256((code_hash("dpbench.audit.core") + inspect.getsource(run_series)).encode())
    return h.hexdigest()[:16]


def deviations(cfg: dict, name: str) -> list[str]:
    from dpbench.audit import REGISTRY
    return [f"{REGISTRY[m].label}: {REGISTRY[m].notes}" for m in series(cfg, name)]


# ---------------------------------------------------------------------------------------------------------
# compute
# ---------------------------------------------------------------------------------------------------------

def run_series(config: dict, figure_name: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    """Every cell of one method: claimed ε × (correct + its audited twins) × seeds; joblib over cells."""
    from joblib import Parallel, delayed
    from threadpoolctl import threadpool_limits

    from dpbench.audit import audited_variants, run_cell

    figure(figure_name)
    cfg = config["studies"][STUDY]
    if series_name not in series(cfg, figure_name):
        raise ValueError(f"{series_name!r} is not a series of {STUDY}/{figure_name}; known: "
                         f"{series(cfg, figure_name)}")
    jobs = [(float(e), v, s) for e in cfg["epsilons"] for v in audited_variants(config, series_name)
            for s in range(int(cfg["seeds"]) if v != "correct" else int(cfg.get("seeds_correct", cfg["seeds"])))]

    def one(e, v, s):
        with threadpool_limits(1):
            return run_cell(config, series_name, e, v, s)

    rows = Parallel(n_jobs=max(1, int(n_jobs)), prefer="processes")(delayed(one)(*j) for j in jobs)
    df = pd.DataFrame(rows)
    df.insert(0, "figure", figure_name)
    df.insert(1, "series", series_name)
    df["x"] = df["claimed_epsilon"]
    df["epsilon"] = df["claimed_epsilon"]
    df["metric"] = "eps_hat"
    df["value"] = df["eps_hat"]
    df["dataset"] = "audit_pairs"
    df["dataset_variant"] = VARIANT
    df["preprocessing"] = "none (auditor-chosen records)"
    df["preprocessing_data_dependent"] = False
    df["rep"] = [s for *_, s in jobs]             # the repeated audit (its own seed stream) of this cell
    df["seed"] = int(config["seed"])
    df["budget"] = float("nan")                   # no inference budget
    return df


# ---------------------------------------------------------------------------------------------------------
# figure, anchors
# ---------------------------------------------------------------------------------------------------------

def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per (method, ε, variant): median and min/max ε̂ (``eps_hat``: the larger of the Clopper–Pearson and, where
    computed, the GDP bound) over seeds, the two bounds' medians, ε_pair, the firing rate and the runtime."""
    for col in ("eps_pair_variant", "eps_lower_gdp"):   # frames written before the columns existed
        if col not in df:
            df = df.assign(**{col: np.nan})
    if "eps_hat" not in df:
        df = df.assign(eps_hat=df["eps_lower"])
    g = df.groupby(["series", "claimed_epsilon", "variant"], sort=False)
    return g.agg(label=("label", "first"), eps_lower_median=("eps_hat", "median"),
                 eps_lower_min=("eps_hat", "min"), eps_lower_max=("eps_hat", "max"),
                 eps_cp_median=("eps_lower", "median"), eps_gdp_median=("eps_lower_gdp", "median"),
                 eps_pair=("eps_pair", "first"), eps_pair_variant=("eps_pair_variant", "first"),
                 delta=("delta", "first"), fire_rate=("fires", "mean"),
                 seeds=("fires", "size"),
                 trials=("trials", "first"), runtime_s=("runtime_s", "sum"),
                 post_training_noise=("post_training_noise", "first")).reset_index()


def variant_label(method: str, variant: str) -> str:
    """A legend's name for an audited variant: "correct", "noise × 0.5 (twin)", or the twin's label
    (:attr:`dpbench.audit.registry.MethodAudit.twin_labels`, else its name in words: "bug: addremove sensitivity")."""
    from dpbench.audit import REGISTRY

    if variant == "correct":
        return "correct"
    if variant.startswith("noise_x"):
        return f"noise × {variant[len('noise_x'):]} (twin)"
    m = REGISTRY.get(method)
    named = (m.twin_labels or {}).get(variant) if m is not None else None
    return named or variant.replace("bug_", "bug: ", 1).replace("_", " ")


def twin_pair_epsilon(r) -> float:
    """The twin's own ε on the audited pair where known: what its audit recorded (``eps_pair_variant``: a closed
    form such as DP-SGD's transcript ε, a proved bound over every pair such as loss perturbation's, or the
    numerical maximum over outputs of the exact privacy loss on the pair such as its tight calibration's — the
    audit's notes say which); else, for pure-ε noise scaled by f whose pair ε is exact, ε_pair / f; else NaN."""
    if np.isfinite(r.eps_pair_variant):
        return float(r.eps_pair_variant)
    f = float(r.variant[len("noise_x"):]) if r.variant.startswith("noise_x") else None
    if f is not None and r.delta == 0 and np.isfinite(r.eps_pair):
        return r.eps_pair / f
    return float("nan")


def not_broken_on_pair(r, eps: float) -> float:
    """The twin's own ε on the audited pair (:func:`twin_pair_epsilon`) where it is known and at most the claimed
    ``eps`` — the twin is not broken on this pair and cannot be caught here — else NaN."""
    exact = twin_pair_epsilon(r)
    return exact if np.isfinite(exact) and exact <= eps * (1 + 1e-12) else float("nan")


def plot(config: dict, name: str, df: pd.DataFrame, out) -> str:
    from dpbench.plot import _pyplot, save_figure

    plt = _pyplot()
    s = summary(df)
    methods = list(dict.fromkeys(s["series"]))
    ncol = 4
    nrow = int(np.ceil(len(methods) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 2.7 * nrow), squeeze=False)
    top = float(np.nanmax([s["claimed_epsilon"].max() * 2.2, 1.0]))
    for ax, m in zip(axes.ravel(), methods):
        g = s[s["series"] == m]
        ax.plot([0, top], [0, top], color="0.4", lw=0.8, ls="--", label="ε̂ = ε")
        variants = list(dict.fromkeys(g["variant"]))
        for j, v in enumerate(variants):
            h = g[g["variant"] == v]
            mk, col = MARKERS.get(v, ("^", "tab:orange"))
            off = (j - (len(variants) - 1) / 2) * 0.12
            med = h["eps_lower_median"].to_numpy()
            shown = np.minimum(med, 0.95 * top)               # far above the panel: drawn at its top, value written
            inside = med <= 0.95 * top                        # (∞: a release that ignores its generator)
            mn, mx = h["eps_lower_min"].to_numpy(), h["eps_lower_max"].to_numpy()
            with np.errstate(invalid="ignore"):               # ∞ − ∞ outside the panel, masked below
                lo = np.where(inside, med - mn, 0.0)
                hi = np.where(inside & np.isfinite(mx), mx - med, 0.0)
            yerr = np.vstack([np.clip(lo, 0, None), np.clip(hi, 0, None)])
            ax.errorbar(h["claimed_epsilon"] + off, shown, yerr=yerr, fmt=mk, color=col, ms=5,
                        mfc=col if v == "correct" else "none", capsize=2, label=variant_label(m, v))
            for xv, m_, sv in zip(h["claimed_epsilon"] + off, med, shown):
                if m_ > sv:
                    ax.annotate("↑∞" if np.isinf(m_) else f"↑{m_:.0f}", (xv, sv), textcoords="offset points", xytext=(4, -3), fontsize=6,
                                color=col)
        c = g[g["variant"] == "correct"]
        ax.plot(c["claimed_epsilon"], c["eps_pair"], "x", color="k", ms=5, label="ε_pair (correct)")
        ax.set_title(g["label"].iloc[0], fontsize=7)
        ax.set_xlim(0, s["claimed_epsilon"].max() * 1.3)
        ax.set_ylim(0, top)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("claimed ε", fontsize=7)
        ax.set_ylabel("ε̂ (95 % lower bound)", fontsize=7)
        ax.legend(fontsize=5, loc="upper left")
    for ax in axes.ravel()[len(methods):]:
        ax.axis("off")
    fig.suptitle("Privacy audit: ε̂ (95 % lower bound from the releases on a worst-case pair) of each method and "
                 "its broken twins, at each claimed ε", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return save_figure(fig, out, caption_text(config, name, df))


def caption_text(config: dict, name: str, df: pd.DataFrame) -> str:
    s = summary(df)
    lines = [figure(name).caption, DATA_NOTE]
    lines += [f"Note: {d}" for d in deviations(config["studies"][STUDY], name)]
    cpu = f", CPU {df['cpu_s'].sum():.0f} s" if "cpu_s" in df else ""
    lines.append(f"Runtime of the audit (all cells, one thread each): wall {df['runtime_s'].sum():.0f} s{cpu}")
    for r in s.itertuples():
        gdp = f"; Clopper–Pearson {r.eps_cp_median:.3f}, GDP {r.eps_gdp_median:.3f}" if np.isfinite(
            r.eps_gdp_median) else ""
        pair = f"ε_pair {r.eps_pair:.3f}"
        if r.variant != "correct":   # the pair's ε at the correct calibration, and the twin's own where known
            own = twin_pair_epsilon(r)
            pair = (f"ε_pair of the correct method {r.eps_pair:.3f}"
                    + (f", of this twin {own:.3f}" if np.isfinite(own) else ""))
        if np.isinf(r.eps_lower_median):
            lines.append(f"{r.series} ε={r.claimed_epsilon:g} {variant_label(r.series, r.variant)}: the release "
                         f"ignores its generator (identical outputs under two independent generators): ε̂ = ∞ "
                         f"in {r.fire_rate:.0%} of {r.seeds} seeds")
            continue
        lines.append(f"{r.series} ε={r.claimed_epsilon:g} {variant_label(r.series, r.variant)}: ε̂ median "
                     f"{r.eps_lower_median:.3f} (range {r.eps_lower_min:.3f}–{r.eps_lower_max:.3f}, {r.seeds} "
                     f"seeds{gdp}), {pair}, fired in {r.fire_rate:.0%}")
    return "\n".join(lines)


#: The audit's two claims, checked per (method, claimed ε) and per broken twin (``{...}`` filled by the check).
AUDIT_SOURCES = "white-box audit: Jagielski et al. 2020; Nasr et al. 2021, 2023"
CLAIMS = V.claim_table(
    V.Claim("no-fire", "{figure}", AUDIT_SOURCES,
            "{label}: no audit fires at claimed ε = {eps:g} (ε̂ ≤ ε in every seed){bug}"),
    V.Claim("twin-caught", "{figure}", AUDIT_SOURCES,
            "broken twin {variant} of {label} is caught (ε̂ > {eps:g}) in ≥ {rate:.0%} of seeds"),
)


def anchor_checks(frames: dict, caught_rate: float = 0.95) -> pd.DataFrame:
    rows: list[dict] = []
    add = V.claim_adder(rows, STUDY, CLAIMS)
    for fig_name, df in frames.items():
        s = summary(df)
        for r in s.itertuples():
            eps = r.claimed_epsilon
            if r.variant == "correct":
                ok = r.fire_rate == 0
                add("no-fire", f"ε̂ max {r.eps_lower_max:.3f} over {r.seeds} seed(s) "
                    f"({r.eps_lower_max / eps:.0%} of ε; ε_pair {r.eps_pair:.3f})", float(r.eps_lower_max),
                    V.holds() if ok else V.fails("PRIVACY BUG"), instance=f"{r.series}@ε={eps:g}", figure=fig_name,
                    label=r.label, eps=eps, bug="" if ok else " — PRIVACY BUG")
            else:
                ok = r.fire_rate >= caught_rate
                note = ""
                exact = not_broken_on_pair(r, eps)   # the twin's own ε on the pair, where known and ≤ ε
                if np.isfinite(exact):
                    note = (f"; twin's ε on the audited pair (exact, a proved bound over every pair, or the largest "
                            f"loss over outputs: the method's notes) {exact:.3f} "
                            "≤ ε: not broken on this pair (slack of the method's analysis), cannot be caught here")
                # a twin that is still ε-DP on every reachable pair cannot be caught: undecided
                add("twin-caught", f"caught in {r.fire_rate:.0%} of {r.seeds}; ε̂ median {r.eps_lower_median:.3f}{note}",
                    float(r.fire_rate), (V.holds() if ok else V.undecided("twin not broken on the audited pair")
                                         if note else V.fails("broken twin not caught")),
                    instance=f"{r.series}@ε={eps:g}/{r.variant}", figure=fig_name, label=r.label, eps=eps,
                    variant=r.variant, rate=caught_rate)
    return pd.DataFrame(rows, columns=V.COLUMNS)


# -- the study protocol (dpbench.studies.protocol): this module's functions as independent units of work ------------------

from dpbench.studies.protocol import UnitStudy, from_module  # noqa: E402 - wraps the functions above

STUDY_OBJECT = from_module(UnitStudy, globals(), name=STUDY, figures=FIGURES, source=STUDY, data_note=DATA_NOTE)
