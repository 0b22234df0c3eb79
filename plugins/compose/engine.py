"""The native joint engine ``pipeline``: Alpa's two levels (Zheng et al., OSDI 2022, §5).

Inter-stage: a dynamic program over (layer boundary, device-unit boundary) that places stages
one after another (Alpa Eq. 3-4). Intra-stage: for every candidate stage (a slice of layers on a
range of devices, at each micro-batch count) the inner formulation's own native engine finds its
plan; each is searched once and kept (:class:`~.stages.StagePricer` keeps the models,
``_table`` the results; ranges whose devices are alike, by :func:`~.stages.signature`, share one
search).

Alpa's DP minimises ``(m − 1)·t_max + Σ t_s`` (the pipeline time of :func:`optmap.schedule.
pipeline_time`) by fixing the slowest stage's bound ``t_max``: for each candidate ``t_max`` in
increasing order, the least ``Σ t_s`` over stages no slower than ``t_max``; it stops once
``(m − 1)·t_max`` alone exceeds the best pipeline found. The answer is exact for the stage times
the inner engine returns, so exact whenever the inner engine is exact and memory does not bind
(a stage's plan is its fastest one; its in-flight activations are then checked).
"""

from __future__ import annotations

import math

import numpy as np
from optmap.cost import evaluate_batch
from optmap.errors import OptmapError
from optmap.schedule import in_flight
from optmap.search import Budget, Evaluator, SearchEngine
from optmap.search.engine import misfit

from .model import PIPELINE_STAGES, PipelineCostModel
from .structure import Stage

INF = math.inf


class PipelineSearch(SearchEngine):
    """Alpa-style joint search: DP over cut points and device splits, the inner engine per stage."""

    requires = frozenset({PIPELINE_STAGES})
    accepts = (PipelineCostModel,)

    def __init__(self, *, stage_engine: str | None = None, host=None) -> None:
        """``stage_engine``: the engine that plans each stage (default: the inner formulation's own)."""
        self.stage_engine, self.host = stage_engine, host

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model: PipelineCostModel = evaluator.cost_model
        structure, pins = model.structure, evaluator.space.pinned
        copied = [name for name in pins if name.startswith("stage") and "." in name]
        if copied:
            raise OptmapError(f"the pipeline engine plans every stage with the inner engine; pinned per-stage "
                              f"decisions ({copied[0]}) need a generic engine (ga, random, exhaustive)")
        name = self.stage_engine or model.inner_engine
        if not name or self.host is None:
            raise OptmapError(f"the inner formulation '{model.inner_name}' has no native engine to plan a stage: "
                              f"set [search.pipeline] stage_engine = \"<engine>\", or search with ga or random")
        self._engine = self.host.build("search_engine", name, where=f"[search.pipeline] stage_engine '{name}'")
        reason = misfit(self._engine, model.template)
        if reason:
            raise OptmapError(f"[search.pipeline] stage_engine '{name}' does not fit cost model '{model.inner_name}': "
                              f"it {reason}")
        head = {v.name for v in structure.space.variables if v.tag("part") is None}  # the pipeline's own decisions
        self._pins = {k: v for k, v in pins.items() if k not in head}  # the inner decisions pinned
        self._seed, self._memo, self._searches, self._inner_evaluations = seed, {}, 0, 0
        best = (INF, None)
        stage_options = [pins["stages"]] if "stages" in pins else range(1, structure.max_stages + 1)
        micro = [pins["microbatches"]] if "microbatches" in pins else structure.microbatches
        evaluator.expected = len(stage_options) * len(micro)  # at most one plan per stage count and m
        for m in sorted(micro, key=lambda m: m != 1):  # m = 1 first: the one-stage plan is found at once
            table = self._table(model, m, evaluator, max(stage_options) > 1)
            for S in stage_options:
                if S == 1 and m != 1:  # one stage runs the whole batch (microbatches is a pipeline's decision)
                    continue
                value, plan = self._dp(model, table, S, m, pins)
                if plan is not None and value < best[0]:
                    best = (value, plan)
                    evaluator.evaluate(self._vector(model, plan, table, m)[None])
            if evaluator.exhausted:
                break
        return {"stage_searches": self._searches, "inner_evaluations": self._inner_evaluations,
                "stage_engine": name, "predicted_time": best[0]}

    # --- intra-stage: the inner engine on every candidate stage -----------------------------------
    def _table(self, model: PipelineCostModel, m: int, evaluator: Evaluator, several: bool) -> dict:
        """(a, b, d, e) -> (seconds, memory, activations, capacity, feasible, best stage vector):
        stages over layer boundaries ``bounds[a]..bounds[b]`` and device units ``d..e``."""
        structure = model.structure
        B, U = len(structure.bounds), structure.units
        whole = (0, B - 1, 0, U)
        candidates = [whole] + [(a, b, d, e) for a in range(B - 1) for b in range(a + 1, B) for d in range(U)
                                for e in range(d + 1, U + 1) if several and (a, b, d, e) != whole
                                and (a == 0) == (d == 0) and (b == B - 1) == (e == U)]  # stage 1 starts at both
        table = {}  # origins, the last stage ends at both ends
        for a, b, d, e in candidates:
            if evaluator.exhausted:  # Ctrl-C or the time budget: plan with the stages searched so far
                break
            stage = Stage(0, int(structure.bounds[a]), int(structure.bounds[b]), d, e)
            table[a, b, d, e] = self._stage(model, stage, m, evaluator, (a, b, d, e) != whole)
        return table

    def _stage(self, model: PipelineCostModel, stage: Stage, m: int, outer: Evaluator, several: bool) -> tuple:
        pricer = model.pricer
        built = pricer.stage(stage, m)
        if several and not model.allowed(built, 2):
            return (INF, 0.0, built.activation_bytes, built.capacity, False, None)
        key = built.key
        if key not in self._memo:
            space = built.model.space
            pins = {k: v for k, v in self._pins.items() if k in space.names}
            seen = _Recorder(built.model)
            inner = Evaluator(built.model, ("time",), budget=Budget(), batch_evaluate=seen,
                              space=space.pin(pins) if pins else space)
            inner.stop_requested = outer.stop_requested
            self._engine.search(inner, self._seed)
            self._searches += 1
            self._inner_evaluations += inner.evaluations
            if inner.best_x is None:
                self._memo[key] = (INF, 0.0, False, None)
            else:
                time, memory, feasible = seen.of(inner.best_x)
                self._memo[key] = (time, memory, feasible, inner.best_x)
        seconds, memory, feasible, y = self._memo[key]
        return seconds + built.send_s, memory, built.activation_bytes, built.capacity, feasible, y

    # --- inter-stage: Alpa's DP ---------------------------------------------------------------
    def _dp(self, model: PipelineCostModel, table: dict, S: int, m: int, pins: dict) -> tuple[float, list | None]:
        """The least pipeline time with ``S`` stages and its stages [(a, b, d, e), ...]."""
        structure = model.structure
        B, U = len(structure.bounds), structure.units
        cost = np.full((S, B, B, U + 1, U + 1), INF)  # seconds of each candidate as stage k (memory checked)
        for (a, b, d, e), (t, memory, act, cap, ok, _) in table.items():
            for k in range(S):
                held = memory + (in_flight(S, m, k, model.schedule) - 1) * act
                if ok and (not model.check_memory or held <= cap) and _allowed(pins, k, b, e, S):
                    cost[k, a, b, d, e] = t
        finite = np.unique(cost[np.isfinite(cost)])
        best, plan = INF, None
        for t_max in (finite if m > 1 else finite[-1:]):
            if (m - 1) * t_max >= best:
                break  # Alpa §5.2: a larger bound cannot do better
            total, stages = _least_sum(np.where(cost <= t_max, cost, INF), S, B, U)
            if stages is not None:
                slowest = max(cost[k, a, b, d, e] for k, (a, b, d, e) in enumerate(stages))
                value = (m - 1) * slowest + total
                if value < best:
                    best, plan = value, stages
        return best, plan

    def _vector(self, model: PipelineCostModel, plan: list, table: dict, m: int) -> np.ndarray:
        """The joined-space row of a plan: head decisions and each stage's inner decisions."""
        structure, pricer = model.structure, model.pricer
        S = len(plan)
        values = structure.head_values(S, [b for _, b, _, _ in plan[:-1]], [e for _, _, _, e in plan[:-1]], m)
        for k, (a, b, d, e) in enumerate(plan):
            stage = Stage(k, int(structure.bounds[a]), int(structure.bounds[b]), d, e)
            values.update(pricer.joined_values(pricer.stage(stage, m), table[a, b, d, e][5], k + 1))
        space = model.space
        defaults = {v.name: v.value(v.lower) for v in space.variables}  # decisions no stage holds: the first value
        return space.encode({**defaults, **{n: v for n, v in values.items() if n in defaults}})


