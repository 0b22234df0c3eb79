"""``optmap report``: one self-contained HTML page of a saved result (:mod:`optmap.html`)."""

from __future__ import annotations

from pathlib import Path

from optmap.commands.common import output_path
from optmap.errors import OptmapError


def add_parser(commands) -> dict:
    parser = commands.add_parser("report", help="write a saved result as one self-contained HTML page: plan, "
                                 "tables, figures (needs matplotlib)")
    parser.add_argument("file", help="a saved result (optmap run --json OUT)")
    parser.add_argument("-o", "--output", metavar="HTML", help="the page to write (default: the result's path "
                        "with .html)")
    return {"report": report}


def report(args) -> int:
    import importlib.util

    from optmap.html import page
    from optmap.output import save
    from optmap.saved import read_saved, result_from_json

    out = output_path(args.output, "-o") or Path(args.file).with_suffix(".html")
    if out.suffix.lower() not in (".html", ".htm"):
        raise OptmapError(f"-o {out}: optmap report writes HTML; name the file {out.with_suffix('.html').name}")
    kind, data = read_saved(args.file)
    if kind != "result":
        raise OptmapError(f"{args.file}: a saved {kind}; optmap report writes the page of one run's result "
                          f"(optmap run PROBLEM --json OUT)")
    if importlib.util.find_spec("matplotlib") is None:
        raise OptmapError("optmap report draws its figures with matplotlib: pip install 'optmap[plot]'")
    text = page(data, result_from_json(data), str(args.file))
    print(f"report written to {save(out, text, what='report')}")
    return 0
