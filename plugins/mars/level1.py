"""Level-1 decisions: accelerator sets, a design per set, contiguous layer ranges (Sec. V; note §4.2).

Random keys in [0, 1] (in the space: permutation variables, whose first item has the lowest
key), so every vector decodes to a valid mapping:

* ``sel[c]`` per AccSet candidate (the ``sets`` permutation): candidates are taken in priority
  order ("the candidate of AccSet with the highest gene value will be chosen"), each one disjoint
  from those already taken, until every accelerator is covered (a greedy disjoint cover, note
  §6.16). If there are fewer layers than sets, the sets taken last are dropped (note §4.2).
* the design of a chosen set is its candidate's design gene (note §4.2 ``des[c, d]``; the space
  holds it as a categorical per candidate).
* ``ord[c]`` (the ``order`` permutation): the chosen sets run in that order along the layers
  (note §6.17).
* ``cut[g]`` per gap between layers g and g+1 (the ``cuts`` permutation): the first k − 1 gaps
  are the boundaries of the k contiguous layer ranges (Sec. V heuristic 4; note §6.18).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optmap import schedule


@dataclass(frozen=True)
class Plan:
    """A complete MARS mapping in structured form.

    ``sets``: candidate indices in execution order; ``designs``: design index per set (into the
    model's design list; -1 for fixed-design sets); ``bounds``: (first, last) layer per set;
    ``strategies``: per layer, a strategy index of its set's size (None: not given).
    """

    sets: tuple[int, ...]
    designs: tuple[int, ...]
    bounds: tuple[tuple[int, int], ...]
    strategies: tuple[int, ...] | None = None


def cover(sel: np.ndarray, candidates: tuple[tuple[int, ...], ...], devices: int, layers: int) -> list[int]:
    """Candidates taken greedily by descending ``sel``, disjoint, until all devices are covered."""
    taken: list[int] = []
    covered: set[int] = set()
    for c in np.argsort(np.asarray(sel), kind="stable"):
        members = set(candidates[c])
        if not covered & members:
            taken.append(int(c))
            covered |= members
            if len(covered) == devices:
                break
    return taken[:layers]


def ranges(cut: np.ndarray, k: int, layers: int) -> tuple[tuple[int, int], ...]:
    """k contiguous (first, last) ranges cut at the k − 1 gaps with the lowest keys (gap g: a new
    range starts at layer g + 1)."""
    gaps = np.sort(np.argsort(np.asarray(cut), kind="stable")[: k - 1])
    return schedule.stage_ranges(schedule.stage_bounds(gaps + 1, layers))


def decode(sel, order, cut, designs, candidates, devices: int, layers: int) -> Plan:
    """The level-1 part of a :class:`Plan` from one row of keys (``designs``: index per candidate)."""
    chosen = cover(sel, candidates, devices, layers)
    chosen.sort(key=lambda c: (order[c], c))
    picked = tuple(int(designs[c]) for c in chosen) if designs is not None else (-1,) * len(chosen)
    return Plan(tuple(chosen), picked, ranges(cut, len(chosen), layers))


def encode(plan: Plan, n_candidates: int, layers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keys (sel, order, cut) that :func:`decode` turns back into ``plan``'s sets, order and ranges."""
    sel = np.ones(n_candidates)
    order = np.ones(n_candidates)
    k = len(plan.sets)
    for rank, c in enumerate(plan.sets):
        sel[c] = order[c] = rank / (2 * k)
    cut = np.ones(max(layers - 1, 0))
    for _, last in plan.bounds[:-1]:
        cut[last] = 0.0
    return sel, order, cut
