"""DSM's planner: the per-layer tables and the chain DP that turn parallelism types into a plan.

Steps 1-3 of the ``dsm`` engine (:mod:`.engine`), usable without it: the cost model completes its
named parallelism patterns with :func:`plan_vector` (:mod:`.plans`). Every function takes the
cost model (:class:`~.model.DSMCostModel`) by duck type (``vars``, ``ptypes``, ``factors``,
``runs``, ``models``, ``graph``, ``hw``, ``splits``), so the model, its plans and the engine
depend on this module and it on none of them.
"""

from __future__ import annotations

import itertools

import numpy as np

from optmap.chain_dp import solve

from .chipcomm import stage_transfer
from .evaluation import PIPE, relayout_table
from .passes import tensor_size
from .pipelining import contract
from .tables import TableBuilder, residency_combos
from .view import SOURCE, chain_view

PRELOAD_FRACTIONS = tuple(k / 8 for k in range(9))  # shares of the scratchpad tried for preloaded weights
ALL_PASSES = ("fwd", "bwd", "upd")


def plan_vector(model, pinned: dict[str, str], prune: str = "paper") -> np.ndarray:
    """The best mapping with the parallelism types ``pinned`` (layer -> DSM type, checked by
    :func:`.plans.pinned_types`), pipe groups off."""
    planner = _Planner(model, TableBuilder(model, prune), 0.0, frozenset())
    return planner.plan({run.name: False for run in model.runs}, pinned)


def pipe_combos(model, pinned: dict[str, str], fixed: dict):
    """Every on/off setting of the pipe groups (a group with a pinned type stays off unless [fix] says on)."""
    choices = []
    for run in model.runs:
        if f"tp:{run.name}" in fixed:
            choices.append((fixed[f"tp:{run.name}"] == "Y",))
        else:
            choices.append((False,) if any(n in pinned for n in run.layers) else (False, True))
    for combo in itertools.product(*choices):
        yield {run.name: on for run, on in zip(model.runs, combo)}


def grid_pins(model, fixed: dict) -> dict:
    """[fix] values of splits and tile levels, per (layer, pass), as the table builder wants them."""
    out: dict = {}
    for name, value in fixed.items():
        parts = name.split(":")
        if len(parts) != 3:
            continue
        layer, pass_, what = parts
        entry = out.setdefault((layer, pass_), {})
        if what == "split":
            entry["split"] = model.split_labels.index(value)
        else:
            entry[("in", "out", "ij", "mb").index(what)] = int(value)
    return out


