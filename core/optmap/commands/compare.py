"""``optmap compare``: several engines side by side on one problem."""

from __future__ import annotations

import sys

from optmap.commands.common import (
    add_format_argument,
    add_parallel_arguments,
    add_problem_arguments,
    format_console,
    load_problem,
    output_path,
)
from optmap.commands.progress import Progress
from optmap.errors import OptmapError


def add_parser(commands) -> dict:
    parser = commands.add_parser("compare", help="run several engines side by side")
    add_problem_arguments(parser)
    parser.add_argument("--search", required=True, metavar="A,B,C", help="comma-separated engines")
    parser.add_argument("--seeds", default=None, metavar="0,1,2", help="comma-separated seeds")
    parser.add_argument("--baseline", metavar="ENGINE", help="engine whose value speedups are relative to "
                        "(default: the first engine)")
    parser.add_argument("--json", metavar="OUT", help="write the table and every run as JSON (- for standard output)")
    parser.add_argument("--csv", metavar="OUT", help="write the table as CSV, and every run's history beside it "
                        "(- for the table on standard output)")
    parser.add_argument("--plot", metavar="PNG", help="draw best-so-far against evaluations (needs matplotlib)")
    parser.add_argument("--layers", action="store_true",
                        help="also print each engine's per-layer decisions (first seed)")
    add_format_argument(parser)
    add_parallel_arguments(parser)
    return {"compare": compare}


def _names(option: str, text: str, expected: str, digits: bool = False) -> list[str]:
    """A comma-separated list from the command line: non-empty, no repeats (and whole numbers)."""
    names = [name.strip() for name in text.split(",")]
    if not all(names) or (digits and not all(n.isdigit() for n in names)):
        raise OptmapError(f"{option} '{text}': expected comma-separated {expected}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise OptmapError(f"{option} '{text}': '{repeated[0]}' is listed twice; list each once")
    return names


def compare(args) -> int:
    from optmap.comparison import compare as run_comparison
    from optmap.output import save
    from optmap.provenance import provenance
    from optmap.cost import unit
    from optmap.report import comparison_table
    from optmap.tabular import write

    engines = _names("--search", args.search, "engines, e.g. dp,owt,accpar")
    seeds = [int(s) for s in _names("--seeds", args.seeds, "whole numbers >= 0, e.g. 0,1,2", digits=True)] \
        if args.seeds is not None else None
    json_out, csv_out = output_path(args.json, "--json", stdout=True), output_path(args.csv, "--csv", stdout=True)
    plot_out = output_path(args.plot, "--plot", suffix=".png")
    to_stdout = "-" in (args.json, args.csv)
    if args.json == args.csv == "-":
        raise OptmapError("--json - and --csv -: only one of them can use standard output")
    problem = load_problem(args)
    seeds = seeds if seeds is not None else [problem.search.seed]
    if plot_out:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise OptmapError("--plot needs matplotlib: pip install 'optmap[plot]'")
    progress = Progress("compare")
    terminal = format_console(args, ("--json -" if args.json == "-" else "--csv -") if to_stdout else None)
    table = run_comparison(problem, engines, seeds, baseline=args.baseline or engines[0], progress=progress,
                    on_start=lambda name, seed: progress.restart(f"{name} (seed {seed})"),
                    workers=args.workers, scheduler=args.scheduler)
    progress.close()
    for run in table.runs:
        if run.extra.get("error"):
            print(f"note: {run.engine} (seed {run.seed}) failed: {run.extra['error']}", file=sys.stderr)
    cut = ", INTERRUPTED: partial" if table.interrupted else ""
    tables = [comparison_table(f"{problem.name}: {table.objective} ({table.best_known_source} "
                               f"{table.best_known:.6g}{cut})", table.rows, unit(problem.cost_model, table.objective))]
    if args.layers:
        from optmap.report import layer_table

        for name in engines:
            run = next((r for r in table.runs if r.engine == name and r.report is not None), None)
            layers = layer_table(run) if run is not None else None
            if layers is not None:
                layers.title = f"{name}: per-layer mapping"
                tables.append(layers)
    write(tables, args.format, terminal)
    made = provenance(args.argv, problem.host)
    if args.json == "-":
        sys.stdout.write(table.json_text(made) + "\n")
    elif json_out:
        terminal.print(f"table and runs written to {save(json_out, table.json_text(made), what='comparison')}")
    if csv_out:
        rows, history = table.csv_texts()
        if args.csv == "-":
            sys.stdout.write(rows)
        else:
            written = save(csv_out, rows, what="table")
            trail = save(written.with_name(csv_out.stem + ".history.csv"), history, what="history")
            terminal.print(f"table written to {written}, every run's history to {trail}")
    if plot_out:
        terminal.print(f"convergence plot written to {save(plot_out, table.plot(), what='plot')}")
    if table.interrupted:
        done = sum(run.stopped != "interrupted" for run in table.runs)
        print(f"interrupted after {done} of {len(engines) * len(seeds)} runs; the table's 'interrupted' column counts "
              f"the runs cut short or not started", file=sys.stderr)
        signals = [run.extra["signal"] for run in table.runs if "signal" in run.extra]
        return 128 + int(signals[-1] if signals else 2)
    return 0


