"""Running one engine on one problem: engine construction, capability checks, interruption.

Also where a run meets its checkpoint (resumable engines declare ``resumable = True`` and save
through ``evaluator.checkpoint``) and its worker pool (``workers`` local processes or a Dask
``scheduler``, :mod:`optmap.parallel`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from optmap import extras
from optmap.checkpoint import Checkpoint
from optmap.errors import OptmapError, did_you_mean
from optmap.host import call_with_options
from optmap.problem import Problem
from optmap.search import Budget, Evaluator, SearchResult
from optmap.search.engine import misfit
from optmap.search.engine import missing as engine_missing


class SearchFailed(OptmapError):
    """An engine raised part-way; ``result`` holds what had been found until then."""

    def __init__(self, message: str, result: SearchResult) -> None:
        super().__init__(message)
        self.result = result


def make_engine(problem: Problem, name: str, options: dict[str, Any] | None = None):
    """The engine ``name`` built with the problem's ``[search.<name>]`` options (+ ``options``),
    refused before anything runs when it does not fit the problem's formulation."""
    entry = problem.host.get("search_engine", name)
    merged = {**problem.search.engine_options.get(name, {}), **(options or {})}
    what = f"[search.{name}] engine '{name}'"
    extras.check(entry.resolve(), f"engine '{name}'")
    engine = call_with_options(what, entry.resolve(), merged, plugin=entry.plugin, host=problem.host)
    absent = engine_missing(engine)
    if absent:
        raise OptmapError(f"{what}: plugin '{entry.plugin}' returned {type(engine).__name__}, not {absent}")
    reason = misfit(engine, problem.cost_model)
    if reason:
        raise OptmapError(
            f"engine '{name}' does not fit cost model '{problem.cost_name or '?'}': it {reason}; use a generic "
            f"engine such as exhaustive, random, ga or optuna"
        )
    _check_seed_plans(problem, name, getattr(engine, "seed_plans", None) or ())
    return engine


def _check_seed_plans(problem: Problem, name: str, plans) -> None:
    """Every name in an engine's ``seed_plans`` is an engine that fits the formulation or a plan
    the cost model names (``plans()``): refused before anything runs, by ``validate`` too."""
    engines, own = set(problem.host.names("search_engine")), None
    model = problem.cost_name or "?"
    for plan in plans:
        if plan in engines:
            reason = misfit(problem.host.get("search_engine", plan).resolve(), problem.cost_model)
            if reason:
                raise OptmapError(f"[search.{name}] seed_plans: engine '{plan}' does not fit cost model '{model}': "
                                  f"it {reason}")
            continue
        if own is None:  # only now: a formulation's plans may take a search of their own
            own = problem.cost_model.plans() if callable(getattr(problem.cost_model, "plans", None)) else {}
        if plan not in own:
            raise OptmapError(f"[search.{name}] seed_plans: unknown search engine '{plan}', and cost model '{model}' "
                              f"names no such plan{did_you_mean(plan, engines | set(own))}")


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
        evaluator.stop_signal = signum

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def resumable_engines(host) -> list[str]:
    """The registered engines that declare ``resumable = True`` (imports them: for error messages)."""
    names = []
    for name in host.names("search_engine"):
        try:
            if getattr(host.get("search_engine", name).resolve(), "resumable", False) is True:
                names.append(name)
        except OptmapError:
            continue  # a broken plugin is reported where it is used
    return names


