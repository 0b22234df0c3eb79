"""The problem spec: one TOML file composes a workload, a system, a cost model and a search.

Every section names a registered plugin; its other keys are that plugin's options, validated
against the plugin's signature. Errors name the file, the key path and the fix, in one line.

- :mod:`~optmap.problem.spec`: reading the file, ``--set`` overrides, ``--fix`` values;
- :mod:`~optmap.problem.workload_section`, :mod:`~optmap.problem.system_section`: building the
  workload (by name or from a model file) and the system (with the file's own accelerators);
- :mod:`~optmap.problem.goals`: objectives, constraints, pinned decisions;
- :mod:`~optmap.problem.search_section`: the default engine, seed, budget and engine options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optmap.cost import missing as cost_model_missing
from optmap.errors import OptmapError, did_you_mean
from optmap.host import Host, load_host
from optmap.problem import goals
from optmap.problem.common import (
    REQUIRED,
    call,
    check_returned,
    pop_name,
    resolve,
    section,
    short,
)
from optmap.problem.search_section import SearchDefaults, search_defaults
from optmap.problem.spec import (
    SECTIONS,
    apply_overrides,
    parse_fix,
    parse_override,
    read_spec,
)
from optmap.problem.system_section import accelerators, build_system, check_priced
from optmap.problem.workload_section import build_workload
from optmap.search.engine import misfit

__all__ = ["Problem", "SearchDefaults", "apply_overrides", "build_problem", "load", "parse_override", "read_spec"]

NAME_LIMIT = 1000  # characters of a problem name (its default result folder is shortened, see optmap.output)


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
    senses: tuple[str, ...] = ()
    lower_bounds: dict[str, float] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    cost_name: str = ""

    @property
    def space(self):
        """The space engines search: the cost model's, with the ``[fix]`` decisions pinned."""
        return self.cost_model.space.pin(self.fixed) if self.fixed else self.cost_model.space


def _name(where: str, spec: dict, path: Path | None) -> str:
    name = spec.get("name", path.stem if path else "problem")
    if not isinstance(name, str) or not name.strip():
        raise OptmapError(f"{where}: name must be a non-empty string, got {short(name)}")
    if len(name) > NAME_LIMIT or any(ord(c) < 32 for c in name):
        raise OptmapError(f"{where}: name must be at most {NAME_LIMIT} printable characters (no control characters "
                          f"such as NUL or newline), got {short(name)}")
    return name


def _engine_fits(where: str, engine: str, host: Host, cost_model: Any, cost_name: str) -> None:
    factory = resolve(f"{where}: [search] engine '{engine}'", host.get("search_engine", engine))
    reason = misfit(factory, cost_model)  # class attributes; instances are checked again when built
    if reason:
        raise OptmapError(f"{where}: [search] engine '{engine}' does not fit cost model '{cost_name}': it {reason}; "
                          f"choose another engine (e.g. ga, random or exhaustive)")


class _Checks:
    """Runs the checks of a problem file: the first error is raised at once, or, with ``every``,
    each is noted and the checks go on wherever they do not depend on a part that failed."""

    def __init__(self, every: bool) -> None:
        self.every = every
        self.problems: list[str] = []

    def __call__(self, check, *args, **kwargs):
        """``check(*args, **kwargs)``, or ``FAILED`` once its error is noted."""
        try:
            return check(*args, **kwargs)
        except OptmapError as exc:
            if not self.every:
                raise
            self.problems.extend(exc.problems)
            return FAILED

    def raise_noted(self) -> None:
        if self.problems:
            raise OptmapError(self.problems[0], problems=self.problems)


FAILED = object()  # what a failed check gave (``_Checks``)


def _cost_model(where: str, table: dict, workload, system, host: Host):
    cost_entry = pop_name(where, "cost", table, "model", host, "cost_model")
    what = f"{where}: [cost] model '{cost_entry.name}'"
    cost_model = call(what, cost_entry, table, workload, system, section_keys=("model",), host=host)
    check_returned(what, cost_entry, cost_model, cost_model_missing)
    return cost_entry.name, cost_model


def _description(where: str, spec: dict) -> None:
    description = spec.get("description", "")
    if not isinstance(description, str):
        raise OptmapError(f"{where}: description must be a string, got {short(description)}")


def _unknown_key(where: str, key: str) -> None:
    raise OptmapError(f"{where}: unknown top-level key '{key}'{did_you_mean(key, SECTIONS)}")


# (section, key, registry) of the names a problem file gives, checked against the left-out plugins
NAMED = (("workload", "model", "workload"), ("system", "topology", "topology"), ("cost", "model", "cost_model"),
         ("search", "engine", "search_engine"))


