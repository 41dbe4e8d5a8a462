"""song2018 chapter 5 — caption notes (every choice the thesis leaves open, every deviation; collected in
docs/studies/song2018.md#chapter-5-scalable-pate) and the caption text of Table 5.1 and Figs 5.1, 5.4-5.6."""

from __future__ import annotations

import pandas as pd

from dpbench.studies.song2018.ch5_spec import FIGURES

SIMULATED_GLYPH = (
    "SIMULATED DATA (Glyph-like): the Glyph data and its teacher votes are not public. Votes of M simulated "
    "teachers: {classes} classes, class prior ∝ rank^−{zipf} (most/least frequent {ratio:.0f}×), {noise:.0%} of the "
    "recorded labels uniform at random, per-query consensus a ~ Beta{easy} ({hard:.0%} hard queries: Beta{hardb}) "
    "× (1 − {decay}·log10(M/{ref})), votes ~ Multinomial(M, a·e_y + (1 − a)·Dir({conc})) over the other classes; "
    "student features: Gaussian class means in {dim} dimensions plus noise of std {fnoise}·(1 + {hardness}·(1 − a)); "
    "student = nearest class mean [INFERRED; the thesis uses ResNet teachers and a VAT student]. Pool {pool:,} "
    "queries, held-out {test:,}. Absolute numbers are not the thesis's.")


def _glyph_note(c5: dict) -> str:
    g = c5["glyph"]
    return SIMULATED_GLYPH.format(classes=g["classes"], zipf=g["zipf_exponent"],
                                  ratio=g["classes"] ** g["zipf_exponent"], noise=g["label_noise"],
                                  easy=tuple(g["consensus_beta"]), hard=g["hard_fraction"],
                                  hardb=tuple(g["hard_beta"]), decay=g["consensus_decay_per_decade"],
                                  ref=g["reference_teachers"], conc=g["confusion_concentration"],
                                  dim=g["feature_dim"], fnoise=g["feature_noise"], hardness=g["hardness"],
                                  pool=g["pool"], test=g["test"])


ACCOUNTING = ("Privacy: data-dependent RDP (Theorem 5.3.1 with the explicit bound of Papernot et al. 2018, Theorem "
              "6; threshold step at √2·σ1; LNMax: Papernot et al. 2017, Theorem 3 with the pure-ε fallback 2/b), "
              "composed over the queries and converted by Thm 2.2.4 over the orders 2-500 of the authors' analysis. "
              "Raw data-dependent ε (the thesis's Table 5.1 also reports raw values); Table 5.1 adds its "
              "smooth-sensitivity sanitisation (GNSS) when ch5.gnss is enabled. A larger noise scale can give a larger data-dependent ε when "
              "the bound's conditions stop holding for many queries (the data-independent bound then applies).")


