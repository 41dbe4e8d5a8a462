"""song2018 chapter 5 — the figures (titles, axes, captions) and the configuration rules of Scalable PATE
(Song 2018, §5.4). Light to import: no compute runs here."""

from __future__ import annotations

from dpbench.config import ConfigError
from dpbench.studies.base import FigureSpec
from dpbench.studies.song2018.ch5_compute import FIGURES as CH5_FIGURES
from dpbench.studies.song2018.ch5_compute import STUDY

FIGURES: dict[str, FigureSpec] = {
    "table5_1": FigureSpec(STUDY, "table5_1", "Utility and privacy of the students", "row", "aggregator",
                           "see columns", ("ch5_mnist", "ch5_glyph"),
                           "Table 5.1: queries answered, privacy bound ε (data-dependent RDP, δ = 1e-5 MNIST, 1e-8 "
                           "Glyph-like), student accuracy and non-private baseline for LNMax, Confident-GNMax and "
                           "Interactive-GNMax (two rounds); 250 teachers (MNIST), 5,000 (Glyph-like).",
                           anchors=("A5.mnist",)),
    "fig5_1": FigureSpec(STUDY, "fig5_1", "Glyph-like: LNMax vs Confident-GNMax", "answered",
                         "number of queries answered", "privacy cost ε (δ = 1e-8)", ("ch5_glyph",),
                         "Fig. 5.1: left — student accuracy; middle — privacy cost ε at δ = 1e-8 vs number of queries "
                         "answered; right — answered queries per bin of % teachers that agree; LNMax vs "
                         "Confident-GNMax, 5,000 teachers.", xscale="linear", anchors=("A5.confident",)),
    "fig5_4": FigureSpec(STUDY, "fig5_4", "Label accuracy vs privacy cost", "epsilon", "privacy cost ε (δ = 1e-8)",
                         "label accuracy of the aggregated labels", ("ch5_left", "ch5_right"),
                         "Fig. 5.4: accuracy of the aggregated teacher labels against the recorded labels vs ε at "
                         "δ = 1e-8 over 4,000 queries; left — LNMax vs GNMax, 1,000 teachers, varying noise scale; "
                         "right — GNMax with 100, 500, 1,000 and 5,000 teachers.", xscale="log",
                         anchors=("A5.gnmax", "A5.teachers")),
    "fig5_5": FigureSpec(STUDY, "fig5_5", "Plurality votes and what the threshold keeps", "agreement",
                         "% teachers that agree", "number of queries", ("ch5_glyph",),
                         "Fig. 5.5: histogram of the plurality vote over 25,000 queries of 5,000 teachers: all "
                         "(LNMax answers all), answered by Confident-GNMax moderate (T = 3500, σ1 = 1500) and "
                         "aggressive (T = 5000, σ1 = 1500); dots (right, log axis): expected per-query RDP of "
                         "answering with GNMax, σ2 = 100.", xscale="linear", anchors=("A5.bins",)),
    "fig5_6": FigureSpec(STUDY, "fig5_6", "Privacy cost vs answered queries", "answered",
                         "number of queries answered", "privacy cost ε (δ = 1e-8)", ("ch5_glyph",),
                         "Fig. 5.6: privacy cost ε at δ = 1e-8 vs number of answered queries for LNMax (answers "
                         "all) and Confident-GNMax moderate / aggressive (σ2 = 100); the shaded part is the threshold "
                         "step's share.", xscale="linear", anchors=("A5.threshold",)),
}
assert tuple(FIGURES) == CH5_FIGURES

_REQUIRED = {"lnmax": ("b", "queries"), "gnmax": ("sigma", "queries"),
             "confident": ("T", "sigma1", "sigma2", "queries"), "interactive": ("round1", "round2", "gamma")}


def validate(cfg: dict, prefix: str) -> None:
    """Cross-field rules of the chapter-5 settings; raise ConfigError naming the key."""
    def bad(key, msg):
        raise ConfigError(f"invalid config: {prefix}.{key}: {msg}")

    figs = {k: v for k, v in cfg.get("figures", {}).items() if k in FIGURES and v is not None}
    if not figs:
        return
    if cfg.get("ch5") is None:
        bad("ch5", "the chapter-5 settings are required when a chapter-5 figure is enabled")

    def check(key, spec, dataset):
        for k in _REQUIRED[spec["aggregator"]]:
            if k not in spec:
                bad(key, f"aggregator {spec['aggregator']!r} needs {k!r}")
        if spec["aggregator"] == "interactive":
            if dataset != "glyph":
                bad(key, "Interactive-GNMax is configured for the Glyph-like rows only")
            for r in ("round1", "round2"):
                for k in ("sigma2", "queries"):
                    if k not in spec[r]:
                        bad(f"{key}.{r}", f"needs {k!r}")
    t = figs.get("table5_1")
    if t:
        for d in ("mnist", "glyph"):
            for i, spec in enumerate(t.get(d) or []):
                check(f"figures.table5_1.{d}[{i}]", spec, d)
    f1 = figs.get("fig5_1")
    if f1:
        for k in ("lnmax", "confident"):
            if f1[k]["aggregator"] != k:
                bad(f"figures.fig5_1.{k}.aggregator", f"must be {k!r}")
            check(f"figures.fig5_1.{k}", f1[k], "glyph")
        if "sigma2" not in f1["right_confident"]:
            bad("figures.fig5_1.right_confident", "needs 'sigma2'")
    f4 = figs.get("fig5_4")
    if f4 and not (f4.get("left") or f4.get("right")):
        bad("figures.fig5_4", "enable 'left' or 'right' (or set the figure to null)")
    pool = cfg["ch5"]["glyph"]["pool"]
    for name in ("fig5_5", "fig5_6"):
        f = figs.get(name)
        if f and f["queries"] > pool:
            bad(f"figures.{name}.queries", f"{f['queries']} exceeds the Glyph-like pool ({pool})")
