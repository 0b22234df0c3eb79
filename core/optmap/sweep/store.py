"""A sweep's output: ``OUT.json`` (the store a rerun reads) and ``OUT.csv`` (one flat row per point).

Both files are rewritten after every finished point, each atomically (:func:`optmap.output.
atomic_write`: a temporary file in the same folder, flushed to disk, then renamed over the old
one; strict JSON, a non-finite number is null), so a sweep killed at any moment
leaves the previous complete files and loses at most the points still running. A rerun skips
the points whose rows are finished (no error, not interrupted). Rows of other sweeps (other
points, or an edited problem file) are kept in the file, never deleted, and not shown.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from optmap.errors import OptmapError
from optmap.output import atomic_write, json_text, write_failure
from optmap.schemas import SWEEP_FORMAT as FORMAT, SweepStore, check, read_json


def stem(out: str | Path) -> Path:
    """``--out scaling`` (or scaling.json / scaling.csv) → the common stem ``scaling``."""
    out = Path(out)
    return out.with_suffix("") if out.suffix in (".json", ".csv") else out


def check_out(out: str | Path) -> Path:
    """``--out`` checked before anything runs: a file stem, not empty, not a folder."""
    text = str(out)
    if not text.strip():
        raise OptmapError("--out '': give a file stem, e.g. --out scaling (writes scaling.json and scaling.csv)")
    path = Path(text)
    if text.endswith(("/", "\\")) or path.name in ("", ".", "..") or path.is_dir():
        raise OptmapError(f"--out {text}: is a folder; give a file stem inside it, e.g. --out {path / 'sweep'}")
    parent = next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), None)
    if parent is not None:
        raise OptmapError(f"--out {text}: {parent} is a file, not a folder; choose another --out")
    for name in (".json", ".csv"):
        if stem(path).with_name(stem(path).name + name).is_dir():
            raise OptmapError(f"--out {text}: {stem(path).name + name} is a folder; choose another --out")
    return path


def coordinates(row: dict[str, Any]) -> dict[str, Any]:
    """What a row varies: problem, variant, the varied keys, engine, seed."""
    return {"problem": row["problem"], "variant": row.get("variant"), **row.get("set", {}),
            "engine": row["engine"], "seed": row["seed"]}


def grid(row: dict[str, Any]) -> dict[str, Any]:
    """The row's coordinates on the sweep's axes only: an engine or seed that the problem file
    chose (not a --search / --seeds list) is not an axis, even if variants change it."""
    coords = coordinates(row)
    axes = row.get("axes")
    return {key: coords[key] for key in axes if key in coords} if axes else coords


def finished(row: dict[str, Any] | None) -> bool:
    return row is not None and not row.get("error") and row.get("stopped") != "interrupted"


class Store:
    """The rows of ``OUT.json`` by point id, and how to write them back (JSON and CSV)."""

    def __init__(self, out: str | Path, title: str = "") -> None:
        base = stem(check_out(out))
        self.json_path = base.with_name(base.name + ".json")
        self.csv_path = base.with_name(base.name + ".csv")
        self.title = title
        self.provenance: dict[str, Any] | None = None  # of the latest sweep that wrote it (optmap.provenance)
        self.rows: dict[str, dict[str, Any]] = {}
        if self.json_path.exists():
            self.rows = self._read()

    def _read(self) -> dict[str, dict[str, Any]]:
        """The earlier rows, validated whole (:class:`optmap.schemas.SweepStore`) before anything runs."""
        where = f"{self.json_path} is not an optmap sweep ({FORMAT}) that a rerun can read (move it away or choose " \
                f"another --out)"
        data = read_json(self.json_path, "sweep")
        check(SweepStore, data, where)
        self.title = self.title or data.get("title", "")
        return {row["id"]: row for row in data["rows"]}

    def done(self, point_id: str) -> bool:
        return finished(self.rows.get(point_id))

    def add(self, row: dict[str, Any]) -> None:
        """Record a finished point and rewrite both files."""
        self.rows[row["id"]] = row
        self.write()

    def write(self) -> None:
        rows = list(self.rows.values())
        for path, text in ((self.json_path, json_text({"format": FORMAT, "title": self.title, "rows": rows,
                                                    **({"provenance": self.provenance} if self.provenance else {})})),
                           (self.csv_path, to_csv(rows))):
            try:
                atomic_write(path, text)
            except OSError as exc:
                raise OptmapError(f"cannot write the sweep's rows to {path} ({write_failure(exc, path)}); the rows "
                                  f"written before are intact; free the folder or choose another --out") from None


def flat(row: dict[str, Any]) -> dict[str, Any]:
    """A row as one level of columns (the CSV's)."""
    return {**coordinates(row), **row.get("objectives", {}), **row.get("metrics", {}), **row.get("derived", {}),
            "feasible": row.get("feasible"), "evaluations": row.get("evaluations"), "seconds": row.get("seconds"),
            "stopped": row.get("stopped"), "error": row.get("error") or "", "id": row["id"]}


def to_csv(rows: list[dict[str, Any]]) -> str:
    flats = [flat(row) for row in rows]
    columns = list(dict.fromkeys(key for row in flats for key in row))
    if "variant" in columns and not any(row.get("variant") for row in flats):
        columns.remove("variant")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows({key: ("" if value is None else value) for key, value in row.items()} for row in flats)
    return buffer.getvalue()
