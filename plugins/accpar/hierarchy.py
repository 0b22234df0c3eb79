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

from dataclasses import dataclass

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


def bisect(system: System) -> Hierarchy:
    """Split the system's accelerators level by level until every sub-array is one accelerator."""
    classes = [(SubArray(_members(system)),)]
    splits: list[tuple[Split, ...]] = []
    leaves = []
    while True:
        level = len(splits)
        next_classes: list[SubArray] = []
        level_splits = []
        for index, sub in enumerate(classes[level]):
            if sub.count == 1:
                leaves.append((sub, level, index))
                continue
            first, second, share = sub.halves()
            ratio = f"share[L{level}:{first.label}]" if share is None else None
            sides = (first, second)
            split = Split(level, index, sides, share, ratio, ())
            count = 1 if split.symmetric else 2
            children = tuple(range(len(next_classes), len(next_classes) + count))
            next_classes.extend(sides[:count])
            level_splits.append(Split(level, index, sides, share, ratio, children))
        if not level_splits:
            break
        splits.append(tuple(level_splits))
        classes.append(tuple(next_classes))
    return Hierarchy(tuple(classes), tuple(splits), tuple(leaves))
