"""``optmap plugins``, ``validate``, ``show`` and ``schema``: what is installed, and what a problem is."""

from __future__ import annotations

from optmap.commands.common import add_problem_arguments, load_plugins, load_problem


def add_parser(commands) -> dict:
    commands.add_parser("plugins", help="list the plugins and what they register")
    add_problem_arguments(commands.add_parser("validate", help="check a problem file"))
    add_problem_arguments(commands.add_parser("show", help="show a problem's workload and system"))
    commands.add_parser("schema", help="print the JSON Schema of problem files")
    return {"plugins": plugins, "validate": validate, "show": show, "schema": schema}


def plugins(args) -> int:
    from rich.table import Table

    from optmap.host import KINDS
    from optmap.report import console

    host = load_plugins(args)
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


def validate(args) -> int:

    problem = load_problem(args)
    print(f"{args.file}: ok ({problem.name}; {len(problem.cost_model.space)} decisions, "
          f"space size {problem.cost_model.space.size:.4g})")
    return 0


def show(args) -> int:
    from optmap.report import console, rows_table

    problem = load_problem(args)
    terminal = console()
    workload, system = problem.workload, problem.system
    terminal.print(rows_table(f"workload {workload.name}: batch {workload.batch}, {workload.dtype}, {workload.phase}",
                              workload.describe()))
    terminal.print(rows_table(f"system: {system.topology}, {system.count} accelerators", system.describe()))
    space = problem.cost_model.space
    terminal.print(f"design space: {len(space)} decisions, {space.size:.4g} points; objectives: "
                   f"{', '.join(problem.objectives)}")
    return 0


def schema(args) -> int:
    import json

    from optmap.schema import problem_schema

    print(json.dumps(problem_schema(tuple(args.plugin or ())), indent=1))
    return 0


