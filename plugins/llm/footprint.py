"""Array helpers of the megatron-3d cost model: sums of broadcast terms, and the fullest pipeline stage."""

from __future__ import annotations

import numpy as np


def summed(terms) -> np.ndarray:
    """The sum of arrays that broadcast together, in one buffer of the full shape (a search
    broadcasts millions of plans: one allocation instead of one per term)."""
    terms = list(terms)
    out = np.zeros(np.broadcast_shapes(*(np.shape(x) for x in terms)))
    for x in terms:
        out += x
    return out


def fullest(stages: list[dict], present: list) -> dict:
    """The memory parts (``{name: bytes}`` per stage, ``"total"`` and ``"activations"`` among them) of
    whichever stage holds the most, plan by plan (of stages that tie, the one with the most
    activations); ``present[i]`` false where stage ``i`` does not exist (a middle stage of a
    two-stage pipeline)."""
    shape = np.broadcast_shapes(*(np.shape(v) for f in stages for v in f.values()), *(np.shape(x) for x in present))
    totals = np.stack([np.broadcast_to(np.where(on, f["total"], -np.inf), shape) for on, f in zip(present, stages)])
    activations = np.stack([np.broadcast_to(f["activations"], shape) for f in stages])
    index = np.argmax(np.where(totals == totals.max(axis=0), activations, -np.inf), axis=0)
    return {k: np.choose(index, [np.broadcast_to(f[k], shape) for f in stages]) for k in stages[0]}
