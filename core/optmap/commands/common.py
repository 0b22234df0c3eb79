"""What the commands share: the problem-file arguments, loading a problem with them, plugin warnings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from optmap.errors import OptmapError


def add_problem_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="problem file (TOML)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a key of the problem file (repeatable), e.g. workload.batch=256 or "
                             "system.groups.0.count=4")
    parser.add_argument("--fix", action="append", default=[], metavar="DECISION=VALUE",
                        help="pin a decision of the formulation (repeatable), e.g. tensor_parallel=8; "
                             "`optmap show FILE --decisions` lists them")


def add_parallel_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, metavar="N",
                        help="N local processes: a run or compare scores its batches there (for cost models "
                             "without a vectorised evaluator); a sweep runs its points there")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="the same on a Dask cluster, e.g. tcp://host:8786 (pip install 'optmap[distributed]')")


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("rich", "markdown", "csv", "json"), default="rich",
                        help="how tables are printed: rich terminal tables (default), or markdown, CSV or JSON "
                             "with full-precision numbers on standard output (other messages go to standard error)")


def format_console(args, stdout_taken: str | None = None):
    """The console for a command's messages: standard error when tables in another format, or
    ``stdout_taken`` (an option writing to standard output, e.g. ``--json -``), use standard output."""
    from optmap.report import console

    if stdout_taken and args.format != "rich":
        raise OptmapError(f"--format {args.format} and {stdout_taken}: only one of them can use standard output")
    return console(stderr=bool(stdout_taken) or args.format != "rich")


def seed_argument(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def disabled(args) -> tuple[str, ...]:
    names = []
    for text in args.disable or ():
        prefix, _, name = text.partition(":")
        if prefix != "no" or not name.strip():
            raise OptmapError(f"-p {text}: expected -p no:NAME to leave the installed plugin NAME out")
        names.append(name.strip())
    return tuple(names)


def load_plugins(args):
    """The plugin host for the command's --plugin and -p, after one warning line per failed plugin."""
    from optmap.host import load_host

    off = disabled(args)
    host = load_host(tuple(args.plugin or ()), off)
    unknown = [name for name in off if name not in host.installed]
    if unknown:
        from optmap.errors import did_you_mean

        raise OptmapError(f"-p no:{unknown[0]}: no installed plugin is called '{unknown[0]}'"
                          f"{did_you_mean(unknown[0], host.installed)} (optmap plugins lists them)")
    for line in host.warnings():
        print(line, file=sys.stderr)
    return host


def load_problem(args, every_error: bool = False):
    """The command's problem file, with --set, --fix, --plugin and -p applied (``every_error``:
    the OptmapError lists every problem of the file, see :func:`optmap.problem.build_problem`)."""
    from optmap.problem import load

    load_plugins(args)  # warns about plugins that failed to load
    return load(args.file, args.set, tuple(args.plugin or ()), args.fix, disabled(args), every_error)


def default_output(problem, engine: str, seed: int) -> Path:
    """``optmap-results/<problem>/<engine>-seed<N>.json``, with file-name-safe parts."""
    from optmap.output import file_stem

    return Path("optmap-results") / file_stem(problem.name) / f"{file_stem(engine)}-seed{seed}.json"


def engine_options(problem, engine: str, args) -> dict:
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


def output_path(value: str | None, option: str, stdout: bool = False, suffix: str | None = None) -> Path | None:
    """The file an output option names, checked before any work: not empty, not a folder, with
    ``suffix`` when given (``-`` is standard output where ``stdout`` allows it)."""
    if value is None:
        return None
    if stdout and value == "-":
        return Path("-")
    if not value.strip():
        raise OptmapError(f"{option} '': give a file name" + (" (or - for standard output)" if stdout else ""))
    path = Path(value)
    if value.endswith(("/", "\\")) or path.is_dir():
        raise OptmapError(f"{option} {value}: is a folder; give a file name, e.g. {path / ('out' + (path.suffix or '.json'))}")
    if suffix is not None and path.suffix.lower() != suffix:
        raise OptmapError(f"{option} {value}: optmap draws {suffix[1:].upper()} images; name the file "
                          f"{path.with_suffix(suffix).name}")
    return path
