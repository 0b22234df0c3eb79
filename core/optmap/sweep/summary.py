"""What a sweep's rows say: derived speedups, the figure's axes, flat and pivoted tables.

- ``baseline = {engine = "dp"}`` adds ``speedup_over_dp`` to every row: the baseline point's
  first objective over the row's (the other way round for a maximised objective), where the
  baseline point has the row's coordinates with the baseline coordinate replaced.
- The figure's x axis is the plot's ``x``, else the first varied key whose values are all
  numbers, else the first coordinate that varies; every other varying coordinate but the seed
  makes a series; several seeds are averaged (the figure shows their range).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from optmap.errors import OptmapError
from optmap.report import fmt
from optmap.sweep.store import coordinates, grid

ORDER = ("problem", "variant")  # then the varied keys, then engine, seed


def derived_name(baseline: dict[str, Any]) -> str:
    value = str(next(iter(baseline.values())))
    return "speedup_over_" + re.sub(r"\W+", "_", value).strip("_")


def derive(rows: list[dict[str, Any]], baseline: dict[str, Any], objective: str, sense: str = "min") -> str | None:
    """Add the speedup over the baseline point to each row's ``derived`` (its name, or None)."""
    if not baseline:
        return None
    (key, value), = baseline.items()
    name = derived_name(baseline)
    index = {_frozen(grid(row)): row for row in rows if not row.get("error")}
    for row in rows:
        coords = grid(row)
        base = index.get(_frozen({**coords, key: value}))
        mine = row.get("objectives", {}).get(objective)
        theirs = base.get("objectives", {}).get(objective) if base else None
        speedup = math.nan
        if mine and theirs:
            speedup = theirs / mine if sense == "min" else mine / theirs
        row["derived"] = {**row.get("derived", {}), name: speedup}
    return name


def _frozen(coords: dict[str, Any]) -> tuple:
    return tuple(sorted((key, repr(value)) for key, value in coords.items()))


def value_of(row: dict[str, Any], name: str) -> float:
    for part in ("derived", "objectives", "metrics"):
        if name in row.get(part, {}):
            value = row[part][name]
            return math.nan if value is None else float(value)  # JSON keeps NaN as null
    return math.nan


def varying(rows: list[dict[str, Any]]) -> list[str]:
    """The coordinates that take more than one value, in the grid's order."""
    keys = list(dict.fromkeys(key for row in rows for key in grid(row)))
    keys = [k for k in ORDER if k in keys] + [k for k in keys if k not in (*ORDER, "engine", "seed")] + \
        [k for k in ("engine", "seed") if k in keys]
    return [key for key in keys if len({repr(grid(row).get(key)) for row in rows}) > 1]


def constants(rows: list[dict[str, Any]], skip: tuple[str, ...] = ()) -> str:
    """What every row shares (problem, variant, engine, seed), for a figure's subtitle."""
    if not rows:
        return ""
    first = coordinates(rows[0])
    same = [key for key in ("problem", "variant", "engine", "seed")
            if key not in skip and first.get(key) is not None
            and all(coordinates(row).get(key) == first[key] for row in rows)]
    return ", ".join(f"{key} {first[key]}" for key in same)


def _numeric(rows, key: str) -> bool:
    values = [coordinates(row).get(key) for row in rows]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def axes(rows: list[dict[str, Any]], x: str | None = None) -> tuple[str, list[str], bool]:
    """(x coordinate, series coordinates, whether x is numeric)."""
    dims = varying(rows)
    known = list(dict.fromkeys(key for row in rows for key in coordinates(row)))
    if x is not None and x not in known:
        raise OptmapError(f"--x {x}: not a coordinate of this sweep; choose one of {', '.join(known)}")
    if x is None:
        numeric = [key for key in dims if key not in (*ORDER, "engine", "seed") and _numeric(rows, key)]
        others = [key for key in dims if key != "seed"]
        x = numeric[0] if numeric else others[0] if others else "problem"
    series = [key for key in dims if key not in (x, "seed")]
    return x, series, _numeric(rows, x)


def series_label(row: dict[str, Any], series: list[str]) -> str:
    coords = coordinates(row)
    return ", ".join(str(coords.get(key)) if key in ("problem", "variant", "engine") else f"{key}={coords.get(key)}"
                     for key in series) or str(coords.get("engine"))


def x_value(row: dict[str, Any], x: str) -> Any:
    """The row's value on the x axis, usable as a key: a list or table (``system.shape = [4, 2]``)
    as its JSON text; None where the row lacks the coordinate (a row of another sweep)."""
    value = coordinates(row).get(x)
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def groups(rows: list[dict[str, Any]], x: str, series: list[str], y: str) -> dict[str, dict[Any, list[float]]]:
    """{series label: {x value: [y of each seed]}}, in first-seen order."""
    out: dict[str, dict[Any, list[float]]] = {}
    for row in rows:
        if row.get("error"):
            continue
        out.setdefault(series_label(row, series), {}).setdefault(x_value(row, x), []).append(value_of(row, y))
    return out


def references_for(rows, references, x: str, series: list[str], y: str) -> dict[str, dict[Any, float]]:
    """{series label: {x value: reference y}} for the references that give ``y``."""
    out: dict[str, dict[Any, float]] = {}
    for row in rows:
        for reference in references:
            if y in reference.values and reference.matches(coordinates(row)):
                out.setdefault(series_label(row, series), {})[x_value(row, x)] = reference.values[y]
    return out


def flat_rows(rows: list[dict[str, Any]], columns: list[str]) -> list[dict[str, Any]]:
    """One table row per point: what varies, engine and seed, the ``columns`` values, seconds."""
    asked = [key for row in rows for key in row.get("set", {})]
    dims = list(dict.fromkeys(key for key in [*varying(rows), *asked] if key not in ("engine", "seed")))
    out = []
    for row in rows:
        coords = coordinates(row)
        entry = {key: coords.get(key) for key in dims}  # rows of another sweep in the file lack its keys
        entry.update(engine=coords["engine"], seed=coords["seed"])
        units = row.get("units") or {}
        entry.update({f"{name} ({units[name]})" if units.get(name) else name: value_of(row, name) for name in columns})
        entry.update(evaluations=row.get("evaluations", 0), seconds=row.get("seconds", 0.0))
        if any(r.get("error") for r in rows):
            entry["error"] = row.get("error") or ""
        out.append(entry)
    return out


def pivot(rows, x: str, series: list[str], y: str, references=()) -> list[dict[str, Any]]:
    """The figure as a table: one row per x value, one column per series (mean over seeds);
    a cell with a reference value reads ``ours / reference``."""
    data = groups(rows, x, series, y)
    refs = references_for(rows, references, x, series, y)
    xs = list(dict.fromkeys(x_value(row, x) for row in rows))
    out = []
    for value in xs:
        entry: dict[str, Any] = {x: value}
        for label, points in data.items():
            ours = float(np.mean(points[value])) if value in points else math.nan
            ref = refs.get(label, {}).get(value)
            entry[label] = fmt(ours) if ref is None else f"{fmt(ours)} / {fmt(ref)}"
        out.append(entry)
    return out


def markdown(rows: list[dict[str, Any]], headings: dict[str, str] | None = None) -> str:
    """Rows of dicts as a markdown table (numbers as ``optmap run`` prints them); ``headings``
    renames columns."""
    if not rows:
        return ""
    keys = list(rows[0])
    names = [(headings or {}).get(key, key) for key in keys]
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(fmt(row.get(key, "")) for key in keys) + " |" for row in rows]
    return "\n".join(lines) + "\n"
