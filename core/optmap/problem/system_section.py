"""The ``[system]`` section and the problem's own ``[accelerators]``.

A group names an accelerator: one defined in the problem file (``[accelerators.NAME]``, inline
or in a file next to it) or a registered one. The group's other keys are that accelerator's
options: datasheet overrides for a preset (``memory_gib = 40``), the keyword options of an
accelerator registered as a factory (an FPGA's design, its resources).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from annotated_types import Gt

from optmap.errors import OptmapError
from optmap.host import Entry, Host, call_with_options
from optmap.options import validate_options
from optmap.problem.common import call, check_returned, lookup, pop_name, resolve, short
from optmap.problem.spec import parse_toml

Positive = Annotated[float, Gt(0)]
GROUP_KEYS = ("accelerator", "count", "name")


def datasheet_overrides(
    *,
    peak_tflops: Positive | dict[str, Positive] | None = None,
    memory_gib: Positive | None = None,
    memory_bandwidth_gBps: Positive | None = None,  # noqa: N803 - B = bytes
    network_gbps: Positive | None = None,
    power_watts: Positive | None = None,
    description: str | None = None,
    attrs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Datasheet figures that replace a preset's: TFLOP/s, GiB, GB/s (bytes), Gb/s (bits), W."""
    return {k: v for k, v in locals().items() if v is not None}


