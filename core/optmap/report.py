"""The tables of a result: its values, per-layer mapping, Pareto front, the report's breakdowns."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.text import Text

from optmap.tabular import DataTable

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


def result_table(result: SearchResult) -> DataTable:
    """The objectives, the report's other metrics and scalar plan entries, the run's cost."""
    rows: list[tuple[str, Any]] = [(_label(result, name), value) for name, value in result.values.items()]
    if result.report is not None:
        rows += [(_label(result, name), value) for name, value in result.report.metrics.items()
                 if name not in result.values]
        rows += list(_plan_rows(result.report.plan))
    rows += [("evaluations", result.evaluations), ("seconds", result.seconds)]
    rows += [(name, value) for name, value in result.extra.items() if isinstance(value, (int, float, str, bool))]
    return DataTable(f"{result.engine} (seed {result.seed}): {result.stopped}", ["name", "value"], rows, show_header=False,
                     justify=["left", "left"])


# Per-layer tables longer than this print only their most expensive layers (``--layers all``:
# every layer); the JSON result always holds every row. Rendering 10,000 rows takes seconds.
LAYER_ROWS = 40
# More decision columns than this (e.g. 30 hierarchy levels) are joined into one column.
DECISION_COLUMNS = 12


def layer_table(result: SearchResult, rows: int | None = LAYER_ROWS) -> DataTable | None:
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
    headers = [f"{decision_keys[0]} … {decision_keys[-1]}"] if joined else decision_keys
    cells = []
    for i in shown:
        row = layers[i]
        decisions = [str(row.decisions.get(k, "")) for k in decision_keys]
        cells.append([row.name, *([" ".join(decisions)] if joined else decisions), row.compute, row.communication])
    table = DataTable("per-layer mapping", ["layer", *headers, "compute s", "comm s"], cells,
                      justify=["left", *["left" if joined else "center"] * len(headers), "right", "right"])
    if len(shown) < len(layers):
        table.caption = (f"the {len(shown)} most expensive of {len(layers):,} layers (compute + communication); "
                         f"--layers all prints every layer, the JSON result holds them all")
    return table


def front_table(result: SearchResult, rows: int = LAYER_ROWS) -> DataTable | None:
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


def report_tables(result: SearchResult) -> list[DataTable]:
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


def comparison_table(title: str, rows: list[dict[str, Any]], unit: str = "") -> DataTable:
    """``optmap compare``'s table: one row per engine, its keys as headers (as in its JSON and
    CSV files), the objective's ``unit`` on the ``best_*`` ones."""
    keys = list(rows[0]) if rows else []
    headers = [f"{key} ({unit})" if unit and key.startswith("best_") else key for key in keys]
    return DataTable(title, headers, [[row.get(key) for key in keys] for row in rows])


def rows_table(title: str, rows: list[dict[str, Any]]) -> DataTable:
    """A table of one dict per row (the first row's keys are the columns)."""
    headers = list(rows[0]) if rows else []
    return DataTable(title, headers, [[row.get(key) for key in headers] for row in rows])


def console(stderr: bool = False, piped_width: int | None = None, follow_columns: bool = True):
    """A rich console as wide as the terminal (piped: ``COLUMNS`` unless not ``follow_columns``,
    else 100 columns or ``piped_width``)."""
    from optmap.tabular import PIPED_WIDTH
    from optmap.tabular import console as make

    return make(stderr, piped_width or PIPED_WIDTH, follow_columns)


def plan_table(plan: dict[str, Any], width: int = 100) -> DataTable | None:
    """The entries of a cost report's plan that :func:`result_table` does not show (nested ones),
    one row each as JSON cut to ``width`` characters."""
    import json

    nested = {key: value for key, value in plan.items() if not any(True for _ in _plan_rows({key: value}))}
    if not nested:
        return None
    rows = []
    for key, value in nested.items():
        text = json.dumps(value, default=str)
        rows.append((str(key), text if len(text) <= width else text[: width - 3] + "..."))
    return DataTable("plan", ["name", "value"], rows, show_header=False)
