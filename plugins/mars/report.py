"""What the ``mars`` cost model reports of one plan: its sets (devices, design, layer range,
latency, inbound transfers) and a row per layer (set, design, ES and SS, compute, communication)."""

from __future__ import annotations

import numpy as np
from optmap.cost import LayerCost

from .level1 import Plan
from .topology import set_label


def design_name(model, candidate: int, design: int) -> str:
    """The design(s) a set runs: the chosen one, or its members' fixed designs joined by "+"."""
    return "+".join(d.name for d in model.designs_of(candidate, design))


def describe(model, plan: Plan) -> dict:
    """JSON-friendly sets (devices, design, layer range, latency) and the baseline."""
    inter, host = model.traffic.per_set(plan.sets, plan.bounds)
    sets = []
    for i, (c, d, (a, b)) in enumerate(zip(plan.sets, plan.designs, plan.bounds)):
        sub = model.subproblem(c, d, a, b)
        latency = float(sub.cost(np.array(plan.strategies[a:b + 1])[None])[0][0])
        sets.append({"set": set_label(model.candidates[c]), "devices": list(model.candidates[c]),
                     "design": design_name(model, c, d), "first": model.layers[a].name,
                     "last": model.layers[b].name, "layers": b - a + 1, "latency_s": latency,
                     "inbound_s": float(inter[i] + host[i])})
    return {"sets": sets, "aggregate": model.aggregate, "baseline_time_s": model.baseline_time,
            "baseline_sets": [set_label(model.candidates[c]) for c in model.baseline_plan.sets]}


def layer_rows(model, plan: Plan) -> list[LayerCost]:
    """One row per mapped layer (its set, design, ES and SS shards), then the transfers between
    sets and to and from the host."""
    rows = []
    for c, d, (a, b) in zip(plan.sets, plan.designs, plan.bounds):
        sub = model.subproblem(c, d, a, b)
        states = np.array(plan.strategies[a:b + 1])
        parts = sub.breakdown(states)
        for j, layer in enumerate(model.layers[a:b + 1]):
            es, ss = sub.strategies.label(int(states[j]))
            comm = parts["allreduce"][j] + parts["shared"][j] + parts["relayout"][j]
            rows.append(LayerCost(layer.name, float(parts["compute"][j]), float(comm),
                                  float(parts["weight_bytes"][j] + parts["act_bytes"][j]),
                                  {"set": set_label(model.candidates[c]), "design": design_name(model, c, d),
                                   "ES": es, "SS": ss}))
    inter, host = model.traffic.per_set(plan.sets, plan.bounds)
    rows.append(LayerCost("(between sets)", 0.0, float(inter.sum())))
    rows.append(LayerCost("(host input/output)", 0.0, float(host.sum())))
    return rows
