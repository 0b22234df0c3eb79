"""The natural picture of a sweep (matplotlib, imported only here).

- A numeric x axis: one line per series (mean over seeds, their range as error bars); a log
  scale when the values span a factor of 8 or more (base 2 when they are powers of two).
- Named x values (variants, problems, engines): grouped bars, one bar per series.
- Reference values (the papers') as black open markers on the points they belong to.
- Several y metrics: one panel each.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from optmap.plots import png, pyplot
from optmap.sweep.summary import groups, references_for, series_label

UNITS = (("time", "s"), ("seconds", "s"), ("bytes", "B"), ("flops", "FLOP"))
MARKERS = ("o", "s", "^", "v", "P", "X")
LINES = ("-", "--", "-.", ":")
DOTTED = (0, (1, 2))


def unit_label(name: str, rows: list[dict[str, Any]] = ()) -> str:
    """``time (s)``: the unit the cost model gave, else one read off the name's ending."""
    given = next((row["units"][name] for row in rows if name in (row.get("units") or {})), None)
    if given:
        return f"{name} ({given})"
    for suffix, unit in UNITS:
        if name.lower().endswith(suffix):
            return f"{name} ({unit})"
    return name


def styles(rows: list[dict[str, Any]], series: list[str]) -> dict[str, tuple[int, int]]:
    """{series label: (colour index, line style index)}: with two or more series coordinates,
    the colour follows the first and the line style the rest (tf8 solid / dashed, tf16 ...)."""
    from optmap.sweep.store import coordinates

    out: dict[str, tuple[int, int]] = {}
    colours: dict[Any, int] = {}
    kinds: dict[Any, int] = {}
    for row in rows:
        label = series_label(row, series)
        if label in out:
            continue
        coords = coordinates(row)
        if len(series) < 2:
            out[label] = (len(out), 0)
            continue
        # a row of another sweep in the same file lacks this sweep's keys: None
        first, rest = repr(coords.get(series[0])), repr([coords.get(key) for key in series[1:]])
        out[label] = (colours.setdefault(first, len(colours)), kinds.setdefault(rest, len(kinds)))
    return out


def plot_sweep(rows: list[dict[str, Any]], x: str, series: list[str], ys: list[str], numeric: bool,
               references=(), title: str = "", options: dict[str, Any] | None = None) -> bytes:
    """The sweep's ``ys`` over ``x`` (one panel per y), as a PNG."""
    plt = pyplot()
    options = options or {}
    panels = len(ys)
    figure, axes_list = plt.subplots(1, panels, figsize=(7.2 * panels if panels > 1 else 8.0, 4.8), squeeze=False)
    look = styles([row for row in rows if not row.get("error")], series)
    legend = False
    for axes, y in zip(axes_list[0], ys):
        data = groups(rows, x, series, y)
        refs = references_for(rows, references, x, series, y)
        if numeric:
            _lines(axes, data, refs, look, options)
        else:
            _bars(axes, data, refs)
        axes.set_xlabel(options.get("xlabel", x))
        axes.set_ylabel(options.get("ylabel", unit_label(y, rows)))
        if options.get("yscale"):
            axes.set_yscale(options["yscale"])
        axes.grid(True, axis="y", alpha=0.3)
        axes.margins(y=0.12 if numeric else 0.22)  # room above the bars for their upright value labels
        legend = legend or len(data) > 1 or bool(refs)
    figure.suptitle(options.get("title", title), fontsize=11)
    below = _legend_below(figure, axes_list[0]) if legend else 0.0
    figure.tight_layout(rect=(0, below, 1, 1))
    return png(figure, dpi=130)


