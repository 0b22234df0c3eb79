"""Saved files read back: a run's result, a comparison or a sweep, told apart by their content.

``optmap run`` writes a result (``engine``, ``values``, ``report``, ...), ``optmap compare
--json`` a comparison (``rows`` and ``runs``), ``optmap sweep`` a sweep (``format =
"optmap-sweep/1"``). :func:`read_saved` says which a file is and validates it against its schema
(:mod:`optmap.schemas`): a damaged file is one line naming the file, the key and what was
expected. :func:`result_from_json` turns a result back into a :class:`~optmap.search.SearchResult`
(without the mapping object: its decisions stay a plain table), so the tables and figures of a
run can be drawn again later.

From Python: ``kind, data = optmap.read_saved("result.json")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optmap.errors import OptmapError
from optmap.schemas import ComparisonFile, ResultFile, SweepStore, check, read_json

SCHEMAS = {"result": ResultFile, "comparison": ComparisonFile, "sweep": SweepStore}


def kind_of(data: Any) -> str | None:
    """Which saved file ``data`` claims to be, by its keys (None: none of them)."""
    if not isinstance(data, dict):
        return None
    rows = data.get("rows")
    if "format" in data or ("runs" not in data and isinstance(rows, list) and rows
                            and isinstance(rows[0], dict) and "id" in rows[0]):
        return "sweep"
    if "runs" in data or "rows" in data:
        return "comparison"
    if "engine" in data or "values" in data:
        return "result"
    return None


def read_saved(path: str | Path) -> tuple[str, dict[str, Any]]:
    """(``"result"`` | ``"comparison"`` | ``"sweep"``, the file's JSON, validated) or a one-line error."""
    path = Path(path)
    data = read_json(path, "saved result")
    kind = kind_of(data)
    if kind is None:
        raise OptmapError(f"{path}: JSON, but not an optmap result, comparison or sweep (written by optmap run "
                          f"--json, compare --json or sweep --out)")
    check(SCHEMAS[kind], data, f"{path} (a saved {kind})")
    return kind, data


def _number(value: Any) -> float:
    """A saved number: null (strict JSON's NaN, a value a model does not report) is NaN again."""
    return float("nan") if value is None else value


def _report(raw: dict[str, Any]):
    """A saved :class:`~optmap.cost.CostReport` (checked by the result schema), with the reports
    it nests."""
    from optmap.cost import CostReport, LayerCost

    fixed = ("name", "compute_s", "communication_s", "memory_bytes")
    layers = tuple(LayerCost(row["name"], _number(row.get("compute_s")), _number(row.get("communication_s")),
                             _number(row.get("memory_bytes")), {k: v for k, v in row.items() if k not in fixed})
                   for row in raw.get("layers", []))
    children = {name: _report(child) for name, child in (raw.get("children") or {}).items()}
    metrics = {key: _number(value) for key, value in (raw.get("metrics") or {}).items()}
    return CostReport(metrics, raw.get("feasible", True), raw.get("reason", ""), layers,
                      raw.get("plan", {}), raw.get("tables", {}), children)


def result_from_json(data: dict[str, Any], where: str = "saved result"):
    """A saved result as a :class:`~optmap.search.SearchResult` (``best`` is None; the mapping is
    ``extra["mapping"]``); ``data`` is checked against the result schema first."""
    from optmap.search import HistoryPoint, SearchResult

    check(ResultFile, data, where)
    nan = float("nan")

    def numbers(table: dict[str, Any]) -> dict[str, float]:  # null (not reported) is NaN again, as in the run
        return {key: nan if value is None else value for key, value in (table or {}).items()}

    report = _report(data["report"]) if data.get("report") else None
    history = [HistoryPoint(int(e or 0), nan if s is None else float(s), nan if b is None else float(b))
               for e, s, b in data.get("history", [])]
    objectives = tuple(data["objectives"] if data.get("objectives") is not None else data["values"])
    return SearchResult(
        engine=data["engine"], seed=data["seed"], objectives=objectives, best=None, values=numbers(data["values"]),
        report=report,
        front=[(entry.get("mapping"), numbers(entry.get("values"))) for entry in data.get("front") or []],
        history=history, evaluations=data.get("evaluations", 0),
        seconds=data.get("seconds", 0.0), stopped=data.get("stopped", "?"),
        extra={**data.get("extra", {}), "mapping": data.get("mapping") or {}},
        senses=tuple(data.get("senses", ())), units=dict(data.get("units") or {}),
    )