def accelerator_definition(
    *,
    base: str | None = None,
    file: str | None = None,
    peak_tflops: Positive | dict[str, Positive] | None = None,
    memory_gib: Positive | None = None,
    memory_bandwidth_gBps: Positive | None = None,  # noqa: N803
    network_gbps: Positive | None = None,
    power_watts: Positive | None = None,
    description: str | None = None,
    attrs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An accelerator defined in a problem file: a ``base`` accelerator with overrides, a
    ``file`` of the same keys (``optmap calibrate`` writes one), or every datasheet figure."""
    return {k: v for k, v in locals().items() if v is not None}


def _given(options: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in options.items() if value is not None}


def _definition(where: str, name: str, table: Any, host: Host, base_dir: Path | None):
    from optmap.system import Accelerator

    at = f"{where}: [accelerators.{name}]"
    if not isinstance(table, dict):
        raise OptmapError(f"{at} must be a table of datasheet figures or file = \"<preset.toml>\", got {short(table)}")
    keys = _given(validate_options(at, accelerator_definition, table))
    if "file" in keys:
        path = Path(keys.pop("file")).expanduser()
        path = base_dir / path if base_dir is not None and not path.is_absolute() else path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise OptmapError(f"{at}: cannot read file '{path}': {getattr(exc, 'strerror', None) or exc}") from None
        stored = parse_toml(text, str(path))
        stored.pop("name", None)
        keys = {**_given(validate_options(f"{path}", accelerator_definition, stored)), **keys}
        keys.pop("file", None)
    if "base" in keys:
        entry = lookup(f"{at}", "base", keys.pop("base"), host, "accelerator")
        base = resolve(at, entry)
        if not isinstance(base, Accelerator):
            raise OptmapError(f"{at}: base '{entry.name}' is an accelerator factory; name it in a group instead")
        try:
            return base.with_datasheet(name=name, **keys)
        except OptmapError as exc:
            raise OptmapError(f"{at}: {exc}") from None
    absent = [k for k in ("peak_tflops", "memory_gib", "memory_bandwidth_gBps", "network_gbps") if k not in keys]
    if absent:
        raise OptmapError(f"{at}: missing {', '.join(absent)}; give every datasheet figure, base = \"<accelerator>\" "
                          f"to start from a registered one, or file = \"<preset.toml>\"")
    try:
        accelerator = Accelerator.from_datasheet(name, **keys)
    except OptmapError as exc:
        raise OptmapError(f"{at}: {exc}") from None
    from optmap.compute import kernels_of

    kernels_of(accelerator, at)  # measured kernel ceilings: checked here, where the file is named
    return accelerator


def accelerators(where: str, table: dict, host: Host, base_dir: Path | None) -> dict[str, Any]:
    """The problem's own accelerators, by name."""
    return {name: _definition(where, name, value, host, base_dir) for name, value in table.items()}


def _accelerator(at: str, group: dict, own: dict, host: Host):
    """The accelerator of one group, with the group's extra keys applied."""
    from optmap.system import Accelerator

    name = group["accelerator"]
    options = {k: v for k, v in group.items() if k not in GROUP_KEYS}
    what = f"{at}: accelerator '{name}'"
    if isinstance(name, str) and name in own:
        target, entry = own[name], None
    else:
        entry = lookup(f"{at}:", "accelerator", name, host, "accelerator")
        target = resolve(what, entry)
    if isinstance(target, Accelerator):
        changes = _given(validate_options(at, datasheet_overrides, options, section_keys=GROUP_KEYS))
        try:
            return target.with_datasheet(**changes) if changes else target
        except OptmapError as exc:
            raise OptmapError(f"{what}: {exc}") from None
    if not callable(target):
        return check_returned(what, entry, target, Accelerator)
    built = call_with_options(at, target, options, plugin=entry.plugin if entry else None, section_keys=GROUP_KEYS)
    return check_returned(what, entry, built, Accelerator)


def groups(where: str, groups_raw: Any, host: Host, own: dict) -> list:
    from optmap.system import GroupSpec

    example = "add [[system.groups]] tables with accelerator = \"<name>\" and count = N"
    if groups_raw is None:
        raise OptmapError(f"{where}: [system] has no groups; {example}")
    if not isinstance(groups_raw, list):
        raise OptmapError(f"{where}: [system] groups must be a list of tables, got {short(groups_raw)}; {example}")
    if not groups_raw:
        raise OptmapError(f"{where}: [system] groups is empty; {example}")
    specs = []
    for i, group in enumerate(groups_raw):
        at = f"{where}: [[system.groups]] #{i + 1}"
        if not isinstance(group, dict):
            raise OptmapError(f"{at}: must be a table with accelerator and count, got {short(group)}")
        for key, hint in (("accelerator", 'accelerator = "<name>"'), ("count", "count = N (devices)")):
            if key not in group:
                raise OptmapError(f"{at}: missing key '{key}'; add {hint}")
        count = group["count"]
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise OptmapError(f"{at}: count must be a whole number >= 1, got {short(count)}")
        label = group.get("name")
        if label is not None and (not isinstance(label, str) or not label.strip()):
            raise OptmapError(f"{at}: name must be a non-empty string, got {short(label)}")
        specs.append(GroupSpec(accelerator=_accelerator(at, group, own, host), count=count, name=label))
    return specs


def build_system(where: str, table: dict, host: Host, own: dict):
    from optmap.system import System

    topology: Entry = pop_name(where, "system", table, "topology", host, "topology")
    specs = groups(where, table.pop("groups", None), host, own)
    what = f"{where}: [system] topology '{topology.name}'"
    built = call(what, topology, table, specs, section_keys=("topology", "groups"), host=host)
    system = check_returned(what, topology, built,
                            System)
    object.__setattr__(system, "options_given", frozenset(table))  # what the file set, not a default
    return system


def check_priced(where: str, system: Any, cost_model: Any, cost_name: str) -> None:
    """Refuse a topology or a [system] option the cost model declares it does not price."""
    topologies = getattr(cost_model, "topologies", None)
    if topologies is not None and system.topology not in topologies:
        raise OptmapError(f"{where}: cost model '{cost_name}' cannot price topology '{system.topology}' "
                          f"({getattr(cost_model, 'topology_reason', 'it does not model that network')}); "
                          f"use one of: {', '.join(topologies)}")
    priced = getattr(cost_model, "system_options", None)
    unused = sorted(set(getattr(system, "options_given", ())) - set(priced)) if priced is not None else []
    if unused:
        raise OptmapError(f"{where}: [system] {unused[0]} is not used by cost model '{cost_name}', which prices "
                          f"{', '.join(priced) or 'no [system] option'}; remove it (nothing written is ignored)")
