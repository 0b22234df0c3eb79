"""Array helpers of the megatron-3d cost model: sums of broadcast terms, and the fullest pipeline stage."""

from __future__ import annotations

import numpy as np


def summed(terms) -> np.ndarray:
    """The sum of arrays that broadcast together (a float array of the full shape). A search
    broadcasts millions of plans over terms of few dimensions each, so the smallest are added
    first, each at the size of the shapes met so far, and a buffer grows only when a term widens it."""
    out = np.zeros(())
    for x in sorted(terms, key=np.size):
        if np.broadcast_shapes(out.shape, np.shape(x)) == out.shape:
            out += x
        else:
            out = out + x
    return out


def fullest(stages: list[dict], present: list, keys=None) -> dict:
    """The memory parts (``{name: bytes}`` per stage, ``"total"`` and ``"activations"`` among them) of
    whichever stage holds the most, plan by plan (of stages that tie, the one with the most
    activations, then the first); ``present[i]`` false where stage ``i`` does not exist (a middle
    stage of a two-stage pipeline); ``keys``: the parts to return (all by default; ``"total"`` and
    ``"activations"`` always). One pass over the stages, each taking the plans it fills more."""
    wanted = stages[0].keys() if keys is None else {"total", "activations", *keys}
    best = {k: stages[0][k] for k in wanted}
    total = np.where(present[0], best["total"], -np.inf)
    for on, parts in zip(present[1:], stages[1:]):
        candidate = np.where(on, parts["total"], -np.inf)
        fuller = (candidate > total) | ((candidate == total) & (parts["activations"] > best["activations"]))
        best = {k: np.where(fuller, parts[k], best[k]) for k in best}
        total = np.where(fuller, candidate, total)
    return best
