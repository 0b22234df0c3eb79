"""What a sweep runs: the points of ``--vary`` grids, named variants, engines and seeds.

A point is one ``optmap run``: a problem file, a list of ``--set`` overrides, an engine and a
seed. Its identity (``id``) is the digest of the problem table it runs (file after overrides),
the engine and the seed, so a rerun recognises points already in the output, and a changed
problem file or budget makes them new points.

Decisions:

- ``--vary KEY=V1,V2,...`` uses ``--set``'s syntax: each value is read as TOML (else as a plain
  string); commas inside brackets or quotes do not split. Ranges: ``START:STOP:STEP`` (STOP
  included when the grid reaches it; ``START:STOP`` steps by 1) and ``START:STOP:*FACTOR``
  (geometric, e.g. ``2:256:*2``).
- A key may address every element of a list with ``*`` (``system.groups.*.count``) and several
  keys at once with ``+`` (``system.bandwidth_gbps+system.groups.0.network_gbps``): they all
  take the value. The row keeps the key as written.
- Variants (``[[variants]]`` in a sweep file) are named sets of overrides; ``cumulative = true``
  makes a ladder, each variant adding its overrides to those of the variants before it.
- The grid is the product problems × variants × varied keys (in order) × engines × seeds. Its
  size is counted (:func:`grid_size`) before any point is built: over :data:`GRID_LIMIT` points,
  an axis without values, or more than :data:`RANGE_LIMIT` values in one ``--vary`` is an error.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optmap.checkpoint import digest
from optmap.errors import OptmapError
from optmap.problem.spec import apply_overrides, parse_fix, parse_override, read_spec

RANGE_LIMIT = 10_000  # values in one range: a typo such as 1:1e9 is refused, not enumerated
GRID_LIMIT = 10_000  # points in a whole sweep, counted before any is built


def split_values(text: str) -> list[str]:
    """``text`` split at the commas that are outside brackets, braces and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _number(text: str, where: str) -> float | int:
    value = parse_override(f"x={text}")[1]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise OptmapError(f"{where}: '{text}' is not a number; a range is START:STOP:STEP, e.g. 5:100:5 or 2:256:*2")
    return value


def expand_range(text: str, where: str) -> list[str] | None:
    """The values of ``START:STOP[:STEP]`` or ``START:STOP:*FACTOR`` as TOML texts (None: not a range)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or text.startswith(("'", '"', "[", "{")):
        return None
    start, stop = _number(parts[0], where), _number(parts[1], where)
    geometric = len(parts) == 3 and parts[2].strip().startswith("*")
    step = _number(parts[2].strip().lstrip("*"), where) if len(parts) == 3 else 1
    if (geometric and (step <= 1 or start <= 0)) or (not geometric and step <= 0) or stop < start:
        raise OptmapError(f"{where}: range '{text}' is empty or endless; write START:STOP:STEP with START <= STOP "
                          f"and STEP > 0, or START:STOP:*FACTOR with START > 0 and FACTOR > 1")
    whole = all(isinstance(v, int) for v in (start, stop, step))
    values, index = [], 0
    while True:
        value = start * step ** index if geometric else start + index * step
        value = value if whole else float(f"{value:.12g}")  # 0.1 + 2 * 0.1 is 0.3, not 0.30000000000000004
        if value > stop * (1 + 1e-12):
            break
        values.append(str(value))
        index += 1
        if len(values) > RANGE_LIMIT:
            raise OptmapError(f"{where}: range '{text}' has more than {RANGE_LIMIT:,} values; use a larger step")
    return values


def parse_vary(text: str) -> tuple[str, list[str]]:
    """``KEY=V1,V2,...`` or ``KEY=START:STOP:STEP`` → (key, value texts)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip() or not raw.strip():
        raise OptmapError(f"--vary '{text}': expected KEY=V1,V2,... or KEY=START:STOP:STEP, "
                          f"e.g. --vary system.groups.0.count=2,4,8")
    values = []
    for part in split_values(raw):
        values.extend(expand_range(part, f"--vary '{text}'") or [part])
        if len(values) > RANGE_LIMIT:
            raise OptmapError(f"--vary '{text[:60]}': more than {RANGE_LIMIT:,} values; use fewer or a larger step")
    if not values:
        raise OptmapError(f"--vary '{text}': no values between the commas; e.g. --vary {key.strip()}=2,4,8")
    return key.strip(), values


