"""Engine ``megatron-3d``: every valid plan of the space, scored in one vectorised pass.

The enumeration builds only valid *shapes* (tensor, pipeline, data, micro-batch, interleaving,
context, expert and expert tensor parallel): the (t, p, d, cp) quadruples that fit the GPUs (cp
splitting the sequence in 2·cp chunks), then the micro-batch sizes that divide each replica's batch,
then the interleaving degrees Megatron-LM accepts and the layer split allows (:mod:`.stages`), then
the expert sizes that fold into the stage, expert tensor parallel 1 or t (:func:`.moe.untried_etp`),
and for a MoE model its one sequence-parallel setting (:func:`keys`). Each shape
is priced once and broadcast over the recompute and switch settings (an array ``[shapes, recompute,
sequence_parallel, optimizer_sharding, dp_overlap, fsdp, offload, grad_reduce_in_fp32]``), so
the costly GEMM and link pricing runs once per shape and only the final sums run per plan. A switch
that cannot act (sequence parallelism at t = 1, sharding or overlap at d·cp = 1, FSDP at d·cp = 1,
optimizer sharding beside FSDP, which shards it already) counts once, off, unless the space
allows only "on". Choices come from the evaluator's space, so pinned decisions (``[fix]``,
``--fix``) are honoured.

The evaluator's objectives and constraints are applied to every plan here (the same arithmetic
as :meth:`optmap.search.Evaluator.evaluate`); the best plans (and, with several objectives,
the Pareto front) are handed to the evaluator with :meth:`~optmap.search.Evaluator.record`,
which counts every plan scored. The ``top`` best feasible plans become the cost model's
``ranking``, shown as table ``top_plans`` in the report of the best plan.
"""

from __future__ import annotations

import numpy as np
from optmap.bounds import ints
from optmap.errors import OptmapError
from optmap.search import Budget, Evaluator, SearchEngine
from optmap.search.budget import DEFAULT_SECONDS

from . import memory, moe, offload, stages
from .model import CATEGORIES, DECISIONS, SWITCHES, Megatron3DCostModel

SHAPE = (*DECISIONS[:5], "context_parallel", "expert_parallel", "expert_tensor_parallel")  # tensor, pipeline,
# data, micro-batch, interleaving, context, expert, expert tensor: each shape priced once
AXES = ("recompute", *SWITCHES, "fsdp", "offload", "grad_reduce_in_fp32")  # the axes each shape is broadcast over


def keys(model: Megatron3DCostModel) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(shape decisions, broadcast axes) of a model's plans: a MoE model needs sequence parallelism
    wherever t > 1 and cannot use it at t = 1, so each shape has one setting and it is a shape
    decision (half the plans to sum); a dense model broadcasts it as an axis."""
    if model.config.moe is None:
        return SHAPE, AXES
    return (*SHAPE, "sequence_parallel"), tuple(a for a in AXES if a != "sequence_parallel")


def choices(evaluator: Evaluator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per decision: (allowed values, their indices in the space's encoding); a pinned one has one."""
    out = {}
    for var in evaluator.space.variables:
        allowed = [var.pinned] if var.is_pinned else list(var.choices)
        out[var.name] = (np.array(allowed, dtype=object), np.array([var.choices.index(a) for a in allowed]))
    return out


