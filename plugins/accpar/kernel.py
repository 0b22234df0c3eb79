"""AccPar's whole-plan scoring for many plans, compiled: the batch scorer's hot loop.

The same arithmetic as the numpy path, operation for operation, so that scores are bit for bit
the same: :meth:`~.levels.LevelCosts._level` and ``_shrink`` (Tables 4 and 5, the slower side or
both sides' sum, link latency, §3.2 SHRINK, the "linear" share scaling) and the leaves' Eq. 8
and memory (:meth:`~.model.AccParCostModel._leaf_costs`). One pass per split over (node, plan),
plans innermost so that LLVM vectorises across plans, each per-state choice a select; sums follow
numpy's pairwise order (:func:`column_sums`). A measured accelerator's compute model stays in
numpy: the kernel hands it the leaves' tensor dimensions.

Importing this module imports numba (about 0.2-0.3 s) and loads the compiled kernel from numba's
cache (about 0.2-0.4 s; the first run after an install compiles it, 14-17 s), so the model
sends only large batches here (:data:`~.model.KERNEL_ROWS`).
"""

from __future__ import annotations

import sys
import threading
from weakref import WeakKeyDictionary

import numba
import numpy as np

from .levels import Dims
from .tables import CROSS_TERMS, FULL_TERMS, inter_fraction_of

# Elements of one (nodes + edges, plans) buffer per kernel call: sets the plans per call, a multiple
# of 64 from 64 to 1024 (VGG-19: 1024, ResNet-50's block view: 384); measured on VGG-19 and
# ResNet-50, 256-1024 plans per call were alike within this machine's noise, 64-128 slower.
KERNEL_CHUNK_ELEMENTS = 1 << 16

_INPUTS: WeakKeyDictionary = WeakKeyDictionary()  # kernel_inputs per model, made on its first batch

# Seconds after which a first call still running is said to be compiling (loading the cached kernel
# takes 0.2-1 s; compiling it, on the first run after an install, 14-17 s on this machine).
COMPILING_NOTE_AFTER = 5.0
COMPILING_NOTE = ("optmap: compiling AccPar's batch scorer with numba, once per install (about 15 s); "
                  "later runs load it from numba's cache")

# Columns of ``splits`` (one row per split, levels in order)
LEVEL, PARENT, CHILD0, CHILD1, SIDES, RATIO = range(6)


@numba.njit(cache=True)
def column_sums(a, out, partial):
    """out[r] = a[:, r].sum() in numpy's pairwise order (numpy/_core/src/umath/loops_utils.h.src:
    a plain loop under 8 terms, eight running sums up to 128, halves above)."""
    n, rows = a.shape
    if n < 8:
        out[:] = -0.0
        for i in range(n):
            for r in range(rows):
                out[r] += a[i, r]
        return
    if n > 128:
        half = n // 2
        half -= half % 8
        upper = np.empty(rows)
        column_sums(a[:half], out, partial)
        column_sums(a[half:], upper, partial)
        for r in range(rows):
            out[r] += upper[r]
        return
    partial[:] = a[:8]
    i = 8
    while i < n - n % 8:
        for j in range(8):
            for r in range(rows):
                partial[j, r] += a[i + j, r]
        i += 8
    for r in range(rows):
        p = partial[:, r]
        out[r] = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]))
    for k in range(i, n):
        for r in range(rows):
            out[r] += a[k, r]


@numba.njit(cache=True, inline="always")
def sides_cost(a0, a1, s0, s1, sides, add_sides, latency):
    """A node's or edge's elements and seconds at one split, from what each side fetches (``a1``
    unused with one side): the slower side's, or both sides' sum; plus one latency per transfer
    that moves data (levels.py _level)."""
    elements, seconds = a0, a0 * s0
    if sides == 2:
        elements = elements + a1 if add_sides else max(elements, a1)
        seconds = seconds + a1 * s1 if add_sides else max(seconds, a1 * s1)
    if latency != 0.0:
        seconds = seconds + latency * (1.0 if elements > 0.0 else 0.0)
    return elements, seconds


