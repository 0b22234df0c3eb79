"""Saved files read back: a run's result, a comparison or a sweep, told apart by their content.

``optmap run`` writes a result (``engine``, ``values``, ``report``, ...), ``optmap compare
--json`` a comparison (``rows`` and ``runs``), ``optmap sweep`` a sweep (``format =
"optmap-sweep/1"``). :func:`read_saved` says which a file is; :func:`result_from_json` turns a
result back into a :class:`~optmap.search.SearchResult` (without the mapping object: its
decisions stay a plain table), so the tables and figures of a run can be drawn again later.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optmap.errors import OptmapError

RESULT_KEYS = {"engine", "seed", "values", "report", "history"}


def read_saved(path: str | Path) -> tuple[str, dict[str, Any]]:
    """(``"result"`` | ``"comparison"`` | ``"sweep"``, the file's JSON) or a one-line error."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise OptmapError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise OptmapError(f"{path}: not a readable JSON file ({' '.join(str(exc).split())})") from None
    if isinstance(data, dict) and data.get("format", "").startswith("optmap-sweep/"):
        return "sweep", data
    if isinstance(data, dict) and RESULT_KEYS <= set(data):
        return "result", data
    if isinstance(data, dict) and {"rows", "runs", "objective"} <= set(data):
        return "comparison", data
    raise OptmapError(f"{path}: JSON, but not an optmap result, comparison or sweep (written by optmap run --json, "
                      f"compare --json or sweep --out)")


def _number(row: dict[str, Any], key: str) -> float:
    """``row[key]`` as a number: null (strict JSON's NaN, a value a model does not report) is NaN."""
    value = row.get(key, 0.0)
    return float("nan") if value is None else value


def _report(raw: dict[str, Any]):
    """A saved :class:`~optmap.cost.CostReport`, with the reports it nests."""
    from optmap.cost import CostReport, LayerCost

    fixed = ("name", "compute_s", "communication_s", "memory_bytes")
    layers = tuple(LayerCost(row["name"], _number(row, "compute_s"), _number(row, "communication_s"),
                             _number(row, "memory_bytes"), {k: v for k, v in row.items() if k not in fixed})
                   for row in raw.get("layers", []))
    children = {name: _report(child) for name, child in (raw.get("children") or {}).items()}
    return CostReport(raw.get("metrics", {}), raw.get("feasible", True), raw.get("reason", ""), layers,
                      raw.get("plan", {}), raw.get("tables", {}), children)


def result_from_json(data: dict[str, Any]):
    """A saved result as a :class:`~optmap.search.SearchResult` (``best`` is None; the mapping is
    ``extra["mapping"]``)."""
    from optmap.search import HistoryPoint, SearchResult

    report = _report(data["report"]) if data.get("report") else None
    history = [HistoryPoint(int(e), float(s), float(b)) for e, s, b in data.get("history", [])]
    objectives = tuple(data.get("objectives", data.get("values", {}).keys()))
    return SearchResult(
        engine=data["engine"], seed=data["seed"], objectives=objectives, best=None, values=data.get("values", {}),
        report=report, front=[(entry.get("mapping"), entry.get("values", {})) for entry in data.get("front") or []],
        history=history, evaluations=data.get("evaluations", 0),
        seconds=data.get("seconds", 0.0), stopped=data.get("stopped", "?"),
        extra={**data.get("extra", {}), "mapping": data.get("mapping") or {}},
        senses=tuple(data.get("senses", ())), units=dict(data.get("units") or {}),
    )
