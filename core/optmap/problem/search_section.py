"""The ``[search]`` section: default engine, seed, budget and per-engine option tables."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from optmap.errors import OptmapError
from optmap.host import Host
from optmap.options import suggestion, unknown_key, validate_options
from optmap.problem.common import lookup, resolve, short
from optmap.search import Budget

def default_engine(cost_model: Any, host: Host, where: str = "problem") -> str:
    """The engine of a problem that names none: the formulation's own (``default_engine``), else
    the generic engine declared the default for a space of its size (``DefaultFor`` given at
    registration; of several, the most preferred)."""
    own = getattr(cost_model, "default_engine", None)
    if isinstance(own, str) and own in host.registries["search_engine"]:
        return own
    size = cost_model.space.size
    fitting = [(-entry.default.preference, name) for name, entry in host.registries["search_engine"].items()
               if entry.default is not None and size <= entry.default.max_size]
    if not fitting:
        raise OptmapError(f"{where}: [search] no installed search engine is a default for a space of {size:.4g} points; name one "
                          f"in [search] engine (engines: {', '.join(host.names('search_engine'))})")
    return min(fitting)[1]


@dataclass
class SearchDefaults:
    """The ``[search]`` section: default engine, seed, budget, and per-engine option tables."""

    engine: str
    seed: int
    budget: Budget
    engine_options: dict[str, dict[str, Any]] = field(default_factory=dict)


def budget(where: str, raw: Any) -> Budget:
    if not isinstance(raw, dict):
        raise OptmapError(
            f"{where}: [search] budget must be a table such as {{ evaluations = 1000, seconds = 60 }}, "
            f"got {short(raw)}"
        )
    unknown = sorted(set(raw) - {"evaluations", "seconds"})
    if unknown:
        raise OptmapError(f"{where}: [search] budget: {unknown_key(unknown[0], ('evaluations', 'seconds'))}")
    evaluations, seconds = raw.get("evaluations"), raw.get("seconds")
    if evaluations is not None and (
        isinstance(evaluations, bool) or not isinstance(evaluations, int) or evaluations < 1
    ):
        raise OptmapError(
            f"{where}: [search] budget.evaluations must be a whole number >= 1, got {short(evaluations)}"
        )
    if seconds is not None and (
        isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0
    ):
        raise OptmapError(f"{where}: [search] budget.seconds must be a number > 0, got {short(seconds)}")
    return Budget(evaluations=evaluations, seconds=float(seconds) if seconds is not None else None)


def search_defaults(where: str, table: dict, host: Host, cost_model: Any) -> SearchDefaults:
    """The section, with every engine option table validated against its engine's signature."""
    engine = table.pop("engine", None)
    engine = default_engine(cost_model, host, where) if engine is None else engine
    seed = table.pop("seed", 0)
    limits = budget(where, table.pop("budget", {}))
    lookup(f"{where}: [search]", "engine", engine, host, "search_engine")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise OptmapError(f"{where}: [search] seed must be a whole number >= 0, got {short(seed)}")
    engines = host.registries["search_engine"]
    options = {}
    for key, value in table.items():
        if key not in engines:
            valid = ("engine", "seed", "budget")
            hint = suggestion(key, (*valid, *engines)) or ";"
            raise OptmapError(
                f"{where}: [search] unknown key '{key}'{hint} valid keys: {', '.join(valid)}, or a table "
                f"[search.<engine>] of one engine's options (engines: {', '.join(sorted(engines))})"
            )
        if not isinstance(value, dict):
            raise OptmapError(
                f"{where}: [search] '{key}' must be a table [search.{key}] of engine options, got {short(value)}"
            )
        what = f"{where}: [search.{key}]"
        validate_options(what, resolve(what, engines[key]), value)
        options[key] = value
    return SearchDefaults(engine=engine, seed=seed, budget=limits, engine_options=options)
