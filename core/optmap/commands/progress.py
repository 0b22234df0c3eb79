"""Progress of a long search on the terminal: a rich bar after one second, plain lines in logs."""

from __future__ import annotations

import sys
import time


class Progress:
    """A rich progress bar that appears only once a search has run for a second.

    When standard error is not a terminal (a log file, a batch job) it prints a plain line
    instead, after the first second and then every ``every`` seconds.
    """

    def __init__(self, label: str, every: float = 5.0) -> None:
        self.label = label
        self.bar = None
        self.task = None
        self.started = time.perf_counter()
        self.every = every
        self.logged = None
        self.plain = not sys.stderr.isatty()

    def restart(self, label: str) -> None:
        self.close()
        self.label = label
        self.started = time.perf_counter()
        self.logged = None

    def _log(self, evaluator) -> None:
        now = time.perf_counter()
        if now - self.started < 1.0 or (self.logged is not None and now - self.logged < self.every):
            return
        self.logged = now
        best = f"{evaluator.best_value:.6g}" if evaluator.best_f is not None else "- (none feasible yet)"
        total = _total(evaluator)
        done = f"{evaluator.evaluations:,}" + (f"/{total:,}" if total else "")
        limit = _seconds(evaluator)
        elapsed = f"{evaluator.elapsed:.1f}" + (f"/{limit:g}" if limit else "")
        why = _why(evaluator)
        print(f"{self.label}: {done} evaluations{why}, best {best}, {elapsed} s", file=sys.stderr, flush=True)

    def __call__(self, evaluator) -> None:
        if self.plain:
            self._log(evaluator)
            return
        if self.bar is None:
            if time.perf_counter() - self.started < 1.0:
                return
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("best {task.fields[best]}"), TimeElapsedColumn(), transient=True)
            self.bar.start()
            limit = f" (stops at {_seconds(evaluator):g} s)" if _seconds(evaluator) else ""
            self.task = self.bar.add_task(f"{self.label}{_why(evaluator)}{limit}", total=_total(evaluator), best="-")
        best = f"{evaluator.best_value:.5g}" if evaluator.best_f is not None else "-"
        # the total again: an engine may announce its count after the bar appeared (mars, after its seeds)
        self.bar.update(self.task, completed=evaluator.evaluations, total=_total(evaluator), best=best)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
        self.bar = None


def _total(evaluator) -> int | None:
    """The evaluations a bar counts to: what the engine announced, else the budget's."""
    return evaluator.expected or evaluator.budget.evaluations


def _seconds(evaluator) -> float | None:
    """The budget's time limit, if any."""
    return getattr(getattr(evaluator, "budget", None), "seconds", None)


def _why(evaluator) -> str:
    """`` (why the budget is what it is)`` when an engine tightened it (optuna's max_trials), else ""."""
    note = getattr(evaluator, "budget_note", "")
    return f" ({note})" if note else ""
