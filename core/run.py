"""Running one engine on one problem: engine construction, capability checks, interruption."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Callable

from optmap.errors import OptmapError
from optmap.host import call_with_options
from optmap.problem import Problem
from optmap.search import Budget, Evaluator, SearchResult


class SearchFailed(OptmapError):
    """An engine raised part-way; ``result`` holds what had been found until then."""

    def __init__(self, message: str, result: SearchResult) -> None:
        super().__init__(message)
        self.result = result


def make_engine(problem: Problem, name: str, options: dict[str, Any] | None = None):
    """The engine ``name`` built with the problem's ``[search.<name>]`` options (+ ``options``)."""
    entry = problem.host.get("search_engine", name)
    merged = {**problem.search.engine_options.get(name, {}), **(options or {})}
    engine = call_with_options(f"[search.{name}] engine '{name}'", entry.resolve(), merged)
    missing = set(getattr(engine, "requires", ())) - set(problem.cost_model.capabilities)
    if missing:
        cost_name = problem.spec.get("cost", {}).get("model", "?")
        raise OptmapError(
            f"engine '{name}' needs the capability '{sorted(missing)[0]}', which cost model "
            f"'{cost_name}' does not offer; use a generic engine such as exhaustive, random, ga or optuna"
        )
    return engine


@contextlib.contextmanager
def _stop_on_signals(evaluator: Evaluator):
    """Ctrl-C / SIGTERM ask the engine to stop at its next check; a second Ctrl-C aborts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def request_stop(signum, frame):
        if evaluator.stop_requested:
            raise KeyboardInterrupt
        evaluator.stop_requested = True

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def solve(
    problem: Problem,
    engine: str | None = None,
    seed: int | None = None,
    budget: Budget | None = None,
    options: dict[str, Any] | None = None,
    progress: Callable[[Evaluator], None] | None = None,
) -> SearchResult:
    """Run one engine on ``problem`` and return its result (best mapping, report, history)."""
    name = engine or problem.search.engine
    seed = problem.search.seed if seed is None else seed
    search_engine = make_engine(problem, name, options)
    evaluator = Evaluator(
        problem.cost_model,
        problem.objectives,
        problem.constraints,
        budget or problem.search.budget,
        progress,
    )
    with _stop_on_signals(evaluator):
        try:
            extra = search_engine.search(evaluator, seed) or {}
        except OptmapError as exc:
            raise SearchFailed(f"engine '{name}': {exc}", evaluator.result(name, seed, f"error: {exc}")) from exc
        except Exception as exc:
            message = f"engine '{name}' raised {type(exc).__name__}: {exc}"
            raise SearchFailed(message, evaluator.result(name, seed, f"error: {message}")) from exc
    stopped = "interrupted" if evaluator.stop_requested else "budget" if evaluator.exhausted else "complete"
    result = evaluator.result(name, seed, stopped, extra)
    if result.best is None:
        raise SearchFailed(
            f"engine '{name}' found no feasible mapping in {result.evaluations} evaluations; "
            "relax [constraints], enlarge the system or raise the budget",
            result,
        )
    return result
