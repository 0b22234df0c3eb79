"""Recursive bisection of an accelerator array into the levels of AccPar's hierarchical partition.

AccPar §5.1 (last paragraph) applies the two-way partition recursively. The paper does not say
how a heterogeneous array is cut (note §6, item 6); we cut a sub-array that holds several
accelerator kinds into its first kind versus the rest, with a share that is a decision, and a
homogeneous sub-array into halves (share 1/2; an odd count n into floor(n/2) and the rest, with
the share in proportion to the counts). 128 TPU-v2 + 128 TPU-v3 thus gives 8 levels, the top one
heterogeneous; 2^H identical accelerators give H levels.

Sub-arrays that are alike (same kinds and counts, reached with the same shares) share one plan
per level and are evaluated once: a level's plan is one type per layer, as in AccPar Fig. 7.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optmap.system import Accelerator, System


@dataclass(frozen=True)
class SubArray:
    """A set of accelerators: (kind, count) pairs."""

    members: tuple[tuple[Accelerator, int], ...]

    @property
    def count(self) -> int:
        return sum(n for _, n in self.members)

    @property
    def label(self) -> str:
        return "+".join(f"{n}x{a.name}" for a, n in self.members)

    @property
    def network_bandwidth(self) -> float:
        """Per-accelerator bandwidth of the slowest kind on this side (B/s)."""
        return min(a.network_bandwidth for a, _ in self.members)

    def halves(self) -> tuple["SubArray", "SubArray", float | None]:
        """The two sides and the first side's share (None: a decision, the kinds differ)."""
        if len(self.members) > 1:
            return SubArray(self.members[:1]), SubArray(self.members[1:]), None
        (kind, n), = self.members
        low = n // 2
        return SubArray(((kind, low),)), SubArray(((kind, n - low),)), low / n


@dataclass(frozen=True)
class Split:
    """One bisection at one level: which class is cut, its sides, and the first side's share."""

    level: int
    parent: int  # index of the class being cut among the classes of this level
    sides: tuple[SubArray, SubArray]
    share: float | None  # fixed share of sides[0]; None: the variable ``ratio`` decides
    ratio: str | None  # name of the share variable, for heterogeneous splits
    children: tuple[int, ...]  # indices of the resulting classes at the next level, per side
    first: tuple[int, int] = field(default=(0, 0), compare=False)  # a device of each side (first instance)

    @property
    def symmetric(self) -> bool:
        """Both sides are the same sub-array with the same share: evaluate one."""
        return self.share == 0.5 and self.sides[0] == self.sides[1]


@dataclass(frozen=True)
class Hierarchy:
    """The levels of splits; ``classes[h]`` are the distinct sub-arrays cut at level ``h``."""

    classes: tuple[tuple[SubArray, ...], ...]
    splits: tuple[tuple[Split, ...], ...]
    leaves: tuple[tuple[SubArray, int, int], ...]  # (sub-array, level reached, class index there)

    @property
    def depth(self) -> int:
        return len(self.splits)

    @property
    def ratios(self) -> list[Split]:
        return [s for level in self.splits for s in level if s.ratio is not None]


def _members(system: System) -> tuple[tuple[Accelerator, int], ...]:
    counts: dict[Accelerator, int] = {}
    for group in system.groups:
        counts[group.accelerator] = counts.get(group.accelerator, 0) + group.count
    return tuple(counts.items())


def _device_ranges(system: System, members) -> tuple[range, ...]:
    """The devices of the root sub-array in its order: each kind's groups, kind after kind."""
    return tuple(range(g.devices[0], g.devices[-1] + 1) for kind, _ in members
                 for g in system.groups if g.accelerator == kind)


def _cut(ranges: tuple[range, ...], count: int) -> tuple[tuple[range, ...], tuple[range, ...]]:
    """The first ``count`` devices of ``ranges`` and the rest, as ranges (never listed one by one)."""
    head, tail, left = [], [], count
    for r in ranges:
        if left >= len(r):
            head.append(r)
        elif left > 0:
            head.append(r[:left])
            tail.append(r[left:])
        else:
            tail.append(r)
        left -= min(left, len(r))
    return tuple(head), tuple(tail)


def bisect(system: System) -> Hierarchy:
    """Split the system's accelerators level by level until every sub-array is one accelerator.

    Each split also records a device of each side in its first instance (``Split.first``): the
    partner devices whose path the network pricing reads.
    """
    members = _members(system)
    classes = [(SubArray(members),)]
    devices = [(_device_ranges(system, members),)]  # the first instance's devices of each class
    splits: list[tuple[Split, ...]] = []
    leaves = []
    while True:
        level = len(splits)
        next_classes: list[SubArray] = []
        next_devices: list[tuple[range, ...]] = []
        level_splits = []
        for index, sub in enumerate(classes[level]):
            if sub.count == 1:
                leaves.append((sub, level, index))
                continue
            first, second, share = sub.halves()
            ratio = f"share[L{level}:{first.label}]" if share is None else None
            sides = (first, second)
            halves = _cut(devices[level][index], first.count)
            split = Split(level, index, sides, share, ratio, ())
            count = 1 if split.symmetric else 2
            children = tuple(range(len(next_classes), len(next_classes) + count))
            next_classes.extend(sides[:count])
            next_devices.extend(halves[:count])
            level_splits.append(Split(level, index, sides, share, ratio, children,
                                      (halves[0][0][0], halves[1][0][0])))
        if not level_splits:
            break
        splits.append(tuple(level_splits))
        classes.append(tuple(next_classes))
        devices.append(tuple(next_devices))
    return Hierarchy(tuple(classes), tuple(splits), tuple(leaves))
