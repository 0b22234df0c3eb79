"""``optmap sweep``: a study over a grid of overrides, variants, engines and seeds."""

from __future__ import annotations

import contextlib
import signal
import sys

from optmap.commands.common import (
    add_format_argument,
    add_parallel_arguments,
    disabled,
    format_console,
    load_plugins,
    output_path,
    seed_argument,
)
from optmap.errors import OptmapError


def add_parser(commands) -> dict:
    parser = commands.add_parser("sweep", help="run a problem over a grid of overrides (a study)",
                                 description="Run a problem for every combination of --vary values (and "
                                             "--variants), record one row per point, plot the result.")
    parser.add_argument("files", nargs="+", metavar="PROBLEM", help="problem file(s) (TOML); several make a "
                        "'problem' axis")
    parser.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2,...",
                        help="values of one key (repeatable; the grid is their product): "
                             "system.groups.0.count=2,4,8, a range 5:100:5 or 2:256:*2, "
                             "system.groups.*.count for every group, a+b for two keys at once")
    parser.add_argument("--variants", metavar="FILE.toml", help="sweep file: named variants (a ladder with "
                        "cumulative = true), grid, engines, seeds, baseline, reference values, plot settings")
    parser.add_argument("--search", metavar="A,B", help="engine(s); several make an 'engine' axis "
                        "(default: the sweep file's, else each problem's [search] engine)")
    parser.add_argument("--seed", type=seed_argument, help="one seed (default: the problem's)")
    parser.add_argument("--seeds", metavar="0,1,2", help="several seeds (averaged in the figure)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a key at every point (repeatable)")
    parser.add_argument("--fix", action="append", default=[], metavar="DECISION=VALUE",
                        help="pin a decision at every point (repeatable)")
    parser.add_argument("--baseline", metavar="COORD=VALUE", help="add the speedup over this point, e.g. "
                        "engine=dp or variant=megatron")
    parser.add_argument("--out", metavar="OUT", help="write OUT.csv and OUT.json (default: "
                        "optmap-results/<problem>/sweep); a rerun skips the points already there")
    parser.add_argument("--plot", metavar="PNG", help="draw the sweep (needs matplotlib)")
    parser.add_argument("--x", metavar="KEY", help="the figure's x axis (default: the first numeric varied key)")
    parser.add_argument("--y", metavar="METRIC[,METRIC]", help="what the figure and table show "
                        "(default: the speedup, else the objective)")
    parser.add_argument("--markdown", metavar="FILE.md", help="also write the figure as a markdown table")
    add_format_argument(parser)
    add_parallel_arguments(parser)
    return {"sweep": sweep}


@contextlib.contextmanager
def _sigterm_stops(study):
    """SIGTERM outside a point's search stops the sweep as Ctrl-C does (inside one, the search's
    own handler stops it), and the exit status says which: 128 + the signal."""
    def stop(signum, frame):
        study.signal = signum
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: signals stay as they are
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _engines(text: str | None) -> list[str]:
    """``--search A,B``: engine names, none of them empty."""
    if text is None:
        return []
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise OptmapError(f"--search '{text}': expected comma-separated engine names, e.g. dp,owt "
                          f"(optmap plugins lists them)")
    repeated = [name for name in names if names.count(name) > 1]
    if repeated:
        raise OptmapError(f"--search '{text}': '{repeated[0]}' is listed twice; list each once")
    return names


def _seeds(args) -> list[int]:
    if args.seeds is not None and args.seed is not None:
        raise OptmapError("--seed and --seeds: give one seed with --seed or several with --seeds, not both")
    if args.seeds is None:
        return [] if args.seed is None else [args.seed]
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        seeds = [-1]
    if not seeds or min(seeds) < 0:
        raise OptmapError(f"--seeds '{args.seeds}': expected comma-separated whole numbers >= 0, e.g. 0,1,2")
    return seeds


def _baseline(text: str | None) -> dict | None:
    if not text:
        return None
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise OptmapError(f"--baseline '{text}': expected COORDINATE=VALUE, e.g. --baseline engine=dp")
    from optmap.problem.spec import parse_override

    return {key.strip(): parse_override(f"x={value}")[1]}


def _default_out(files: list[str]):
    """``optmap-results/<first problem>/sweep`` (file-name-safe), beside ``optmap run``'s results."""
    from pathlib import Path

    from optmap.output import file_stem
    from optmap.problem.spec import read_spec

    name = read_spec(files[0]).get("name", Path(files[0]).stem)
    return Path("optmap-results") / file_stem(str(name)) / "sweep"


