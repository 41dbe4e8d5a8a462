"""The sources each study reproduces, as data: a short citation for tables and legends and the full reference.

One home for bibliographic facts: the report's claims page, the captions and ``docs/sources.md`` name a source
by these strings. A study that is dpbench's own (the audit) names the literature its method follows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    short: str   # for tables: "van der Maaten & Hannun (2020)"
    full: str    # the full reference
    url: str = ""


SOURCES: dict[str, Source] = {
    "vdm2020": Source(
        "van der Maaten & Hannun (2020)",
        "L. van der Maaten and A. Hannun. The Trade-Offs of Private Prediction. arXiv:2007.05089, 2020.",
        "https://arxiv.org/abs/2007.05089"),
    "wu2016": Source(
        "Wu (2016), PhD thesis",
        "X. Wu. A Study of Stability in Data Privacy. PhD dissertation, University of Wisconsin–Madison, 2016."),
    "song2018": Source(
        "Song (2018), PhD thesis",
        "S. Song. Privacy-Preserving Algorithms for Machine Learning. PhD dissertation, University of California "
        "San Diego, 2018.",
        "https://escholarship.org/uc/item/43j071fj"),
    "membership": Source(
        "Mondal (2024), lecture slides",
        "M. Mondal. Privacy and Security in Machine Learning. Lecture slides, CS 60081, Autumn 2024 (including "
        "R. Shokri's 'Data Privacy in Machine Learning' and A. Bellet's private machine learning slides)."),
    "estimation": Source(
        "Lecture 19 (2019), lecture notes",
        "Lecture 19: Additional topics in private machine learning. Lecture notes, December 5, 2019 (unsigned; "
        "in the style of G. Kamath's CS 860 'Algorithms for Private Data Analysis')."),
    "audit": Source(
        "privacy audit (Jagielski et al. 2020; Nasr et al. 2021, 2023)",
        "dpbench's own audit, following M. Jagielski, J. Ullman and A. Oprea, Auditing Differentially Private "
        "Machine Learning: How Private is Private SGD?, NeurIPS 2020; M. Nasr, S. Song, A. Thakurta, N. Papernot "
        "and N. Carlini, Adversary Instantiation: Lower Bounds for Differentially Private Machine Learning, IEEE "
        "S&P 2021; M. Nasr, J. Hayes, T. Steinke, B. Balle, F. Tramèr, M. Jagielski, N. Carlini and A. Terzis, "
        "Tight Auditing of Differentially Private Machine Learning, USENIX Security 2023."),
}


def source(study: str) -> Source:
    """The source of ``study``; a study without a declared source gets its own name (never a KeyError)."""
    return SOURCES.get(study, Source(study, study))
