"""``optmap plugins``, ``validate``, ``show`` and ``schema``: what is installed, and what a problem is."""

from __future__ import annotations

import sys

from optmap.commands.common import (
    add_format_argument,
    add_problem_arguments,
    format_console,
    load_plugins,
    load_problem,
    output_path,
)


def add_parser(commands) -> dict:
    plugins_parser = commands.add_parser("plugins", help="list the plugins and what they register")
    plugins_parser.add_argument("--check", action="store_true", help="also import every factory registered by "
                                "import path (slower: loads pymoo, optuna...) and fail if one cannot be imported")
    add_problem_arguments(commands.add_parser("validate", help="check a problem file"))
    show_parser = commands.add_parser("show", help="show a problem's workload and system, a saved result "
                                      "(run --json, compare --json, sweep --out) or a model file")
    add_problem_arguments(show_parser)
    show_parser.add_argument("--plot", metavar="PNG", help="for a saved result, comparison or sweep: draw it again "
                             "(needs matplotlib)")
    show_parser.add_argument("--decisions", action="store_true",
                             help="for a problem: list every decision (the names --fix takes) and its values")
    show_parser.add_argument("--layers", choices=["all"], help="for a saved result: print every layer's row")
    add_format_argument(show_parser)
    commands.add_parser("schema", help="print the JSON Schema of problem files")
    return {"plugins": plugins, "validate": validate, "show": show, "schema": schema}


# Piped, `optmap plugins` keeps one line per registered name (scripts read it line by line), unless
# COLUMNS says otherwise.
LISTING_WIDTH = 220


def plugins(args) -> int:
    from rich.table import Table
    from rich.text import Text

    from optmap.host import KINDS
    from optmap.report import cell, console

    host = load_plugins(args)
    table = Table(title="optmap plugins")
    for column in ("kind", "name", "plugin", "package", "summary"):
        table.add_column(column)
    for kind in KINDS:
        for name in host.names(kind):
            entry = host.registries[kind][name]
            table.add_row(kind.replace("_", " "), name, entry.plugin, host.plugins.get(entry.plugin, ""),
                          cell(entry.summary))
    broken = _unimportable(host) if args.check else {}
    for (kind, name), reason in broken.items():
        entry = host.registries[kind][name]
        table.add_row(Text("failed", style="red"), name, entry.plugin, host.plugins.get(entry.plugin, ""), cell(reason))
    for name, reason in host.failures.items():
        table.add_row(Text("failed", style="red"), name, name, host.plugins.get(name, ""), cell(reason))
    # piped, the listing keeps one line per name whatever COLUMNS says (scripts read it)
    console(piped_width=LISTING_WIDTH, follow_columns=False).print(table)
    if broken:
        from optmap.errors import OptmapError

        count = f"{len(broken)} registered names are" if len(broken) > 1 else "1 registered name is"
        raise OptmapError(f"{count} broken; the first: {next(iter(broken.values()))}")
    return 0


def _unimportable(host) -> dict[tuple[str, str], str]:
    """(kind, name) → why, for every name whose factory, registered by import path, fails to
    import, and every file reader whose workload no plugin registers (a reader names a workload)."""
    from optmap.errors import OptmapError
    from optmap.extras import absent, missing_message, requirements
    from optmap.host import KINDS

    broken = {}
    for kind in KINDS:
        for name in host.names(kind):
            entry = host.registries[kind][name]
            if kind == "workload_reader":
                if entry.target not in host.registries["workload"]:
                    broken[(kind, name)] = (f"plugin '{entry.plugin}': '{name}' files are read by workload "
                                            f"'{entry.target}', which no plugin registers")
                continue
            try:
                factory = entry.resolve()
            except OptmapError as exc:
                broken[(kind, name)] = str(exc)
                continue
            missing = absent(requirements(factory))
            if missing:
                broken[(kind, name)] = f"plugin '{entry.plugin}': {missing_message(missing[0], f'{name!r}')}"
    return broken


def validate(args) -> int:
    """Check a problem file: every error it has, one ``error:`` line each (exit 2), or ``ok``."""
    from optmap.errors import OptmapError
    from optmap.run import make_engine

    try:
        problem = load_problem(args, every_error=True)
        make_engine(problem, problem.search.engine)  # its [search.<engine>] options and fit, as run checks them
    except OptmapError as exc:
        if args.debug:
            raise
        for problem_line in exc.problems:
            print(f"error: {' '.join(problem_line.split())}", file=sys.stderr)
        return 2
    print(f"{args.file}: ok ({problem.name}; {len(problem.cost_model.space)} decisions, "
          f"space size {problem.cost_model.space.size:.4g})")
    return 0


