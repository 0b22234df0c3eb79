"""The schedule of a pipelined plan: its stages, their timed operations, and a Gantt chart.

A cost report exposes its stages by the convention of :class:`optmap.cost.CostReport`: a table
``stages`` (``stage``, ``seconds``, optionally ``forward_s`` / ``backward_s``) and, in the plan,
``micro_batches``, ``schedule`` and ``interleaving``. :func:`operations` lays the micro-batches
out on the stages as the schedule runs them, each operation as soon as its input is ready and its
stage is free (a list schedule):

- ``gpipe`` (Huang et al. 2019, §2.3): every forward, then every backward;
- ``1f1b`` (Narayanan et al. 2021, §2.2.1): stage ``s`` of ``p`` runs ``p - s - 1`` warm-up
  forwards, then alternates one forward and one backward;
- ``1f1b`` with ``v > 1`` interleaved chunks (Narayanan §2.2.2, Megatron-LM's order): each
  device holds ``v`` chunks of ``1/v`` of its stage's time; warm-up ``2 (p - s - 1) + (v - 1) p``
  chunk-forwards; micro-batches go in groups of ``p`` (``m`` must be a multiple of ``p``).

With equal stages the last operation ends at ``(m + p - 1) t`` (``v = 1``), resp.
``m t + (p - 1) t / v``: :func:`optmap.schedule.pipeline_time`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from optmap.errors import OptmapError

STAGES_TABLE = "stages"


@dataclass(frozen=True)
class Stage:
    label: str
    forward: float  # seconds of one micro-batch's forward pass through the stage
    backward: float  # seconds of its backward pass (0 for inference)


@dataclass(frozen=True)
class Operation:
    stage: int  # 0-based, pipeline order
    kind: str  # "F" (forward) or "B" (backward)
    micro_batch: int  # 0-based
    chunk: int  # 0-based model chunk of the stage's device (interleaving)
    start: float
    end: float


def stages_of(report: Any) -> list[Stage]:
    """The stages a report exposes (empty when it has none, or its ``stages`` table has no
    ``seconds`` column): ``forward_s`` and ``backward_s`` where given, else all of ``seconds``
    as the forward."""
    rows = (getattr(report, "tables", None) or {}).get(STAGES_TABLE) or []
    if not all(isinstance(row, dict) and "seconds" in row for row in rows):
        return []
    stages = []
    for index, row in enumerate(rows):
        total = float(row.get("seconds") or 0.0)
        forward = row.get("forward_s")
        forward = total if forward is None else float(forward)
        backward = row.get("backward_s")
        backward = max(total - forward, 0.0) if backward is None else float(backward)
        stages.append(Stage(str(row.get("stage", index + 1)), forward, backward))
    return stages


def schedule_of(plan: dict[str, Any]) -> tuple[int, str, int]:
    """(micro-batches, schedule, interleaving) from a plan: defaults 1, ``1f1b``, 1."""
    m = plan.get("micro_batches") or 1
    v = plan.get("interleaving") or 1
    return int(m), str(plan.get("schedule") or "1f1b"), int(v)


def _order(p: int, s: int, m: int, schedule: str, v: int) -> list[tuple[str, int, int]]:
    """The (kind, micro-batch, chunk) operations of stage ``s`` in the order it runs them."""
    def forward(k: int) -> tuple[str, int, int]:  # Megatron-LM's interleaved order (v = 1: i = k)
        return "F", (k // (p * v)) * p + k % p, (k // p) % v

    def backward(k: int) -> tuple[str, int, int]:
        return "B", (k // (p * v)) * p + k % p, v - 1 - (k // p) % v

    total = m * v
    if schedule == "gpipe":
        return [forward(k) for k in range(total)] + [backward(k) for k in range(total)]
    warm = min(total, (p - s - 1) * 2 + (v - 1) * p if v > 1 else p - s - 1)
    order = [forward(k) for k in range(warm)]
    for k in range(total - warm):
        order += [forward(warm + k), backward(k)]
    return order + [backward(k) for k in range(total - warm, total)]


def operations(stages: list[Stage], micro_batches: int, schedule: str = "1f1b", interleaving: int = 1) -> list[Operation]:
    """Every stage's operations with their start and end seconds (see the module's docstring)."""
    p, m, v = len(stages), micro_batches, interleaving
    if schedule not in ("1f1b", "gpipe"):
        raise OptmapError(f"schedule '{schedule}': the timeline draws 1f1b or gpipe")
    if v > 1 and (schedule != "1f1b" or m % p):
        raise OptmapError(f"interleaving {v} needs the 1f1b schedule and micro-batches ({m}) a multiple of the "
                          f"stages ({p}), as Megatron-LM requires")
    queues = [_order(p, s, m, schedule, v) for s in range(p)]
    done: dict[tuple[str, int, int, int], float] = {}  # (kind, stage, micro-batch, chunk) -> end
    free, heads, out = [0.0] * p, [0] * p, []
    backward = any(stage.backward > 0 for stage in stages)
    while any(heads[s] < len(queues[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            while heads[s] < len(queues[s]):
                kind, i, c = queues[s][heads[s]]
                if kind == "B" and not backward:
                    heads[s] += 1
                    continue
                ready = _ready(kind, s, i, c, p, v, done)
                if ready is None:
                    break
                start = max(ready, free[s])
                end = start + (stages[s].forward if kind == "F" else stages[s].backward) / v
                done[(kind, s, i, c)] = free[s] = end
                out.append(Operation(s, kind, i, c, start, end))
                heads[s] += 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never wait on each other in a cycle
            raise RuntimeError("pipeline schedule deadlocked")
    return out


def _ready(kind: str, s: int, i: int, c: int, p: int, v: int, done: dict) -> float | None:
    """When the input of an operation is ready (None: not yet computed): the previous stage's
    forward (the last device's, previous chunk, for a device's first stage of a chunk); the next
    stage's backward, or the micro-batch's own last forward for the first backward."""
    if kind == "F":
        need = ("F", s - 1, i, c) if s > 0 else ("F", p - 1, i, c - 1) if c > 0 else None
    elif s < p - 1:
        need = ("B", s + 1, i, c)
    else:
        need = ("B", 0, i, c + 1) if c < v - 1 else ("F", p - 1, i, v - 1)
    if need is None:
        return 0.0
    return done.get(need)


def _scale(seconds: float) -> tuple[float, str]:
    """A factor and unit for a time axis that ends at ``seconds``."""
    for factor, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs"), (1e9, "ns")):
        if seconds * factor >= 1.0:
            return factor, unit
    return 1e9, "ns"


def draw(axes, stages: list[Stage], ops: list[Operation], title: str = "") -> None:
    """A Gantt chart of ``ops``: one row per stage (first on top), forwards in blue, backwards
    in orange (chunks in lighter shades), each box numbered by its micro-batch where it fits."""
    end = max((op.end for op in ops), default=0.0)
    factor, unit = _scale(end)
    width_per_box = min((op.end - op.start for op in ops), default=0.0) * factor
    chunks = max((op.chunk for op in ops), default=0)
    boxes: dict[tuple[int, str, int], list[tuple[float, float]]] = {}
    for op in ops:  # one broken_barh per stage, pass and chunk: fast for thousands of boxes
        boxes.setdefault((op.stage, op.kind, op.chunk), []).append((op.start * factor, (op.end - op.start) * factor))
    for (stage, kind, chunk), spans in boxes.items():
        axes.broken_barh(spans, (stage - 0.4, 0.8), facecolors="C0" if kind == "F" else "C1",
                         alpha=1.0 - 0.5 * chunk / max(1, chunks), edgecolor="white",
                         linewidth=0.5 if width_per_box > 0.004 * end * factor else 0.0)  # thin boxes: no edges
    for op in ops:
        if len(ops) <= 400 and width_per_box > 0.02 * end * factor:
            axes.text((op.start + op.end) / 2 * factor, op.stage, str(op.micro_batch + 1), ha="center",
                      va="center", fontsize=6, color="white")
    axes.set_yticks(range(len(stages)))
    labels = [stage.label for stage in stages]
    step = max(1, math.ceil(len(stages) / 32))  # at most 32 labels: more would overlap
    axes.set_yticklabels([label if k % step == 0 else "" for k, label in enumerate(labels)],
                         fontsize=7 if len(stages) > 12 else 8)
    axes.invert_yaxis()
    axes.set_xlabel(f"time ({unit})")
    axes.set_ylabel("stage")
    axes.set_xlim(0, end * factor * 1.01 if end else 1)
    passes = any(op.kind == "B" for op in ops)
    handles = [axes.bar(0, 0, color="C0", label="forward" if passes else "one micro-batch's work")]
    if passes:
        handles.append(axes.bar(0, 0, color="C1", label="backward"))
    axes.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside, not on, the bars
    axes.set_title(title, fontsize=10)
    axes.grid(True, axis="x", alpha=0.3)


def timeline_title(stages: list[Stage], m: int, schedule: str, v: int, ops: list[Operation]) -> str:
    end = max((op.end for op in ops), default=0.0)
    factor, unit = _scale(end)
    shape = f"{len(stages)} stages, {m} micro-batch{'es' if m != 1 else ''}"
    how = schedule + (f", {v} chunks per device" if v > 1 else "") if any(op.kind == "B" for op in ops) else \
        "one box per micro-batch"
    return f"pipeline schedule: {shape}, {how}; {end * factor:.4g} {unit}"
