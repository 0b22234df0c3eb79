"""`Budget`: how much an engine may spend, and the one rule every engine stops by."""

from __future__ import annotations

import math
from dataclasses import dataclass

from optmap.errors import OptmapError

# What a run may spend when neither the problem nor the command line says: every engine stops.
DEFAULT_EVALUATIONS = 20_000
DEFAULT_SECONDS = 60.0  # a run whose file sets no budget ends within a minute


@dataclass(frozen=True)
class Budget:
    """How much an engine may spend; ``None`` means no limit on that axis."""

    evaluations: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.evaluations is not None and (isinstance(self.evaluations, bool) or not isinstance(self.evaluations, int)
                                             or self.evaluations < 1):
            raise OptmapError(f"budget.evaluations must be a whole number >= 1, got {self.evaluations!r}")
        if self.seconds is not None and (isinstance(self.seconds, bool) or not isinstance(self.seconds, (int, float))
                                         or not math.isfinite(self.seconds) or self.seconds <= 0):
            raise OptmapError(f"budget.seconds must be a finite number > 0, got {self.seconds!r}")

    @property
    def bounded(self) -> bool:
        """True when at least one axis has a limit."""
        return self.evaluations is not None or self.seconds is not None

    def or_default(self, engine_default: Budget | None = None) -> Budget:
        """This budget, or when it sets no limit at all the engine's own default
        (``SearchEngine.default_budget``), else the finite default."""
        if self.bounded:
            return self
        return engine_default if engine_default is not None else Budget(DEFAULT_EVALUATIONS, DEFAULT_SECONDS)
