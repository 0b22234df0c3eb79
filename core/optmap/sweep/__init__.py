"""Studies: one problem run over a grid of overrides, variants, engines and seeds (``optmap sweep``).

- :mod:`~optmap.sweep.design`: the points (``--vary`` grids, ranges, ``*`` and ``+`` keys);
- :mod:`~optmap.sweep.sweepfile`: sweep files (variants, ladders, references, plot settings);
- :mod:`~optmap.sweep.store`: ``OUT.json`` / ``OUT.csv``, written atomically after every point;
- :mod:`~optmap.sweep.execute`: running points here, in local processes or on Dask;
- :mod:`~optmap.sweep.summary`, :mod:`~optmap.sweep.plot`: speedups, tables and the figure.

From Python::

    from optmap.sweep import sweep
    study = sweep(["problems/quickstart.toml"], vary=["system.groups.0.count=2,4,8,16"], out="scaling")
    study.rows[0]["objectives"]["time"]
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optmap.errors import OptmapError
from optmap.sweep.design import Point, grid_size, parse_vary, points
from optmap.sweep.execute import run_tasks, task
from optmap.sweep.store import Store, check_out
from optmap.sweep.summary import axes, derive
from optmap.sweep.sweepfile import SweepFile, read_sweep_file

__all__ = ["Study", "plan", "sweep"]


@dataclass
class Study:
    """A sweep's points and rows (this sweep's, in grid order), with what its figure shows."""

    title: str
    points: list[Point]
    store: Store
    objectives: tuple[str, ...]
    senses: tuple[str, ...]
    config: SweepFile
    derived: str | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True
    signal: int = 2  # what interrupted an incomplete sweep (SIGINT; SIGTERM is 15)

    @property
    def todo(self) -> list[Point]:
        return [point for point in self.points if not self.store.done(point.id)]

    @property
    def foreign(self) -> int:
        """Rows of the output file that are not points of this sweep (kept, not shown)."""
        ids = {point.id for point in self.points}
        return sum(1 for key in self.store.rows if key not in ids)

    def figure(self, x: str | None = None, ys: Sequence[str] = ()) -> tuple[str, list[str], bool, list[str]]:
        """(x, series, x is numeric, y metrics) of the picture."""
        x, series, numeric = axes(self.rows, x or self.config.plot.get("x"))
        given = self.config.plot.get("y", [])
        wanted = list(ys) or ([given] if isinstance(given, str) else list(given))
        known = list(dict.fromkeys([*self.objectives, *([self.derived] if self.derived else []),
                                    *(k for row in self.rows for k in row.get("metrics", {}))]))
        unknown = [y for y in wanted if y not in known]
        if unknown:
            raise OptmapError(f"--y {unknown[0]}: no point of this sweep has that metric; choose from {', '.join(known)}")
        return x, series, numeric, wanted or ([self.derived] if self.derived else list(self.objectives))

    def plot(self, path: str | Path, x: str | None = None, ys: Sequence[str] = ()) -> Path:
        from optmap.sweep.plot import plot_sweep

        if not any(not row.get("error") for row in self.rows):
            raise OptmapError("nothing to plot: no point of the sweep finished without an error")
        x, series, numeric, ys = self.figure(x, ys)
        from optmap.sweep.summary import constants

        shared = constants(self.rows, skip=("problem",) if self.title == self.rows[0]["problem"] else ())
        title = f"{self.title}\n{shared}" if shared else self.title
        from optmap.output import save

        image = plot_sweep(self.rows, x, series, ys, numeric, self.config.references, title, self.config.plot)
        return save(path, image, what="plot")


CHECKED_POINTS = 200  # points built before a sweep runs: every file and variant, then every axis value


def _validate(study: Study, engines: list[str | None], plugins, disabled) -> None:
    """Build the first point of every problem file and variant (and every named engine on it),
    then the first point with each value of each varied key, so that a value no point can run
    (``--vary workload.batch=8,-1``) is refused before anything runs. At most
    :data:`CHECKED_POINTS` are built; a point beyond them that fails is a row with its error."""
    from optmap.problem import build_problem
    from optmap.run import make_engine

    chosen: dict[tuple, Point] = {}
    for point in study.points:
        chosen.setdefault((point.file, point.coords["variant"]), point)
    firsts = len(chosen)
    for point in study.points:
        for key in point.axes:
            if key not in ("problem", "variant", "engine", "seed") and len(chosen) < CHECKED_POINTS:
                chosen.setdefault((point.file, point.coords["variant"], key, repr(point.coords[key])), point)
    for index, point in enumerate(chosen.values()):
        where = ", ".join(f"{key}={value}" for key, value in point.coords.items()
                          if key not in ("problem", "engine", "seed") and value is not None)
        try:
            problem = build_problem(copy.deepcopy(point.spec), Path(point.file), tuple(plugins), tuple(disabled))
        except OptmapError as exc:
            raise OptmapError(f"the sweep's point {where}: {exc}" if where else str(exc)) from None
        if index >= firsts:
            continue
        for engine in engines:
            make_engine(problem, engine or problem.search.engine)
        if not study.objectives:
            study.objectives, study.senses = problem.objectives, problem.senses or ("min",) * len(problem.objectives)


def plan(files: Sequence[str], vary: Sequence[str] = (), variants: str | None = None,
         engines: Sequence[str] = (), seeds: Sequence[int] = (), overrides: Sequence[str] = (),
         fixes: Sequence[str] = (), plugins: Sequence[str] = (), disabled: Sequence[str] = (),
         baseline: dict[str, Any] | None = None, out: str | Path = "sweep") -> Study:
    """The sweep's points, checked (every file, variant and engine builds), and its output store.

    The grammar is checked whole before anything is built: the output, the files, the engine
    names, and the grid's size (:func:`~optmap.sweep.design.grid_size`)."""
    check_out(out)
    if not files:
        raise OptmapError("a sweep needs at least one problem file")
    bad = next((name for name in engines if not isinstance(name, str) or not name.strip()), None)
    if bad is not None:
        raise OptmapError(f"engines: {bad!r} is not an engine name (optmap plugins lists them)")
    config = read_sweep_file(variants) if variants else SweepFile()
    grid = dict(config.vary)
    given = [parse_vary(text) for text in vary]
    keys = [key for key, _ in given]
    repeated = next((key for key in keys if keys.count(key) > 1), None)
    if repeated is not None:
        raise OptmapError(f"--vary {repeated} is given twice; list all its values in one --vary")
    grid.update(given)  # the command line's --vary wins over the file's
    names = list(engines) or config.engines or [None]
    chosen = list(seeds) or config.seeds or [None]
    if baseline:
        config.baseline = baseline
    grid_size(len(files), len(config.variants), list(grid.items()), len(names), len(chosen))
    grid_points = points(list(files), list(grid.items()), config.variants, names, chosen, list(overrides),
                         list(fixes), config.cumulative)
    unique = list({point.id: point for point in grid_points}.values())
    for key, value in (config.baseline or {}).items():
        if not any(point.coords.get(key) == value for point in unique):
            values = sorted({"each problem's own" if point.coords.get(key) is None else repr(point.coords.get(key))
                             for point in unique})
            raise OptmapError(f"--baseline {key}={value}: no point of the sweep has it ({key} takes {', '.join(values)})")
    title = config.title or ", ".join(dict.fromkeys(str(point.coords["problem"]) for point in unique))
    study = Study(title, unique, Store(out, title), (), (), config)
    _validate(study, names, plugins, disabled)
    return study


