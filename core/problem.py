"""The problem spec: one TOML file composes a workload, a system, a cost model and a search.

Every section names a registered plugin; its other keys are that plugin's options, validated
against the plugin's signature. Errors name the file, the key path and the fix, in one line.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optmap.errors import OptmapError, did_you_mean
from optmap.host import Host, call_with_options, load_host
from optmap.search import Budget

SECTIONS = ("name", "description", "workload", "system", "cost", "objective", "constraints", "search")
REQUIRED = ("workload", "system", "cost")
WORKLOAD_COMMON = ("batch", "dtype", "phase")


@dataclass
class SearchDefaults:
    """The ``[search]`` section: default engine, seed, budget, and per-engine option tables."""

    engine: str
    seed: int
    budget: Budget
    engine_options: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Problem:
    """A validated problem: built workload, system and cost model, plus objective and search."""

    name: str
    path: Path | None
    spec: dict[str, Any]
    workload: Any
    system: Any
    cost_model: Any
    objectives: tuple[str, ...]
    constraints: dict[str, float]
    search: SearchDefaults
    host: Host


def parse_override(text: str) -> tuple[list[str], Any]:
    """``section.key=value`` → (key path, value); the value is read as TOML, else as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise OptmapError(f"--set '{text}': expected section.key=value, e.g. --set workload.batch=256")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return [part.strip() for part in key.split(".")], value


