"""The ``optmap`` command line. Heavy modules are imported inside the commands, so --help is fast."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from optmap.errors import OptmapError


def _add_problem_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="problem file (TOML)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a key of the problem file (repeatable), e.g. workload.batch=256 or "
                             "system.groups.0.count=4")
    parser.add_argument("--fix", action="append", default=[], metavar="DECISION=VALUE",
                        help="pin a decision of the formulation (repeatable), e.g. tensor_parallel=8; "
                             "`optmap show FILE --decisions` lists them")


def _add_parallel_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, metavar="N",
                        help="score batches in N local processes (for cost models without a vectorised evaluator)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="score batches on a Dask cluster, e.g. tcp://host:8786 (pip install 'optmap[distributed]')")


def _seed(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def _global_arguments(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """--plugin, -p no:NAME and --debug, accepted before or after the command."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--plugin", action="append", default=default, metavar="MODULE",
                        help="also load the plugin module MODULE (repeatable)")
    parser.add_argument("-p", dest="disable", action="append", default=default, metavar="no:NAME",
                        help="leave the installed plugin NAME out (repeatable), e.g. -p no:acctfm")
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="show tracebacks for errors")


def build_parser() -> argparse.ArgumentParser:
    from optmap import __version__

    parser = argparse.ArgumentParser(prog="optmap", description="Map deep-learning work onto many accelerators.")
    parser.add_argument("--version", action="version", version=f"optmap {__version__}")
    _global_arguments(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _global_arguments(common, suppress=True)
    commands = parser.add_subparsers(dest="command", parser_class=lambda **kw: argparse.ArgumentParser(
        parents=[common], **kw))

    run = commands.add_parser("run", help="search a mapping for a problem")
    _add_problem_arguments(run)
    run.add_argument("--search", metavar="ENGINE", help="search engine (default: the file's [search] engine)")
    run.add_argument("--seed", type=_seed, help="random seed (default: the file's [search] seed)")
    run.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT")
    run.add_argument("--quiet", action="store_true", help="print only the summary")
    run.add_argument("--resume", action="store_true",
                     help="continue from the checkpoint (ga, optuna) or join the stored Optuna study")
    run.add_argument("--checkpoint", metavar="FILE", help="checkpoint file of a resumable engine "
                     "(default: next to the result, <result>.checkpoint.json)")
    run.add_argument("--checkpoint-every", type=float, default=10.0, metavar="SECONDS",
                     help="save the checkpoint at most this often while searching (default 10)")
    run.add_argument("--storage", metavar="URL", help="Optuna storage, e.g. sqlite:///study.db or "
                     "postgresql://user:pass@host/db, shared by several optmap processes")
    run.add_argument("--study", metavar="NAME", help="Optuna study name (default: the problem's name)")
    _add_parallel_arguments(run)

    compare = commands.add_parser("compare", help="run several engines side by side")
    _add_problem_arguments(compare)
    compare.add_argument("--search", required=True, metavar="A,B,C", help="comma-separated engines")
    compare.add_argument("--seeds", default=None, metavar="0,1,2", help="comma-separated seeds")
    compare.add_argument("--baseline", metavar="ENGINE", help="engine whose value speedups are relative to "
                         "(default: the first engine)")
    compare.add_argument("--json", metavar="OUT", help="write the table and every run as JSON")
    compare.add_argument("--csv", metavar="OUT", help="write the table as CSV")
    compare.add_argument("--plot", metavar="PNG", help="draw best-so-far against evaluations (needs matplotlib)")
    compare.add_argument("--layers", action="store_true", help="also print each engine's per-layer decisions (first seed)")
    _add_parallel_arguments(compare)

    commands.add_parser("plugins", help="list the plugins and what they register")
    validate = commands.add_parser("validate", help="check a problem file")
    _add_problem_arguments(validate)
    show = commands.add_parser("show", help="show a problem's workload and system")
    _add_problem_arguments(show)
    commands.add_parser("schema", help="print the JSON Schema of problem files")
    return parser


class _Progress:
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
        best = evaluator.best_f[0] if evaluator.best_f is not None else float("nan")
        total = evaluator.budget.evaluations
        done = f"{evaluator.evaluations:,}" + (f"/{total:,}" if total else "")
        print(f"{self.label}: {done} evaluations, best {best:.6g}, {evaluator.elapsed:.1f} s", file=sys.stderr, flush=True)

    def __call__(self, evaluator) -> None:
        if self.plain:
            self._log(evaluator)
            return
        if self.bar is None:
            if time.perf_counter() - self.started < 1.0:
                return
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("best {task.fields[best]}"), TimeElapsedColumn(), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=evaluator.budget.evaluations, best="-")
        best = evaluator.best_f[0] if evaluator.best_f is not None else float("nan")
        self.bar.update(self.task, completed=evaluator.evaluations, best=f"{best:.5g}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
        self.bar = None


def _disabled(args) -> tuple[str, ...]:
    names = []
    for text in args.disable or ():
        prefix, _, name = text.partition(":")
        if prefix != "no" or not name.strip():
            raise OptmapError(f"-p {text}: expected -p no:NAME to leave the installed plugin NAME out")
        names.append(name.strip())
    return tuple(names)


def _warn(host) -> None:
    for line in host.warnings():
        print(line, file=sys.stderr)


def _host(args):
    from optmap.host import load_host

    host = load_host(tuple(args.plugin or ()), _disabled(args))
    _warn(host)
    return host


def _load(args):
    """The command's problem file, with --set, --fix, --plugin and -p applied."""
    from optmap.problem import load

    _host(args)  # warns once about plugins that failed to load
    return load(args.file, args.set, tuple(args.plugin or ()), args.fix, _disabled(args))


def _default_output(problem, engine: str, seed: int) -> Path:
    return Path("optmap-results") / problem.name.replace(" ", "_").replace("/", "_") / f"{engine}-seed{seed}.json"


def _engine_options(problem, engine: str, args) -> dict:
    """--storage / --study as options of the engine, which must have them (optuna)."""
    given = {key: value for key, value in (("storage", args.storage), ("study", args.study)) if value is not None}
    if not given:
        return {}
    from optmap.options import options_model

    fields = options_model(problem.host.get("search_engine", engine).resolve()).model_fields
    for key in given:
        if key not in fields:
            raise OptmapError(f"--{key} applies to engines with a '{key}' option (optuna), not '{engine}'")
    return given


def cmd_run(args) -> int:
    from optmap.report import console, layer_table, report_tables, result_table, write_json
    from optmap.run import SearchFailed, solve

    problem = _load(args)
    engine = args.search or problem.search.engine
    seed = problem.search.seed if args.seed is None else args.seed
    options = _engine_options(problem, engine, args)
    progress = _Progress(f"{engine}")
    out = Path(args.json) if args.json else _default_output(problem, engine, seed)
    checkpoint = Path(args.checkpoint) if args.checkpoint else out.with_name(out.stem + ".checkpoint.json")
    try:
        result = solve(problem, engine=engine, seed=seed, options=options, progress=progress,
                       checkpoint=checkpoint, resume=args.resume, checkpoint_every=args.checkpoint_every,
                       workers=args.workers, scheduler=args.scheduler)
    except SearchFailed as failure:
        progress.close()
        write_json(out, {"problem": problem.spec, **failure.result.to_json()})
        print(f"partial result written to {out}", file=sys.stderr)
        raise
    progress.close()
    write_json(out, {"problem": problem.spec, **result.to_json()})
    terminal = console()
    terminal.print(result_table(result))
    layers = layer_table(result)
    if not args.quiet:
        for table in ([layers] if layers is not None else []) + report_tables(result):
            terminal.print(table)
    terminal.print(f"result written to {out}")
    if result.stopped == "interrupted":
        saved = f"; checkpoint {checkpoint}" if checkpoint.exists() else ""
        again = [word for word in args.argv if word != "--resume"] + ["--resume"]
        print(f"interrupted after {result.evaluations:,} evaluations{saved}; continue with: "
              f"{shlex.join(['optmap', *again])}", file=sys.stderr)
        return 128 + int(result.extra.get("signal", 2))
    return 0


def cmd_compare(args) -> int:
    from optmap.comparison import compare
    from optmap.report import console, rows_table

    problem = _load(args)
    engines = [name.strip() for name in args.search.split(",") if name.strip()]
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()] if args.seeds else [problem.search.seed]
    except ValueError:
        raise OptmapError(f"--seeds '{args.seeds}': expected comma-separated whole numbers, e.g. 0,1,2") from None
    if args.plot:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise OptmapError("--plot needs matplotlib: pip install 'optmap[plot]'")
    progress = _Progress("compare")
    terminal = console()
    table = compare(problem, engines, seeds, baseline=args.baseline or engines[0], progress=progress,
                    on_start=lambda name, seed: progress.restart(f"{name} (seed {seed})"),
                    workers=args.workers, scheduler=args.scheduler)
    progress.close()
    terminal.print(rows_table(f"{problem.name}: {table.objective} ({table.best_known_source} "
                              f"{table.best_known:.6g})", table.rows))
    if args.json:
        table.write_json(args.json)
        terminal.print(f"table and runs written to {args.json}")
    if args.csv:
        table_path, history_path = table.write_csv(args.csv)
        terminal.print(f"table written to {table_path}, every run's history to {history_path}")
    if args.plot:
        table.plot(args.plot)
        terminal.print(f"convergence plot written to {args.plot}")
    if args.layers:
        from optmap.report import layer_table

        for name in engines:
            run = next((r for r in table.runs if r.engine == name and r.report is not None), None)
            layers = layer_table(run) if run is not None else None
            if layers is not None:
                layers.title = f"{name}: per-layer mapping"
                terminal.print(layers)
    return 0


