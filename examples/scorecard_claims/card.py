"""One row of the scorecard: a paper's claim, optmap's value for it, and how the two compare.

A claim is one of three kinds:

* ``number``: the paper states a value; status by the relative error |optmap − paper| / |paper|
  (``reproduced`` within 10 %, ``close`` within 25 %, else ``differs``);
* ``range``: the paper states a range "lo to hi"; the error is the distance to the nearer end,
  relative to it (zero inside the range), with the same thresholds;
* ``finding``: a qualitative finding (who wins, which parallelism a layer gets, a trend); the
  status is ``reproduced`` on an exact match of the finding, else ``differs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

REPRODUCED, CLOSE = 0.10, 0.25  # relative-error thresholds of the scorecard (issue 24)
STATUSES = ("reproduced", "close", "differs")

Kind = Literal["number", "range", "finding"]


def relative_error(paper: float | tuple[float, float], optmap: float) -> float:
    """|optmap − paper| / |paper|; for a range (lo, hi), the distance to the nearer end over it."""
    if isinstance(paper, tuple):
        lo, hi = paper
        if lo <= optmap <= hi:
            return 0.0
        end = lo if optmap < lo else hi
        return abs(optmap - end) / abs(end)
    return abs(optmap - paper) / abs(paper)


def status_of(kind: Kind, paper, optmap) -> str:
    """The scorecard's status of one claim (the 10 % / 25 % rule, or an exact match)."""
    if kind == "finding":
        return "reproduced" if optmap == paper else "differs"
    if optmap is None or optmap != optmap:  # not computed, or NaN
        return "differs"
    error = relative_error(paper, float(optmap))
    return "reproduced" if error <= REPRODUCED else "close" if error <= CLOSE else "differs"


@dataclass
class Claim:
    """A headline claim of a paper beside optmap's value, computed now."""

    seed: str  # accpar, fpdeep, acctfm, dsm, mars, llm
    claim: str  # what the paper says, in a few words
    source: str  # table / figure / section of the paper
    paper: float | tuple[float, float] | str  # the paper's value, range or finding
    optmap: float | str | None  # optmap's value, computed from the models
    kind: Kind = "number"
    unit: str = ""  # "x", "%", "ms", ... (display only)
    detail: str = ""  # the numbers behind a finding, or where the value comes from
    explanation: str = ""  # why it differs (required unless reproduced)
    sensitivity: str = ""  # the study backing a `differs` row (a sweep file or a docs section)
    ci: bool = False  # part of the subset the test suite regenerates
    status: str = field(init=False)

    def __post_init__(self) -> None:
        self.status = status_of(self.kind, self.paper, self.optmap)

    @property
    def error(self) -> float | None:
        """The relative error of a numeric claim (None for findings)."""
        if self.kind == "finding" or self.optmap is None:
            return None
        return relative_error(self.paper, float(self.optmap))

    def as_dict(self) -> dict:
        paper = list(self.paper) if isinstance(self.paper, tuple) else self.paper
        return {"seed": self.seed, "claim": self.claim, "source": self.source, "kind": self.kind,
                "paper": paper, "optmap": self.optmap, "unit": self.unit, "status": self.status,
                "error": self.error, "detail": self.detail,
                "explanation": self.explanation if self.status != "reproduced" else "",
                "sensitivity": self.sensitivity if self.status == "differs" else "", "ci": self.ci}


def finding(flag: bool, yes: str = "holds", no: str = "does not hold") -> str:
    """A trend or comparison as the finding's text (exact-match status)."""
    return yes if flag else no


def in_ci(rows: list[Claim]) -> list[Claim]:
    """Mark a group of claims as part of the subset the test suite regenerates (cheap groups only)."""
    for row in rows:
        row.ci = True
    return rows
