"""Figure specifications as data, shared by the Snakefile (what to run) and the plotter (what to draw)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """One x position of one curve of a figure: the privacy and inference budgets of its cells, plus what
    the x axis changes besides them — ``problem`` overrides the data (e.g. ``(("n_train", 1000),)``),
    ``method`` overrides method settings (e.g. a fixed λ or the number of models T). Both are sorted
    (name, value) tuples so points are hashable. ``curve`` names one of several curves of a series
    (e.g. "ε = 0.1" in vdm2020 Fig. 6a); empty when a series has one curve."""

    x: float
    epsilon: float
    delta: float
    budget: int
    problem: tuple = ()
    method: tuple = ()
    curve: str = ""

    @property
    def setting(self) -> tuple:
        """What must be equal for two points to share a problem and a method instance."""
        return (self.problem, self.method)


@dataclass(frozen=True)
class FigureSpec:
    study: str
    name: str
    title: str
    x_name: str                      # "epsilon" | "budget" | ...
    x_label: str
    y_label: str
    methods: tuple[str, ...]
    caption: str                     # the source's caption, paraphrased, with its fixed parameters
    xscale: str = "log"
    anchors: tuple[str, ...] = ()    # claim ids checked from this figure's results
    substitute_note: str = ""        # why the figure itself is a substitute experiment (e.g. no CIFAR-10)


def lookup_figure(figures: dict, study: str, name: str) -> FigureSpec:
    """``figures[name]``, or a ValueError that lists the study's figures."""
    try:
        return figures[name]
    except KeyError:
        raise ValueError(f"unknown figure {name!r} for study {study}; known: {sorted(figures)}") from None


def left_out_note(series, wanted, labels: dict) -> list[str]:
    """A caption note naming the series a figure's ``methods`` list leaves out (none if ``wanted`` is None)."""
    left = [labels.get(m, m) for m in series if wanted is not None and m not in wanted]
    return [f"Series left out by the configuration: {', '.join(left)}."] if left else []


def preprocessing_note(df, labels: dict | None = None) -> list[str]:
    """Caption lines stating, per dataset, the preprocessing the rows record (columns ``preprocessing`` and
    ``preprocessing_data_dependent``), and whether the ε covers it. Empty if the rows lack the columns."""
    if "preprocessing" not in df or "dataset" not in df or not len(df):
        return []
    out = []
    for ds, g in df.groupby("dataset", sort=True):
        dep = bool(g["preprocessing_data_dependent"].astype(bool).any())
        out.append(f"Preprocessing ({(labels or {}).get(ds, ds)}): {'; '.join(sorted(g['preprocessing'].unique()))}"
                   + (" — the ε does not cover it." if dep else " (data-independent: covered by the ε)."))
    return out


def html_table(t, title: str, font_size: int = 13, index_label: str | None = None) -> str:
    """A titled HTML table of a DataFrame for a study's report page (every cell escaped); ``index_label``: show
    the index as a first column under that heading."""
    import html

    first = f"<th>{html.escape(index_label)}</th>" if index_label is not None else ""
    head = first + "".join(f"<th>{html.escape(str(c))}</th>" for c in t.columns)
    body = "".join("<tr>" + (f"<th>{html.escape(str(i))}</th>" if index_label is not None else "")
                   + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for i, row in zip(t.index, t.values))
    return (f"<h4>{html.escape(title)}</h4><table border='1' cellpadding='4' style='border-collapse:collapse;"
            f"font-family:sans-serif;font-size:{font_size}px'><tr>{head}</tr>{body}</table>")