class _Planner:
    """Tables and DP for one preload set."""

    def __init__(self, model, builder: TableBuilder, reserved: float, preloaded: frozenset,
                 fixed: dict | None = None) -> None:
        self.model, self.builder, self.reserved, self.preloaded = model, builder, reserved, preloaded
        self.fixed = fixed or {}
        self.P, self.F = len(model.ptypes), len(model.factors)
        self.S = self.P * self.F * 4
        self.layer_tables = {layer.name: self._layer(layer.name) for layer in model.graph.layers}
        self.groups = {run.name: self._group(run) for run in model.runs}

    # --- states: (type, DySM factor, input kept, output kept) ------------------------------------
    def state(self, p: int, f: int, r: int, o: int) -> int:
        return ((p * self.F + f) * 2 + r) * 2 + o

    def unstate(self, s: int) -> tuple[int, int, int, int]:
        """(type, DySM factor, input kept, output kept) of a state."""
        return s // (self.F * 4), (s // 4) % self.F, (s // 2) % 2, s % 2

    @property
    def state_type(self) -> np.ndarray:
        """State -> position of its type in the model's types."""
        return np.repeat(np.arange(self.P), self.F * 4)

    def _layer(self, name: str) -> dict:
        model = self.model
        lm, v, graph = model.models[name], model.vars[name], model.graph
        consumer = graph.reuse_consumer(name)
        can_out = consumer is not None and model.vars[consumer].reuse is not None
        combos = residency_combos(v.reuse is not None, can_out, v.wreuse is not None)
        if f"{name}:wreuse" in self.fixed:
            combos = [c for c in combos if c[2] == (self.fixed[f"{name}:wreuse"] == "Y")]
        factors = [fi for fi in range(self.F) if v.dysm is not None or fi == 0]
        if f"{name}:dysm" in self.fixed:
            factors = [model.factors.index(int(self.fixed[f"{name}:dysm"]))]
        fork = graph.graph.out_degree(name) > 1
        best = {}
        for pi, p in enumerate(model.ptype_index):
            for fi in factors:
                best[pi, fi] = {pass_: self.builder.best(lm, pass_, int(p), model.factors[fi], combos,
                                                         preloaded=name in self.preloaded, reserved=self.reserved,
                                                         fork=fork) for pass_ in lm.passes}
        cost = np.full(self.S, np.inf)
        hold = np.zeros(self.S, np.int64)
        for (pi, fi), passes in best.items():
            for j, (r, out, w) in enumerate(combos):
                s = self.state(pi, fi, int(r), int(out))
                value = sum(pb.total[j] for pb in passes.values())
                if value < cost[s]:
                    cost[s], hold[s] = value, int(w)
        return {"best": best, "combos": [tuple(c) for c in combos], "cost": cost, "hold": hold}

    # --- timestep-pipelining groups -------------------------------------------------------------
    def _group(self, run) -> dict:
        """Best per stage and option (type, weights held), then the exact best allocation of options."""
        model = self.model
        steps = max(model.graph.layer(n).timesteps for n in run.layers)
        fill = steps + run.stages - 1
        options = []  # per stage: list of (pi, w, per-pass stage seconds, one-off seconds, tables)
        for name in run.layers:
            sm, v = model.stage_models[name], model.vars[name]
            transfer = stage_transfer(model.torus, sm.layer.out_elements * model.phase.batch * model.hw.element_bytes)
            combos = residency_combos(False, False, v.wreuse is not None)
            if f"{name}:wreuse" in self.fixed:
                combos = [c for c in combos if c[2] == (self.fixed[f"{name}:wreuse"] == "Y")]
            mine = []
            for pi, p in enumerate(model.ptype_index):
                tabs = {pass_: self.builder.best(sm, pass_, int(p), 1, combos, preloaded=name in self.preloaded,
                                                 reserved=self.reserved) for pass_ in sm.passes}
                for j, (_, _, w) in enumerate(combos):  # a stage without a pass (no BWD) waits 0 in it
                    step = np.array([max(tabs[ps].per_step[j], transfer) if ps in tabs else 0.0 for ps in ALL_PASSES])
                    fits = all(np.isfinite(tabs[ps].total[j]) for ps in sm.passes)
                    once = sum(tabs[ps].total[j] - tabs[ps].per_step[j] for ps in sm.passes) if fits else np.inf
                    mine.append((pi, int(w), step, once, {ps: (tabs[ps], j) for ps in sm.passes}))
            options.append(mine)
        steps = np.array([[o[2] for o in opts] for opts in options])  # (stages, options, passes)
        once = np.array([[o[3] for o in opts] for opts in options])  # (stages, options)
        floor = np.max(np.min(steps, axis=1), axis=0)  # the slowest stage is at least this slow, per pass
        thresholds = [np.unique(v[np.isfinite(v) & (v >= f)]) for v, f in zip(steps.reshape(-1, steps.shape[2]).T, floor)]
        grid = np.array(list(itertools.product(*thresholds))).reshape(-1, steps.shape[2])
        if not len(grid):
            return {"cost": np.inf, "picks": None, "options": options}
        allowed = np.all(steps[None] <= grid[:, None, None, :], axis=-1)  # (thresholds, stages, options)
        masked = np.where(allowed, once[None], np.inf)
        total = fill * grid.sum(1) + masked.min(2).sum(1)  # Σ_pass fill·slowest + Σ_stage one-off
        best = int(np.argmin(total))
        picks = [int(k) for k in masked[best].argmin(1)]
        return {"cost": float(total[best]), "picks": picks if np.isfinite(total[best]) else None, "options": options}

    # --- the chain DP -------------------------------------------------------------------------
    def plan(self, tp: dict[str, bool], pinned: dict[str, str] | None = None) -> np.ndarray:
        model = self.model
        graph = model.graph.graph
        on = [run for run in model.runs if tp[run.name]]
        member = {n: run for run in on for n in run.layers}
        g = graph
        for run in on:
            g = contract(g, run)
        view = chain_view(g, model.workload.name)
        names = [n for n in view.nodes] + [n for seg in view.segments for path in seg for n in path]
        index = {n: i for i, n in enumerate(dict.fromkeys(names))}
        node_cost, edge_cost = {}, {}
        for n, i in index.items():
            if n == SOURCE:
                node_cost[i] = np.zeros(self.S)
            elif n in member:
                node_cost[i] = np.where(np.arange(self.S) == 0, self.groups[n]["cost"], np.inf)
            else:
                node_cost[i] = self.layer_tables[n]["cost"].copy()
                if f"{n}:reuse" in self.fixed:  # [fix]: only the states with that reuse flag
                    node_cost[i][np.arange(self.S) // 2 % 2 != int(self.fixed[f"{n}:reuse"] == "Y")] = np.inf
                if pinned and n in pinned:  # other types forbidden
                    keep = self.state_type == model.ptypes.index(pinned[n])
                    node_cost[i] = np.where(keep, node_cost[i], np.inf)
        for u, v in view.edges:
            edge_cost[index[u], index[v]] = self._edge(u, v, member)
        _, states = solve(*view.for_solver(index), node_cost, edge_cost)
        return self._vector({n: states[i] for n, i in index.items()}, member, tp)

    def _edge(self, u: str, v: str, member: dict) -> np.ndarray:
        """Relayout between the two ends' layouts; on the reuse edge, u keeps its output iff v keeps its
        input, and only with v's type and DySM factor (§III-B1)."""
        model, S = self.model, self.S
        if u == SOURCE:
            return np.zeros((S, S))
        p_of, f_of, r_of, o_of = (np.array(k) for k in zip(*map(self.unstate, range(S))))
        types = model.ptype_index
        a = member[u].layers[-1] if u in member else u  # the real layers at the two ends
        b = member[v].layers[0] if v in member else v
        lu = np.full(S, PIPE) if u in member else types[p_of]
        lv = np.full(S, PIPE) if v in member else types[p_of]
        cost = relayout_table(model, a, b)[lu[:, None], lv[None, :]].copy()
        if not model.graph.graph.edges[a, b]["reuse"]:
            return cost
        kept = r_of[None, :] == 1 if v not in member else np.zeros((1, S), bool)
        same = (p_of[:, None] == p_of[None, :]) & (f_of[:, None] == f_of[None, :])
        ok = (o_of[:, None] == kept) & (~kept | same)
        return np.where(ok, cost, np.inf)

    def _vector(self, states: dict[str, int], member: dict, tp: dict[str, bool]) -> np.ndarray:
        """The design-space vector of the DP's answer (every variable's choice index or level)."""
        model = self.model
        x = np.zeros(len(model.space))
        for run_name, column in model.tp_vars.items():
            x[column] = float(tp[run_name])
        for layer in model.graph.layers:
            name = layer.name
            v = model.vars[name]
            if name in member:
                self._stage_vector(x, name, member[name])
                continue
            s = states[name]
            pi, fi, r, out = self.unstate(s)
            table = self.layer_tables[name]
            w = int(table["hold"][s])
            j = table["combos"].index((bool(r), bool(out), bool(w)))
            x[v.par] = pi
            for column, value in ((v.reuse, r), (v.dysm, fi), (v.wreuse, w), (v.preload, name in self.preloaded)):
                if column is not None:
                    x[column] = float(value)
            for pass_, pb in table["best"][pi, fi].items():
                _set_pass(x, v, pass_, pb, j)
        return x

    def _stage_vector(self, x: np.ndarray, name: str, run) -> None:
        group = self.groups[run.name]
        k = group["picks"][run.layers.index(name)] if group["picks"] is not None else 0
        pi, w, _, _, tabs = group["options"][run.layers.index(name)][k]
        v = self.model.vars[name]
        x[v.par] = pi
        if v.wreuse is not None:
            x[v.wreuse] = w
        if v.preload is not None:
            x[v.preload] = float(name in self.preloaded)
        for pass_, (pb, j) in tabs.items():
            _set_pass(x, v, pass_, pb, j)


def _set_pass(x: np.ndarray, v, pass_: str, pb, j: int) -> None:
    x[v.split[pass_]] = pb.split[j]
    for column, level in zip(v.tiles[pass_], pb.levels[j]):
        x[column] = level


def preload_sets(model, builder: TableBuilder, fixed: dict):
    """(reserved bytes per core, preloaded layers) to plan with: none, then the paper's sweep (§III-B2).

    Layers [fix]ed to Y are in every set, layers fixed to N in none."""
    always = [n for n in model.vars if fixed.get(f"{n}:preload") == "Y"]
    layers = [layer for layer in model.graph.layers if model.vars[layer.name].preload is not None
              and f"{layer.name}:preload" not in fixed]
    gains, need = {}, {}
    for layer in layers:
        lm = model.models[layer.name]
        gains[layer.name] = _best_cost(builder, lm, False) - _best_cost(builder, lm, True)
        need[layer.name] = _need(model, layer.name)
    base = sum(need.get(n, _need(model, n)) for n in always)
    yield base, frozenset(always)
    order = sorted((n for n in gains if gains[n] > 0), key=lambda n: -gains[n])
    seen = {frozenset(always)}
    for fraction in PRELOAD_FRACTIONS[1:]:
        chosen, used = list(always), base
        for name in order:
            if used + need[name] <= fraction * model.hw.spad_bytes:
                chosen.append(name)
                used += need[name]
        key = frozenset(chosen)
        if chosen and key not in seen:
            seen.add(key)
            yield used, key


def _best_cost(builder: TableBuilder, lm, preloaded: bool) -> float:
    """A layer's best cost with and without preloaded weights (the paper's sensitivity, §III-B2)."""
    return sum(float(np.min(builder.best(lm, pass_, 0, 1, [(False, False, False)], preloaded=preloaded).total))
               for pass_ in lm.passes)


def _need(model, name: str) -> float:
    """Scratchpad bytes per core of a layer's weights under its least replicating split."""
    lm = model.models[name]
    core = [np.ceil(c / s) for c, s in zip(lm.chip_work(0, 1), model.splits.T.astype(float))]
    return float(np.min(tensor_size(lm.layer, "K", core))) * model.hw.element_bytes
