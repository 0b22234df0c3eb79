"""Figures of runs and comparisons (matplotlib, imported only when drawing).

- :func:`plot_run`: a run's convergence (best-so-far over evaluations) beside its per-layer
  compute and communication seconds;
- :func:`layer_bars`: per-layer bars for one or several runs (one colour per run; compute
  solid, communication hatched on top), shared by ``optmap run --plot``, ``optmap compare
  --plot`` and ``optmap show result.json --plot``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from optmap.errors import OptmapError

LABELLED_LAYERS = 60  # more layers than this: tick labels would overlap, so layers are numbered


def pyplot():
    """matplotlib's pyplot on a file backend, or a one-line error naming the extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptmapError("--plot needs matplotlib: pip install 'optmap[plot]'") from None
    return plt


def png(figure, dpi: int = 120) -> bytes:
    """A figure as PNG bytes (closed afterwards); callers save them with :func:`optmap.output.save`."""
    import io

    plt = pyplot()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=dpi)
    plt.close(figure)
    return image.getvalue()


def has_layers(report: Any) -> bool:
    return report is not None and bool(getattr(report, "layers", ()))


def layer_bars(axes, runs: Sequence[tuple[str, Any]]) -> None:
    """Per-layer compute (solid) and communication (hatched, stacked on it) seconds of each
    ``(label, report)``; the layers are those of the first report."""
    runs = [(label, report) for label, report in runs if has_layers(report)]
    if not runs:
        return
    names = [row.name for row in runs[0][1].layers]
    width = 0.8 / len(runs)
    positions = np.arange(len(names))
    for index, (label, report) in enumerate(runs):
        by_name = {row.name: row for row in report.layers}
        compute = np.array([by_name[n].compute if n in by_name else 0.0 for n in names])
        communication = np.array([by_name[n].communication if n in by_name else 0.0 for n in names])
        offset = positions + (index - (len(runs) - 1) / 2) * width
        colour = f"C{index % 10}"
        axes.bar(offset, compute, width * 0.95, color=colour, label=f"{label}: compute")
        axes.bar(offset, communication, width * 0.95, bottom=compute, color=colour, alpha=0.45, hatch="//",
                 edgecolor="white", label=f"{label}: communication")
    if len(names) <= LABELLED_LAYERS:
        axes.set_xticks(positions)
        axes.set_xticklabels(names, rotation=90, fontsize=7 if len(names) > 20 else 8)
    else:
        axes.set_xlabel(f"layer (1 to {len(names)})")
    axes.set_ylabel("time per layer (s)")
    axes.set_title("per-layer compute and communication", fontsize=10)
    axes.legend(fontsize=7)
    axes.grid(True, axis="y", alpha=0.3)


def convergence(axes, result) -> None:
    """Best-so-far of the first objective over evaluations (a step line)."""
    history = result.history
    objective = result.objectives[0] if result.objectives else "objective"
    if history:
        evaluations = [h.evaluations for h in history] + [max(result.evaluations, history[-1].evaluations)]
        best = [h.best for h in history] + [history[-1].best]
        axes.step(evaluations, best, where="post", color="C0", marker="o", markersize=3)
        if evaluations[-1] >= 100 * max(1, evaluations[0]):  # log only over two decades or more: its
            axes.set_xscale("log")  # labels then fall on decades; within one, minor labels overlap
        if min(best) > 0 and max(best) / min(best) >= 10:
            axes.set_yscale("log")
    axes.set_xlabel("evaluations")
    unit = (getattr(result, "units", None) or {}).get(objective) or _unit(objective)
    axes.set_ylabel(f"best {objective}" + (f" ({unit})" if unit else ""))
    axes.set_title(f"convergence: {result.engine}, seed {result.seed}", fontsize=10)
    axes.grid(True, alpha=0.3)


def _unit(metric: str) -> str:
    from optmap.cost import unit

    return unit(None, metric)


def schedule(result):
    """(stages, operations, title) of a result whose report exposes stages, else None; a plan
    whose schedule cannot be drawn is said on standard error."""
    import sys

    from optmap import timeline

    stages = timeline.stages_of(result.report)
    if not stages:
        return None
    m, kind, v = timeline.schedule_of(result.report.plan)
    try:
        ops = timeline.operations(stages, m, kind, v)
    except OptmapError as exc:
        print(f"note: no pipeline timeline: {exc}", file=sys.stderr)
        return None
    return stages, ops, timeline.timeline_title(stages, m, kind, v, ops)


def plot_run(result, title: str = "") -> bytes:
    """A run's convergence and, when its report has layers, its per-layer bars; below them the
    pipeline schedule (a Gantt chart) when the report exposes stages; as a PNG."""
    from optmap.timeline import draw

    plt = pyplot()
    layers = has_layers(result.report)
    count = len(result.report.layers) if layers else 0
    gantt = schedule(result)
    width = 6 + min(max(count, 8), 60) * 0.22 if layers else 7
    below = min(1.6 + 0.3 * len(gantt[0]), 8) if gantt else 0  # inches of the timeline: 0.3 per stage
    figure = plt.figure(figsize=(max(width, 9) if gantt else width, 4.8 + below))
    grid = figure.add_gridspec(2 if gantt else 1, 2 if layers else 1, width_ratios=[1, 2] if layers else None,
                               height_ratios=[4.8, below] if gantt else None)
    convergence(figure.add_subplot(grid[0, 0]), result)
    if layers:
        layer_bars(figure.add_subplot(grid[0, 1]), [(result.engine, result.report)])
    if gantt:
        draw(figure.add_subplot(grid[1, :]), *gantt)
    values = ", ".join(f"{name} {value:.4g}" + (f" {result.units[name]}" if result.units.get(name) else "")
                       for name, value in result.values.items())
    figure.suptitle(f"{title}: {values}" if title else values, fontsize=11)
    figure.tight_layout()
    return png(figure)


def plot_timeline(result, title: str = "") -> bytes:
    """The pipeline schedule of a result that exposes stages, alone, as a PNG."""
    from optmap.timeline import draw

    gantt = schedule(result)
    if gantt is None:
        raise OptmapError("this result's cost model reports no pipeline stages (a table 'stages'; see "
                          "optmap.cost.CostReport), so it has no timeline to draw")
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(9, min(1.8 + 0.3 * len(gantt[0]), 10)))
    draw(axes, *gantt)
    if title:
        figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    return png(figure)
