"""The "privacy as labelled" table: for every private method of every study, what its ε means.

One row per (study, method): the neighbouring relation the guarantee is for, what the ε covers, what it does
not cover (hyper-parameter tuning on private data, preprocessing, solver approximations), and the config
option that reproduces the source's own (weaker) accounting where one exists — with a note when the current
config has that option switched on. The table is data (:data:`ENTRIES`), read by :func:`table` and rendered
by :func:`html`; the report shows it as one page, and every result row carries the matching columns
(``neighbouring``, ``epsilon_achieved``, ``preprocessing``, ``preprocessing_data_dependent``).
"""

from __future__ import annotations

import html as _html
from dataclasses import dataclass
from typing import Callable

__all__ = ["Entry", "ENTRIES", "table", "html"]

REPLACE_ONE = "replace one record (same n)"


def _get(cfg: dict, path: str, default=None):
    node = cfg
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


@dataclass(frozen=True)
class Entry:
    study: str
    method: str
    relation: str
    covers: str
    not_covered: str
    source_option: str = "—"
    #: (config path, value meaning "the source's accounting is active", what the rows' true ε then is)
    source_switch: tuple[str, object, str] | None = None
    #: a check of the config that returns a warning string when the ε shown is not end to end
    extra: Callable[[dict], str] | None = None


def _prep_check(path: str, what: str) -> Callable[[dict], str]:
    """A check that flags the source's (data-dependent, non-private) preprocessing when it is switched on."""
    def check(cfg: dict) -> str:
        if _get(cfg, path) == "source":
            return f"ACTIVE: {path.split('.', 2)[-1]} = source — {what} (non-private preprocessing, not covered by ε)"
        return ""
    return check


_vdm_prep = _prep_check("studies.vdm2020.preprocessing", "rows divided by the largest training-row norm")
_wu_prep = _prep_check("studies.wu2016.ch4.preprocessing", "scaling by statistics of all rows")
_song_prep = _prep_check("studies.song2018.preprocessing.variant", "per-feature min-max / z-score on the training rows")


_VDM_TUNING = ("the choice of λ / clip by cross-validation on the training data (as in the paper; the "
               "chosen value is in every row)")