@numba.njit(cache=True)
def score_levels(states, shares, root, constant, splits_dim, s_in, edge_u, edge_v, code_base, splits, split_share,
                 split_seconds, split_latency, shape_fraction, linear, add_sides, leaves, leaf_rate, leaf_memory,
                 kernel, layer_flops, check_memory, per_element, classes, out, leaf_dims, leaf_share):
    """Every plan's costs into ``out`` (rows, 5): communicated elements and seconds summed over
    levels, Eq. 8's compute seconds, the largest leaf memory (bytes) and whether every leaf fits;
    with ``leaf_dims`` (leaves, 3, rows, nodes) not empty, each leaf's tensor dimensions and (into
    ``leaf_share``) its share of the whole, for the measured accelerators' compute model.

    ``states`` (levels, nodes, rows); ``shares`` (ratios, rows), the first side's share of each
    heterogeneous split; ``splits`` (see the column names above; ratio -1: a fixed share,
    ``split_share``); ``shape_fraction`` (splits, 2 sides, 36): Table 5 at the share a side's
    tensor shapes see, where it is fixed; ``linear``: heterogeneous splits scale their equal-split
    amounts by share / (1/2); ``add_sides``: both sides' costs add (combine = "sum");
    ``per_element``: bytes per element and weight copies (the memory check).
    """
    levels, nodes, rows = states.shape
    edges = edge_u.size
    dims = np.empty((2, classes, 3, nodes, rows))
    class_share, class_scale = np.empty((2, classes, rows)), np.empty((2, classes, rows))
    for d in range(3):
        for i in range(nodes):
            dims[0, 0, d, i, :] = root[d, i]
    class_share[0, 0, :] = 1.0
    class_scale[0, 0, :] = 1.0
    node_elements, node_seconds = np.empty((nodes, rows)), np.empty((nodes, rows))
    edge_elements, edge_seconds = np.empty((edges, rows)), np.empty((edges, rows))
    received = np.empty((nodes, rows))
    share, shape, weight = np.empty((2, rows)), np.empty((2, rows)), np.empty((2, rows))
    partial, sum_nodes, sum_edges = np.empty((8, rows)), np.empty(rows), np.empty(rows)
    compute = np.zeros((nodes, rows))
    out[:, 3], out[:, 4] = 0.0, 1.0
    now = 0
    for h in range(levels + 1):
        for leaf in range(leaves.shape[0]):  # sub-arrays of one accelerator reached at this level
            if leaves[leaf, 0] != h:
                continue
            D, share_of_whole = dims[now, leaves[leaf, 1]], class_share[now, leaves[leaf, 1]]
            for i in range(nodes):  # model.py _leaf_costs
                for r in range(rows):
                    compute[i, r] = max(compute[i, r], share_of_whole[r] * layer_flops[i] / leaf_rate[leaf])  # Eq. 8
                    node_elements[i, r] = D[1, i, r] * D[2, i, r] * kernel[i]  # weights
                    node_seconds[i, r] = D[0, i, r] * D[1, i, r] * s_in[i]  # stored activations
            column_sums(node_elements, sum_nodes, partial)
            column_sums(node_seconds, sum_edges, partial)
            for r in range(rows):
                need = per_element[0] * (per_element[1] * sum_nodes[r] + sum_edges[r])
                out[r, 3] = max(out[r, 3], need)
                if check_memory and not need <= leaf_memory[leaf]:
                    out[r, 4] = 0.0
            if leaf_dims.shape[2]:
                leaf_share[leaf] = share_of_whole
                for d in range(3):
                    for r in range(rows):
                        for i in range(nodes):
                            leaf_dims[leaf, d, r, i] = D[d, i, r]
        if h == levels:
            break
        state, first = states[h], True
        for k in range(splits.shape[0]):
            if splits[k, LEVEL] != h:
                continue
            parent, sides, ratio = splits[k, PARENT], splits[k, SIDES], splits[k, RATIO]
            D = dims[now, parent]
            scaled = linear and ratio >= 0
            for side in range(sides):  # levels.py _sides: share, the share shapes see, cost weight
                for r in range(rows):
                    first_share = shares[ratio, r] if ratio >= 0 else split_share[k]
                    share[side, r] = first_share if side == 0 else 1.0 - first_share
                    shape[side, r] = 0.5 if scaled else share[side, r]
                    weight[side, r] = class_scale[now, parent, r] * (2.0 * share[side, r] if scaled else 1.0)
            s0, s1, latency = split_seconds[k, 0], split_seconds[k, 1], split_latency[k]
            for i in range(nodes):  # the slower side (or both) per node, then the level's slowest split
                c0, c1, c2 = constant[0, i], constant[1, i], constant[2, i]
                for r in range(rows):
                    s = state[i, r]
                    b, di, do = D[0, i, r], D[1, i, r], D[2, i, r]
                    product = di * do if s == 0 else (b * do if s == 1 else b * di)  # Table 4: (first·second)
                    intra = product * (c0 if s == 0 else (c1 if s == 1 else c2))  # ·constant
                    received[i, r] = b * di * s_in[i]  # A(F_l) = B·D_i·HiWi of the consumer
                    elements, seconds = sides_cost(intra * weight[0, r], intra * weight[1, r], s0, s1, sides, add_sides,
                                                   latency)
                    node_elements[i, r] = elements if first else max(node_elements[i, r], elements)
                    node_seconds[i, r] = seconds if first else max(node_seconds[i, r], seconds)
            f0, f1 = shape_fraction[k, 0], shape_fraction[k, 1]
            per_plan = ratio >= 0 and not scaled
            for e in range(edges):  # Table 5: a fraction of A(F_{l+1}) at each side's share
                u, v, base = edge_u[e], edge_v[e], code_base[e]
                for r in range(rows):
                    code = base + 6 * state[u, r] + state[v, r]
                    if per_plan:
                        x0, x1 = share[0, r], share[1, r]
                        rest0, rest1 = 1.0 - x0, 1.0 - x1
                        g0 = received[v, r] * (CROSS_TERMS[code] * (x0 * rest0) + FULL_TERMS[code] * rest0)
                        g1 = received[v, r] * (CROSS_TERMS[code] * (x1 * rest1) + FULL_TERMS[code] * rest1)
                    else:
                        g0, g1 = received[v, r] * f0[code], received[v, r] * f1[code]
                    elements, seconds = sides_cost(g0 * weight[0, r], g1 * weight[1, r], s0, s1, sides, add_sides, latency)
                    edge_elements[e, r] = elements if first else max(edge_elements[e, r], elements)
                    edge_seconds[e, r] = seconds if first else max(edge_seconds[e, r], seconds)
            for side in range(sides):  # §3.2 SHRINK: each side's tensors, share of the whole and weight
                child = splits[k, CHILD0 + side]
                C = dims[1 - now, child]
                for r in range(rows):
                    class_share[1 - now, child, r] = class_share[now, parent, r] * share[side, r]
                    class_scale[1 - now, child, r] = weight[side, r]
                for d in range(3):
                    for i in range(nodes):
                        m0, m1, m2 = splits_dim[d, 0, i], splits_dim[d, 1, i], splits_dim[d, 2, i]
                        for r in range(rows):
                            s = state[i, r]
                            splits_it = m0 if s == 0 else (m1 if s == 1 else m2)
                            C[d, i, r] = D[d, i, r] * (shape[side, r] if splits_it else 1.0)
            first = False
        for column in range(2):  # the level's cost: its nodes' sum plus its edges' sum; levels add
            column_sums(node_elements if column == 0 else node_seconds, sum_nodes, partial)
            column_sums(edge_elements if column == 0 else edge_seconds, sum_edges, partial)
            for r in range(rows):
                level = sum_nodes[r] + sum_edges[r]
                out[r, column] = level if h == 0 else out[r, column] + level
        now = 1 - now
    column_sums(compute, sum_nodes, partial)
    out[:, 2] = sum_nodes


