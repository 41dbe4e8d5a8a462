"""One module per source: figure specs (grid, series, caption, deviations, anchors)."""

from dpbench.studies import song2018, vdm2020

STUDIES = {"vdm2020": vdm2020, "song2018": song2018}


def study(name: str):
    try:
        return STUDIES[name]
    except KeyError:
        raise ValueError(f"unknown study {name!r}; known: {sorted(STUDIES)}") from None