def fingerprint(problem: Problem, engine: str, seed: int, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: problem (without [search]), engine, options, seed."""
    spec = {key: value for key, value in problem.spec.items() if key != "search"}
    merged = {**problem.search.engine_options.get(engine, {}), **(options or {})}
    return {"problem": spec, "engine": engine, "options": merged, "seed": seed}


def solve(
    problem: Problem,
    engine: str | None = None,
    seed: int | None = None,
    budget: Budget | None = None,
    options: dict[str, Any] | None = None,
    progress: Callable[[Evaluator], None] | None = None,
    *,
    checkpoint: str | Path | None = None,
    resume: bool = False,
    checkpoint_every: float = 10.0,
    workers: int | None = None,
    scheduler: str | None = None,
    batch_evaluate: Callable | None = None,
) -> SearchResult:
    """Run one engine on ``problem`` and return its result (best mapping, report, history).

    ``checkpoint``: file where a resumable engine (``resumable = True``) saves its state every
    ``checkpoint_every`` seconds and when it stops; ``resume=True`` continues from it (and lets
    an Optuna engine join its stored study). ``workers`` / ``scheduler`` score batches in local
    processes / on a Dask cluster; ``batch_evaluate`` passes an already open scorer instead.
    """
    name = engine or problem.search.engine
    seed = problem.search.seed if seed is None else seed
    search_engine = make_engine(problem, name, options)
    resumable = getattr(search_engine, "resumable", False)
    if resume and not resumable:
        raise OptmapError(f"engine '{name}' cannot resume (it keeps no checkpoint); resumable engines: "
                          f"{', '.join(resumable_engines(problem.host)) or 'none installed'}")
    state = Checkpoint(checkpoint if resumable else None, resume=resume, name=problem.name,
                       fingerprint=fingerprint(problem, name, seed, options), every=checkpoint_every)
    if resume and state.path is not None and not state.path.exists():
        print(f"note: no checkpoint at {state.path}; starting afresh", file=sys.stderr)
    if workers is not None and workers < 1:
        raise OptmapError(f"--workers must be >= 1, got {workers}")
    with contextlib.ExitStack() as stack:
        if batch_evaluate is None and (workers or scheduler):
            from optmap.parallel import ParallelScorer

            batch_evaluate = stack.enter_context(ParallelScorer(problem.cost_model, workers, scheduler))
        evaluator = Evaluator(
            problem.cost_model,
            problem.objectives,
            problem.constraints,
            (budget or problem.search.budget).or_default(getattr(search_engine, "default_budget", None)),
            progress,
            batch_evaluate=batch_evaluate,
            checkpoint=state,
            make_engine=lambda other: make_engine(problem, other),
            senses=problem.senses,
            lower_bounds=problem.lower_bounds,
            space=problem.space,
        )
        stored = state.load()
        if stored is not None:
            try:
                evaluator.restore(stored["evaluator"])
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                raise OptmapError(f"checkpoint {state.path} is damaged ({type(exc).__name__}: {exc}); delete it or "
                                  f"run without --resume") from None
        return _run(search_engine, name, seed, evaluator)


def _run(search_engine, name: str, seed: int, evaluator: Evaluator) -> SearchResult:
    with _stop_on_signals(evaluator):
        try:
            extra = search_engine.search(evaluator, seed) or {}
        except OptmapError as exc:
            raise SearchFailed(f"engine '{name}': {exc}", evaluator.result(name, seed, f"error: {exc}")) from exc
        except ModuleNotFoundError as exc:
            known = extras.needs(exc, f"engine '{name}'")
            if known is None:
                raise
            raise SearchFailed(str(known), evaluator.result(name, seed, f"error: {known}")) from exc
        except Exception as exc:
            message = f"engine '{name}' raised {type(exc).__name__}: {exc}"
            raise SearchFailed(message, evaluator.result(name, seed, f"error: {message}")) from exc
    if not isinstance(extra, dict):
        message = f"engine '{name}': search() returned {type(extra).__name__}, not a dict of facts or None"
        raise SearchFailed(message, evaluator.result(name, seed, f"error: {message}"))
    finished = extra.get("complete") is True  # an engine that says it covered its whole space
    stopped = "interrupted" if evaluator.stop_requested else "complete" if finished else \
        "budget" if evaluator.exhausted else "complete"
    if evaluator.stop_signal is not None:
        extra = {**extra, "signal": int(evaluator.stop_signal)}
    try:
        result = evaluator.result(name, seed, stopped, extra)
    except OptmapError as exc:  # the best mapping's report failed: keep what was found without it
        raise SearchFailed(str(exc), evaluator.result(name, seed, f"error: {exc}", extra, with_report=False)) from exc
    if result.best is None:
        raise SearchFailed(_nothing_feasible(name, result, evaluator, finished), result)
    return result


def _nothing_feasible(name: str, result: SearchResult, evaluator: Evaluator, finished: bool) -> str:
    """Why a run has no result, with the advice that fits."""
    if result.evaluations == 0:
        return f"engine '{name}' evaluated no mapping; it must score mappings through the evaluator"
    if evaluator.not_a_number == result.evaluations:
        return (f"engine '{name}': the cost model scored all {result.evaluations} mappings NaN; "
                f"check its evaluate_batch (or the system's figures)")
    budget = " or raise the budget" if evaluator.exhausted and not finished else ""
    return (f"engine '{name}' found no feasible mapping in {result.evaluations} evaluations; "
            f"relax [constraints] or enlarge the system{budget}")
