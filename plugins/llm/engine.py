"""Engine ``megatron-3d``: every valid plan of the space, scored in one vectorised pass.

The enumeration builds only valid plans (no cross product to filter): the (tensor, pipeline,
data) triples that fit the GPUs, then micro-batch sizes that divide each replica's batch, then
interleaving degrees that Megatron-LM accepts, then the recompute and switch settings. A switch
that cannot act (sequence parallelism at t = 1, sharding or overlap at d = 1) is enumerated once,
off, unless the space allows only "on". Choices come from the evaluator's space, so decisions a
user pinned (narrowed to one value) are honoured. The result is the best feasible plan; the
``top`` alternatives are returned in the run's extra facts (``top2``, ``top3``, ...).
"""

from __future__ import annotations

import numpy as np
from optmap.bounds import ints
from optmap.errors import OptmapError
from optmap.search import Evaluator

from . import memory
from .model import DECISIONS, Megatron3DCostModel

CHUNK = 1 << 18  # plans per evaluator call (bounded memory; the budget is checked between chunks)


def _choices(evaluator: Evaluator) -> dict[str, np.ndarray]:
    return {v.name: np.array(v.choices, dtype=object) for v in evaluator.space.variables}


def _switch(values: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row index, value index) pairs of a switch: every allowed value where it acts, else one."""
    idx = np.arange(len(values))
    inert = [i for i, v in enumerate(values) if v is False or v == False] or [0]  # noqa: E712
    rows, cols = [], []
    for state, options in ((True, idx), (False, np.array(inert[:1]))):
        where = np.flatnonzero(active == state)
        rows.append(np.repeat(where, len(options)))
        cols.append(np.tile(options, len(where)))
    order = np.argsort(np.concatenate(rows), kind="stable")
    return np.concatenate(rows)[order], np.concatenate(cols)[order]


def enumerate_plans(model: Megatron3DCostModel, choices: dict[str, np.ndarray]) -> np.ndarray:
    """Every valid plan as rows of choice indices (the space's vector encoding)."""
    c = {k: v.astype(float) if k not in ("recompute", "sequence_parallel", "optimizer_sharding", "dp_overlap")
         else v for k, v in choices.items()}
    it, ip, id_ = np.meshgrid(np.arange(len(c["tensor_parallel"])), np.arange(len(c["pipeline_parallel"])),
                              np.arange(len(c["data_parallel"])), indexing="ij")
    it, ip, id_ = it.ravel(), ip.ravel(), id_.ravel()
    t, p, d = c["tensor_parallel"][it], c["pipeline_parallel"][ip], c["data_parallel"][id_]
    gpus = t * p * d
    keep = (gpus == model.n) if model.use_all_gpus else (gpus <= model.n)
    it, ip, id_ = it[keep], ip[keep], id_[keep]
    t, p, d = t[keep], p[keep], d[keep]
    # micro-batch sizes that divide each replica's share of the batch
    mbs = c["microbatch_size"]
    ok = np.mod(model.batch, d[:, None] * mbs[None, :]) == 0
    r, ib = np.nonzero(ok)
    t, p, d, b = t[r], p[r], d[r], mbs[ib]
    cols = [it[r], ip[r], id_[r], ib]
    # interleaving degrees Megatron accepts
    vs = c["interleaving"]
    m = model.batch / (d * b)
    ok = (vs[None, :] == 1) | ((p[:, None] > 1) & (np.mod(model.config.layers, p[:, None] * vs[None, :]) == 0)
                               & (np.mod(m, p)[:, None] == 0))
    r, iv = np.nonzero(ok)
    cols = [col[r] for col in cols] + [iv]
    t, d = t[r], d[r]
    # recompute settings: all of them for every plan
    nrc = len(c["recompute"])
    cols = [np.repeat(col, nrc) for col in cols] + [np.tile(np.arange(nrc), len(t))]
    t, d = np.repeat(t, nrc), np.repeat(d, nrc)
    for name, size in (("sequence_parallel", "t"), ("optimizer_sharding", "d"), ("dp_overlap", "d")):
        r, k = _switch(c[name], (t if size == "t" else d) > 1)
        cols = [col[r] for col in cols] + [k]
        t, d = t[r], d[r]
    if not len(t):
        return np.empty((0, len(DECISIONS)))
    # indices into the given choices -> the model space's encoding
    lookup = [np.array([var.choices.index(value) for value in choices[var.name]], dtype=float)
              for var in model.space.variables]
    return np.column_stack([table[col] for table, col in zip(lookup, cols)])


def describe(model: Megatron3DCostModel, x: np.ndarray, time: float) -> str:
    v = {k: a[0] for k, a in model.values(x[None]).items()}
    rc = memory.RECOMPUTE[int(v["recompute"])]
    flags = [name for name, on in (("sp", v["sequence_parallel"]), ("zero1", v["optimizer_sharding"]),
                                   ("overlap", v["dp_overlap"])) if on]
    return (f"t{v['tensor_parallel']} p{v['pipeline_parallel']} d{v['data_parallel']} mb{v['microbatch_size']} "
            f"v{v['interleaving']} {rc}{' ' + '+'.join(flags) if flags else ''}: {time:.4g} s")


class Megatron3DSearch:
    """Exhaustive vectorised search of the megatron-3d formulation (a proven optimum)."""

    requires = frozenset({"megatron_plans"})
    exact = True

    def __init__(self, *, top: ints(1, 1000) = 5) -> None:
        """``top``: how many of the best feasible plans to list (the best included)."""
        if top < 1:
            raise OptmapError(f"[search.megatron-3d] top must be >= 1, got {top}")
        self.top = top

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = evaluator.cost_model
        if not isinstance(model, Megatron3DCostModel):
            raise OptmapError('engine megatron-3d plans the megatron-3d formulation; use [cost] model = "megatron-3d"')
        X = enumerate_plans(model, _choices(evaluator))
        best_x, best_f = [], []
        for start in range(0, len(X), CHUNK):
            if evaluator.exhausted:
                break
            chunk = X[start:start + CHUNK]
            F, violation = evaluator.evaluate(chunk)
            ok = np.flatnonzero(violation <= 0)
            order = ok[np.argsort(F[ok, 0], kind="stable")[: self.top]]
            best_x.append(chunk[order])
            best_f.append(F[order, 0])
        extra: dict = {"valid_plans": int(len(X))}
        if best_x:
            xs, fs = np.concatenate(best_x), np.concatenate(best_f)
            order = np.argsort(fs, kind="stable")[: self.top]
            for rank, i in enumerate(order, start=1):
                extra[f"top{rank}"] = describe(model, xs[i], float(fs[i]))
        return extra
