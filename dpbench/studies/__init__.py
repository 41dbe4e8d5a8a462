"""The registered studies: one object per source, each implementing the study protocol
(:mod:`dpbench.studies.protocol`) — the only interface the workflow, runner, plotter and report use."""

from dpbench.studies import audit, estimation, membership, song2018, vdm2020, wu2016
from dpbench.studies.protocol import Study

STUDIES: dict[str, Study] = {m.STUDY_OBJECT.name: m.STUDY_OBJECT
                              for m in (vdm2020, song2018, wu2016, estimation, membership, audit)}


def study(name: str) -> Study:
    try:
        return STUDIES[name]
    except KeyError:
        raise ValueError(f"unknown study {name!r}; known: {sorted(STUDIES)}") from None