def enumerate_shapes(model: Megatron3DCostModel, allowed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Index arrays (into ``allowed``) of every valid (t, p, d, b, v, cp, ep, etp) shape, one entry per shape."""
    c = {k: allowed[k].astype(float) for k in SHAPE}
    it, ip, id_, ic = (a.ravel() for a in np.meshgrid(np.arange(len(c["tensor_parallel"])),
                                                      np.arange(len(c["pipeline_parallel"])),
                                                      np.arange(len(c["data_parallel"])),
                                                      np.arange(len(c["context_parallel"])), indexing="ij"))
    cp = c["context_parallel"][ic]
    gpus = c["tensor_parallel"][it] * c["pipeline_parallel"][ip] * c["data_parallel"][id_] * cp
    keep = (gpus == model.n) if model.use_all_gpus else (gpus <= model.n)
    keep &= ~model.validity_of_context(cp)
    it, ip, id_, ic = it[keep], ip[keep], id_[keep], ic[keep]
    d = c["data_parallel"][id_]
    r, ib = np.nonzero(np.mod(model.batch, d[:, None] * c["microbatch_size"][None, :]) == 0)
    it, ip, id_, ic = it[r], ip[r], id_[r], ic[r]
    p, m = c["pipeline_parallel"][ip], model.batch / (c["data_parallel"][id_] * c["microbatch_size"][ib])
    vs = c["interleaving"]
    ok = (vs[None, :] == 1) | ((p[:, None] > 1) & (np.mod(m, p)[:, None] == 0))
    ok &= stages.split(model.config.layers, p[:, None], vs[None, :], model.options.uneven_stages).valid
    r, iv = np.nonzero(ok)
    it, ip, id_, ib, ic = it[r], ip[r], id_[r], ib[r], ic[r]
    keep = ~has_data_parallel_twin(c, c["data_parallel"][id_], c["microbatch_size"][ib], c["context_parallel"][ic])
    it, ip, id_, ib, iv, ic = it[keep], ip[keep], id_[keep], ib[keep], iv[keep], ic[keep]
    # expert and expert tensor parallelism (:mod:`.moe`): ep·etp divides each stage's t·d·cp GPUs, etp is 1 or t
    t = c["tensor_parallel"][it][:, None, None]
    ep, etp = c["expert_parallel"][None, :, None], c["expert_tensor_parallel"][None, None, :]
    tdc = t * c["data_parallel"][id_][:, None, None] * c["context_parallel"][ic][:, None, None]
    r, ie, ix = np.nonzero((np.mod(tdc, ep * etp) == 0) & ~moe.untried_etp(t, etp, model.etp_pinned))
    shapes = dict(zip(SHAPE, (it[r], ip[r], id_[r], ib[r], iv[r], ic[r], ie, ix)))
    if model.config.moe is None:
        return shapes
    # a MoE model's sequence parallelism (:func:`keys`): on at t > 1, off at t = 1 unless only on is allowed
    t, on = c["tensor_parallel"][shapes["tensor_parallel"]][:, None], allowed["sequence_parallel"].astype(bool)[None, :]
    r, isp = np.nonzero(((t > 1) & on) | ((t == 1) & (~on | on.all())))
    return {**{k: v[r] for k, v in shapes.items()}, "sequence_parallel": isp}


def has_data_parallel_twin(c: dict[str, np.ndarray], d, b, cp) -> np.ndarray:
    """Plans whose context parallelism ``cp`` and micro-batch ``b`` share a factor ``g = gcd(b, cp) > 1``:
    the same plan with ``cp/g``, ``d·g`` data-parallel replicas and micro-batch ``b/g`` holds as many
    tokens per rank (``b/cp``), runs as many micro-batches, keeps the same weights over the same
    ``d·cp`` ranks (so the same memory, tensor and gradient links) and a shorter ring (``cp/g − 1``
    steps of the same bytes, each beside a block of attention ``g`` times longer, over a group that
    spans no more nodes, :mod:`.context`), so it is as good or better in every metric. Such plans are left out
    where that twin is in the allowed space (nothing pinned away)."""
    c = {k: np.asarray(c[k], float) for k in ("data_parallel", "microbatch_size", "context_parallel")}
    d, b, cp = (np.asarray(x, float) for x in (d, b, cp))
    g = np.gcd(b.astype(np.int64), cp.astype(np.int64)).astype(float)
    return (g > 1) & np.isin(d * g, c["data_parallel"]) & np.isin(b / g, c["microbatch_size"]) \
        & np.isin(cp / g, c["context_parallel"])


def score_all(model: Megatron3DCostModel, allowed: dict[str, np.ndarray], shapes: dict[str, np.ndarray]):
    """Score columns broadcast over ``[shapes, *axes]`` (:func:`keys`) and the mask of distinct plans."""
    shape_keys, axes = keys(model)
    S, n = len(shapes["tensor_parallel"]), 1 + len(axes)
    values = {k: allowed[k][shapes[k]].astype(bool if k == "sequence_parallel" else float).reshape(S, *[1] * len(axes))
              for k in shape_keys}
    for axis, name in enumerate(axes, start=1):
        shape = [1] * n
        shape[axis] = len(allowed[name])
        raw = [CATEGORIES[name].index(r) for r in allowed[name]] if name in CATEGORIES else list(allowed[name])
        values[name] = np.array(raw).reshape(shape)
    values = {k: values[k] for k in DECISIONS}  # the space's order
    cols = model.score(model.plan_arrays(values), breakdown=False)
    shards = values["data_parallel"] * values["context_parallel"]
    fsdp = values["fsdp"].astype(bool)
    distinct = np.ones((S, *[1] * len(axes)), bool)
    idle = {"optimizer_sharding": (shards == 1) | fsdp, "dp_overlap": (shards == 1) | fsdp, "fsdp": shards == 1}
    if "sequence_parallel" in axes:  # (a MoE model's is set per shape, :func:`enumerate_shapes`)
        idle["sequence_parallel"] = values["tensor_parallel"] == 1
    for name, inert in idle.items():
        if False in list(allowed[name]):  # "on" where it cannot act duplicates "off"
            distinct = distinct & ~(inert & values[name].astype(bool))
    return values, cols, distinct


def plan_table(model: Megatron3DCostModel, allowed: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """Every distinct valid plan of the ``allowed`` decision values: (decision arrays with recompute
    as indices, score columns), one entry per plan (materialised: for checks and calibration)."""
    shapes = enumerate_shapes(model, allowed)
    if not len(shapes["tensor_parallel"]):
        return {k: np.empty(0) for k in DECISIONS}, {}
    values, cols, distinct = score_all(model, allowed, shapes)
    full = np.broadcast_shapes(distinct.shape, *(np.shape(c) for c in cols.values()),
                               *(np.shape(v) for v in values.values()))
    keep = np.broadcast_to(distinct, full)
    names = {*cols, *model.metrics}  # the derived metrics too (:class:`.footprint.Columns`)
    return ({k: np.broadcast_to(v, full)[keep] for k, v in values.items()},
            {k: np.broadcast_to(cols[k], full)[keep] for k in names})


def objectives(evaluator: Evaluator, column) -> tuple[np.ndarray, np.ndarray]:
    """``(F, violation)`` of plans from their metric columns (``column(name)``), as the evaluator does."""
    F = np.column_stack([column(name) for name in evaluator.objectives]) * evaluator.signs
    violation = (~column("feasible").astype(bool)).astype(float)
    for metric, limit in evaluator.constraints.items():
        violation += np.maximum(0.0, column(metric) - limit) / max(abs(limit), 1e-300)
    for metric, limit in evaluator.lower_bounds.items():
        violation += np.maximum(0.0, limit - column(metric)) / max(abs(limit), 1e-300)
    violation[~np.isfinite(F).all(1)] += 1.0
    violation[~np.isfinite(violation)] = 1.0
    return F, violation


def pareto_rows(F: np.ndarray, chunk: int = 256) -> np.ndarray:
    """Indices of the rows of ``F`` no other row dominates (minimisation), by a sorted sweep."""
    order = np.lexsort(F.T[::-1])  # a row can only be dominated by rows sorted before it
    front: list[int] = []
    for start in range(0, len(order), chunk):
        rows = order[start:start + chunk]
        block = F[rows]
        if front:
            fr = F[front]
            beaten = ((fr[None] <= block[:, None]).all(-1) & (fr[None] < block[:, None]).any(-1)).any(1)
            rows, block = rows[~beaten], block[~beaten]
        inner = ((block[None] <= block[:, None]).all(-1) & (block[None] < block[:, None]).any(-1)).any(1)
        front.extend(rows[~inner].tolist())
    return np.array(front, dtype=np.int64)


class Grid:
    """The distinct valid plans of ``shapes`` broadcast over their axes (:func:`keys`; the first ``budget``),
    scored: objectives ``F`` and ``violation`` per plan, and their decisions on demand."""

    def __init__(self, model, evaluator: Evaluator, allowed: dict, shapes: dict, budget: int | None) -> None:
        values = {k: v for k, (v, _) in allowed.items()}
        _, self.cols, distinct = score_all(model, values, shapes)
        self.allowed, self.shapes = allowed, shapes
        self.shape_keys, self.axes = keys(model)
        self.full = (len(shapes["tensor_parallel"]), *(len(allowed[a][0]) for a in self.axes))
        self.flat = np.flatnonzero(np.broadcast_to(distinct, self.full))
        self.valid = len(self.flat)
        if budget is not None:  # a budget scores the first plans only
            self.flat = self.flat[:budget]
        self.n = len(self.flat)
        self.F, self.violation = objectives(evaluator, self.column)

    def column(self, name: str) -> np.ndarray:  # one entry per plan, gathered from the broadcast arrays
        return np.broadcast_to(np.asarray(self.cols[name]), self.full).reshape(-1)[self.flat]

    def columns(self, idx: np.ndarray, names) -> dict[str, np.ndarray]:
        return {name: self.column(name)[idx] for name in names}

    def where(self, idx: np.ndarray) -> tuple:
        """Grid positions (shape index, then one per axis) of plans ``idx``."""
        return np.unravel_index(self.flat[idx], self.full)

    def decisions(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """Decision values (categories as indices) of plans ``idx``."""
        where = self.where(idx)
        out = {k: self.allowed[k][0][self.shapes[k][where[0]]] for k in self.shape_keys}
        for i, name in enumerate(self.axes, start=1):
            out[name] = self.allowed[name][0][where[i]]
        for name, labels in CATEGORIES.items():
            out[name] = np.array([labels.index(r) for r in out[name]], dtype=np.int64)
        return out

    def vectors(self, idx: np.ndarray) -> np.ndarray:
        """The space vectors (choice indices) of plans ``idx``."""
        where = self.where(idx)
        codes = {k: self.allowed[k][1][self.shapes[k][where[0]]] for k in self.shape_keys}
        codes.update({name: self.allowed[name][1][where[i]] for i, name in enumerate(self.axes, start=1)})
        return np.column_stack([codes[k] for k in DECISIONS]).astype(float)


def describe(model: Megatron3DCostModel, values: dict[str, np.ndarray], cols: dict[str, np.ndarray]) -> list[dict]:
    """Rows of table ``top_plans`` for plans given as decision arrays and their score columns."""
    rows = []
    for i in range(len(values["tensor_parallel"])):
        rows.append({"rank": i + 1, "tensor": int(values["tensor_parallel"][i]),
                     "pipeline": int(values["pipeline_parallel"][i]), "data": int(values["data_parallel"][i]),
                     "micro-batch": int(values["microbatch_size"][i]),
                     "interleaving": int(values["interleaving"][i]),
                     "recompute": memory.RECOMPUTE[int(values["recompute"][i])],
                     "sp": bool(values["sequence_parallel"][i]), "zero1": bool(values["optimizer_sharding"][i]),
                     "dp overlap": bool(values["dp_overlap"][i]), "cp": int(values["context_parallel"][i]),
                     **({"expert": int(values["expert_parallel"][i]),
                         "expert tensor": int(values["expert_tensor_parallel"][i])} if model.config.moe else {}),
                     "fsdp": bool(values["fsdp"][i]), "offload": offload.OFFLOAD[int(values["offload"][i])],
                     "fp32 grads": bool(values["grad_reduce_in_fp32"][i]), "time s": float(cols["time"][i]),
                     "tokens/s": float(cols["throughput"][i]), "memory GiB": float(cols["memory_gib"][i])})
    return rows


class Megatron3DSearch(SearchEngine):
    """Exhaustive vectorised search of the megatron-3d formulation (a proven optimum)."""

    requires = frozenset({"megatron_plans"})
    accepts = (Megatron3DCostModel,)
    exact = True
    # every valid plan by default (millions a second): the core's 20,000-evaluation default is for
    # sampling engines and would cut the enumeration short; the time limit stays
    default_budget = Budget(evaluations=None, seconds=DEFAULT_SECONDS)

    def __init__(self, *, top: ints(1, 1000) = 5) -> None:
        """``top``: how many of the best feasible plans table ``top_plans`` lists (the best included)."""
        if top < 1:
            raise OptmapError(f"[search.megatron-3d] top must be >= 1, got {top}")
        self.top = top

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = evaluator.cost_model
        allowed = choices(evaluator)
        shapes = enumerate_shapes(model, {k: v for k, (v, _) in allowed.items()})
        S = len(shapes["tensor_parallel"])
        if S == 0:
            raise OptmapError(f"no plan satisfies Megatron-LM's rules with the pinned decisions "
                              f"{evaluator.space.pinned}: {self._why(model, evaluator)}")
        grid = Grid(model, evaluator, allowed, shapes, evaluator.remaining_evaluations)
        F, violation, valid, n = grid.F, grid.violation, grid.valid, grid.n
        ok = np.flatnonzero(violation <= 0)
        firsts = F[ok, 0]
        head = np.argpartition(firsts, self.top - 1)[: self.top] if len(ok) > self.top else np.arange(len(ok))
        best = ok[head[np.argsort(firsts[head], kind="stable")]]
        keep = np.union1d(best, ok[pareto_rows(F[ok])]) if F.shape[1] > 1 and len(ok) else best
        if not len(ok):  # the least violation, then the least memory: the plan closest to fitting
            keep = np.lexsort((grid.column("memory"), violation))[:1]
        X = grid.vectors(keep)
        evaluator.record(X, F[keep], violation[keep], count=n)
        extra = {"valid_plans": valid, "shapes_priced": S}
        if not len(ok) and n < valid:
            return extra
        if not len(ok):
            report = model.evaluate(evaluator.space.decode(X[0]))
            closest = f"the closest: {report.reason}" if report.reason else "every plan breaks a [constraints] limit"
            raise OptmapError(f"none of the {n:,} valid plans is feasible; {closest}")
        model.ranking = (tuple(grid.vectors(best[:1])[0]),
                         describe(model, grid.decisions(best), grid.columns(best, ("time", "throughput", "memory_gib"))))
        return extra

    @staticmethod
    def _why(model: Megatron3DCostModel, evaluator: Evaluator) -> str:
        """The rule the pinned plan breaks when every size is pinned (the switches cannot make a shape
        valid; an unpinned expert tensor size is taken at 1, which divides into more shapes than t), else
        the general advice."""
        space = evaluator.space
        if set(SHAPE) - {"expert_tensor_parallel"} <= set(space.pinned):
            plan = space.decode(space.lower).as_dict()
            if "sequence_parallel" not in space.pinned:  # on: a MoE model with t > 1 needs it, off never helps
                plan["sequence_parallel"] = True
            return model.evaluate(space.mapping(plan)).reason
        etp = space.variables[space.index("expert_tensor_parallel")].choices
        if model.etp_pinned and etp[0] > 1:
            return (f"relax a pin, or [cost] expert_tensor_parallel = {etp[0]}: expert_parallel × {etp[0]} must divide "
                    f"tensor × data × context")
        return "relax a pin or change the GPU count or batch"