def _left_out_first(where: str, tables: dict[str, dict], host: Host) -> None:
    """A name that only a left-out plugin provides (one that needs a disabled or missing plugin)
    refuses the problem before anything is built, in one line naming both plugins."""
    tables = {name: table if isinstance(table, dict) else {} for name, table in tables.items()}  # a failed one: {}
    groups = tables["system"].get("groups")
    named = [(f"[{section_name}] {key}", kind, tables[section_name].get(key)) for section_name, key, kind in NAMED]
    named += [("[[system.groups]] accelerator", "accelerator", group.get("accelerator"))
              for group in (groups if isinstance(groups, list) else ()) if isinstance(group, dict)]
    for place, kind, name in named:
        if isinstance(name, str) and name in host.withheld.get(kind, {}):
            try:
                host.get(kind, name)
            except OptmapError as exc:
                raise OptmapError(f"{where}: {place}: {exc}") from None


def build_problem(spec: dict[str, Any], path: Path | None = None, plugins: tuple[str, ...] = (),
                  disabled: tuple[str, ...] = (), every_error: bool = False) -> Problem:
    """Validate a raw spec table and build everything it names.

    Checks run in file order (top-level keys, [workload], [accelerators] and [system], [cost],
    [objective], [constraints], [fix], [search]); the first problem found is raised as a
    one-line OptmapError that names the file, the section and the key. With ``every_error``
    (``optmap validate``) the checks go on past an error wherever they do not depend on the part
    that failed, and the OptmapError's ``problems`` lists every error found, one line each.
    """
    where = str(path) if path else "problem"
    unknown = [key for key in spec if key not in SECTIONS]
    if unknown and "workload" not in spec and {"variants", "vary", "reference", "cumulative"} & set(spec):
        raise OptmapError(f"{where} is a sweep file, not a problem: run it with optmap sweep PROBLEM.toml "
                          f"--variants {Path(path).name if path else 'FILE.toml'}")
    check = _Checks(every_error)
    for key in unknown:
        check(_unknown_key, where, key)
    name = check(_name, where, spec, path)
    check(_description, where, spec)
    tables = {key: check(section, where, spec, key, key in REQUIRED) for key in SECTIONS[2:]}
    host = load_host(plugins, disabled)
    _left_out_first(where, tables, host)
    base = path.parent if path else None

    def after(checker, *inputs):  # a check whose inputs are all there (a failed one is already noted)
        return FAILED if any(x is FAILED for x in inputs) else check(checker, where, *inputs)

    workload = after(build_workload, tables["workload"], host, base)
    own = after(accelerators, tables["accelerators"], host, base)
    system = after(build_system, tables["system"], host, own)
    named = after(_cost_model, tables["cost"], workload, system, host)
    if named is FAILED:  # objectives, constraints, pins and the engine are checked against the cost model
        check.raise_noted()
    cost_name, cost_model = named
    widened = after(goals.admitted, tables["fix"], cost_model)  # pins beyond the search's bounds
    cost_model = cost_model if widened is FAILED else widened
    objectives = after(goals.objectives, tables["objective"], cost_model, cost_name)
    bounds = after(goals.constraints, tables["constraints"], tuple(cost_model.metrics), cost_name)
    fixed = after(goals.fixes, tables["fix"], cost_model)
    search = after(search_defaults, tables["search"], host, cost_model)
    if search is not FAILED:
        check(_engine_fits, where, search.engine, host, cost_model, cost_name)
    check(check_priced, where, system, cost_model, cost_name)  # last: the file's own defects come first
    check.raise_noted()
    (names, senses), (upper, lower) = objectives, bounds
    return Problem(name=name, path=path, spec=spec, workload=workload, system=system, cost_model=cost_model,
                   objectives=names, constraints=upper, search=search, host=host, senses=senses,
                   lower_bounds=lower, fixed=fixed, cost_name=cost_name)


def load(path: str | Path, overrides: list[str] | tuple[str, ...] = (), plugins: tuple[str, ...] = (),
         fixes: list[str] | tuple[str, ...] = (), disabled: tuple[str, ...] = (), every_error: bool = False) -> Problem:
    """Read, override (``section.key=value``, ``--fix NAME=VALUE``) and validate a problem file
    (``every_error``: see :func:`build_problem`)."""
    path = Path(path)
    spec = apply_overrides(read_spec(path), list(overrides))
    if fixes:
        table = spec.setdefault("fix", {})
        if not isinstance(table, dict):
            raise OptmapError(f"{path}: 'fix' must be a table [fix], got {short(table)}")
        for text in fixes:
            decision, value = parse_fix(text)
            table[decision] = value
    return build_problem(spec, path, tuple(plugins), tuple(disabled), every_error)
