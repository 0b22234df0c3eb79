"""Which nodes Megatron-LM's groups span, for every group of a plan, vectorised over plans.

Megatron-LM places ranks with tensor parallelism innermost (``initialize_model_parallel``):
rank ``r = stage·t·d + replica·t + shard``, so a tensor-parallel group is ``t`` consecutive
ranks, a data-parallel group ``d`` ranks ``t`` apart inside one stage's block of ``t·d``, and a
stage hop joins rank ``r`` and ``r + t·d``. Ranks fill DGX nodes in order (rank ``r`` on node
``r // gpus_per_node``). A group whose size does not divide the node (``t`` = 6, 12, ...) is
placed differently from group to group: with ``t`` = 6 the first group sits in node 0 and the
second straddles nodes 0 and 1 (2 + 4 ranks). A synchronous step waits for its slowest group, so
a plan is priced by its worst group (:func:`worst_group`).

A group that spans nodes runs one ring per member of a node through that member's InfiniBand
adapter (NCCL's channels), so its node with the fewest members limits it: ``k`` members there
give ``k`` adapters' bandwidth (:func:`emptiest_node`).

Every group's start is known modulo ``gpus_per_node`` from a handful of candidates (node
contents repeat with that period), so the worst group is found over at most ``gpn²`` starts per
plan without listing the groups.
"""

from __future__ import annotations

import numpy as np


def emptiest_node(start, step, size, gpn: int) -> np.ndarray:
    """Members in the emptiest node of the group ``start + i·step`` (``i < size``, ``0 <= start <
    gpn``), counting only nodes that hold a member; 0 when the whole group is in one node."""
    start, step, size = (np.asarray(x, dtype=np.int64) for x in (start, step, size))
    last = start + (size - 1) * step
    spans = last // gpn > 0
    first_count = np.minimum(-(-(gpn - start) // step), size)  # members in node 0
    last_count = (last % gpn) // step + 1  # members in the last node
    # interior nodes c (0 < c < last node) hold ceil((gpn(c+1) - start)/step) - ceil((gpn·c - start)/step)
    # members; that repeats with period ``step`` in c, and a stride >= gpn leaves one per node
    c = np.arange(1, gpn + 1).reshape((1,) * max(start.ndim, step.ndim, size.ndim) + (gpn,))
    s, st, lst = start[..., None], step[..., None], last[..., None]
    inner = -(-(gpn * (c + 1) - s) // st) - -(-(gpn * c - s) // st)
    inner = np.where((c < lst // gpn) & (c <= st) & (inner > 0), inner, gpn)
    fewest = np.minimum(np.minimum(first_count, last_count), inner.min(axis=-1))
    return np.where(spans, fewest, 0)


def worst_group(starts, occurs, step, size, gpn: int) -> tuple[np.ndarray, np.ndarray]:
    """Over candidate group starts (last axis; ``occurs`` marks the ones a plan has): whether any
    of the plan's groups spans nodes, and the fewest members in a node of any spanning group."""
    k = emptiest_node(np.mod(starts, gpn), step[..., None], size[..., None], gpn)
    spanning = occurs & (k > 0)
    return spanning.any(axis=-1), np.where(spanning, k, gpn).min(axis=-1)


def tensor_groups(t, d, p, gpn: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`worst_group` of the ``d·p`` tensor-parallel groups (``t`` consecutive ranks each):
    group ``g`` starts at ``g·t``, which repeats modulo ``gpn`` after ``gpn`` groups."""
    g = np.arange(gpn)
    return worst_group(t[..., None] * g, g < (d * p)[..., None], np.ones_like(t), t, gpn)


def data_groups(t, d, p, gpn: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`worst_group` of the ``t·p`` data-parallel groups (``d`` ranks ``t`` apart): the
    group of stage ``q`` and shard ``j`` starts at ``q·t·d + j`` (``q`` and ``j`` below ``gpn``
    cover every start modulo ``gpn``); the starts are folded onto their ``gpn`` residues first,
    so a 72-GPU NVLink domain costs ``gpn²`` per plan, not ``gpn³``."""
    t, d, p = (np.asarray(x, dtype=np.int64).reshape(-1) for x in (t, d, p))
    q, j = np.arange(gpn).repeat(gpn), np.tile(np.arange(gpn), gpn)
    starts = np.mod((t * d)[:, None] * q + j, gpn)
    occurs = (q < p[:, None]) & (j < t[:, None])
    rows = np.broadcast_to(np.arange(len(t))[:, None], starts.shape)
    residue = np.zeros((len(t), gpn), bool)
    residue[rows[occurs], starts[occurs]] = True
    return worst_group(np.broadcast_to(np.arange(gpn), residue.shape), residue, t, d, gpn)


def stage_hops_cross(t, d, p, gpn: int) -> np.ndarray:
    """Whether any stage hop (rank ``r`` to ``r + t·d``, ``r < t·d·(p-1)``) joins two nodes: a
    stride of a node or more always does; a shorter one once ranks reach ``gpn - t·d``."""
    stride = t * d
    return (p > 1) & ((stride >= gpn) | (stride * p > gpn))
