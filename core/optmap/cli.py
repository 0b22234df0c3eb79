"""The ``optmap`` command line: the global options, the commands of :mod:`optmap.commands`, errors.

Heavy modules are imported inside the commands, so ``optmap --help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from optmap.commands import MODULES
from optmap.errors import OptmapError


def _global_arguments(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """--plugin, -p no:NAME and --debug, accepted before or after the command."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--plugin", action="append", default=default, metavar="MODULE",
                        help="also load the plugin module MODULE (repeatable)")
    parser.add_argument("-p", dest="disable", action="append", default=default, metavar="no:NAME",
                        help="leave the installed plugin NAME out (repeatable), e.g. -p no:acctfm")
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="show tracebacks for errors")


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    """The parser and the command functions by name."""
    from optmap import __version__

    parser = argparse.ArgumentParser(prog="optmap", description="Map deep-learning work onto many accelerators.")
    parser.add_argument("--version", action="version", version=f"optmap {__version__}")
    _global_arguments(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _global_arguments(common, suppress=True)
    commands = parser.add_subparsers(dest="command", parser_class=lambda **kw: argparse.ArgumentParser(
        parents=[common], **kw))
    functions = {}
    for name in MODULES:
        functions.update(importlib.import_module(f"optmap.commands.{name}").add_parser(commands))
    return parser, functions


def single_threaded_blas() -> None:
    """Start numpy's BLAS with one thread unless the user set a count: optmap's arithmetic is
    element-wise, and starting OpenBLAS's threads costs about 0.1 CPU second per process (issue 14).
    Effective only before numpy is imported, as it is when the ``optmap`` command starts."""
    if not any(os.environ.get(name) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def _displaced_exit() -> int:
    """0, or 3 (:data:`optmap.output.DISPLACED_EXIT`) when an output had to be saved elsewhere
    than asked. The module is looked up, not imported: a command that wrote nothing never loads it."""
    output = sys.modules.get("optmap.output")
    if output is None or not output.displaced:
        return 0
    where = ", ".join(f"{asked} -> {written}" for asked, written in output.displaced)
    print(f"note: exit status {output.DISPLACED_EXIT}: not written where asked ({where})", file=sys.stderr)
    return output.DISPLACED_EXIT


def main(argv: list[str] | None = None) -> int:
    parser, functions = build_parser()
    args = parser.parse_args(argv)  # neither imports numpy
    if args.command != "calibrate":  # calibrate times the machine's own matrix products, all threads
        single_threaded_blas()
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        parser.print_help()
        return 0
    if "optmap.output" in sys.modules:  # an earlier command in this process (tests, notebooks)
        sys.modules["optmap.output"].displaced.clear()
    try:
        code = functions[args.command](args)
        return _displaced_exit() if code == 0 else code
    except OptmapError as exc:
        if args.debug:
            raise
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)  # always one line
        return 2
    except ModuleNotFoundError as exc:  # an optional dependency imported where it is used
        from optmap.extras import needs

        known = needs(exc, f"optmap {args.command}")
        if known is None or args.debug:
            raise
        print(f"error: {known}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