def run(study: Study, workers: int | None = None, scheduler: str | None = None, plugins: Sequence[str] = (),
        disabled: Sequence[str] = (), on_row: Callable[[dict[str, Any]], None] | None = None) -> Study:
    """Run the points not yet in the output, recording each row as soon as it finishes."""

    def record(row: dict[str, Any]) -> None:
        study.store.add(row)
        if on_row is not None:
            on_row(row)

    jobs = [task(point, tuple(plugins), tuple(disabled)) for point in study.todo]
    try:
        study.complete = run_tasks(jobs, record, workers, scheduler, on_stop=lambda signum: setattr(study, "signal",
                                                                                                   signum))
    finally:
        summarise(study)
    return study


def summarise(study: Study) -> None:
    """This sweep's rows in grid order, with the speedup over the baseline; files rewritten."""
    study.rows = []
    for point in study.points:
        if point.id in study.store.rows:
            study.rows.append(study.store.rows[point.id])
            study.rows[-1]["axes"] = point.axes  # rows of an older optmap lack them
    sense = study.senses[0] if study.senses else "min"
    study.derived = derive(study.rows, study.config.baseline, study.objectives[0], sense) if study.objectives else None
    if study.rows:  # the files list this sweep's rows in grid order (workers finish in any order), then the others
        ours = {row["id"]: row for row in study.rows}
        study.store.rows = {**ours, **{key: row for key, row in study.store.rows.items() if key not in ours}}
        study.store.write()


def sweep(files: Sequence[str], vary: Sequence[str] = (), variants: str | None = None, out: str | Path = "sweep",
          workers: int | None = None, scheduler: str | None = None, **options: Any) -> Study:
    """Plan and run a sweep (see :func:`plan` for the options); returns the finished study."""
    study = plan(files, vary, variants, out=out, **options)
    return run(study, workers, scheduler, options.get("plugins", ()), options.get("disabled", ()))
