"""Scoring rows of the ``dsm`` design space, vectorised: one call of the layer model per layer and pass for all rows.

Rules that tie layers together (DSM §III-B, note §5.2), applied here and mirrored exactly by the
``dsm`` engine's tables:

* ``<layer>:reuse = Y`` keeps the layer's main input in the scratchpads: the producer keeps its
  output (capacity, no HBM write in inference) and later reads its output error from there; it is
  only possible between layers of the same parallelism type and DySM factor (otherwise the data
  are re-laid out through HBM, §III-B1), so a mapping asking otherwise is infeasible;
* every edge whose ends have different layouts pays a relayout, forward and (training) backward;
* a pipe group that is on replaces its layers' sequential costs by the group's (:mod:`pipelining`);
  its layers' reuse flags are ignored, and its ends re-lay the activations out;
* preloaded weights (inference) take their CoreD slice of every core's scratchpad for the whole job.
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np
from optmap import schedule

from .chipcomm import PIPELINE, PTYPES, relayout, stage_transfer
from .layercost import CATEGORIES
from .passes import tensor_size

LAYOUTS = PTYPES + (PIPELINE,)
PIPE = len(PTYPES)
PER_STEP = tuple(c for c in CATEGORIES if c not in ("gradient", "weights"))


@dataclass
class Rows:
    """One layer's decisions for every row."""

    par: np.ndarray  # index into PTYPES
    reuse: np.ndarray
    wreuse: np.ndarray
    dysm: np.ndarray
    preload: np.ndarray
    split: dict  # pass -> list of five (M,) factor arrays
    level: dict  # pass -> list of four (M,) level arrays


def _choice(X: np.ndarray, column: int | None, default=0) -> np.ndarray:
    if column is None:
        return np.full(len(X), default, dtype=np.int64)
    return np.rint(X[:, column]).astype(np.int64)


def decode(model, X: np.ndarray) -> dict[str, Rows]:
    """Per layer, its decisions as arrays (categorical choices resolved to values)."""
    out = {}
    for name, v in model.vars.items():
        split = {p: [model.splits[_choice(X, c), k].astype(float) for k in range(5)] for p, c in v.split.items()}
        level = {p: [np.rint(X[:, c]) for c in cols] for p, cols in v.tiles.items()}
        out[name] = Rows(
            par=model.ptype_index[_choice(X, v.par)],
            reuse=_choice(X, v.reuse) == 1,
            wreuse=_choice(X, v.wreuse) == 1,
            dysm=np.asarray(model.factors)[_choice(X, v.dysm)],
            preload=_choice(X, v.preload) == 1,
            split=split,
            level=level,
        )
    return out


def relayout_table(model, u: str, v: str) -> np.ndarray:
    """Seconds to re-lay the tensor of edge (u, v) between every pair of layouts (Data..ModelXDataY, pipe)."""
    cache = model.__dict__.setdefault("_relayout_tables", {})
    if (u, v) not in cache:
        cache[u, v] = _relayout_table(model, u, v)
    return cache[u, v]


def _relayout_table(model, u: str, v: str) -> np.ndarray:
    per_chip = model.graph.graph.edges[u, v]["elements"] * model.phase.batch * model.hw.element_bytes / model.torus.chips
    passes = 2 if model.training else 1  # activations forward, errors backward
    return np.array([[passes * relayout(a, b, model.torus, model.hw, per_chip) for b in LAYOUTS] for a in LAYOUTS])


def preload_bytes(model, rows: dict[str, Rows]) -> np.ndarray:
    """Scratchpad bytes per core taken by preloaded weights: each layer's FWD CoreD slice (replicated, §III-B2)."""
    total = 0.0
    for name, r in rows.items():
        if model.vars[name].preload is None or not r.preload.any():
            continue
        _, core, _ = model.models[name].work(r.par, r.dysm, r.split["fwd"], r.level["fwd"])
        total = total + np.where(r.preload, tensor_size(model.graph.layer(name), "K", core) * model.hw.element_bytes, 0.0)
    return total


def hbm_bytes(model, rows: dict[str, Rows]) -> np.ndarray:
    """A chip's HBM footprint (note §7.21): its weights (and, training, their gradients and every layer's
    stored outputs for the backward passes, spread evenly over the chips)."""
    e, total = model.hw.element_bytes, 0.0
    for name, r in rows.items():
        lm = model.models[name]
        weights = lm.kernel_bytes(lm.chip_work(r.par, 1))
        if model.training:
            layer = lm.layer
            stored = layer.out_elements * layer.timesteps * model.phase.batch * e / model.torus.chips
            total = total + 2 * weights + stored
        else:
            total = total + weights
    return np.asarray(total, float)


