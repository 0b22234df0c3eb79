"""Sweep files (``--variants FILE.toml``): a study written down, with the papers' numbers.

```toml
title = "AccPar Fig. 8: VGG-19, 2^(h-1) TPU-v2 + 2^(h-1) TPU-v3"
search = ["dp", "owt", "hypar", "accpar"]     # engines (else the problem's); --search overrides
seeds = [0]                                   # else the problem's seed; --seed(s) override
cumulative = false                            # true: a ladder, each variant adds to the previous
baseline = { engine = "dp" }                  # adds speedup_over_dp (first objective)

[vary]                                        # a grid, as --vary (lists or range strings)
"system.groups.*.count" = "2:256:*2"

[[variants]]                                  # named sets of overrides
name = "linear shares"
set = { "cost.share_scaling" = "linear" }     # or a list of "KEY=VALUE" texts
reference = { speedup_over_dp = 6.25 }        # the paper's values for this variant

[[reference]]                                 # reference values for the points that match
variant = "pipeline only"                     # every coordinate given here (problem, variant,
problem = "acctfm-tf8"                        # engine, seed, a varied key)
speedup = 1.11
source = "AccTFM Fig. 7"

[plot]
x = "system.groups.*.count"                   # default: the first numeric varied key
y = "speedup_over_dp"                         # default: the speedup, else the first objective
xlabel = "accelerators of each kind"
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from optmap.errors import OptmapError, did_you_mean
from optmap.problem.common import short
from optmap.problem.spec import read_spec
from optmap.sweep.design import Variant, expand_range, parse_vary, toml_text

KEYS = ("title", "description", "search", "seeds", "cumulative", "baseline", "vary", "variants", "reference", "plot")
PLOT_KEYS = ("x", "y", "xlabel", "ylabel", "xscale", "yscale", "title")
SCALES = ("linear", "log", "symlog", "logit")  # matplotlib's axis scales
COORDINATES = ("problem", "variant", "engine", "seed")


@dataclass
class Reference:
    """Published values (``values``: metric → number) for the points matching ``where``."""

    where: dict[str, Any]
    values: dict[str, float]
    source: str = ""

    def matches(self, coords: dict[str, Any]) -> bool:
        return all(key in coords and _same(coords[key], value) for key, value in self.where.items())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b


@dataclass
class SweepFile:
    """The parsed contents of a sweep file (every part optional)."""

    title: str = ""
    engines: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    cumulative: bool = False
    baseline: dict[str, Any] = field(default_factory=dict)
    vary: list[tuple[str, list[str]]] = field(default_factory=list)
    variants: list[Variant] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    plot: dict[str, Any] = field(default_factory=dict)


def _flatten(table: dict[str, Any], prefix: str = "") -> list[str]:
    """A ``set`` table as ``KEY=VALUE`` texts (nested tables become dotted keys)."""
    out = []
    for key, value in table.items():
        path = f"{prefix}{key}"
        out.extend(_flatten(value, path + ".") if isinstance(value, dict) and value else [f"{path}={toml_text(value)}"])
    return out


def _numbers(where: str, table: Any) -> dict[str, float]:
    if not isinstance(table, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                              for v in table.values()):
        raise OptmapError(f"{where}: expected a table of metric = number, e.g. {{ speedup = 2.08 }}, "
                          f"got {short(table)}")
    return {key: float(value) for key, value in table.items()}


def _variant(where: str, index: int, raw: Any) -> Variant:
    at = f"{where}: [[variants]] #{index + 1}"
    if not isinstance(raw, dict):
        raise OptmapError(f"{at}: expected a table with name and set, got {short(raw)}")
    unknown = [key for key in raw if key not in ("name", "set", "reference")]
    if unknown:
        raise OptmapError(f"{at}: unknown key '{unknown[0]}'; a variant has name, set and reference")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise OptmapError(f"{at}: needs name = \"...\" (a non-empty string)")
    overrides = raw.get("set", {})
    if isinstance(overrides, dict):
        texts = _flatten(overrides)
    elif isinstance(overrides, list) and all(isinstance(text, str) and "=" in text for text in overrides):
        texts = list(overrides)
    else:
        raise OptmapError(f"{at} '{name}': set must be a table {{ \"workload.batch\" = 64 }} or a list of "
                          f"\"KEY=VALUE\" texts, got {short(overrides)}")
    return Variant(name.strip(), tuple(texts), _numbers(f"{at} '{name}' reference", raw.get("reference", {})))


def _reference(where: str, index: int, raw: Any, coordinates: set[str]) -> Reference:
    at = f"{where}: [[reference]] #{index + 1}"
    if not isinstance(raw, dict):
        raise OptmapError(f"{at}: expected a table of coordinates and values, got {short(raw)}")
    source = raw.get("source", "")
    match = {key: value for key, value in raw.items() if key in coordinates}
    values = {key: value for key, value in raw.items() if key not in coordinates and key != "source"}
    if not values:
        raise OptmapError(f"{at}: gives no value; add metric = number beside the coordinates "
                          f"({', '.join(sorted(coordinates))})")
    return Reference(match, _numbers(at, values), str(source))


def _vary(where: str, table: Any) -> list[tuple[str, list[str]]]:
    if not isinstance(table, dict):
        raise OptmapError(f"{where}: [vary] must be a table of KEY = [values] or KEY = \"START:STOP:STEP\"")
    out = []
    for key, values in table.items():
        if isinstance(values, str):
            texts = expand_range(values, f"{where}: [vary] {key}")
            out.append(parse_vary(f"{key}={values}") if texts is None else (key, texts))
        elif isinstance(values, list) and values:
            out.append((key, [toml_text(value) for value in values]))
        else:
            raise OptmapError(f"{where}: [vary] {key} must be a non-empty list or a range string, got {short(values)}")
    return out


def read_sweep_file(path: str) -> SweepFile:
    """The sweep file at ``path``, validated (one-line errors naming the file and the key)."""
    raw = read_spec(path)
    unknown = [key for key in raw if key not in KEYS]
    if unknown:
        raise OptmapError(f"{path}: unknown key '{unknown[0]}'{did_you_mean(unknown[0], KEYS)}")
    for key, kind, words in (("title", str, "a string"), ("description", str, "a string"),
                             ("cumulative", bool, "true or false")):
        if key in raw and not isinstance(raw[key], kind):
            raise OptmapError(f"{path}: {key} must be {words}, got {short(raw[key])}")
    out = SweepFile(title=raw.get("title", ""), cumulative=raw.get("cumulative", False))
    engines = raw.get("search", [])
    out.engines = [engines] if isinstance(engines, str) else engines
    if not isinstance(out.engines, list) or not all(isinstance(e, str) and e.strip() for e in out.engines) \
            or ("search" in raw and not out.engines):
        raise OptmapError(f"{path}: search must be an engine name or a non-empty list of them, got {short(engines)}")
    if len(set(out.engines)) != len(out.engines):
        raise OptmapError(f"{path}: search lists '{next(e for e in out.engines if out.engines.count(e) > 1)}' twice")
    out.seeds = raw.get("seeds", [])
    if not isinstance(out.seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                  for s in out.seeds) or ("seeds" in raw and not out.seeds):
        raise OptmapError(f"{path}: seeds must be a non-empty list of whole numbers >= 0, got {short(out.seeds)}")
    out.vary = _vary(path, raw.get("vary", {}))
    variants = raw.get("variants", [])
    if not isinstance(variants, list):
        raise OptmapError(f"{path}: variants must be written as [[variants]] tables")
    out.variants = [_variant(path, i, v) for i, v in enumerate(variants)]
    names = [v.name for v in out.variants]
    if len(set(names)) != len(names):
        raise OptmapError(f"{path}: two variants are called '{next(n for n in names if names.count(n) > 1)}'")
    coordinates = set(COORDINATES) | {key for key, _ in out.vary}
    out.baseline = raw.get("baseline", {})
    if out.baseline and (not isinstance(out.baseline, dict) or len(out.baseline) != 1
                         or not set(out.baseline) <= coordinates):
        raise OptmapError(f"{path}: baseline must name one coordinate and its value, e.g. "
                          f"baseline = {{ engine = \"dp\" }}; coordinates: {', '.join(sorted(coordinates))}")
    references = raw.get("reference", [])
    if not isinstance(references, list):
        raise OptmapError(f"{path}: references must be written as [[reference]] tables")
    out.references = [_reference(path, i, r, coordinates) for i, r in enumerate(references)]
    out.references += [Reference({"variant": v.name}, v.reference) for v in out.variants if v.reference]
    out.plot = raw.get("plot", {})
    if not isinstance(out.plot, dict):
        raise OptmapError(f"{path}: [plot] must be a table with keys {', '.join(PLOT_KEYS)}")
    wrong = [key for key in out.plot if key not in PLOT_KEYS]
    if wrong:
        raise OptmapError(f"{path}: [plot] unknown key '{wrong[0]}'{did_you_mean(wrong[0], PLOT_KEYS)}")
    for key, value in out.plot.items():
        names = value if key == "y" and isinstance(value, list) and value else [value]
        if not all(isinstance(v, str) and v.strip() for v in names):
            raise OptmapError(f"{path}: [plot] {key} must be a non-empty string" + (" or a list of them" if key == "y"
                                                                                     else "") + f", got {short(value)}")
        if key in ("xscale", "yscale") and value not in SCALES:
            raise OptmapError(f"{path}: [plot] {key} must be one of {', '.join(SCALES)}, got {short(value)}")
    return out
