"""One module per source: figure specs (grid, series, caption, deviations, anchors)."""

from dpbench.studies import audit, estimation, membership, song2018, vdm2020, wu2016

STUDIES = {"vdm2020": vdm2020, "song2018": song2018, "wu2016": wu2016, "estimation": estimation,
           "membership": membership, "audit": audit}


def study(name: str):
    try:
        return STUDIES[name]
    except KeyError:
        raise ValueError(f"unknown study {name!r}; known: {sorted(STUDIES)}") from None
