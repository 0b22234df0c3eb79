"""The full report of one FPDeep mapping: a row per layer, the ``devices`` table, the links.

``devices`` (a table ``optmap run`` prints): per FPGA in pipeline order its layer portions
(``name II 0:17`` = input channels 0 to 16 of that layer; ``all`` = the whole layer), DSPs of its
rate-matched CE arrays, stage time, useful GOPS, on-chip memory against BRAM, weights it parks
and hosts, DRAM traffic per image, and its busiest link (demand and use). ``plan["links"]`` (in
the JSON result): every directed link with traffic, against its bandwidth.
"""

from __future__ import annotations

import numpy as np

from optmap import schedule
from optmap.cost import CostReport, LayerCost

from .layers import SPLITS


def _portions(model, part, pos: int) -> str:
    t = model.table
    offset = schedule.prefix_sums(part.units[0])
    lo, hi = part.bounds[0, pos], part.bounds[0, pos + 1]
    pieces = []
    for l in np.flatnonzero(part.chan[0, pos]):
        a, b = max(lo, offset[l]) - offset[l], min(hi, offset[l + 1]) - offset[l]
        whole = a == 0 and b == part.units[0, l]
        pieces.append(f"{t.names[l]} {'all' if whole else f'{SPLITS[part.splits[0, l]]} {a:.0f}:{b:.0f}'}")
    return ", ".join(pieces) or "(idle)"


def _link_gbps(model, out: dict) -> np.ndarray:
    """Per-direction demand of every directed link at the achieved throughput, Gb/s."""
    return out["_detail"]["loads"][0] * model.value_bytes * 8 * float(out["throughput"][0]) / 1e9


def device_rows(model, out: dict) -> list[dict]:
    d = out["_detail"]
    part, store, work = d["part"], d["store"], d["work"][0]
    throughput, total_work, gbps = float(out["throughput"][0]), work.sum(), _link_gbps(model, out)
    use = 100 * gbps / (model.routes.capacity * 8 / 1e9)
    rows = []
    for pos, device in enumerate(model.order):
        touching = [k for k, edge in enumerate(model.routes.edges) if device in edge]
        rows.append({
            "fpga": pos + 1,
            "layers": _portions(model, part, pos),
            "DSPs": int(d["dsps"][0, pos].sum()),
            "stage us": float(max(d["stage"][0, pos], d["dram_time"][0, pos]) * 1e6),
            "GOPS": float(model.table.ops_per_image * work[pos] / total_work * throughput / 1e9),
            "on-chip MB": float(store.need[0, pos] / 1e6),
            "BRAM %": float(100 * store.need[0, pos] / model.bram[pos]),
            "parked MB": float(store.parked[0, pos] / 1e6),
            "hosted MB": float(store.hosted[0, pos] / 1e6),
            "DRAM MB/img": float(store.dram[0, pos] / 1e6),
            "link Gb/s": float(gbps[touching].max(initial=0.0)),
            "link %": float(use[touching].max(initial=0.0)),
        })
    return rows


def link_rows(model, out: dict) -> list[dict]:
    where = {device: pos + 1 for pos, device in enumerate(model.order)}
    name = {node: f"FPGA {where[node]}" if node in where else str(node) for edge in model.routes.edges for node in edge}
    loads, gbps = out["_detail"]["loads"][0], _link_gbps(model, out)
    rows = []
    for k, (u, v) in enumerate(model.routes.edges):
        if loads[k] > 0:
            capacity = model.routes.capacity[k] * 8 / 1e9
            rows.append({"link": f"{name[u]} -> {name[v]}", "values/img": float(loads[k]), "Gb/s": float(gbps[k]),
                         "capacity Gb/s": float(capacity), "use %": float(100 * gbps[k] / capacity)})
    return rows


def layer_rows(model, out: dict) -> tuple[LayerCost, ...]:
    """Per layer: its split, its FPGAs, its DSPs; compute = its slowest portion's time per image,
    communication = the busiest link inside its span."""
    t, d = model.table, out["_detail"]
    part, macs, dsps = d["part"], d["macs"][0], d["dsps"][0]
    with np.errstate(divide="ignore", invalid="ignore"):
        portion_time = np.where(macs > 0, macs * t.phases / (dsps * model.rate[:, None]), 0.0)
    hop_time = (d["loads"][0] * model.value_bytes / model.routes.capacity
                * (model.routes.hop_forward + model.routes.hop_backward)).max(1, initial=0.0)
    rows = []
    for l, name in enumerate(t.names):
        held = np.flatnonzero(part.chan[0, :, l])
        first, last = int(held[0]), int(held[-1])
        rows.append(LayerCost(
            name=name,
            compute=float(portion_time[:, l].max()),
            communication=float(hop_time[first:last].max(initial=0.0)),
            decisions={"split": SPLITS[part.splits[0, l]], "FPGAs": f"{first + 1}" if first == last else f"{first + 1}-{last + 1}",
                       "DSPs": int(dsps[:, l].sum())},
        ))
    return tuple(rows)


def build_report(model, out: dict) -> CostReport:
    metrics = {name: float(out[name][0]) for name in model.metrics}
    feasible = bool(out["feasible"][0])
    reason = ""
    if not np.isfinite(metrics["compute_period"]):
        reason = "a device hosts more layer portions than its DSPs can give one K×K tile each"
    elif not feasible:
        reason = "a device needs more on-chip memory than its BRAM and memory_fallback = \"none\""
    plan = {  # the splits and portions are in the layer rows and the devices table
        "bound": "links" if metrics["link_demand"] >= 1 - 1e-9 else "compute",
        "reduction": model.reduction,
        "boundaries": [int(b) for b in out["_detail"]["part"].bounds[0]],
        "links": link_rows(model, out),
    }
    devices = device_rows(model, out)
    plan["micro_batches"] = model.workload.batch  # images of a mini-batch stream through the chain
    # the stages (optmap.cost.CostReport's convention): each FPGA, its time per image (all phases)
    stages = [{"stage": f"FPGA {row['fpga']}", "seconds": row["stage us"] * 1e-6} for row in devices]
    tables = {"devices": devices, "stages": stages}
    return CostReport(metrics=metrics, feasible=feasible, reason=reason, layers=layer_rows(model, out),
                      plan=plan, tables=tables)