ENTRIES: tuple[Entry, ...] = (
    # --- vdm2020 (paper Eq. 1: D, D' differ in one training example) ---
    Entry("vdm2020", "model sensitivity (Alg. 1/3)", REPLACE_ONE,
          "the released model θ + noise, from the raw images on (per-row scaling); the L-BFGS error (noise for "
          "Δ(1 + η), Δ = 2K/(Nλ))", _VDM_TUNING, "preprocessing: source (max-norm scaling, labelled)",
          extra=_vdm_prep),
    Entry("vdm2020", "loss perturbation (Alg. 4/5)", REPLACE_ONE,
          "the released model: noise for a replaced record's gradient difference 2K, Jacobian term ρ = 2LC/ε",
          _VDM_TUNING + "; the L-BFGS stopping error (≤ η/2 of the record-level sensitivity, in the rows, not "
          "folded into ε)", "loss_perturbation.neighbouring: add_remove (paper Thm 3; 1.5ε replace-one)",
          ("studies.vdm2020.loss_perturbation.neighbouring", "add_remove", "1.5 × axis at δ = 0"), _vdm_prep),
    Entry("vdm2020", "prediction sensitivity (Alg. 6/7)", REPLACE_ONE,
          "all B answered queries (standard or advanced composition); the L-BFGS error", _VDM_TUNING, "—",
          extra=_vdm_prep),
    Entry("vdm2020", "subsample-and-aggregate (Alg. 8)", REPLACE_ONE + " (also add/remove)",
          "all B answered queries: exponential mechanism with β = ε*/2 (a moved vote changes two counts)",
          "nothing beyond the partition's randomness (no tuning)",
          "subsample_aggregate.beta_rule: paper (β = ε/B, Thm 7)",
          ("studies.vdm2020.subsample_aggregate.beta_rule", "paper", "2 × axis at δ = 0, ≈ 2× for δ > 0"),
          _vdm_prep),
    Entry("vdm2020", "DP-SGD (Eq. 4), linear and MLP", REPLACE_ONE,
          "every update: accountant at the add/remove budget (ε/2, δ/(1 + e^{ε/2})), exactly (ε, δ) for a "
          "replaced record; Poisson sampling",
          _VDM_TUNING.replace("λ / clip", "clip") + "; with sampling: shuffle the accountant's assumption fails",
          "dpsgd.neighbouring: add_remove (the paper's accounting; rows: replace-one ε by PLD)",
          ("studies.vdm2020.dpsgd.neighbouring", "add_remove", "between 1 and 2 × axis (PLD, in the rows)"),
          _vdm_prep),
    # --- membership (the attack game replaces one record) ---
    Entry("membership", "every private training method", REPLACE_ONE,
          "the released model; the drawn bounds (accuracy ≤ (e^ε + δ)/(1 + e^ε), TPR ≤ e^ε FPR + δ) are for this "
          "relation; loss perturbation with the replace-one calibration, model sensitivity with Δ(1 + η)",
          "nothing: hyper-parameters are fixed, not tuned on private data",
          "training.dpsgd.replace_one: double_bound (DP-SGD at add/remove (ε, δ), bound drawn at the group-privacy "
          "(2ε, (1 + e^ε)δ))",
          ("studies.membership.training.dpsgd.replace_one", "double_bound", "2ε at (1 + e^ε)δ (drawn so)")),
    # --- wu2016 ---
    Entry("wu2016", "bolt-on output perturbation (ch. 3, Alg. 1/2)", REPLACE_ONE,
          "the released model after PSGD (noise on the output only); rigorous strongly convex sensitivity "
          "2L/(γ b ⌊m/b⌋)", "the random permutation is not secret (the bound holds for every permutation)",
          "choices.sc_sensitivity: thesis (2L/(γmb), violated by a factor b; labelled nominal)",
          ("studies.wu2016.choices.sc_sensitivity", "thesis", "nominal only: the noise is b× too small")),
    Entry("wu2016", "SCS13 / BST14 noisy SGD (ch. 3)", REPLACE_ONE,
          "every noisy update (SCS13: ε/k per pass; BST14: ι = 4 for replace-one sensitivity 2; bst14_tight: the "
          "PLD of the mixture-of-Gaussians updates against the run without the record, chained to replace-one)",
          "—", "choices.bst14_iota: 1 (the thesis' ι, under-noised for replace-one)",
          ("studies.wu2016.choices.bst14_iota", 1, "nominal only: noise std halved for replace-one")),
    Entry("wu2016", "output / objective perturbation, functional mechanism (ch. 4)", REPLACE_ONE,
          "the released model (Alg. 5/6 Δ = 4(ρ + λR)/(λn); CMS11; FM coefficient sensitivity); Alg. 7 tuning "
          "of λ is private (its ε split is in the caption)",
          "the ORACLE variant tunes λ on the evaluation data: not private (a reference curve only)",
          "ch4.preprocessing: source (the thesis' feature and target scaling by statistics of all rows)",
          extra=_wu_prep),
    # --- song2018 ---
    Entry("song2018", "DP mini-batch SGD (ch. 3, update 3.6)", REPLACE_ONE,
          "every update (batch-sum sensitivity 2 for ‖x‖ ≤ 1), parallel composition over one pass",
          "nothing by default (features scaled by fixed domain bounds)",
          "preprocessing.variant: source (the thesis' min-max / z-score on the training rows)", extra=_song_prep),
    Entry("song2018", "local-DP SGD (ch. 4)", "any two records of one individual (local DP)",
          "each individual's reports (ε_C / ε_N)", "—", "—"),
    Entry("song2018", "PATE aggregators (ch. 5: LNMax, GNMax, Confident- / Interactive-GNMax)",
          "one teacher changes its vote (one training record; teachers on disjoint partitions)",
          "the released labels: data-dependent RDP composed over the queries (Theorem 5.3.1), Thm 2.2.4",
          "the data-dependent ε is computed from the votes and not sanitised (smooth-sensitivity GNSS not "
          "implemented), as in the source's Table 5.1", "—"),
    Entry("song2018", "Pufferfish mechanisms (ch. 7)", "Pufferfish: secrets s_i^a vs s_i^b under the class Θ "
          "of Markov chains", "the released histogram for every θ in Θ (GK16, MQM); GroupDP: group privacy",
          "data outside Θ; the simulated stand-ins estimate Θ from the same chains they release (as in the "
          "source; flagged in the rows' preprocessing_data_dependent); record-level DP is a different notion", "—"),
    # --- estimation ---
    Entry("estimation", "clipped mean / covariance, local vs central mean", REPLACE_ONE + " (n public)",
          "the released estimate (Laplace: ℓ1 sensitivity; Gaussian: ℓ2; local: each report)",
          "nothing (the clip bound is data-independent or a grid value)",
          "— (the notes' local scale B/ε would be 2ε-LDP; not offered)"),
    # --- audit ---
    Entry("audit", "white-box audit of every method above (dpbench.audit)", REPLACE_ONE + " (auditor-chosen pair)",
          "nothing of its own: it tests each method at its study's calibration; ε̂ is an empirical 95% lower "
          "bound on that method's ε, not a guarantee",
          "the broken twins, which are miscalibrated on purpose (every row names its variant)", "—"),
)