def sweep(args) -> int:
    from optmap.output import exclusive
    from optmap.provenance import provenance
    from optmap.report import rows_table
    from optmap.sweep import plan, run
    from optmap.sweep.summary import flat_rows, markdown, pivot

    host = load_plugins(args)
    output_path(args.plot, "--plot", suffix=".png")
    output_path(args.markdown, "--markdown")
    if args.plot:
        from optmap.plots import pyplot

        pyplot()  # a missing matplotlib is said before anything runs
    plugins, off = tuple(args.plugin or ()), disabled(args)
    study = plan(args.files, args.vary, args.variants, _engines(args.search), _seeds(args), args.set, args.fix,
                 plugins, off, _baseline(args.baseline), _default_out(args.files) if args.out is None else args.out)
    store, todo = study.store, study.todo
    store.provenance = provenance(args.argv, host)
    terminal = format_console(args)
    done = len(study.points) - len(todo)
    how = f"{args.workers} local processes" if args.workers else f"Dask at {args.scheduler}" if args.scheduler else \
        "this process"
    terminal.print(f"sweep {study.title}: {len(study.points)} points"
                   + (f", {done} already in {store.json_path}" if done else "")
                   + (f"; running {len(todo)} in {how}" if todo else ""))
    progress = _Progress(len(todo), study.objectives)
    try:
        with _sigterm_stops(study), exclusive(store.json_path, "--out"):  # a second sweep on one output is refused
            run(study, args.workers, args.scheduler, plugins, off, on_row=progress.update)
    except KeyboardInterrupt:
        study.complete = False
    finally:
        progress.close()
    ys = [y.strip() for y in args.y.split(",")] if args.y else []
    x, series, _, ys = study.figure(args.x, ys) if study.rows else (None, [], False, ys)
    columns = list(dict.fromkeys([*ys, *study.objectives] + ([study.derived] if study.derived else [])))
    metrics = list(dict.fromkeys(k for row in study.rows for k in row.get("metrics", {})))
    if len(set(columns) | set(metrics)) <= 6:
        columns = list(dict.fromkeys(columns + metrics))
    if study.rows:
        from optmap.tabular import write

        write([rows_table(study.title, flat_rows(study.rows, columns))], args.format, terminal)
        terminal.print(f"rows written to {store.csv_path} and {store.json_path}")
    if study.foreign:
        rows = "1 row" if study.foreign == 1 else f"{study.foreign} rows"
        terminal.print(f"({rows} of {store.json_path} from other sweeps or an edited problem: kept, not shown)")
    if args.plot and study.rows:
        terminal.print(f"figure written to {study.plot(args.plot, args.x, ys)}")
    if args.markdown and study.rows:
        from optmap.output import save

        heading = study.config.plot.get("xlabel") or x
        tables = [(f"**{y}**\n\n" if len(ys) > 1 else "")
                  + markdown(pivot(study.rows, x, series, y, study.config.references), {x: heading}) for y in ys]
        terminal.print(f"table written to {save(args.markdown, chr(10).join(tables), what='table')}")
    failed = [row for row in study.rows if row.get("error")]
    if not study.complete:
        left = len(study.points) - sum(store.done(point.id) for point in study.points)
        print(f"interrupted: {left} of {len(study.points)} points left; rerun the same command to run only those",
              file=sys.stderr)
        return 128 + int(study.signal)  # as optmap run: 130 after Ctrl-C, 143 after SIGTERM
    if failed:
        print(f"{len(failed)} points failed (see the error column): {failed[0]['error']}; "
              f"a rerun tries them again", file=sys.stderr)
        return 1
    return 0


class _Progress:
    """A rich bar over the points on a terminal; one plain line per finished point elsewhere."""

    def __init__(self, total: int, objectives) -> None:
        self.total, self.count, self.objectives, self.bar = total, 0, objectives, None
        if total and sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                TextColumn("{task.fields[last]}"), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("sweep", total=total, last="")

    def update(self, row: dict) -> None:
        from optmap.report import fmt

        self.count += 1
        values = ", ".join(f"{k} {fmt(v)}" for k, v in row.get("objectives", {}).items()) or row.get("error") or ""
        point = " ".join(f"{k}={v}" for k, v in row.get("set", {}).items())
        line = f"{point} {row.get('variant') or ''} {row['engine']} seed {row['seed']}: {values}".replace("  ", " ")
        if self.bar is not None:
            self.bar.update(self.task, completed=self.count, last=line.strip()[:60])
        else:
            print(f"[{self.count}/{self.total}] {line.strip()} ({row.get('seconds', 0):.2f} s)", file=sys.stderr,
                  flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
