"""Groups of devices: what a problem file lists (`GroupSpec`) and what a built system holds (`Group`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from optmap.errors import OptmapError
from optmap.system.accelerator import Accelerator


@dataclass(frozen=True)
class GroupSpec:
    """``count`` devices of one accelerator kind, as a problem file lists them (``name`` optional)."""

    accelerator: Accelerator
    count: int
    name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.accelerator, Accelerator):
            raise OptmapError(
                f"group: accelerator must be an Accelerator, got {type(self.accelerator).__name__}"
            )
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise OptmapError(
                f"group of '{self.accelerator.name}': count must be an integer >= 1, got {self.count!r}"
            )
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise OptmapError(f"group of '{self.accelerator.name}': name must be a non-empty string")


@dataclass(frozen=True)
class Group:
    """A named set of devices of one accelerator kind inside a :class:`System`."""

    name: str
    accelerator: Accelerator
    devices: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.devices)


def assign_devices(specs: Sequence[GroupSpec]) -> tuple[tuple[Accelerator, ...], tuple[Group, ...]]:
    """Number the devices of ``specs`` contiguously, group after group.

    Group names: the spec's ``name``, else the accelerator's name; an accelerator used by several
    unnamed groups gets ``#k`` suffixes (``tpu-v2#0``, ``tpu-v2#1``).
    """
    if isinstance(specs, GroupSpec):
        specs = [specs]
    specs = list(specs)
    if not specs:
        raise OptmapError("system: no accelerator groups given; list at least one [[system.groups]]")
    for s in specs:
        if not isinstance(s, GroupSpec):
            raise OptmapError(f"system: groups must be GroupSpec objects, got {type(s).__name__}")
    base = [s.name or s.accelerator.name for s in specs]
    seen: dict[str, int] = {}
    names = []
    for s, b in zip(specs, base):
        if s.name is None and base.count(b) > 1:
            k = seen.get(b, 0)
            seen[b] = k + 1
            names.append(f"{b}#{k}")
        else:
            names.append(b)
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise OptmapError(f"system: two groups are named '{dup}'; give each group a unique name")
    devices: list[Accelerator] = []
    groups: list[Group] = []
    for s, n in zip(specs, names):
        start = len(devices)
        devices.extend([s.accelerator] * s.count)
        groups.append(Group(n, s.accelerator, tuple(range(start, start + s.count))))
    return tuple(devices), tuple(groups)