def deviations(cfg: dict, name: str) -> list[str]:
    c5 = cfg["ch5"]
    fc = cfg["figures"][name]
    m = c5["mnist"]
    out = [ACCOUNTING]
    g = c5.get("gnss") or {}
    if name == "table5_1" and g.get("enabled"):
        out.append("GNSS (Papernot et al. 2018, App. B-C, Thm 23): the total data-dependent RDP at one order λ ("
                   + ("the raw ε's optimal order" if g.get("order") is None else f"λ = {g['order']:g}")
                   + ") released plus SS_β·N(0, σ_ss²), SS_β the β-smooth sensitivity from local-sensitivity bounds "
                   "at distance d of GNMax (bracketing q̃) and of the threshold step (the max vote moves by ≤ d), "
                   "β searched over [0.3/λ, 0.495/λ), σ_ss = (λe^{2β}/SS)^{1/3}; column 'ε GNSS': the expected "
                   f"sanitised ε (raw + GNSS cost at λ) / its value with the noise at the {g['quantile']:.0%} "
                   "quantile. Our local-sensitivity bounds are looser than the authors' (no vote-path condition "
                   "C6). LNMax rows: not applicable (the authors' analysis covers GNMax and the threshold step).")
    if name == "table5_1":
        if fc.get("mnist"):
            out.append(f"MNIST: {m['teachers']} teachers on disjoint random partitions of the first {m['n_train']:,} "
                       f"training images; each teacher and the student: one-vs-rest ridge regression (λ = {m['l2']}) "
                       f"on a data-independent Gaussian random projection to {m['projection_dim']} dimensions "
                       "[INFERRED: the thesis's teachers are CNNs and its student a semi-supervised GAN]; the pool is "
                       f"the first half of {m['n_test']:,} test images, the second half is held out. The student "
                       "learns from the answered queries only (no semi-supervised use of the rest), so its accuracy "
                       "is far below the thesis's. Baseline: the learner on all training images. LNMax b = 20 "
                       "(γ = 0.05 of the original PATE) [INFERRED]; Confident-GNMax pool size [INFERRED].")
        if fc.get("glyph"):
            out.append(_glyph_note(c5))
            out.append("Glyph-like baseline: the student learner on every pool query with its recorded label. LNMax "
                       "Laplace scale [INFERRED: the released Fig. 5.1 script's 50]. Interactive-GNMax: round 2 "
                       "uses the round-1 student's softmax of −‖x − μ_c‖²/(2τ), τ the per-dimension within-class "
                       "variance of the round-1 answers [INFERRED]; γ [INFERRED: not given]. 'Queries answered' "
                       "counts teacher labels; reinforced queries (the student's own confident labels, no privacy "
                       "cost beyond the threshold step) are listed beside them and used to train the final student "
                       "(the thesis's prose gives 10,422 answered, its table 4,341).")
        out.append("SVHN and Adult rows: not reproduced (their teacher votes are download-only).")
    else:
        out.append(_glyph_note(c5))
    if name == "fig5_1":
        out.append(f"Left: student accuracy of LNMax (b = {fc['lnmax']['b']:g}, {fc['lnmax']['queries']:,} queries) "
                   f"and Confident-GNMax (T = {fc['confident']['T']:g}, σ1 = {fc['confident']['sigma1']:g}, σ2 = "
                   f"{fc['confident']['sigma2']:g}, {fc['confident']['queries']:,} queries); right: Confident with "
                   f"T = {fc['right_confident']['T']:g}, σ1 = {fc['right_confident']['sigma1']:g} (released script).")
    elif name == "fig5_4":
        out.append(f"Noise grid {(fc.get('left') or fc.get('right'))['sigmas']} [INFERRED: not given]; LNMax's "
                   "Laplace scale b takes the same values as GNMax's σ. Label accuracy against the recorded labels "
                   "(which carry the simulated label noise).")
    elif name == "fig5_5":
        out.append(f"{fc['queries']:,} queries (the thesis's text; the released script uses 4,000), {fc['bins']} bins; "
                   f"bars: realised answers (one draw); dots: mean RDP at order {fc['order']:g} of GNMax σ2 = "
                   f"{fc['sigma2']:g} per bin (released script).")
    elif name == "fig5_6":
        out.append(f"LNMax b = {fc['lnmax_b']:g} answers every query; Confident-GNMax draws from a pool of "
                   f"{fc['queries']:,} queries; the shaded part is ε × the threshold step's share of the composed "
                   "RDP at the optimal order.")
    return out


def caption_text(config: dict, name: str, df: pd.DataFrame) -> str:
    cfg = config["studies"]["song2018"]
    lines = [FIGURES[name].caption, f"Data: {', '.join(sorted(df['dataset_variant'].unique()))}."]
    sub = sorted(df.loc[df["is_substitute"].astype(bool), "dataset_variant"].unique())
    if sub:
        lines.append(f"SIMULATED / SUBSTITUTE DATA ({', '.join(sub)}): the thesis's votes are not available; the "
                     "numbers are compared with it only qualitatively.")
    lines += [f"Note: {d}" for d in deviations(cfg, name)]
    return "\n".join(lines)