def apply_overrides(spec: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    for text in overrides:
        path, value = parse_override(text)
        node = spec
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise OptmapError(f"--set '{text}': '{part}' is not a table")
            node = child
        node[path[-1]] = value
    return spec


def read_spec(path: str | Path) -> dict[str, Any]:
    """The raw TOML table of a problem file, with syntax errors as one line (line, column)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise OptmapError(f"{path}: no such problem file") from None
    except OSError as exc:
        raise OptmapError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise OptmapError(f"{path}: invalid TOML: {exc}") from None


def _table(where: str, spec: dict, key: str, required: bool) -> dict[str, Any]:
    value = spec.get(key, {})
    if key not in spec and required:
        raise OptmapError(f"{where}: missing section [{key}]; see `optmap schema` or problems/quickstart.toml")
    if not isinstance(value, dict):
        raise OptmapError(f"{where}: '{key}' must be a table [{key}], got {type(value).__name__}")
    return dict(value)


def _pop_name(where: str, section: str, table: dict, key: str, host: Host, kind: str) -> Any:
    if key not in table:
        raise OptmapError(f"{where}: [{section}] needs '{key} = \"...\"'; choices: {', '.join(host.names(kind))}")
    name = table.pop(key)
    if not isinstance(name, str):
        raise OptmapError(f"{where}: [{section}] {key} must be a string, got {name!r}")
    try:
        return host.get(kind, name)
    except OptmapError as exc:
        raise OptmapError(f"{where}: [{section}] {key}: {exc}") from None


def _workload_entry(where: str, table: dict, host: Host, base: Path | None):
    if "model" in table or "file" not in table:
        return _pop_name(where, "workload", table, "model", host, "workload")
    file = Path(table["file"])
    if base is not None and not file.is_absolute():
        file = base / file
    if not file.exists():
        raise OptmapError(f"{where}: [workload] file '{table['file']}' does not exist")
    table["file"] = str(file)
    readers = [e for e in host.registries["workload"].values() if file.suffix in getattr(e.resolve(), "suffixes", ())]
    if len(readers) != 1:
        names = ", ".join(e.name for e in readers) or "none"
        raise OptmapError(
            f"{where}: [workload] cannot tell which reader loads '{file.name}' (candidates: {names}); "
            f"add model = \"<reader>\""
        )
    return readers[0]


def _build_system(where: str, table: dict, host: Host):
    from optmap.system import GroupSpec

    topology = _pop_name(where, "system", table, "topology", host, "topology")
    groups_raw = table.pop("groups", None)
    if not isinstance(groups_raw, list) or not groups_raw:
        raise OptmapError(f"{where}: [system] needs at least one [[system.groups]] with accelerator and count")
    groups = []
    for i, group in enumerate(groups_raw):
        at = f"{where}: [[system.groups]] #{i + 1}"
        if not isinstance(group, dict):
            raise OptmapError(f"{at}: must be a table with accelerator and count")
        unknown = set(group) - {"accelerator", "count"}
        if unknown:
            raise OptmapError(f"{at}: unknown key '{sorted(unknown)[0]}'; valid keys: accelerator, count")
        if "accelerator" not in group or "count" not in group:
            raise OptmapError(f"{at}: needs both accelerator = \"...\" and count = N")
        count = group["count"]
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise OptmapError(f"{at}: count must be a whole number >= 1, got {count!r}")
        try:
            accelerator = host.get("accelerator", str(group["accelerator"])).resolve()
        except OptmapError as exc:
            raise OptmapError(f"{at}: {exc}") from None
        groups.append(GroupSpec(accelerator=accelerator, count=count))
    return call_with_options(f"{where}: [system] topology '{topology.name}'", topology.resolve(), table, groups)


def _objectives(where: str, table: dict, metrics: tuple[str, ...]) -> tuple[str, ...]:
    unknown = set(table) - {"minimize"}
    if unknown:
        raise OptmapError(f"{where}: [objective] unknown key '{sorted(unknown)[0]}'; valid keys: minimize")
    names = table.get("minimize", ["time"])
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise OptmapError(f"{where}: [objective] minimize must be a list of metric names, e.g. [\"time\"]")
    for name in names:
        if name not in metrics:
            raise OptmapError(f"{where}: [objective] unknown metric '{name}'{did_you_mean(name, metrics)}")
    return tuple(names)


def _constraints(where: str, table: dict, metrics: tuple[str, ...]) -> dict[str, float]:
    limits = {}
    for key, value in table.items():
        metric = key.removeprefix("max_")
        if not key.startswith("max_") or metric not in metrics:
            raise OptmapError(
                f"{where}: [constraints] unknown key '{key}'; use max_<metric> with a metric of "
                f"this cost model: {', '.join('max_' + m for m in metrics)}"
            )
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise OptmapError(f"{where}: [constraints] {key} must be a number, got {value!r}")
        limits[metric] = float(value)
    return limits


def _search(where: str, table: dict, host: Host) -> SearchDefaults:
    engine = table.pop("engine", "exhaustive")
    seed = table.pop("seed", 0)
    budget_raw = table.pop("budget", {})
    if not isinstance(engine, str):
        raise OptmapError(f"{where}: [search] engine must be a string")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise OptmapError(f"{where}: [search] seed must be a whole number >= 0, got {seed!r}")
    if not isinstance(budget_raw, dict) or set(budget_raw) - {"evaluations", "seconds"}:
        raise OptmapError(f"{where}: [search] budget must be a table with evaluations and/or seconds")
    for key, value in budget_raw.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise OptmapError(f"{where}: [search] budget.{key} must be a positive number, got {value!r}")
    budget = Budget(
        evaluations=int(budget_raw["evaluations"]) if "evaluations" in budget_raw else None,
        seconds=float(budget_raw["seconds"]) if "seconds" in budget_raw else None,
    )
    engines = host.registries["search_engine"]
    options = {}
    for key, value in table.items():
        if key not in engines or not isinstance(value, dict):
            raise OptmapError(
                f"{where}: [search] unknown key '{key}'; valid keys: engine, seed, budget, or a "
                f"table [search.<engine>] of engine options{did_you_mean(key, engines)}"
            )
        options[key] = value
    return SearchDefaults(engine=engine, seed=seed, budget=budget, engine_options=options)


def build_problem(spec: dict[str, Any], path: Path | None = None, plugins: tuple[str, ...] = ()) -> Problem:
    """Validate a raw spec table and build everything it names."""
    where = str(path) if path else "problem"
    unknown = [key for key in spec if key not in SECTIONS]
    if unknown:
        raise OptmapError(f"{where}: unknown top-level key '{unknown[0]}'{did_you_mean(unknown[0], SECTIONS)}")
    host = load_host(plugins)
    base = path.parent if path else None
    workload_table = _table(where, spec, "workload", True)
    entry = _workload_entry(where, workload_table, host, base)
    workload = call_with_options(f"{where}: [workload] '{entry.name}'", entry.resolve(), workload_table)
    system = _build_system(where, _table(where, spec, "system", True), host)
    cost_table = _table(where, spec, "cost", True)
    cost_entry = _pop_name(where, "cost", cost_table, "model", host, "cost_model")
    cost_model = call_with_options(f"{where}: [cost] '{cost_entry.name}'", cost_entry.resolve(), cost_table, workload, system)
    metrics = tuple(cost_model.metrics)
    name = spec.get("name", path.stem if path else "problem")
    if not isinstance(name, str):
        raise OptmapError(f"{where}: name must be a string")
    return Problem(
        name=name,
        path=path,
        spec=spec,
        workload=workload,
        system=system,
        cost_model=cost_model,
        objectives=_objectives(where, _table(where, spec, "objective", False), metrics),
        constraints=_constraints(where, _table(where, spec, "constraints", False), metrics),
        search=_search(where, _table(where, spec, "search", False), host),
        host=host,
    )


def load(path: str | Path, overrides: list[str] | tuple[str, ...] = (), plugins: tuple[str, ...] = ()) -> Problem:
    """Read, override (``section.key=value``) and validate a problem file."""
    path = Path(path)
    spec = apply_overrides(read_spec(path), list(overrides))
    return build_problem(spec, path, tuple(plugins))
