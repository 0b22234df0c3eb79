"""The report of one ``dsm`` mapping: per-layer decisions and utilisation (Fig. 12), per-pass breakdown (Fig. 13)."""

from __future__ import annotations

import numpy as np

from optmap.cost import CostReport, LayerCost

from .chipcomm import PTYPES
from .evaluation import decode, hbm_bytes, score
from .layercost import CATEGORIES
from .splits import DIMS, label

COMPUTE = ("mac", "underuse", "aux")


def _infeasible_reason(model, rows, layers, piped: set) -> str:
    for name, passes in layers.items():
        for pass_, parts in passes.items():
            need = float(np.max(parts["capacity"]))
            if need > model.hw.spad_bytes:
                return (f"layer '{name}' {pass_}: needs {need / 2**20:.3g} MB of scratchpad per core, the core has "
                        f"{model.hw.spad_bytes / 2**20:.3g} MB (choose deeper tiles, another split or no reuse)")
    for layer in model.graph.layers:
        producer = model.graph.reuse_producer(layer.name)
        r = rows[layer.name]
        if producer and r.reuse[0] and layer.name not in piped and (
                rows[producer].par[0] != r.par[0] or rows[producer].dysm[0] != r.dysm[0] or producer in piped):
            return (f"layer '{layer.name}' reuses the output of '{producer}' across a change of parallelism, "
                    f"DySM factor or pipe group (relayout goes through HBM, DSM §III-B1)")
    need = float(np.max(hbm_bytes(model, rows)))
    if need > model.hw.hbm_bytes:
        return (f"a chip needs {need / 1e9:.3g} GB of HBM for weights, gradients and stored activations, it has "
                f"{model.hw.hbm_bytes / 1e9:.3g} GB (more chips, model parallelism or a smaller minibatch)")
    return "infeasible"


def _decision_keys(model) -> list[str]:
    """The per-layer columns this model has, in a fixed order."""
    used = {p for m in model.models.values() for p in m.passes}
    keys = ["parallelism", *(f"{p} split" for p in ("fwd", "bwd", "upd") if p in used)]
    for key, attr in (("reuse", "reuse"), ("weights held", "wreuse"), ("preload", "preload"), ("dysm", "dysm")):
        if any(getattr(v, attr) is not None for v in model.vars.values()):
            keys.append(key)
    return keys + ["util"]


def _tile(tiles) -> str:
    return ".".join(f"{d}{int(np.ravel(t)[0])}" for d, t in zip(DIMS, tiles))


def report(model, mapping) -> CostReport:
    """Metrics, one row per layer, the per-pass breakdown table (Fig. 13) and a JSON plan."""
    X = mapping.array[None]
    metrics, layers, relayouts = score(model, X, detail=True)
    rows = decode(model, X)
    feasible = bool(metrics.pop("feasible")[0])
    values = {k: float(v[0]) for k, v in metrics.items()}
    tp = {run.name: bool(round(X[0, c])) for run, c in zip(model.runs, model.tp_vars.values())}
    member = {n: (run, rows_) for run in model.runs if tp[run.name] for n, rows_ in zip(run.layers, run.rows)}
    keys = _decision_keys(model)
    table, plan_layers, pass_rows = [], {}, []
    for layer in model.graph.layers:
        name, r, v = layer.name, rows[layer.name], model.vars[layer.name]
        ptype = PTYPES[int(r.par[0])]
        decisions = dict.fromkeys(keys, "-")
        decisions["parallelism"] = ptype if name not in member else f"{ptype} on {member[name][1]} rows (pipe)"
        lm = model.stage_models[name] if name in member else model.models[name]
        relayout = float(np.ravel(relayouts.get(name, 0.0))[0])
        shares = {p: (0.5 if model.training and p in ("fwd", "bwd") and "bwd" in layers[name] else
                      1.0 if p == "fwd" and "bwd" not in layers[name] else 0.0) for p in layers[name]}
        passes = {}
        for pass_, parts in layers[name].items():
            split = [int(sv[0]) for sv in r.split[pass_]]
            decisions[f"{pass_} split"] = label(split)
            _, _, tiles = lm.work(r.par, r.dysm, r.split[pass_], r.level[pass_])
            seconds = {c: float(np.ravel(parts[c])[0]) for c in CATEGORIES if c in parts}
            seconds["relayout"] = seconds.get("relayout", 0.0) + relayout * shares[pass_]
            passes[pass_] = {"split": dict(zip(DIMS, split)), "tile": dict(zip(DIMS, (int(np.ravel(t)[0]) for t in tiles))),
                             "seconds": seconds, "scratchpad_bytes": float(np.ravel(parts["capacity"])[0])}
            total = sum(seconds.values())
            pass_rows.append({"layer": name, "pass": pass_, "split": label(split), "tile": _tile(tiles),
                              **{f"{c} s": seconds.get(c, 0.0) for c in CATEGORIES}, "total s": total,
                              "util": seconds["mac"] / total if total > 0 else 0.0,
                              "scratchpad MB": passes[pass_]["scratchpad_bytes"] / 2**20})
        for key, column, value in (("reuse", v.reuse, r.reuse), ("weights held", v.wreuse, r.wreuse),
                                   ("preload", v.preload, r.preload)):
            if column is not None:
                decisions[key] = "Y" if value[0] else "N"
        if v.dysm is not None:
            decisions["dysm"] = int(r.dysm[0])
        seconds = {c: sum(p["seconds"].get(c, 0.0) for p in passes.values()) for c in CATEGORIES}
        total = sum(seconds.values())
        decisions["util"] = round(seconds["mac"] / total, 3) if total > 0 else 0.0
        table.append(LayerCost(name=name, compute=sum(seconds[c] for c in COMPUTE),
                               communication=total - sum(seconds[c] for c in COMPUTE), decisions=decisions))
        plan_layers[name] = {"parallelism": ptype, "decisions": decisions, "passes": passes, "seconds": seconds}
    groups = [{"group": run.name, "layers": ", ".join(run.layers), "rows per stage": " ".join(map(str, run.rows)),
               "on": "Y" if tp[run.name] else "N"} for run in model.runs]
    plan = {
        "layers": plan_layers,
        "pipe_groups": [{"layers": list(run.layers), "rows": list(run.rows), "on": tp[run.name]} for run in model.runs],
        "toggles": dict(model.toggles),
        "system": {"torus": [model.torus.m, model.torus.n], "x_bandwidth_Bps": model.torus.x_bandwidth,
                   "y_bandwidth_Bps": model.torus.y_bandwidth, "chips": model.torus.chips,
                   "peak_flops": model.peak_flops, "cores_per_chip": model.hw.cores,
                   "scratchpad_bytes": model.hw.spad_bytes},
    }
    tables = {"per pass (Fig. 13)": pass_rows, **({"pipe groups": groups} if groups else {})}
    reason = "" if feasible else _infeasible_reason(model, rows, layers, set(member))
    return CostReport(metrics=values, feasible=feasible, reason=reason, layers=tuple(table), plan=plan, tables=tables)