def score(model, X: np.ndarray, detail: bool = False):
    """Metrics per row (and, with ``detail``, the per-layer, per-pass breakdown of every row)."""
    m = len(X)
    rows = decode(model, X)
    graph = model.graph
    tp_on = {run: np.rint(X[:, c]) == 1 for run, c in model.tp_vars.items()}
    member = {name: tp_on[model.run_of[name].name] if name in model.run_of else np.zeros(m, bool) for name in rows}
    reserved = preload_bytes(model, rows)
    feasible = np.ones(m, bool)
    cats = {c: np.zeros(m) for c in CATEGORIES}
    layers: dict[str, dict] = {}

    for layer in graph.layers:
        name, r, lm = layer.name, rows[layer.name], model.models[layer.name]
        producer, consumer = graph.reuse_producer(name), graph.reuse_consumer(name)
        in_res = r.reuse & ~member[name]
        if producer is not None:
            p = rows[producer]
            feasible &= ~(in_res & ((p.par != r.par) | (p.dysm != r.dysm) | member[producer]))
        out_res = rows[consumer].reuse & ~member[consumer] if consumer is not None else False
        fork = graph.graph.out_degree(name) > 1
        layers[name] = {}
        for pass_ in lm.passes:
            parts = lm.evaluate(pass_, r.par, r.dysm, r.split[pass_], r.level[pass_], in_res=in_res,
                                out_res=out_res, weights_res=r.wreuse, preloaded=r.preload, reserved=reserved,
                                fork=fork)
            feasible &= member[name] | (parts["capacity"] <= model.hw.spad_bytes)
            for c in CATEGORIES:
                if c in parts:
                    parts[c] = np.where(member[name], 0.0, parts[c])
                    cats[c] += parts[c]
            layers[name][pass_] = parts

    for run in model.runs:
        on = tp_on[run.name]
        if on.any():
            ok = _pipe_group(model, run, rows, reserved, on, cats, layers)
            feasible &= ~on | ok

    memory = np.broadcast_to(hbm_bytes(model, rows), (m,)).astype(float)  # per chip (optmap.cost.MEMORY)
    feasible &= memory <= model.hw.hbm_bytes
    relayouts = {}
    for u, v in graph.graph.edges:
        lu = np.where(member[u], PIPE, rows[u].par)
        lv = np.where(member[v], PIPE, rows[v].par)
        cost = relayout_table(model, u, v)[lu, lv]
        cats["relayout"] += cost
        relayouts[v] = relayouts.get(v, 0.0) + cost

    time = sum(cats[c] for c in CATEGORIES)
    time = np.where(feasible, time, np.inf)
    metrics = {"time": time, "throughput": model.phase.batch / time,
               "utilization": model.useful_flops / (time * model.peak_flops), **cats, "memory_bytes": memory,
               "feasible": feasible}
    if detail:
        return metrics, layers, relayouts
    return metrics


def _pipe_group(model, run, rows, reserved, on, cats, layers) -> np.ndarray:
    """Add a pipe group's time to the rows where it is on; returns which of them fit the scratchpads."""
    torus, hw = model.torus, model.hw
    steps = max(model.graph.layer(n).timesteps for n in run.layers)
    fill = float(schedule.pipeline_time(np.ones(run.stages), steps))  # (m + p - 1) step times (§III-D)
    ok = np.ones(len(on), bool)
    parts_of = {}
    stage = {}
    for name in run.layers:
        r, sm = rows[name], model.stage_models[name]
        layer = sm.layer
        transfer = stage_transfer(torus, layer.out_elements * model.phase.batch * hw.element_bytes)
        parts_of[name] = {}
        for pass_ in sm.passes:
            parts = sm.evaluate(pass_, r.par, 1, r.split[pass_], r.level[pass_], weights_res=r.wreuse,
                                preloaded=r.preload, reserved=reserved)
            ok &= parts["capacity"] <= hw.spad_bytes
            step = sum(parts[c] for c in PER_STEP if c in parts)
            parts["pipeline"] = np.maximum(0.0, transfer - step)  # double-buffered: only its excess shows
            parts_of[name][pass_] = parts
            stage[name, pass_] = step + parts["pipeline"]
    passes = {p for n in run.layers for p in model.stage_models[n].passes}
    slowest = {p: np.max([stage[n, p] for n in run.layers if (n, p) in stage], axis=0) for p in passes}
    held = {p: sum(r for n, r in zip(run.layers, run.rows) if (n, p) in stage) for p in passes}
    for name, rows_share in zip(run.layers, run.rows):
        for pass_ in model.stage_models[name].passes:
            share = fill * rows_share / held[pass_]  # the group's time, split by the chips each stage holds
            parts = parts_of[name][pass_]
            parts["pipeline"] = parts["pipeline"] + slowest[pass_] - stage[name, pass_]  # waiting for the slowest
            out = {}
            for c in CATEGORIES:
                if c not in parts:
                    continue
                value = parts[c] * (share if c in PER_STEP else 1.0)
                out[c] = np.where(on, value, 0.0)
                cats[c] += out[c]
            out["capacity"] = parts["capacity"]
            for c, value in out.items():
                layers[name][pass_][c] = np.where(on, value, layers[name][pass_].get(c, 0.0))
    return ok