class _Recorder:
    """Scores batches for an inner search and keeps each row's time, memory and feasibility, so
    the best row's need not be scored again."""

    def __init__(self, model) -> None:
        self.model, self.rows = model, {}

    def __call__(self, X: np.ndarray) -> dict[str, np.ndarray]:
        out = evaluate_batch(self.model, X)
        memory = np.nan_to_num(out.get("memory_bytes", np.zeros(len(X))))
        for x, t, m, ok in zip(np.atleast_2d(X), out["time"], memory, out["feasible"]):
            self.rows[x.tobytes()] = (float(t), float(m), bool(ok))
        return out

    def of(self, x: np.ndarray) -> tuple[float, float, bool]:
        return self.rows[np.asarray(x, float).tobytes()]


def _allowed(pins: dict, k: int, b: int, e: int, S: int) -> bool:
    """Stage ``k`` (0-based) may end at layer boundary ``b`` and unit ``e`` under pinned cuts."""
    if k == S - 1:
        return True
    return pins.get(f"cut{k + 1}", b) == b and pins.get(f"devices{k + 1}", e) == e


def _least_sum(cost: np.ndarray, S: int, B: int, U: int) -> tuple[float, list | None]:
    """min Σ over chains of S stages from (0, 0) to (B−1, U) (Alpa Eq. 4's inner DP)."""
    F = np.full((B, U + 1), INF)
    F[0, 0] = 0.0
    choice = []
    for k in range(S):
        total = F[:, None, :, None] + cost[k]  # (a, b, d, e)
        flat = total.transpose(1, 3, 0, 2).reshape(B, U + 1, -1)
        arg = flat.argmin(axis=2)
        F = np.take_along_axis(flat, arg[..., None], axis=2)[..., 0]
        choice.append(arg)
    if not np.isfinite(F[B - 1, U]):
        return INF, None
    stages, b, e = [], B - 1, U
    for k in range(S - 1, -1, -1):
        a, d = divmod(int(choice[k][b, e]), U + 1)
        stages.append((a, b, d, e))
        b, e = a, d
    return float(F[B - 1, U]), stages[::-1]