def table(config: dict) -> list[dict]:
    """The rows of the table for ``config``: each entry plus ``status``, which names an active source option
    (the rows then carry the true ε) or a warning from the entry's check."""
    studies = set((config or {}).get("studies", {}) or {})
    out = []
    for e in ENTRIES:
        if studies and e.study not in studies:
            continue
        notes = []
        if e.source_switch is not None:
            path, value, true_eps = e.source_switch
            if _get(config, path) == value:
                notes.append(f"ACTIVE: {path.split('.', 2)[-1]} = {value} — true ε = {true_eps}")
        if e.extra is not None and (w := e.extra(config)):
            notes.append(w)
        out.append({"study": e.study, "method": e.method, "neighbouring relation": e.relation,
                    "ε covers": e.covers, "ε does not cover": e.not_covered,
                    "source's accounting (option)": e.source_option,
                    "status": "; ".join(notes) or "correct calibration (default)"})
    return out


def html(config: dict) -> str:
    rows = table(config)
    cols = list(rows[0]) if rows else []
    head = "".join(f"<th>{_html.escape(c)}</th>" for c in cols)
    body = []
    for r in rows:
        warn = r["status"].startswith("ACTIVE")
        cells = "".join(f"<td>{_html.escape(str(r[c]))}</td>" for c in cols)
        body.append(f"<tr style='background:{'#fde2e2' if warn else 'white'}'>{cells}</tr>")
    return ("<html><head><meta charset='utf-8'><title>dpbench: privacy as labelled</title></head>"
            "<body style='font-family:sans-serif;font-size:13px'><h2>Privacy as labelled</h2>"
            "<p>What the ε on every figure's axis means, per method. Defaults are the correct calibrations for the "
            "stated neighbouring relation; a source's weaker accounting is an option, and when it is active its "
            "rows carry the true ε (<code>epsilon_achieved</code>) and its legend says “actual ε = … × axis”. "
            "Preprocessing is in each row's <code>preprocessing</code> and "
            "<code>preprocessing_data_dependent</code> columns and in the captions.</p>"
            "<table border='1' cellpadding='4' style='border-collapse:collapse'>"
            f"<tr>{head}</tr>{''.join(body)}</table></body></html>")
