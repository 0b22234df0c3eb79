"""Array helpers of the megatron-3d cost model: sums of broadcast terms, the fullest pipeline stage, and
score columns computed when first read."""

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


def largest(stages: list[dict], present: list) -> np.ndarray:
    """The largest ``"total"`` of the present stages, plan by plan (what :func:`fullest` picks, without
    the parts a search does not read)."""
    out = np.where(present[0], stages[0]["total"], -np.inf)
    for on, parts in zip(present[1:], stages[1:]):
        out = np.maximum(out, np.where(on, parts["total"], -np.inf))
    return out


class Columns(dict):
    """Score columns of plans, some derived from others when first read (``derive``): a search of
    millions of plans reads its objectives' columns only, and each derived column is a pass over all
    of them. ``in`` and reading a derived name compute it; iterating lists the columns computed so far."""

    def __init__(self, columns: dict, lazy: bool = True) -> None:
        super().__init__(columns)
        self.lazy, self._derived = lazy, {}

    def derive(self, name: str, compute) -> None:
        """Column ``name`` is ``compute()``: now unless lazy, else when first read."""
        if self.lazy:
            self._derived[name] = compute
        else:
            self[name] = compute()

    def __missing__(self, name: str):
        if name not in self._derived:
            raise KeyError(name)
        value = self[name] = self._derived.pop(name)()
        return value

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or name in self._derived
