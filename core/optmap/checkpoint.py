"""Checkpoints: a resumable run's state in one JSON file, so an interrupted search goes on later.

Decisions:

- JSON, never pickle. A checkpoint holds the evaluator's state (evaluations, elapsed seconds,
  best, Pareto front, history) and the engine's own state (e.g. a GA population and its random
  generator's state), all plain numbers and lists. Reading a checkpoint therefore cannot run
  code, whatever file is handed to ``--resume``.
- A checkpoint is only ever read when the user asks for it (``resume=True``, ``--resume``).
- It records a fingerprint of what it belongs to (the problem without its ``[search]`` section,
  the engine, its options and the seed) and refuses to resume anything else, naming what
  differs. The budget is not part of it: resuming with a larger budget continues the search.
- Writes are atomic (temporary file, then rename), so a crash while writing leaves the
  previous checkpoint intact. Engines save at most every ``every`` seconds while they run and
  always when they stop (budget, completion, Ctrl-C or SIGTERM).

The object also tells engines about their run: ``name`` (the problem's) and ``resume``, which
engines with external state (an Optuna study in a database) use to name and join it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from optmap.errors import OptmapError
from optmap.output import atomic_write, json_text, write_failure

FORMAT = "optmap-checkpoint/1"


def digest(value: Any) -> str:
    """sha256 of ``value``'s canonical JSON (sorted keys): equal facts, equal digest."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class Checkpoint:
    """Where a run saves and finds its state. Without ``path`` nothing is written or read."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        resume: bool = False,
        name: str = "problem",
        fingerprint: dict[str, Any] | None = None,
        every: float = 10.0,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.resume = resume
        self.name = name
        self.fingerprint = dict(fingerprint or {})
        self.digest = digest(self.fingerprint)
        self.every = every
        self.engine_state: dict[str, Any] | None = None  # set by load() when resuming
        self.saves = 0
        self._last = time.perf_counter()

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def load(self) -> dict[str, Any] | None:
        """The stored ``{"evaluator": ..., "engine": ...}`` when resuming from an existing file."""
        if not self.resume or self.path is None or not self.path.exists():
            return None
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise OptmapError(f"checkpoint {self.path} cannot be read ({exc}); delete it or run without --resume") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise OptmapError(f"{self.path} is not an optmap checkpoint ({FORMAT}); delete it or run without --resume")
        if data.get("digest") != self.digest:
            stored = data.get("fingerprint", {})
            differ = sorted(k for k in set(stored) | set(self.fingerprint) if stored.get(k) != self.fingerprint.get(k))
            raise OptmapError(
                f"checkpoint {self.path} belongs to another run (differs in: {', '.join(differ) or 'content'}); "
                "resume with the same problem, engine, options and seed, or delete the checkpoint"
            )
        self.engine_state = data["engine"]
        return data

    def due(self) -> bool:
        return self.enabled and time.perf_counter() - self._last >= self.every

    def save(self, evaluator, engine_state: dict[str, Any]) -> None:
        """Write the evaluator's and the engine's state (atomically)."""
        if self.path is None:
            return
        payload = {
            "format": FORMAT,
            "digest": self.digest,
            "fingerprint": self.fingerprint,
            "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "evaluator": evaluator.state(),
            "engine": engine_state,
        }
        try:
            atomic_write(self.path, json_text(payload, indent=None))
        except OSError as exc:  # the search goes on; its result is saved elsewhere if need be
            print(f"warning: checkpoint {self.path} cannot be written ({write_failure(exc, self.path)}); the search "
                  f"goes on without checkpoints", file=sys.stderr)
            self.path = None
            return
        self.saves += 1
        self._last = time.perf_counter()

    def maybe_save(self, evaluator, engine_state: Callable[[], dict[str, Any]]) -> None:
        """Save if ``every`` seconds have passed since the last save (state built only then)."""
        if self.due():
            self.save(evaluator, engine_state())