def _legend_below(figure, axes_row) -> float:
    """One legend for every panel (they share their series), below them, never over the data;
    the fraction of the figure's height it takes."""
    entries: dict[str, Any] = {}
    for axes in axes_row:
        for handle, label in zip(*axes.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    columns = min(len(entries), 4)
    rows = math.ceil(len(entries) / max(columns, 1))
    figure.legend(list(entries.values()), list(entries), loc="lower center", ncol=max(columns, 1),
                  fontsize=8, frameon=False)
    return min(0.03 + 0.045 * rows, 0.4)


def _lines(axes, data, refs, look, options) -> None:
    xs_all = sorted({value for points in data.values() for value in points})
    for label, points in data.items():
        colour_index, kind = look.get(label, (0, 0))
        colour = f"C{colour_index % 10}"
        xs = sorted(points)
        values = [np.asarray(points[v], float) for v in xs]
        mean = np.array([v.mean() for v in values])
        axes.plot(xs, mean, marker=MARKERS[kind % len(MARKERS)], linestyle=LINES[kind % len(LINES)], color=colour,
                  label=label)
        if any(len(v) > 1 for v in values):
            low, high = mean - [v.min() for v in values], [v.max() for v in values] - mean
            axes.errorbar(xs, mean, yerr=[low, high], fmt="none", ecolor=colour, capsize=3, alpha=0.6)
        if len(data) == 1 and len(xs) <= 16:
            for xv, yv in zip(xs, mean):
                axes.annotate(f"{yv:.4g}", (xv, yv), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    levels = markers = False
    for label, points in refs.items():  # in the colour of their series
        colour = f"C{look.get(label, (0, 0))[0] % 10}"
        if len(points) == len(xs_all) and len(set(points.values())) == 1:  # one value for every x: a level
            axes.axhline(next(iter(points.values())), color=colour, linestyle=DOTTED, linewidth=1.6)
            levels = True
        else:
            axes.plot(list(points), list(points.values()), marker="D", markersize=7, markerfacecolor="none",
                      markeredgecolor=colour, linestyle="none")
            markers = True
    if levels:
        axes.plot([], [], color="grey", linestyle=DOTTED, linewidth=1.6, label="reference (paper)")
    if markers:
        axes.plot([], [], marker="D", markerfacecolor="none", markeredgecolor="grey", linestyle="none",
                  label="reference (paper)")
    scale = options.get("xscale")
    positive = all(v > 0 for v in xs_all)
    if scale is None and positive and len(xs_all) > 2 and max(xs_all) / min(xs_all) >= 8:
        scale = "log"
    if scale == "log":
        powers = all(float(v).is_integer() and math.log2(v).is_integer() for v in xs_all)
        axes.set_xscale("log", base=2 if powers else 10)
    elif scale:
        axes.set_xscale(scale)
    if len(xs_all) <= 16:
        axes.set_xticks(xs_all)
        axes.set_xticklabels([f"{v:g}" for v in xs_all])
        axes.minorticks_off()


def _bars(axes, data, refs) -> None:
    names = list(dict.fromkeys(value for points in data.values() for value in points))
    width = 0.8 / max(len(data), 1)
    position = {}
    for index, (label, points) in enumerate(data.items()):
        offsets = np.arange(len(names)) + (index - (len(data) - 1) / 2) * width
        position[label] = dict(zip(names, offsets))
        means = [float(np.mean(points[n])) if n in points else math.nan for n in names]
        axes.bar(offsets, means, width * 0.92, color=f"C{index % 10}", label=label)
        if len(names) * len(data) <= 24:
            ours = refs.get(label, {})
            for x, name, mean in zip(offsets, names, means):
                if not math.isfinite(mean):
                    continue
                reference = ours.get(name)
                # upright (neighbours' labels never overlap), above the bar and above its reference diamond
                top = mean if reference is None else max(mean, reference)
                axes.annotate(f"{mean:.3g}", (x, top), xytext=(0, 2 if reference is None else 6),
                              textcoords="offset points", ha="center", va="bottom", rotation=90, fontsize=7)
    axes.set_xticks(np.arange(len(names)))
    axes.set_xticklabels([str(n) for n in names], rotation=0 if len(names) <= 6 else 30)
    _references(axes, refs, list(data), lambda label, value: position[label][value])


def _references(axes, refs, labels, where) -> None:
    first = True
    for label in labels:
        for value, reference in refs.get(label, {}).items():
            axes.plot([where(label, value)], [reference], marker="D", markersize=7, markerfacecolor="none",
                      markeredgecolor="black", linestyle="none", label="reference (paper)" if first else None)
            first = False
