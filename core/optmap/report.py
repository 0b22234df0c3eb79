"""Terminal tables (rich) and result files (JSON)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:  # pragma: no cover
    from optmap.search import SearchResult


def fmt(value: Any) -> str:
    """Numbers with 4 significant digits and thousands separators; other values as text (a value
    not reported, NaN or JSON's null, as "-")."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "-"
    if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
        return f"{value:.4g}"
    return f"{value:,.4g}"


def cell(value: Any) -> Text:
    """A table cell of data, never read as rich markup (a key such as ``k_fwd[enc0.ffn]`` keeps
    its brackets)."""
    return Text(fmt(value))


def _label(result: SearchResult, name: str) -> str:
    """``time (s)``; an objective also says which way it goes: ``throughput (1/s, max)``."""
    parts = [u for u in (result.units.get(name, ""),) if u]
    if name in result.values:
        parts.append(result.sense(name))
    return f"{name} ({', '.join(parts)})" if parts else name


def _plan_rows(plan: dict[str, Any]):
    """A plan's scalar entries and tables of scalars (e.g. AccPar's heterogeneous shares)."""
    for key, value in plan.items():
        if isinstance(value, (int, float, str, bool)):
            yield key, value
        elif isinstance(value, dict) and value and all(isinstance(v, (int, float, str, bool)) for v in value.values()):
            yield from ((str(k) if "[" in str(k) else f"{key}[{k}]", v) for k, v in value.items())


def result_table(result: SearchResult) -> Table:
    table = Table(title=f"{result.engine} (seed {result.seed}): {result.stopped}", show_header=False)
    table.add_column(overflow="fold")
    table.add_column(overflow="fold")
    for name, value in result.values.items():
        table.add_row(Text(_label(result, name), style="bold"), cell(value))
    if result.report is not None:
        for name, value in result.report.metrics.items():
            if name not in result.values:
                table.add_row(cell(_label(result, name)), cell(value))
        for name, value in _plan_rows(result.report.plan):
            table.add_row(cell(name), cell(value))
    table.add_row("evaluations", fmt(result.evaluations))
    table.add_row("seconds", fmt(result.seconds))
    for name, value in result.extra.items():
        if isinstance(value, (int, float, str, bool)):
            table.add_row(cell(name), cell(value))
    return table


# Per-layer tables longer than this print only their most expensive layers (``--layers all``:
# every layer); the JSON result always holds every row. Rendering 10,000 rows takes seconds.
LAYER_ROWS = 40
# More decision columns than this (e.g. 30 hierarchy levels) are joined into one column.
DECISION_COLUMNS = 12


def layer_table(result: SearchResult, rows: int | None = LAYER_ROWS) -> Table | None:
    """The per-layer mapping: decisions, compute and communication seconds.

    Above ``rows`` layers (None: no limit) only the ``rows`` most expensive ones (compute +
    communication) are shown, in network order, and the caption says so.
    """
    if result.report is None or not result.report.layers:
        return None
    layers = result.report.layers
    shown = range(len(layers))
    if rows is not None and len(layers) > rows:
        cost = [math.fsum(v for v in (row.compute, row.communication) if v == v) for row in layers]  # NaN: not reported
        shown = sorted(sorted(shown, key=lambda i: -cost[i])[:rows])
    decision_keys = list(dict.fromkeys(key for row in layers for key in row.decisions))
    joined = len(decision_keys) > DECISION_COLUMNS
    table = Table(title="per-layer mapping")
    table.add_column("layer", no_wrap=True)
    for key in [f"{decision_keys[0]} … {decision_keys[-1]}"] if joined else decision_keys:
        table.add_column(key, justify="left" if joined else "center")
    table.add_column("compute s", justify="right")
    table.add_column("comm s", justify="right")
    for i in shown:
        row = layers[i]
        decisions = [str(row.decisions.get(k, "")) for k in decision_keys]
        table.add_row(cell(row.name), *map(cell, [" ".join(decisions)] if joined else decisions),
                      cell(row.compute), cell(row.communication))
    if len(shown) < len(layers):
        table.caption = (f"the {len(shown)} most expensive of {len(layers):,} layers (compute + communication); "
                         f"--layers all prints every layer, the JSON result holds them all")
    return table


def front_table(result: SearchResult, rows: int = LAYER_ROWS) -> Table | None:
    """A multi-objective run's Pareto front, one row per plan, by its first objective (None for a
    single objective or a front of one plan); the JSON result holds every plan's mapping."""
    if len(result.front) < 2:
        return None
    points = sorted((values for _, values in result.front), key=lambda v: v.get(result.objectives[0], math.inf))
    sign = -1 if result.sense(result.objectives[0]) == "max" else 1
    points = points if sign > 0 else points[::-1]
    table = rows_table(f"Pareto front: {len(points)} plans (the table above shows one of them)",
                       [{_label(result, name): v.get(name, math.nan) for name in result.objectives}
                        for v in points[:rows]])
    if len(points) > rows:
        table.caption = f"the first {rows} of {len(points)} plans; the JSON result holds them all"
    return table


def report_tables(result: SearchResult) -> list[Table]:
    """The cost report's other breakdowns (per stage, per device, ...), one table each."""
    if result.report is None:
        return []
    return _tables(result.report, "")


def _tables(report, prefix: str) -> list[Table]:
    """``report``'s tables, then each nested formulation's (titled ``stage1: layers``, ...)."""
    tables = [rows_table(prefix + name.replace("_", " "), rows) for name, rows in report.tables.items() if rows]
    for child, sub in report.children.items():
        if sub.layers:
            tables.append(rows_table(f"{prefix}{child}: layers", [
                {"layer": row.name, "compute_s": row.compute, "communication_s": row.communication, **row.decisions}
                for row in sub.layers]))
        tables += _tables(sub, f"{prefix}{child}: ")
    return tables


def rows_table(title: str, rows: list[dict[str, Any]]) -> Table:
    table = Table(title=title)
    if not rows:
        return table
    for key in rows[0]:  # fold rather than cut: a number must never read "1.…"
        table.add_column(key, justify="left" if isinstance(rows[0][key], str) else "right", overflow="fold")
    for row in rows:
        table.add_row(*(cell(value) for value in row.values()))
    return table


def console(stderr: bool = False) -> Console:
    """A rich console; when output is not a terminal, wide enough that tables are not cut."""
    import sys

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, highlight=False, markup=False, width=None if stream.isatty() else 220)


def plan_table(plan: dict[str, Any], width: int = 100) -> Table | None:
    """The entries of a cost report's plan that :func:`result_table` does not show (nested ones),
    one row each as JSON cut to ``width`` characters."""
    import json

    nested = {key: value for key, value in plan.items() if not any(True for _ in _plan_rows({key: value}))}
    if not nested:
        return None
    table = Table(title="plan", show_header=False)
    for key, value in nested.items():
        text = json.dumps(value, default=str)
        table.add_row(cell(str(key)), cell(text if len(text) <= width else text[: width - 3] + "..."))
    return table
