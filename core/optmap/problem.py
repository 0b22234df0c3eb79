"""The problem spec: one TOML file composes a workload, a system, a cost model and a search.

Every section names a registered plugin; its other keys are that plugin's options, validated
against the plugin's signature. Errors name the file, the key path and the fix, in one line.
"""

from __future__ import annotations

import copy
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optmap.errors import OptmapError, did_you_mean
from optmap.host import Entry, Host, call_with_options, load_host, one_line
from optmap.options import suggestion, unknown_key, validate_options
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
    path = [part.strip() for part in key.split(".")]
    if not sep or not all(path):
        raise OptmapError(f"--set '{text}': expected SECTION.KEY=VALUE, e.g. --set workload.batch=256")
    if not raw.strip():
        raise OptmapError(f"--set '{text}': no value after '='; e.g. --set {key.strip()}=256")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return path, value


def _kind(value: Any) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}
    return kinds.get(type(value), f"a {type(value).__name__}")


def apply_overrides(spec: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``spec`` with each ``section.key=value`` of ``overrides`` set (missing tables are created)."""
    spec = copy.deepcopy(spec)
    for text in overrides:
        path, value = parse_override(text)
        node = spec
        if path[0] not in SECTIONS:
            raise OptmapError(f"--set '{text}': unknown section '{path[0]}'{did_you_mean(path[0], SECTIONS)}")
        for depth, part in enumerate(path[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise OptmapError(
                    f"--set '{text}': '{'.'.join(path[:depth + 1])}' is {_kind(child)}, not a table; "
                    f"edit the file instead"
                )
            node = child
        node[path[-1]] = value
    return spec


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def read_spec(path: str | Path) -> dict[str, Any]:
    """The raw TOML table of a problem file, with syntax errors as one line (line, column, text)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise OptmapError(f"{path}: no such problem file") from None
    except IsADirectoryError:
        raise OptmapError(f"{path}: is a folder, not a problem file") from None
    except OSError as exc:
        raise OptmapError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise OptmapError(
            f"{path}: not UTF-8 text at line {line} (byte {data[exc.start]:#04x}); save the file as UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_POSITION.search(message)
        if match is None:
            raise OptmapError(f"{path}: invalid TOML: {one_line(message)}") from None
        line, column = int(match.group(1)), int(match.group(2))
        lines = text.splitlines()
        source = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        shown = f" in `{source[:80]}`" if source else ""
        reason = one_line(message[: match.start()])
        if reason == "Illegal character '\\n'" and (source.count('"') % 2 or source.count("'") % 2):
            reason = "a string is not closed before the end of the line"
        raise OptmapError(f"{path}: invalid TOML at line {line}, column {column}: {reason}{shown}") from None


def _table(where: str, spec: dict, key: str, required: bool) -> dict[str, Any]:
    if key not in spec:
        if required:
            raise OptmapError(
                f"{where}: missing section [{key}]; every problem needs [workload], [system] and [cost] "
                f"(see problems/quickstart.toml or `optmap schema`)"
            )
        return {}
    value = spec[key]
    if not isinstance(value, dict):
        raise OptmapError(f"{where}: '{key}' must be a table [{key}], got {type(value).__name__} {_short(value)}")
    return dict(value)


def _short(value: Any, limit: int = 50) -> str:
    text = one_line(repr(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _lookup(at: str, key: str, name: Any, host: Host, kind: str) -> Entry:
    """The registered ``kind`` called ``name``, given as ``key`` at ``at``; one-line errors."""
    label = kind.replace("_", " ")
    article = "an" if label[0] in "aeiou" else "a"
    if not isinstance(name, str):
        raise OptmapError(f"{at} {key} must be a string naming {article} {label}, got {_short(name)}")
    try:
        return host.get(kind, name)
    except OptmapError as exc:
        raise OptmapError(f"{at} {key}: {exc}") from None


def _pop_name(where: str, section: str, table: dict, key: str, host: Host, kind: str) -> Entry:
    if key not in table:
        label = kind.replace("_", " ")
        raise OptmapError(
            f"{where}: [{section}] needs {key} = \"<{label}>\"; choices: {', '.join(host.names(kind))}"
        )
    return _lookup(f"{where}: [{section}]", key, table.pop(key), host, kind)


def _resolve(what: str, entry: Entry) -> Any:
    """``entry.resolve()``, with an import failure of the plugin reported at ``what``."""
    try:
        return entry.resolve()
    except OptmapError as exc:
        raise OptmapError(f"{what}: {exc}") from exc


def _call(what: str, entry: Entry, table: dict, *args: Any, section_keys: tuple[str, ...]) -> Any:
    factory = _resolve(what, entry)
    return call_with_options(what, factory, table, *args, plugin=entry.plugin, section_keys=section_keys)


def _check_returned(what: str, entry: Entry, value: Any, expected: type | tuple[str, ...]) -> Any:
    """A factory that returns the wrong kind of object is the plugin's bug: say which one."""
    if isinstance(expected, type):
        ok, wanted = isinstance(value, expected), f"{expected.__module__}.{expected.__qualname__}"
    else:
        ok, wanted = all(hasattr(value, attr) for attr in expected), f"an object with {', '.join(expected)}"
    if not ok:
        raise OptmapError(
            f"{what}: plugin '{entry.plugin}' returned {type(value).__name__}, not {wanted}; "
            f"report this to the plugin's authors"
        )
    return value


def _workload_entry(where: str, table: dict, host: Host, base: Path | None) -> Entry:
    if "file" in table:
        raw = table["file"]
        if not isinstance(raw, str) or not raw:
            raise OptmapError(f"{where}: [workload] file must be a path (string), got {_short(raw)}")
        file = Path(raw).expanduser()
        if base is not None and not file.is_absolute():
            file = base / file
        if not file.is_file():
            state = "is a folder" if file.is_dir() else "does not exist"
            raise OptmapError(
                f"{where}: [workload] file '{raw}' {state} (looked for {file}; relative paths start "
                f"at the problem file's folder)"
            )
        table["file"] = str(file)
    if "model" in table or "file" not in table:
        return _pop_name(where, "workload", table, "model", host, "workload")
    file = Path(table["file"])
    readers, broken = {}, []
    for entry in host.registries["workload"].values():
        try:
            suffixes = getattr(entry.resolve(), "suffixes", None)
        except OptmapError:
            broken.append(entry.name)  # a broken plugin must not block files other readers load
            continue
        if suffixes:
            readers[entry.name] = tuple(suffixes)
    matching = [name for name, suffixes in readers.items() if file.suffix.lower() in suffixes]
    if len(matching) == 1:
        return host.registries["workload"][matching[0]]
    known = "; ".join(f"{name} reads {', '.join(s)}" for name, s in sorted(readers.items())) or "none registered"
    if broken:
        known += f"; could not import {', '.join(sorted(broken))}"
    if matching:
        raise OptmapError(
            f"{where}: [workload] several readers load '{file.suffix}' files ({', '.join(matching)}); "
            f"add model = \"<reader>\""
        )
    raise OptmapError(
        f"{where}: [workload] file '{file.name}': no workload reader loads '{file.suffix or '(no suffix)'}' "
        f"files ({known}); add model = \"<reader>\" or convert the file"
    )


def _build_workload(where: str, table: dict, host: Host, base: Path | None):
    from optmap.workload import Workload

    entry = _workload_entry(where, table, host, base)
    what = f"{where}: [workload] model '{entry.name}'"
    workload = _call(what, entry, table, section_keys=("model", "file") if "file" in table else ("model",))
    return _check_returned(what, entry, workload, Workload)


def _groups(where: str, groups_raw: Any, host: Host) -> list:
    from optmap.system import GroupSpec

    example = "add [[system.groups]] tables with accelerator = \"<name>\" and count = N"
    if groups_raw is None:
        raise OptmapError(f"{where}: [system] has no groups; {example}")
    if not isinstance(groups_raw, list):
        raise OptmapError(f"{where}: [system] groups must be a list of tables, got {_short(groups_raw)}; {example}")
    if not groups_raw:
        raise OptmapError(f"{where}: [system] groups is empty; {example}")
    groups = []
    for i, group in enumerate(groups_raw):
        at = f"{where}: [[system.groups]] #{i + 1}"
        if not isinstance(group, dict):
            raise OptmapError(f"{at}: must be a table with accelerator and count, got {_short(group)}")
        unknown = sorted(set(group) - {"accelerator", "count"})
        if unknown:
            raise OptmapError(f"{at}: {unknown_key(unknown[0], ('accelerator', 'count'))}")
        for key, hint in (("accelerator", 'accelerator = "<name>"'), ("count", "count = N (devices)")):
            if key not in group:
                raise OptmapError(f"{at}: missing key '{key}'; add {hint}")
        count = group["count"]
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise OptmapError(f"{at}: count must be a whole number >= 1, got {_short(count)}")
        name = group["accelerator"]
        entry = _lookup(f"{at}:", "accelerator", name, host, "accelerator")
        from optmap.system import Accelerator

        what = f"{at}: accelerator '{name}'"
        accelerator = _check_returned(what, entry, _resolve(what, entry), Accelerator)
        groups.append(GroupSpec(accelerator=accelerator, count=count))
    return groups


def _build_system(where: str, table: dict, host: Host):
    from optmap.system import System

    topology = _pop_name(where, "system", table, "topology", host, "topology")
    groups = _groups(where, table.pop("groups", None), host)
    what = f"{where}: [system] topology '{topology.name}'"
    system = _call(what, topology, table, groups, section_keys=("topology", "groups"))
    return _check_returned(what, topology, system, System)


def _build_cost_model(where: str, table: dict, host: Host, workload, system):
    entry = _pop_name(where, "cost", table, "model", host, "cost_model")
    what = f"{where}: [cost] model '{entry.name}'"
    cost_model = _call(what, entry, table, workload, system, section_keys=("model",))
    return entry, _check_returned(what, entry, cost_model, ("space", "metrics", "evaluate"))


def _objectives(where: str, table: dict, metrics: tuple[str, ...], cost_name: str) -> tuple[str, ...]:
    unknown = sorted(set(table) - {"minimize"})
    if unknown:
        raise OptmapError(f"{where}: [objective] {unknown_key(unknown[0], ('minimize',))}")
    names = table.get("minimize", ["time"])
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise OptmapError(
            f"{where}: [objective] minimize must be a non-empty list of metric names, e.g. [\"time\"], "
            f"got {_short(names)}"
        )
    for name in names:
        if name not in metrics:
            hint = did_you_mean(name, metrics).replace("valid names", f"metrics of cost model '{cost_name}'")
            raise OptmapError(f"{where}: [objective] minimize: unknown metric '{name}'{hint}")
    if len(set(names)) != len(names):
        raise OptmapError(f"{where}: [objective] minimize lists a metric twice: {_short(names)}")
    return tuple(names)


def _constraints(where: str, table: dict, metrics: tuple[str, ...], cost_name: str) -> dict[str, float]:
    limits = {}
    for key, value in table.items():
        metric = key.removeprefix("max_")
        if not key.startswith("max_") or metric not in metrics:
            valid = ["max_" + m for m in metrics]
            raise OptmapError(
                f"{where}: [constraints] {unknown_key(key, valid)} (max_<metric> for a metric of "
                f"cost model '{cost_name}')"
            )
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise OptmapError(f"{where}: [constraints] {key} must be a finite number, got {_short(value)}")
        limits[metric] = float(value)
    return limits


def _budget(where: str, raw: Any) -> Budget:
    if not isinstance(raw, dict):
        raise OptmapError(
            f"{where}: [search] budget must be a table such as {{ evaluations = 1000, seconds = 60 }}, "
            f"got {_short(raw)}"
        )
    unknown = sorted(set(raw) - {"evaluations", "seconds"})
    if unknown:
        raise OptmapError(f"{where}: [search] budget: {unknown_key(unknown[0], ('evaluations', 'seconds'))}")
    evaluations, seconds = raw.get("evaluations"), raw.get("seconds")
    if evaluations is not None and (
        isinstance(evaluations, bool) or not isinstance(evaluations, int) or evaluations < 1
    ):
        raise OptmapError(
            f"{where}: [search] budget.evaluations must be a whole number >= 1, got {_short(evaluations)}"
        )
    if seconds is not None and (
        isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0
    ):
        raise OptmapError(f"{where}: [search] budget.seconds must be a number > 0, got {_short(seconds)}")
    return Budget(evaluations=evaluations, seconds=float(seconds) if seconds is not None else None)


def _search(where: str, table: dict, host: Host, cost_model: Any, cost_name: str) -> SearchDefaults:
    engine = table.pop("engine", "exhaustive")
    seed = table.pop("seed", 0)
    budget = _budget(where, table.pop("budget", {}))
    engine_entry = _lookup(f"{where}: [search]", "engine", engine, host, "search_engine")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise OptmapError(f"{where}: [search] seed must be a whole number >= 0, got {_short(seed)}")
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
                f"{where}: [search] '{key}' must be a table [search.{key}] of engine options, got {_short(value)}"
            )
        what = f"{where}: [search.{key}]"
        validate_options(what, _resolve(what, engines[key]), value)
        options[key] = value
    factory = _resolve(f"{where}: [search] engine '{engine}'", engine_entry)
    requires = getattr(factory, "requires", ())  # a class attribute; instances are checked at run time
    requires = requires if isinstance(requires, (set, frozenset, tuple, list)) else ()
    missing = sorted(set(requires) - set(getattr(cost_model, "capabilities", ())))
    if missing:
        raise OptmapError(
            f"{where}: [search] engine '{engine}' needs the capability '{missing[0]}', which cost model "
            f"'{cost_name}' does not offer; choose another engine (e.g. exhaustive or random)"
        )
    return SearchDefaults(engine=engine, seed=seed, budget=budget, engine_options=options)


def build_problem(spec: dict[str, Any], path: Path | None = None, plugins: tuple[str, ...] = ()) -> Problem:
    """Validate a raw spec table and build everything it names.

    Checks run in file order (top-level keys, [workload], [system], [cost], [objective],
    [constraints], [search]); the first problem found is raised as a one-line OptmapError that
    names the file, the section and the key.
    """
    where = str(path) if path else "problem"
    unknown = [key for key in spec if key not in SECTIONS]
    if unknown:
        raise OptmapError(f"{where}: unknown top-level key '{unknown[0]}'{did_you_mean(unknown[0], SECTIONS)}")
    name = spec.get("name", path.stem if path else "problem")
    if not isinstance(name, str) or not name.strip():
        raise OptmapError(f"{where}: name must be a non-empty string, got {_short(name)}")
    description = spec.get("description", "")
    if not isinstance(description, str):
        raise OptmapError(f"{where}: description must be a string, got {_short(description)}")
    tables = {key: _table(where, spec, key, key in REQUIRED) for key in SECTIONS[2:]}
    host = load_host(plugins)
    base = path.parent if path else None
    workload = _build_workload(where, tables["workload"], host, base)
    system = _build_system(where, tables["system"], host)
    cost_entry, cost_model = _build_cost_model(where, tables["cost"], host, workload, system)
    metrics = tuple(cost_model.metrics)
    return Problem(
        name=name,
        path=path,
        spec=spec,
        workload=workload,
        system=system,
        cost_model=cost_model,
        objectives=_objectives(where, tables["objective"], metrics, cost_entry.name),
        constraints=_constraints(where, tables["constraints"], metrics, cost_entry.name),
        search=_search(where, tables["search"], host, cost_model, cost_entry.name),
        host=host,
    )


def load(path: str | Path, overrides: list[str] | tuple[str, ...] = (), plugins: tuple[str, ...] = ()) -> Problem:
    """Read, override (``section.key=value``) and validate a problem file."""
    path = Path(path)
    spec = apply_overrides(read_spec(path), list(overrides))
    return build_problem(spec, path, tuple(plugins))
