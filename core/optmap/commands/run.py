"""``optmap run``: search a mapping for a problem and save the result."""

from __future__ import annotations

import contextlib
import math
import shlex
import sys
from pathlib import Path

from optmap.commands.common import (
    add_format_argument,
    add_parallel_arguments,
    add_problem_arguments,
    default_output,
    engine_options,
    format_console,
    load_problem,
    output_path,
    seed_argument,
)
from optmap.commands.progress import Progress
from optmap.errors import OptmapError


def add_parser(commands) -> dict:
    parser = commands.add_parser("run", help="search a mapping for a problem")
    add_problem_arguments(parser)
    parser.add_argument("--search", metavar="ENGINE", help="search engine (default: the file's [search] engine)")
    parser.add_argument("--seed", type=seed_argument, help="random seed (default: the file's [search] seed)")
    parser.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT (- for standard output)")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.add_argument("--layers", choices=("top", "all"), default="top",
                        help="per-layer table: the most expensive layers of a long network (top, default) or all")
    parser.add_argument("--plot", metavar="PNG", help="draw convergence and per-layer compute / communication "
                        "bars (needs matplotlib)")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the checkpoint (ga, optuna) or join the stored Optuna study")
    parser.add_argument("--checkpoint", metavar="FILE", help="checkpoint file of a resumable engine "
                        "(default: next to the result, <result>.checkpoint.json)")
    parser.add_argument("--checkpoint-every", type=float, default=10.0, metavar="SECONDS",
                        help="save the checkpoint at most this often while searching (default 10)")
    parser.add_argument("--storage", metavar="URL", help="Optuna storage, e.g. sqlite:///study.db or "
                        "postgresql://user:pass@host/db, shared by several optmap processes")
    parser.add_argument("--study", metavar="NAME", help="Optuna study name (default: the problem's name)")
    add_format_argument(parser)
    add_parallel_arguments(parser)
    return {"run": run}


def run(args) -> int:
    from optmap.output import exclusive, json_text, save
    from optmap.provenance import provenance
    from optmap.report import LAYER_ROWS, front_table, layer_table, report_tables, result_table
    from optmap.run import SearchFailed, solve
    from optmap.tabular import write

    if args.search is not None and not args.search.strip():
        raise OptmapError("--search '': name an engine (optmap plugins lists them)")
    if not math.isfinite(args.checkpoint_every) or args.checkpoint_every <= 0:
        raise OptmapError(f"--checkpoint-every must be a number of seconds > 0, got {args.checkpoint_every}")
    problem = load_problem(args)
    engine = args.search or problem.search.engine
    seed = problem.search.seed if args.seed is None else args.seed
    options = engine_options(problem, engine, args)
    to_stdout = args.json == "-"
    given = output_path(args.json, "--json", stdout=True)
    out = default_output(problem, engine, seed) if given is None or to_stdout else given
    # files beside the result, unless it is a device such as /dev/null: then beside the default result
    beside = out if to_stdout or not out.exists() or out.is_file() else default_output(problem, engine, seed)
    checkpoint = output_path(args.checkpoint, "--checkpoint") or beside.with_name(beside.stem + ".checkpoint.json")
    if not to_stdout and checkpoint.resolve() == out.resolve():
        raise OptmapError(f"--checkpoint and --json both name {out}; the result would overwrite the checkpoint")
    plot = output_path(args.plot, "--plot", suffix=".png")
    if plot:
        from optmap.plots import pyplot

        pyplot()  # a missing matplotlib is said before the search
    terminal = format_console(args, "--json -" if to_stdout else None)  # standard output: JSON or tables alone

    def keep(result, path: Path = out) -> str:
        text = json_text({"problem": problem.spec, **result.to_json(), "provenance": made})
        if to_stdout:
            sys.stdout.write(text + "\n")
            return "standard output"
        return str(save(path, text, fallbacks=[checkpoint.parent]))

    made = provenance(args.argv, problem.host)
    progress = Progress(f"{engine}")
    with exclusive(out) if not to_stdout else contextlib.nullcontext():
        try:
            result = solve(problem, engine=engine, seed=seed, options=options, progress=progress,
                           checkpoint=checkpoint, resume=args.resume, checkpoint_every=args.checkpoint_every,
                           workers=args.workers, scheduler=args.scheduler)
        except SearchFailed as failure:
            progress.close()
            if failure.result.evaluations:  # something was computed: keep it, never over an earlier result
                path = beside.with_name(beside.stem + ".failed.json") if out.exists() else out
                print(f"note: partial result written to {keep(failure.result, path)}", file=sys.stderr)
            raise
        progress.close()
        where = keep(result)
    limit = problem.search.budget.evaluations
    if limit and result.evaluations > limit and not result.extra.get("complete"):
        print(f"note: engine '{engine}' made {result.evaluations:,} evaluations, more than the budget's {limit:,} "
              f"(the budget is checked between batches); compare runs at equal evaluations with care",
              file=sys.stderr)
    tables = [result_table(result), front_table(result)]
    if not args.quiet:
        tables += [layer_table(result, rows=None if args.layers == "all" else LAYER_ROWS), *report_tables(result)]
    write(tables, args.format, terminal)
    terminal.print(f"result written to {where}")
    if plot:
        from optmap.plots import plot_run

        terminal.print(f"figure written to {save(plot, plot_run(result, problem.name), what='plot')}")
    if result.stopped == "interrupted":
        if checkpoint.exists():
            again = [word for word in args.argv if word != "--resume"] + ["--resume"]
            print(f"interrupted after {result.evaluations:,} evaluations; checkpoint {checkpoint}; continue with: "
                  f"{shlex.join(['optmap', *again])}", file=sys.stderr)
        else:
            print(f"interrupted after {result.evaluations:,} evaluations; no checkpoint could be written "
                  f"({checkpoint}), so a rerun starts afresh", file=sys.stderr)
        return 128 + int(result.extra.get("signal", 2))
    return 0