def toml_text(value: Any) -> str:
    """A Python value (from a TOML sweep file) as TOML text for an override."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_text(v)}" for k, v in value.items()) + "}"
    raise OptmapError(f"cannot write {value!r} as a TOML value")


def expand_key(key: str, spec: dict[str, Any], where: str) -> list[str]:
    """The concrete key paths of ``key``: ``+`` joins keys, ``*`` stands for every index of a list."""
    keys = []
    for part in key.split("+"):
        paths = [[]]
        for name in part.strip().split("."):
            if name != "*":
                paths = [path + [name] for path in paths]
                continue
            grown = []
            for path in paths:
                node: Any = spec
                for step in path:
                    node = node[int(step)] if isinstance(node, list) and step.isdigit() and int(step) < len(node) \
                        else node.get(step) if isinstance(node, dict) else None
                if not isinstance(node, list) or not node:
                    raise OptmapError(f"{where}: '{'.'.join(path)}' is not a list in the problem file, so "
                                      f"'{part}' has nothing for '*' to stand for")
                grown.extend(path + [str(index)] for index in range(len(node)))
            paths = grown
        keys.extend(".".join(path) for path in paths)
    return keys


@dataclass(frozen=True)
class Variant:
    """A named set of ``--set`` overrides (texts ``KEY=VALUE``) and its reference values."""

    name: str
    overrides: tuple[str, ...] = ()
    reference: dict[str, float] = field(default_factory=dict)


@dataclass
class Point:
    """One run of a sweep: its coordinates, the problem table it runs, engine and seed."""

    file: str
    coords: dict[str, Any]  # problem, variant, each varied key (as written), engine, seed
    overrides: list[str]
    spec: dict[str, Any]
    engine: str | None  # None: the problem's [search] engine
    seed: int | None  # None: the problem's [search] seed

    @property
    def id(self) -> str:
        return digest({"spec": self.spec, "engine": self.engine, "seed": self.seed})[:16]

    @property
    def axes(self) -> list[str]:
        """The coordinates the grid sets: not the engine or seed left to the problem file."""
        optional = ("engine", "seed", "variant")
        return [key for key, value in self.coords.items() if value is not None or key not in optional]


def point_spec(base: dict[str, Any], overrides: list[str], fixes: list[str], where: str) -> dict[str, Any]:
    """The problem table of a point: ``base`` with ``overrides`` and ``--fix`` values applied."""
    spec = apply_overrides(base, overrides)
    if fixes:
        table = spec.setdefault("fix", {})
        if not isinstance(table, dict):
            raise OptmapError(f"{where}: 'fix' must be a table [fix]")
        table.update(parse_fix(text) for text in fixes)
    return spec


def grid_size(files: int, variants: int, vary: list[tuple[str, list[str]]], engines: int, seeds: int) -> int:
    """How many points a sweep has (problems × variants × varied values × engines × seeds),
    counted without building them; over :data:`GRID_LIMIT` is an error naming each factor."""
    factors = [("problem files", files), ("variants", max(variants, 1)),
               *((f"values of {key}", len(values)) for key, values in vary), ("engines", engines), ("seeds", seeds)]
    size = math.prod(count for _, count in factors)
    if size > GRID_LIMIT:
        product = " × ".join(f"{count:,} {name}" for name, count in factors if count > 1)
        raise OptmapError(f"the sweep has {size:,} points ({product}), more than {GRID_LIMIT:,}; vary fewer keys or "
                          f"values, or split the study into several sweeps")
    return size


def points(files: list[str], vary: list[tuple[str, list[str]]], variants: list[Variant], engines: list[str | None],
           seeds: list[int | None], base_overrides: list[str] = (), fixes: list[str] = (),
           cumulative: bool = False) -> list[Point]:
    """Every point of the sweep, in grid order (problems, variants, varied keys, engines, seeds)."""
    ladder = list(variants) or [Variant("")]
    if cumulative:
        ladder = [Variant(v.name, tuple(o for w in ladder[: i + 1] for o in w.overrides), v.reference)
                  for i, v in enumerate(ladder)]
    out = []
    for file in files:
        base = read_spec(file)
        name = base.get("name", Path(file).stem)
        concrete = [(key, expand_key(key, base, f"--vary '{key}'"), values) for key, values in vary]
        for variant in ladder:
            for combo in itertools.product(*(values for _, _, values in concrete)):
                overrides = list(base_overrides) + list(variant.overrides)
                coords: dict[str, Any] = {"problem": name, "variant": variant.name or None}
                for (key, keys, _), text in zip(concrete, combo):
                    overrides.extend(f"{k}={text}" for k in keys)
                    coords[key] = parse_override(f"x={text}")[1]
                spec = point_spec(base, overrides, list(fixes), file)
                for engine, seed in itertools.product(engines, seeds):
                    out.append(Point(file, {**coords, "engine": engine, "seed": seed}, overrides, spec, engine, seed))
    return out
