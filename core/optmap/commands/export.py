"""``optmap export RESULT.json --to TARGET``: a saved plan as the launch configuration of a framework.

The result file (``optmap run --json``) keeps the problem it solved; the problem's cost model is
built again and asked for the plan in the target's format (its ``export_targets`` and
``export``, :class:`optmap.cost.CostModel`): the core knows no decision names. The text goes to
standard output (or ``--out``); what the target cannot express goes to standard error, one
``note:`` line each.
"""

from __future__ import annotations

import sys

from optmap.commands.common import disabled, load_plugins, output_path
from optmap.errors import OptmapError


def add_parser(commands) -> dict:
    parser = commands.add_parser("export", help="write a saved result's plan as launch arguments "
                                 "(e.g. Megatron-Core flags, a DeepSpeed config)")
    parser.add_argument("result", help="a result file written by optmap run --json")
    parser.add_argument("--to", required=True, metavar="TARGET",
                        help="the launch format, one the problem's cost model offers "
                             "(megatron-3d: megatron, deepspeed)")
    parser.add_argument("--out", metavar="FILE", help="write the text to FILE instead of standard output")
    return {"export": export}


def export(args) -> int:
    from optmap.output import save
    from optmap.problem import build_problem
    from optmap.saved import read_saved

    kind, data = read_saved(args.result)
    if kind != "result":
        raise OptmapError(f"{args.result}: a {kind}, not a run's result; export takes the file of optmap run --json")
    if not isinstance(data.get("problem"), dict) or not isinstance(data.get("mapping"), dict):
        raise OptmapError(f"{args.result}: the result keeps no problem or no plan (mapping); write it again with "
                          f"optmap run --json")
    load_plugins(args)  # one warning line per plugin that failed to load
    problem = build_problem(data["problem"], plugins=tuple(args.plugin or ()), disabled=disabled(args))
    model = problem.cost_model
    targets = tuple(getattr(model, "export_targets", ()))
    if args.to not in targets:
        offered = f"it offers {', '.join(targets)}" if targets else "it exports none"
        raise OptmapError(f"--to {args.to}: the cost model '{problem.spec['cost']['model']}' of {args.result} cannot "
                          f"export to '{args.to}'; {offered}")
    text, notes = model.export(dict(data["mapping"]), args.to)
    out = output_path(args.out, "--out")
    if out is None:
        sys.stdout.write(text)
    else:
        save(out, text.rstrip("\n"))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