def show(args) -> int:
    from optmap.errors import OptmapError
    from optmap.report import rows_table
    from optmap.tabular import write

    kind = _file_kind(args)
    output_path(args.plot, "--plot", suffix=".png")
    if args.plot and kind not in ("result", "comparison", "sweep"):
        raise OptmapError(f"--plot redraws a saved result, comparison or sweep; {args.file} is a {kind} file "
                          f"(optmap run --plot draws a run)")
    if args.decisions and kind != "problem":
        raise OptmapError(f"--decisions lists a problem's decisions; {args.file} is a {kind} file")
    if args.layers and kind != "result":
        raise OptmapError(f"--layers all prints a saved result's layers; {args.file} is a {kind} file")
    if kind != "problem":
        return _show_saved(args, kind) if kind in ("result", "comparison", "sweep") else _show_model(args, kind)
    problem = load_problem(args)
    terminal = format_console(args)
    if args.decisions:
        write([rows_table(f"{problem.name}: {len(problem.cost_model.space)} decisions (--fix NAME=VALUE)",
                          _decision_rows(problem.space))], args.format, terminal)
        return 0
    workload, system = problem.workload, problem.system
    write([rows_table(f"workload {workload.name}: batch {workload.batch}, {workload.dtype}, {workload.phase}",
                      workload.describe())], args.format, terminal)
    terminal.print(workload.totals())  # labelled lines; on standard error with --format (messages go there)
    write([rows_table(f"system: {system.topology}, {system.count} accelerators", system.describe())],
          args.format, terminal)
    space = problem.cost_model.space
    terminal.print(f"design space: {len(space)} decisions, {space.size:.4g} points; objectives: "
                   f"{', '.join(problem.objectives)}")
    return 0


def _decision_rows(space) -> list[dict[str, str]]:
    """One row per decision: its name, kind and the values --fix accepts (pinned ones say so)."""
    rows = []
    for v in space.variables:
        if v.kind == "categorical":
            values = ", ".join(map(str, v.choices))
        elif v.kind == "permutation":
            values = f"an ordering of {', '.join(map(str, v.choices))}"
        else:
            values = f"{v.low:g} to {v.high:g}" + (" (whole numbers)" if v.kind == "integer" else "")
            if v.kind == "integer" and v.tag("step"):
                values += f", or value x {v.tag('step'):.4g} as results print it"
        rows.append({"decision": v.name, "kind": v.kind, "values": values,
                     "pinned": "" if v.pinned is None else str(v.pinned)})
    return rows


def _file_kind(args) -> str:
    """What ``optmap show FILE`` was given, by content: a saved JSON result (its kind), a model file
    that an installed reader loads (its workload name), or a problem file."""
    from pathlib import Path

    from optmap.errors import OptmapError

    path = Path(args.file)
    try:
        head = path.read_bytes()[:256].lstrip(b"\xef\xbb\xbf \t\r\n")
    except FileNotFoundError:
        raise OptmapError(f"{path}: no such file") from None
    except OSError:
        return "problem"  # the problem loader says what is wrong with the path
    if head.startswith(b"{"):
        from optmap.saved import read_saved

        return read_saved(path)[0]
    readers = load_plugins(args).registries["workload_reader"]
    suffix = path.suffix.lower()
    if suffix in readers:
        return readers[suffix].target
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        known = ", ".join(sorted(readers)) or "none"
        hint = "; pip install 'optmap[onnx]' to read ONNX models" if suffix == ".onnx" else ""
        raise OptmapError(f"{path}: a binary file that no installed plugin reads ('{suffix or '(no suffix)'}'; "
                          f"model files read here: {known}){hint}") from None
    return "problem"


def _no_overrides(args, what: str) -> None:
    from optmap.errors import OptmapError

    if args.set or args.fix:
        raise OptmapError(f"{args.file} is {what}: --set and --fix apply to problem files")


