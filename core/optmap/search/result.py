"""`SearchResult`: what one engine run found, with the measurements needed to compare engines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from optmap.cost import CostReport
from optmap.search.archive import HistoryPoint
from optmap.space import Mapping


@dataclass
class SearchResult:
    """The best mapping and its report, the Pareto front, the history and the cost of the run.

    ``values`` and ``history`` are metric values (a maximised objective is not negated);
    ``senses`` says which way each objective goes.
    """

    engine: str
    seed: int
    objectives: tuple[str, ...]
    best: Mapping | None
    values: dict[str, float]
    report: CostReport | None
    front: list[tuple[Mapping, dict[str, float]]]
    history: list[HistoryPoint]
    evaluations: int
    seconds: float
    stopped: str
    extra: dict[str, Any] = field(default_factory=dict)
    senses: tuple[str, ...] = ()
    units: dict[str, str] = field(default_factory=dict)  # metric -> unit, for reports

    def sense(self, objective: str) -> str:
        """``"max"`` or ``"min"`` for one of the objectives."""
        senses = self.senses or ("min",) * len(self.objectives)
        return dict(zip(self.objectives, senses)).get(objective, "min")

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "seed": self.seed,
            "objectives": list(self.objectives),
            "senses": list(self.senses or ("min",) * len(self.objectives)),
            "units": self.units,
            "values": self.values,
            "mapping": self.best.as_dict() if self.best else None,
            "report": self.report.to_json() if self.report else None,
            "front": [{"mapping": m.as_dict(), "values": v} for m, v in self.front],
            "history": [[h.evaluations, h.seconds, h.best] for h in self.history],
            "evaluations": self.evaluations,
            "seconds": self.seconds,
            "stopped": self.stopped,
            "extra": self.extra,
        }
