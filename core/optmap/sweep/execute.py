"""Running a sweep's points: in this process, in local worker processes, or on a Dask cluster.

A point travels as a plain task (its problem table after overrides, the file's path for
relative model files, engine, seed, plugins), so a worker needs neither the problem file nor
this process's state: it builds the problem, runs ``optmap.solve`` and returns the point's row.

Interruption: Ctrl-C reaches every process of the terminal's group. A point whose search is
stopped part-way comes back ``stopped = "interrupted"`` and is not recorded; points not yet
started are cancelled; points that finish while the pool winds down are recorded. Local workers
ignore Ctrl-C outside a search (they finish the point's set-up and then stop at the search's
first check).
"""

from __future__ import annotations

import copy
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optmap.errors import OptmapError


def task(point, plugins: tuple[str, ...] = (), disabled: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a worker needs to run ``point`` (a :class:`~optmap.sweep.design.Point`)."""
    varied = {key: value for key, value in point.coords.items() if key not in ("problem", "variant", "engine", "seed")}
    row = {"id": point.id, "problem": point.coords["problem"], "file": point.file, "variant": point.coords["variant"],
           "set": varied, "overrides": list(point.overrides), "engine": point.engine, "seed": point.seed,
           "axes": point.axes}
    return {"row": row, "spec": point.spec, "file": point.file, "plugins": tuple(plugins), "disabled": tuple(disabled)}


def run_point(job: dict[str, Any]) -> dict[str, Any]:
    """Build the point's problem, run its engine, and return its row (errors in ``error``)."""
    from optmap.problem import build_problem
    from optmap.run import SearchFailed, solve

    row = dict(job["row"])
    result = None
    try:
        problem = build_problem(copy.deepcopy(job["spec"]), Path(job["file"]), job["plugins"], job["disabled"])
        row["engine"] = row["engine"] or problem.search.engine
        row["seed"] = problem.search.seed if row["seed"] is None else row["seed"]
        result = solve(problem, engine=row["engine"], seed=row["seed"])
        row["error"] = None
    except SearchFailed as failure:  # stopped by Ctrl-C before it found anything: interrupted, not failed
        result = failure.result
        row["error"] = None if result.stopped == "interrupted" else str(failure)
    except OptmapError as exc:
        row["error"] = " ".join(str(exc).split())
    report = result.report if result is not None else None
    row.update(
        objectives={key: float(value) for key, value in (result.values if result else {}).items()},
        metrics={key: float(value) for key, value in (report.metrics if report else {}).items()},
        units=dict(getattr(result, "units", {}) or {}) if result else {},
        feasible=bool(report.feasible) if report else None,
        evaluations=result.evaluations if result else 0,
        seconds=round(result.seconds, 4) if result else 0.0,
        stopped="error" if row["error"] else result.stopped,  # "interrupted" rows are never recorded
    )
    if row["stopped"] == "interrupted":
        row["signal"] = int(result.extra.get("signal", signal.SIGINT))  # what stopped it: the exit status
    return row


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the search installs its own handler while it runs


def run_tasks(jobs: list[dict[str, Any]], on_row: Callable[[dict[str, Any]], None], workers: int | None = None,
              scheduler: str | None = None, on_stop: Callable[[int], None] | None = None) -> bool:
    """Run every job, calling ``on_row`` with each finished row; False when interrupted (then
    ``on_stop`` hears the signal that stopped a point's search, if one did)."""
    if workers is not None and workers < 1:
        raise OptmapError(f"--workers must be >= 1, got {workers}")
    if scheduler:
        return _on_dask(jobs, on_row, scheduler, on_stop)
    if workers and workers > 1 and len(jobs) > 1:
        return _in_processes(jobs, on_row, workers, on_stop)
    for job in jobs:
        if not _deliver(run_point(job), on_row, on_stop):
            return False
    return True


def _in_processes(jobs, on_row, workers: int, on_stop=None) -> bool:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")
    complete = True
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=context, initializer=_ignore_interrupts) as pool:
        pending = {pool.submit(run_point, job) for job in jobs}
        try:
            for future in as_completed(list(pending)):
                pending.discard(future)
                complete &= _deliver(future.result(), on_row, on_stop)
        except KeyboardInterrupt:
            complete = False
            for future in pending:
                future.cancel()
            for future in pending:  # those already running: record the ones that still finish
                if not future.cancelled():
                    try:
                        _deliver(future.result(), on_row, on_stop)
                    except BrokenProcessPool:  # a worker killed by the interrupt
                        pass
    return complete


def _deliver(row: dict[str, Any], on_row, on_stop=None) -> bool:
    if row["stopped"] == "interrupted":
        if on_stop is not None:
            on_stop(row.get("signal", signal.SIGINT))
        return False
    on_row(row)
    return True


def _on_dask(jobs, on_row, address: str, on_stop=None) -> bool:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise OptmapError("--scheduler needs Dask: pip install 'optmap[distributed]'") from None
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise OptmapError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    complete = True
    try:
        futures = [client.submit(run_point, job, pure=False) for job in jobs]
        try:
            for future in as_completed(futures, loop=client.loop):  # this client, not a default one
                complete &= _deliver(future.result(), on_row, on_stop)
        except KeyboardInterrupt:
            client.cancel(futures)
            complete = False
    finally:
        client.close()
    return complete