def cmd_plugins(args) -> int:
    from rich.table import Table

    from optmap.host import KINDS
    from optmap.report import console

    host = _host(args)
    table = Table(title="optmap plugins")
    for column in ("kind", "name", "plugin", "package", "summary"):
        table.add_column(column)
    for kind in KINDS:
        for name in host.names(kind):
            entry = host.registries[kind][name]
            table.add_row(kind.replace("_", " "), name, entry.plugin, host.plugins.get(entry.plugin, ""), entry.summary)
    for name, reason in host.failures.items():
        table.add_row("[red]failed[/red]", name, name, host.plugins.get(name, ""), reason)
    console().print(table)
    return 0


def cmd_validate(args) -> int:

    problem = _load(args)
    print(f"{args.file}: ok ({problem.name}; {len(problem.cost_model.space)} decisions, "
          f"space size {problem.cost_model.space.size:.4g})")
    return 0


def cmd_show(args) -> int:
    from optmap.report import console, rows_table

    problem = _load(args)
    terminal = console()
    workload, system = problem.workload, problem.system
    terminal.print(rows_table(f"workload {workload.name}: batch {workload.batch}, {workload.dtype}, {workload.phase}",
                              workload.describe()))
    terminal.print(rows_table(f"system: {system.topology}, {system.count} accelerators", system.describe()))
    space = problem.cost_model.space
    terminal.print(f"design space: {len(space)} decisions, {space.size:.4g} points; objectives: "
                   f"{', '.join(problem.objectives)}")
    return 0


def cmd_schema(args) -> int:
    import json

    from optmap.schema import problem_schema

    print(json.dumps(problem_schema(tuple(args.plugin or ())), indent=1))
    return 0


COMMANDS = {"run": cmd_run, "compare": cmd_compare, "plugins": cmd_plugins, "validate": cmd_validate,
            "show": cmd_show, "schema": cmd_schema}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return COMMANDS[args.command](args)
    except OptmapError as exc:
        if args.debug:
            raise
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)  # always one line
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
