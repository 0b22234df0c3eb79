"""One self-contained HTML page of a saved result (``optmap report RESULT.json -o report.html``).

The page holds, in order: what was solved and how (problem, engine, provenance), the result's
values and scalar plan entries, its figures (convergence, per-layer time, per-layer memory where
the model reports it, the pipeline schedule where it exposes stages), the Pareto front, every
report table (per stage, per device, time and memory breakdowns), the per-layer mapping (every
layer), and the plan and problem as JSON. Figures are PNG images embedded as base64 ``data:`` URIs
and the style sheet is inline, so the one file opens anywhere, offline. matplotlib is needed.
"""

from __future__ import annotations

import base64
import html
import json
import math
from typing import Any

from optmap.tabular import DataTable, compact

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; vertical-align: top; }
th { background: #f3f3f3; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; display: block; margin: 1em 0; } pre { background: #f7f7f7; padding: 1em; overflow-x: auto; }
.meta { color: #555; } code { background: #f3f3f3; padding: 0 0.2em; }
"""


def table_html(table: DataTable | None) -> str:
    """A table as HTML: its title as the caption, numbers as on the terminal, right-aligned."""
    if table is None:
        return ""
    out = ["<table>"]
    if table.title:
        out.append(f"<caption>{html.escape(str(table.title))}</caption>")
    if table.show_header:
        out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in table.headers) + "</tr>")
    for row in table.values:
        cells = [f'<td class="{"number" if j == "right" else "text"}">{html.escape(compact(v))}</td>'
                 for v, j in zip(row, table.justify)]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    if table.caption:
        out.append(f'<p class="meta">{html.escape(str(table.caption))}</p>')
    return "\n".join(out)


def image_html(png: bytes, alt: str) -> str:
    return f'<img src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}" alt="{html.escape(alt)}">'


def _figure(draw, size: tuple[float, float]) -> bytes:
    from optmap.plots import png, pyplot

    figure, axes = pyplot().subplots(figsize=size)
    draw(axes)
    figure.tight_layout()
    return png(figure)


def _memory_bars(axes, report) -> None:
    """Per-layer memory in MB (10^6 bytes), where the model reports it."""
    names = [row.name for row in report.layers]
    values = [row.memory_bytes / 1e6 if math.isfinite(row.memory_bytes) else 0.0 for row in report.layers]
    axes.bar(range(len(names)), values, color="C2")
    if len(names) <= 60:
        axes.set_xticks(range(len(names)))
        axes.set_xticklabels(names, rotation=90, fontsize=7 if len(names) > 20 else 8)
    else:
        axes.set_xlabel(f"layer (1 to {len(names)})")
    axes.set_ylabel("memory per layer (MB)")
    axes.set_title("per-layer memory", fontsize=10)
    axes.grid(True, axis="y", alpha=0.3)


def figures(result) -> list[tuple[str, bytes]]:
    """(heading, PNG) of each figure the result can show."""
    from optmap.plots import convergence, has_layers, layer_bars, plot_timeline, schedule

    out = [("Convergence", _figure(lambda axes: convergence(axes, result), (7, 4)))]
    report = result.report
    if has_layers(report):
        width = 6 + min(max(len(report.layers), 8), 60) * 0.18
        out.append(("Time per layer", _figure(lambda axes: layer_bars(axes, [(result.engine, report)]), (width, 4.8))))
        if any(math.isfinite(row.memory_bytes) for row in report.layers):
            out.append(("Memory per layer", _figure(lambda axes: _memory_bars(axes, report), (width, 4.8))))
    if report is not None and schedule(result) is not None:
        out.append(("Pipeline schedule", plot_timeline(result)))
    return out


def page(data: dict[str, Any], result, source: str) -> str:
    """The HTML page of a saved result (``data``, its JSON; ``result``, it read back)."""
    from optmap.report import front_table, layer_table, plan_table, report_tables, result_table

    problem = data.get("problem") or {}
    name = str(problem.get("name") or source)
    made = data.get("provenance") or {}
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(name)}</title>"
             f"<style>{STYLE}</style></head><body>",
             f"<h1>{html.escape(name)}</h1>",
             f'<p class="meta">engine <b>{html.escape(result.engine)}</b>, seed {result.seed}, '
             f"{html.escape(result.stopped)}; {result.evaluations:,} evaluations in {compact(result.seconds)} s; "
             f"from {html.escape(source)}</p>"]
    if made:
        parts.append(f'<p class="meta">optmap {html.escape(str(made.get("optmap_version", "?")))}, '
                     f'{html.escape(str(made.get("date", "?")))}: <code>{html.escape(str(made.get("command", "")))}'
                     f"</code></p>")
    if result.report is not None and not result.report.feasible:
        parts.append(f"<p><b>infeasible</b>: {html.escape(result.report.reason)}</p>")
    parts += ["<h2>Result and plan</h2>", table_html(result_table(result))]
    if result.report is not None:
        parts.append(table_html(plan_table(result.report.plan)))
    parts.append("<h2>Figures</h2>")
    parts += [f"<h3>{html.escape(heading)}</h3>{image_html(png, heading)}" for heading, png in figures(result)]
    tables = [front_table(result), *report_tables(result)]
    if any(tables):
        parts.append("<h2>Breakdowns</h2>")
        parts += [table_html(table) for table in tables]
    layers = layer_table(result, rows=None)
    if layers is not None:
        parts += ["<h2>Per-layer mapping</h2>", table_html(layers)]
    parts.append("<h2>Plan and problem (JSON)</h2>")
    for heading, value in (("plan", data.get("report", {}).get("plan") if data.get("report") else None),
                           ("problem", problem), ("provenance", made)):
        if value:
            text = json.dumps(value, indent=1, default=str)
            parts.append(f"<details><summary>{heading}</summary><pre>{html.escape(text)}</pre></details>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
