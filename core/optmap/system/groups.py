"""Groups of devices: what a problem file lists (`GroupSpec`) and what a built system holds (`Group`).

A system scales with its groups, not its devices: a group's device ids are a range (two ints,
whatever the count) and the accelerator of every device is stored as runs of one kind
(:class:`DeviceKinds`), so 2^30 identical accelerators cost a few objects, not 2^30.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

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


class DeviceIds(Sequence[int]):
    """The device ids of a group: a contiguous ``range`` (any count, constant size) or a tuple.

    Compares equal to any tuple, list or range holding the same ids, so ``group.devices == (0, 1)``
    reads as before; ``contiguous`` tells whether the ids are ``start..stop-1``.
    """

    __slots__ = ("_ids",)

    def __init__(self, ids: Iterable[int]) -> None:
        if isinstance(ids, DeviceIds):
            ids = ids._ids
        elif isinstance(ids, range) and ids.step == 1:
            pass
        else:
            ids = tuple(ids)
            if ids and all(isinstance(d, int) for d in ids) and ids == tuple(range(ids[0], ids[0] + len(ids))):
                ids = range(ids[0], ids[0] + len(ids))
            elif not ids:
                ids = range(0)
        object.__setattr__(self, "_ids", ids)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("DeviceIds is read-only")

    def __reduce__(self):
        return DeviceIds, (self._ids,)

    @property
    def contiguous(self) -> bool:
        """True when the ids are one run ``start, start + 1, ..., stop - 1``."""
        return isinstance(self._ids, range)

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return DeviceIds(self._ids[index])
        return self._ids[index]

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __contains__(self, device: object) -> bool:
        return device in self._ids

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DeviceIds):
            return self._ids == other._ids
        if isinstance(other, range):
            return self._ids == other if self.contiguous else self._ids == tuple(other)
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and tuple(other) == tuple(self._ids)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._ids)) if len(self._ids) <= 64 else hash(self._ids)

    def __repr__(self) -> str:
        return repr(tuple(self._ids)) if len(self._ids) <= 8 else repr(self._ids)


@dataclass(frozen=True)
class Group:
    """A named set of devices of one accelerator kind inside a :class:`System`.

    ``devices`` may be given as any sequence of ids; it is stored as :class:`DeviceIds`.
    """

    name: str
    accelerator: Accelerator
    devices: DeviceIds

    def __post_init__(self) -> None:
        object.__setattr__(self, "devices", DeviceIds(self.devices))

    @property
    def count(self) -> int:
        return len(self.devices)


class DeviceKinds(Sequence[Accelerator]):
    """The accelerator of every device (index = device id), stored as runs of one kind.

    Behaves like the tuple of per-device accelerators it stands for (length, indexing,
    iteration, equality) while costing one entry per run: 2^30 identical devices are one run.
    """

    __slots__ = ("runs", "_starts", "_count")

    def __init__(self, runs: Iterable[tuple[Accelerator, int]]) -> None:
        merged: list[list] = []
        for kind, count in runs:
            if count <= 0:
                continue
            if merged and merged[-1][0] == kind:
                merged[-1][1] += count
            else:
                merged.append([kind, count])
        self.runs: tuple[tuple[Accelerator, int], ...] = tuple((k, n) for k, n in merged)
        self._starts = list(itertools.accumulate([0] + [n for _, n in self.runs[:-1]]))
        self._count = sum(n for _, n in self.runs)

    @classmethod
    def of(cls, devices: Sequence[Accelerator]) -> "DeviceKinds":
        """``devices`` (per-device accelerators) as runs; a DeviceKinds is returned as it is."""
        if isinstance(devices, DeviceKinds):
            return devices
        return cls((kind, len(list(run))) for kind, run in itertools.groupby(devices))

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._count)))
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("device index out of range")
        return self.runs[bisect.bisect_right(self._starts, index) - 1][0]

    def __iter__(self) -> Iterator[Accelerator]:
        return itertools.chain.from_iterable(itertools.repeat(kind, n) for kind, n in self.runs)

    def kind_over(self, start: int, stop: int) -> Accelerator | None:
        """The one accelerator of devices ``start..stop-1`` (None when they are of several kinds)."""
        if not 0 <= start < stop <= self._count:
            return None
        run = bisect.bisect_right(self._starts, start) - 1
        kind, count = self.runs[run]
        return kind if stop <= self._starts[run] + count else None

    def kinds(self) -> tuple[Accelerator, ...]:
        """The distinct accelerators in order of first appearance."""
        return tuple(dict.fromkeys(kind for kind, _ in self.runs))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DeviceKinds):
            return self.runs == other.runs
        if isinstance(other, (tuple, list)):
            return len(other) == self._count and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.runs)

    def __repr__(self) -> str:
        return "DeviceKinds(" + " + ".join(f"{n}×{k.name}" for k, n in self.runs) + ")"


def assign_devices(specs: Sequence[GroupSpec]) -> tuple[DeviceKinds, tuple[Group, ...]]:
    """Number the devices of ``specs`` contiguously, group after group.

    Returns the per-device accelerators (a :class:`DeviceKinds`, which reads like a tuple) and
    the groups, whose ``devices`` are ranges. Group names: the spec's ``name``, else the
    accelerator's name; an accelerator used by several unnamed groups gets ``#k`` suffixes
    (``tpu-v2#0``, ``tpu-v2#1``).
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
    groups: list[Group] = []
    start = 0
    for s, n in zip(specs, names):
        groups.append(Group(n, s.accelerator, DeviceIds(range(start, start + s.count))))
        start += s.count
    return DeviceKinds((s.accelerator, s.count) for s in specs), tuple(groups)
