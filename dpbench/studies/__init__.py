"""The registered studies: one object per source, each implementing the study protocol
(:mod:`dpbench.studies.protocol`) — the only interface the workflow, runner, plotter and report use."""

from dpbench.studies import audit, estimation, membership, song2018, vdm2020, wu2016
from dpbench.studies.protocol import Study

STUDIES: dict[str, Study] = {st.name: st for st in (
    vdm2020.Vdm2020Study(), song2018.Song2018Study(), wu2016.Wu2016Study(), estimation.EstimationStudy(),
    membership.MembershipStudy(), audit.AuditStudy())}


def study(name: str) -> Study:
    try:
        return STUDIES[name]
    except KeyError:
        raise ValueError(f"unknown study {name!r}; known: {sorted(STUDIES)}") from None