def kernel_inputs(model) -> tuple:
    """``model``'s tables in :func:`score_levels`' argument order (after ``states``, ``shares``)."""
    g, hierarchy = model.graph, model.hierarchy
    splits = [s for level in hierarchy.splits for s in level]
    ratios = list(model._ratio_columns)
    linear = model.share_scaling == "linear"
    shape_shares = []  # each side's share as the tensor shapes see it, where it is fixed (0: per plan)
    for s in splits:
        if s.ratio is None:
            shape_shares.append((s.share, 1.0 - s.share))
        else:
            shape_shares.append((0.5, 0.5) if linear else (0.0, 0.0))
    constant, splits_dim = model.state_tables
    every_code = np.arange(CROSS_TERMS.size)  # Table 5 for every transition, at a fixed share
    inputs = (
        np.ascontiguousarray(model.root.sizes[:, 0, :], float), np.ascontiguousarray(constant, float),
        np.ascontiguousarray(splits_dim, bool), np.ascontiguousarray(g.s_in, float),
        np.ascontiguousarray(g.edge_u, np.int64), np.ascontiguousarray(g.edge_v, np.int64),
        18 * np.ascontiguousarray(g.edge_role_u, np.int64) + 3 * np.ascontiguousarray(g.edge_role_v, np.int64),
        np.array([[s.level, s.parent, s.children[0], s.children[-1], len(s.children),
                   -1 if s.ratio is None else ratios.index(s.ratio)] for s in splits], np.int64).reshape(-1, 6),
        np.array([s.share if s.ratio is None else 0.0 for s in splits], float),
        np.array([model.seconds[(s.level, s.parent)] for s in splits], float).reshape(-1, 2),
        np.array([0.0 if model.mode == "comm_only" else model.networks[(s.level, s.parent)].latency for s in splits],
                 float),
        np.array([[inter_fraction_of(every_code, x) for x in pair] for pair in shape_shares], float
                 ).reshape(-1, 2, CROSS_TERMS.size),
        bool(linear), model.combine == "sum",
        np.array([[level, index] for _, level, index in hierarchy.leaves], np.int64).reshape(-1, 2),
        np.array([sub.members[0][0].flops_per_s(model.workload.dtype) for sub, _, _ in hierarchy.leaves], float),
        np.array([sub.members[0][0].memory_bytes for sub, _, _ in hierarchy.leaves], float),
        np.ascontiguousarray(g.kernel, float), np.ascontiguousarray(model.layer_flops, float), bool(model.check_memory),
        np.array([model.bytes, model.weight_copies], float), int(max(len(c) for c in hierarchy.classes)),
    )
    return inputs  # contiguous arrays of fixed types: one compiled signature for every model


