"""The full report of one FPDeep mapping: per-FPGA rows, per-link rows, where each layer sits.

Per-FPGA rows are also returned as the report's ``layers`` rows (named "FPGA 1" ...), which is
what ``optmap run`` prints today; they move to ``CostReport.tables["devices"]`` when the core
offers row tables.
"""

from __future__ import annotations

import numpy as np

from optmap.cost import CostReport, LayerCost

from .layers import SPLITS


def _portions(model, part, j: int) -> str:
    """``name II 0:17`` for every layer portion on device j (unit ranges of the split dimension)."""
    t = model.table
    offset = np.concatenate([[0.0], np.cumsum(part.units[0])])
    lo, hi = part.bounds[0, j], part.bounds[0, j + 1]
    pieces = []
    for l in np.flatnonzero(part.chan[0, j]):
        a, b = max(lo, offset[l]) - offset[l], min(hi, offset[l + 1]) - offset[l]
        whole = a == 0 and b == part.units[0, l]
        pieces.append(f"{t.names[l]} {'all' if whole else f'{SPLITS[part.splits[0, l]]} {a:.0f}:{b:.0f}'}")
    return ", ".join(pieces) or "(idle)"


def device_rows(model, out: dict) -> list[dict]:
    d = out["_detail"]
    part, store, loads, work = d["part"], d["store"], d["loads"][0], d["work"][0]
    throughput, total_work = float(out["throughput"][0]), work.sum()
    routes, n = model.routes, model.system.count
    gbps = loads * model.value_bytes * 8 * throughput / 1e9
    rows = []
    for pos in range(n):
        device = model.order[pos]
        touching = [k for k, (u, v) in enumerate(routes.edges) if device in (u, v)]
        rows.append({
            "fpga": pos + 1,
            "layers": _portions(model, part, pos),
            "DSPs": int(d["dsps"][0, pos].sum()),
            "stage us": float(max(d["stage"][0, pos], d["dram_time"][0, pos]) * 1e6),
            "GOPS": float(model.table.ops_per_image * work[pos] / total_work * throughput / 1e9) if total_work else 0.0,
            "on-chip MB": float(store.need[0, pos] / 1e6),
            "BRAM %": float(100 * store.need[0, pos] / model.bram[pos]),
            "parked MB": float(store.parked[0, pos] / 1e6),
            "hosted MB": float(store.hosted[0, pos] / 1e6),
            "DRAM MB/img": float(store.dram[0, pos] / 1e6),
            "link Gb/s": float(gbps[touching].max(initial=0.0)),
        })
    return rows


def link_rows(model, out: dict) -> list[dict]:
    """Every directed link with traffic: demand at the achieved throughput against its bandwidth."""
    loads, throughput = out["_detail"]["loads"][0], float(out["throughput"][0])
    where = {device: pos + 1 for pos, device in enumerate(model.order)}
    rows = []
    for k, (u, v) in enumerate(model.routes.edges):
        if loads[k] <= 0:
            continue
        demand = loads[k] * model.value_bytes * 8 * throughput / 1e9
        capacity = model.routes.capacity[k] * 8 / 1e9
        name = lambda node: f"FPGA {where[node]}" if node in where else str(node)  # noqa: E731
        rows.append({"link": f"{name(u)} -> {name(v)}", "values/img": float(loads[k]), "Gb/s": float(demand),
                     "capacity Gb/s": float(capacity), "use %": float(100 * demand / capacity)})
    return rows


def build_report(model, out: dict) -> CostReport:
    metrics = {name: float(out[name][0]) for name in model.metrics}
    feasible = bool(out["feasible"][0])
    reason = ""
    if not np.isfinite(metrics["compute_period"]):
        reason = "a device hosts more layer portions than its DSPs can give one K×K tile each"
    elif not feasible:
        reason = "a device needs more on-chip memory than its BRAM and memory_fallback = \"none\""
    devices, links = device_rows(model, out), link_rows(model, out)
    bound = "links" if metrics["link_demand"] > 1 else "compute"
    plan = {
        "bound": bound,
        "reduction": model.reduction,
        "devices": devices,
        "links": links,
        "splits": {name: SPLITS[s] for name, s in zip(model.table.names, out["_detail"]["part"].splits[0])},
    }
    layers = tuple(
        LayerCost(
            name=f"FPGA {row['fpga']}",
            compute=row["stage us"] * 1e-6,
            communication=0.0,
            memory_bytes=row["on-chip MB"] * 1e6,
            decisions={key: (round(v, 1) if isinstance(v, float) else v) for key, v in row.items()
                       if key not in ("fpga", "stage us")},
        )
        for row in devices
    )
    return CostReport(metrics=metrics, feasible=feasible, reason=reason, layers=layers, plan=plan)
