"""The baseline of Table III (Sec. VI-A): Herald's computation-prioritised mapping with ES added.

* two fixed AccSets, the two groups of the topology (the dendrogram root's two children: on F1
  the groups {0..3} and {4..7}), which avoids high cross-group latency;
* the first half of the layers (⌈N/2⌉, note §4.5) on the first set, the rest on the second;
* each set runs the design with the lowest computation latency on its half (communication
  ignored);
* every layer: ES along its two longest loop dimensions (ties: C_out, C_in, H, W, K_h, K_w),
  the set split as evenly as possible between them (2 × 2 on four devices), SS = ∅.
"""

from __future__ import annotations

import numpy as np

from optmap import schedule

from .level1 import Plan
from .strategies import GENES
from .topology import accset_candidates


def _groups(model) -> list[int]:
    """Indices in ``model.candidates`` of the dendrogram root's two children (the topology's
    groups), taken from the full dendrogram whichever candidates the search may use."""
    tree = accset_candidates(model.system)
    root = set(tree[0])
    children = [c for c in tree if set(c) < root and not any(set(c) < set(o) < root for o in tree)]
    groups = [model.candidates.index(c) for c in sorted(children)[:2] if c in model.candidates]
    return groups or [0]


def longest_two(model, candidate: int, first: int, last: int) -> np.ndarray:
    """Strategies splitting each layer along its two longest dimensions, as evenly as possible."""
    strategies = model.strategy_set(len(model.candidates[candidate]))
    dims = model.graph.dims[first:last + 1]
    keys = np.zeros((1, len(dims), GENES))
    keys[0, :, :6] = 1 - dims / dims.max(1, keepdims=True) + 1e-9 * np.arange(6)  # longest first
    pairs = [t for t in strategies.tuples if len(t) == 2]
    balanced = max(pairs, key=min) if pairs else strategies.tuples[-1]
    keys[0, :, 12] = (strategies.tuples.index(balanced) + 0.5) / len(strategies.tuples)
    return strategies.decode(keys, dims)[0]


def baseline_plan(model) -> Plan:
    """The baseline mapping of ``model`` (module docstring)."""
    n = len(model.layers)
    sets = _groups(model)[:n]
    half = -(-n // len(sets))  # ⌈N/k⌉ layers per set, the last takes the rest (note §4.5)
    bounds = schedule.stage_ranges(schedule.stage_bounds([i * half for i in range(1, len(sets))], n))
    designs, strategies = [], []
    for c, (a, b) in zip(sets, bounds):
        options = list(range(len(model.designs))) if model.adaptive else [-1]
        states = longest_two(model, c, a, b)
        rows = np.arange(a, b + 1)
        compute = [model.subproblem(c, d, a, b).table.compute[rows, states].sum() for d in options]
        designs.append(options[int(np.argmin(compute))])  # lowest computation latency (Sec. VI-A)
        strategies.extend(int(s) for s in states)
    return Plan(tuple(sets), tuple(designs), bounds, tuple(strategies))