def kernel_rows(model) -> int:
    """Plans per kernel call for ``model``'s network (:data:`KERNEL_CHUNK_ELEMENTS`)."""
    per_plan = len(model.graph.names) + len(model.graph.edge_u)
    return int(min(1024, max(64, KERNEL_CHUNK_ELEMENTS // per_plan // 64 * 64)))


def score_batch(model, X: np.ndarray, chunk: int) -> dict[str, np.ndarray]:
    """``model.evaluate_batch(X)`` through :func:`score_levels`, ``chunk`` plans per call, then
    Eq. 9 through the model's own code (and a measured accelerator's compute model, in numpy)."""
    if model not in _INPUTS:
        _INPUTS[model] = kernel_inputs(model)
    inputs = _INPUTS[model]
    nodes, leaves = len(model.graph.names), model.hierarchy.leaves
    measured = model.step is not None  # the shared compute model prices the leaves, in numpy
    note = None
    if not score_levels.signatures:  # this process's first call: loads the kernel, or compiles it
        note = threading.Timer(COMPILING_NOTE_AFTER, lambda: print(COMPILING_NOTE, file=sys.stderr, flush=True))
        note.daemon = True
        note.start()
    parts = []
    for start in range(0, len(X), chunk):  # decoded a chunk at a time, while it is in cache
        states, shares = model._decode(X[start:start + chunk])
        rows = len(states)
        states = states.reshape(rows, model.hierarchy.depth, nodes)  # one accelerator: no level at all
        shares = np.array([shares[name][:, 0] for name in model._ratio_columns]).reshape(-1, rows)
        out = np.zeros((rows, 5))
        leaf_dims = np.empty((len(leaves), 3, rows if measured else 0, nodes))
        leaf_share = np.empty((len(leaves), rows))
        try:
            score_levels(np.ascontiguousarray(states.transpose(1, 2, 0)), shares, *inputs, out, leaf_dims, leaf_share)
        finally:  # loaded or compiled (or failed): no note after this
            if note is not None:
                note.cancel()
                note = None
        comm_elements, comm_time = out[:, 0].copy(), out[:, 1].copy()
        scores = {"comm_elements": comm_elements, "comm_bytes": comm_elements * model.bytes}
        if measured:
            leaf_classes = [(Dims(leaf_dims[k], leaf_share[k][:, None]), sub) for k, (sub, _, _) in enumerate(leaves)]
            parts.append(model._totals(scores, comm_time, rows, leaves=leaf_classes))
        else:
            costs = out[:, 2].copy(), out[:, 3].copy(), out[:, 4] > 0  # compute seconds, memory, fits
            parts.append(model._totals(scores, comm_time, rows, costs=costs))
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