def _show_saved(args, kind: str) -> int:
    from optmap.report import (
        LAYER_ROWS,
        comparison_table,
        fmt,
        front_table,
        layer_table,
        plan_table,
        report_tables,
        result_table,
        rows_table,
    )
    from optmap.errors import OptmapError
    from optmap.saved import read_saved, result_from_json
    from optmap.tabular import write

    _no_overrides(args, f"a saved {kind}")
    _, data = read_saved(args.file)
    terminal = format_console(args)
    if kind == "result":
        result = result_from_json(data, str(args.file))
        problem = (data.get("problem") or {}).get("name") or str(args.file)
        terminal.print(f"saved result of {problem}: {len(result.extra['mapping'])} decisions, "
                       f"{len(result.history)} history points")
        plan = plan_table(result.report.plan) if result.report else None
        layers = layer_table(result, rows=None if args.layers == "all" else LAYER_ROWS)
        write([result_table(result), front_table(result), plan, layers, *report_tables(result)], args.format, terminal)
        if args.plot:
            from optmap.output import save
            from optmap.plots import plot_run

            terminal.print(f"figure written to {save(args.plot, plot_run(result, problem), what='plot')}")
        return 0
    if kind == "comparison":
        from optmap.cost import unit

        write([comparison_table(f"{data.get('problem') or args.file}: {data['objective']} "
                                f"({data.get('best_known_source', 'best')} {fmt(data.get('best_known'))})",
                                data["rows"], unit(None, data["objective"]))], args.format, terminal)
        if args.plot:
            from optmap.comparison import Comparison
            from optmap.output import save

            figure = Comparison.from_json(data).plot()
            terminal.print(f"figure written to {save(args.plot, figure, what='plot')}")
        return 0
    from optmap.sweep.summary import axes, flat_rows

    rows = data["rows"]
    columns = list(dict.fromkeys(key for row in rows for key in row.get("objectives", {})))
    columns += list(dict.fromkeys(key for row in rows for key in row.get("derived", {})))
    write([rows_table(data.get("title") or str(args.file), flat_rows(rows, columns))], args.format, terminal)
    if args.plot and rows:
        from optmap.output import save
        from optmap.sweep.plot import plot_sweep

        x, series, numeric = axes(rows)
        metrics = list(dict.fromkeys(key for row in rows for key in row.get("metrics", {})))
        ys = [c for c in columns if c.startswith("speedup_over_")] or columns[:1] or metrics[:1]
        if not ys:
            raise OptmapError(f"--plot: no row of {args.file} reports an objective or metric to draw")
        image = plot_sweep(rows, x, series, ys, numeric, (), data.get("title", ""))
        terminal.print(f"figure written to {save(args.plot, image, what='plot')}")
    return 0


def _show_model(args, reader: str) -> int:
    """A model file read by the workload plugin registered for its suffix (e.g. ONNX); the
    reader's options come from ``--set workload.KEY=VALUE`` (batch 1 unless given)."""
    import inspect

    from optmap.errors import OptmapError
    from optmap.problem.common import call
    from optmap.problem.spec import parse_override
    from optmap.report import rows_table
    from optmap.tabular import write

    if args.fix:
        raise OptmapError(f"{args.file} is a model file: --fix applies to problem files")
    host = load_plugins(args)
    entry = host.registries["workload"].get(reader)
    if entry is None:
        raise OptmapError(f"{args.file}: its reader '{reader}' is not a registered workload")
    options = {"file": str(args.file)}
    for text in args.set:
        path, value = parse_override(text)
        if len(path) != 2 or path[0] != "workload":
            raise OptmapError(f"--set '{text}': a model file takes the reader's options as workload.KEY=VALUE, "
                              f"e.g. --set workload.batch=32")
        options[path[1]] = value
    batch = inspect.signature(entry.resolve()).parameters.get("batch")
    if "batch" not in options and batch is not None and batch.default is inspect.Parameter.empty:
        options["batch"] = 1
    workload = call(f"{args.file}: workload '{reader}'", entry, options, section_keys=("file",))
    terminal = format_console(args)
    write([rows_table(f"workload {workload.name}: batch {workload.batch}, {workload.dtype}, {workload.phase}",
                      workload.describe())], args.format, terminal)
    terminal.print(workload.totals())
    return 0


def schema(args) -> int:
    import json

    from optmap.schema import problem_schema

    print(json.dumps(problem_schema(tuple(args.plugin or ())), indent=1))
    return 0


