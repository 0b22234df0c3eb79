"""Predict held-out, measured LLM training runs of today (issue 25) and write docs/reproductions/llm-today.md.

    python examples/validate_llm.py                       # every run; writes docs/reproductions/llm-today.md
                                                          # and the summary megatron-3d reports (accuracy.py)
    python examples/validate_llm.py --json OUT.json       # also the rows as JSON
    python examples/validate_llm.py --match LLAMA2 --out /tmp/x.md
    python examples/validate_llm.py --problems DIR        # each run as a problem file: optmap run DIR/….toml

Each run of :mod:`optmap.plugins.llm.heldout` becomes a problem as a user would write it: the
``transformer`` workload with the model's public configuration, the published system
(``dgx-h100`` / ``dgx-b200`` / ``gb200-nvl72``), the precision as ``dtype``, the ``megatron-3d``
cost model and engine, and the published layout pinned in ``[fix]`` (``tensor_parallel``,
``pipeline_parallel``, ``context_parallel``, ``expert_parallel``, ``data_parallel``,
``microbatch_size``, ``interleaving``, ``fsdp``). A published field the cost model has no
decision for is pinned only where it departs from what the model assumes without it (context and
expert parallel 1, no FSDP); pinned there, the planner's own error says what is missing and the
row reads "not yet modelled". The planner chooses the rest (recomputation, sequence parallelism,
optimizer sharding, overlap): the fastest feasible plan of the megatron-3d enumeration. When no
plan of the pinned layout fits in memory the row still gets a time, that of the plan closest to
fitting (the least memory), marked infeasible with the memory it needs (a defect of the memory
model: the run was measured).

Nothing is fitted to these runs: every constant is the shipped one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import optmap
from optmap.plugins.llm import accuracy, heldout, heldout_runs
from optmap.plugins.llm.engine import plan_table
from optmap.plugins.llm.model import CATEGORIES

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "reproductions" / "llm-today.md"
TEMPLATE = OUT.with_name("llm-today.template.md")
ACCURACY = ROOT / "plugins" / "llm" / accuracy.FILE  # the summary megatron-3d ships (optmap.plugins.llm.accuracy)
GROUPS = ("H100 dense", "H100 MoE", "B200 / GB200")
BARS = {"H100 dense": (10.0, 25.0), "H100 MoE": (20.0, 35.0)}  # issue 25: mean / max error, percent
# a published decision the cost model may lack, and the value that means "not used"
NEUTRAL = {"context_parallel": 1, "expert_parallel": 1, "fsdp": False}
STATUS_CHARS = 160  # the page cuts longer messages (the JSON keeps them whole)


def spec(run: heldout.HeldOutRun, fix: dict | None = None, recipe: bool = True, extra: dict | None = None) -> dict:
    """The run as a problem (a TOML file's tables as a dict); ``recipe``: with the cost options its
    recipe states (:func:`.heldout.recipe_options`), else the issue's problem file as written;
    ``extra``: cost options of a what-if (``--cost``), over both."""
    topology, accelerator = heldout.SYSTEMS[run.system]
    workload = {"model": "transformer", **heldout.MODELS[run.model], "seq_len": run.seq_len, "batch": run.gbs,
                "dtype": run.dtype}
    # nothing else in [cost], as issue 25 writes its problems: a published micro-batch, interleaving or
    # split beyond the search's bounds widens them when pinned (plugins/llm/choices.py)
    cost = {"model": "megatron-3d", **(heldout.recipe_options(run) if recipe else {})}
    cost.update(extra or {})
    return {"name": run.label, "workload": workload,
            "system": {"topology": topology, "groups": [{"accelerator": accelerator, "count": run.gpus}]},
            "cost": cost, "search": {"engine": "megatron-3d"}, "fix": fix or {}}


def layout(run: heldout.HeldOutRun) -> dict:
    """The published decisions, named as megatron-3d's (issue 25's shared design); an unpublished
    micro-batch or interleaving is left to the planner."""
    out = {"tensor_parallel": run.tp, "pipeline_parallel": run.pp, "context_parallel": run.cp,
           "expert_parallel": run.ep, "data_parallel": run.dp}
    out.update({k: v for k, v in (("microbatch_size", run.mbs), ("interleaving", run.vp)) if v is not None})
    if run.fsdp is not None:
        out["fsdp"] = run.fsdp > 0
    return out


def pins(run: heldout.HeldOutRun) -> dict:
    """The ``[fix]`` table: every published decision the cost model has, and any it lacks whose
    published value is not the neutral one (so that the planner names what it cannot model)."""
    names = {v.name for v in optmap.build_problem(spec(run)).cost_model.space.variables}
    return {k: v for k, v in layout(run).items() if k in names or NEUTRAL.get(k, v) != v}


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):  # a TOML array (a recipe's allowed settings)
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return f'"{value}"' if isinstance(value, str) else repr(value)


def problem_toml(run: heldout.HeldOutRun) -> str:
    """The run as a problem file with its published layout in ``[fix]`` (``optmap run FILE`` predicts it)."""
    tables = spec(run, layout(run))
    lines = [f"name = {_toml_value(tables['name'])}",
             f"description = \"\"\"\n{heldout.SOURCES[run.source][0]}\n{heldout.SOURCES[run.source][1]}\n"
             f"measured: {run.tokens_per_gpu:g} tokens/s/GPU = {run.measured_s:.4f} s per iteration\n\"\"\""]
    for name in ("workload", "system", "cost", "search", "fix"):
        scalars = {k: v for k, v in tables[name].items() if not isinstance(v, (dict, list))}
        lines += ["", f"[{name}]"] + [f"{k} = {_toml_value(v)}" for k, v in scalars.items()]
        for key, value in tables[name].items():
            if isinstance(value, dict):
                lines += ["", f"[{name}.{key}]"] + [f"{k} = {_toml_value(v)}" for k, v in value.items()]
            elif isinstance(value, list):
                for item in value:
                    lines += ["", f"[[{name}.{key}]]"] + [f"{k} = {_toml_value(v)}" for k, v in item.items()]
    return "\n".join(lines) + "\n"


def predict(run: heldout.HeldOutRun, recipe: bool = True, extra: dict | None = None) -> dict:
    """One row: measured and predicted iteration time, the plan, its time breakdown, the status
    (``recipe``, ``extra``: as :func:`spec`)."""
    row = {"label": run.label, "group": run.group, "source": run.source, "model": run.model,
           "system": run.system, "precision": run.precision, "dtype": run.dtype, "gpus": run.gpus,
           "gbs": run.gbs, "seq_len": run.seq_len, "layout": layout(run), "measured_s": run.measured_s,
           "predicted_s": None, "error_percent": None, "feasible": None, "status": "", "plan": {}, "breakdown": {},
           "recipe": heldout.recipe_options(run) if recipe else {}}
    try:
        row["fix"] = pins(run)  # what `optmap run … --fix NAME=VALUE` would pin
        problem = optmap.build_problem(spec(run, row["fix"], recipe, extra))
    except optmap.OptmapError as exc:
        row["status"] = f"not yet modelled: {exc}"
        return row
    model, space = problem.cost_model, problem.space
    allowed = {v.name: np.array([v.pinned] if v.is_pinned else list(v.choices), dtype=object) for v in space.variables}
    values, cols = plan_table(model, allowed)
    if not len(cols.get("time", ())):  # the engine's own words for why the layout has no plan
        try:
            optmap.solve(problem)
        except optmap.OptmapError as exc:
            row["status"] = f"not yet modelled: {exc}"
        return row
    feasible = np.asarray(cols["feasible"], bool)
    if feasible.any():  # the planner's answer: the fastest feasible plan
        pool = np.flatnonzero(feasible)
        i = pool[np.argmin(cols["time"][pool])]
    else:  # none fits: the plan closest to fitting (least memory; then the fastest of those)
        i = np.lexsort((cols["time"], cols["memory_gib"]))[0]
    plan = {k: v[i].item() for k, v in values.items()}
    plan.update({name: labels[int(plan[name])] for name, labels in CATEGORIES.items()})  # indices to labels
    report = model.evaluate(space.mapping(plan))
    predicted = float(cols["time"][i])
    row.update(predicted_s=predicted, error_percent=100.0 * (predicted / run.measured_s - 1.0),
               feasible=bool(feasible[i]), plan=plan, memory_gib=float(cols["memory_gib"][i]),
               breakdown={r["part"]: r["seconds"] for r in report.tables["time_breakdown"]},
               status="predicted" if feasible[i] else f"infeasible in the model: {report.reason}")
    return row


def summary(rows: list[dict]) -> list[dict]:
    """Per group: runs, predicted (a time, feasible or not), feasible, mean and max |error| (percent)."""
    out = []
    for group in GROUPS:
        mine = [r for r in rows if r["group"] == group]
        errs = np.abs([r["error_percent"] for r in mine if r["error_percent"] is not None])
        bar = BARS.get(group)
        out.append({"group": group, "runs": len(mine), "priced": int(len(errs)),
                    "feasible": sum(bool(r["feasible"]) for r in mine),
                    "mean_abs_error_percent": float(errs.mean()) if len(errs) else None,
                    "max_abs_error_percent": float(errs.max()) if len(errs) else None,
                    "bar": f"≤ {bar[0]:g} % mean, ≤ {bar[1]:g} % max" if bar else "none set"})
    return out


def by_source(rows: list[dict]) -> str:
    """Mean |error| (runs) of each group per source: the same hardware across software releases."""
    lines = ["| source | " + " | ".join(GROUPS) + " |", "|---|" + "---:|" * len(GROUPS)]
    for source in heldout.SOURCES:
        cells = []
        for group in GROUPS:
            errs = [abs(r["error_percent"]) for r in rows
                    if r["source"] == source and r["group"] == group and r["error_percent"] is not None]
            cells.append(f"{np.mean(errs):.1f} % ({len(errs)})" if errs else "")
        if any(cells):
            lines.append(f"| `{source}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def by_dispatcher(rows: list[dict]) -> str:
    """Mean signed and mean |error| (runs) of the MoE runs per token dispatcher their recipe names
    (``auto``: none named, the planner's default) and whether their all-to-alls overlap."""
    by_key: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["error_percent"] is not None and r["group"] != "H100 dense" and heldout.MODELS[r["model"]].get("moe") is not None:
            key = (r["recipe"].get("moe_dispatcher", "auto"), bool(r["recipe"].get("moe_a2a_overlap")))
            by_key.setdefault(key, []).append(r)
    groups = GROUPS[1:]
    lines = ["| dispatcher | " + " | ".join(groups) + " |", "|---|" + "---:|" * len(groups)]
    for (dispatcher, overlap), mine in sorted(by_key.items()):
        cells = []
        for group in groups:
            errs = [r["error_percent"] for r in mine if r["group"] == group]
            cells.append(f"{np.mean(errs):+.1f} % / {np.mean(np.abs(errs)):.1f} % ({len(errs)})" if errs else "")
        lines.append(f"| `{dispatcher}`{' with the overlap' if overlap else ''} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def planner_choice(row: dict) -> str:
    p = row["plan"]
    if not p:
        return ""
    switches = [name for key, name in (("sequence_parallel", "sp"), ("optimizer_sharding", "zero1"),
                                        ("dp_overlap", "overlap")) if p.get(key)]
    # an unpublished micro-batch or interleaving, as the planner chose it
    chosen = [f"{short} {int(p[key])}" for key, short in (("microbatch_size", "mb"), ("interleaving", "v"))
              if key not in row["layout"] and key in p]
    if "grad_bytes" not in row.get("recipe", {}) and "grad_reduce_in_fp32" in p:  # the planner's gradients
        chosen.append("fp32 grads" if p["grad_reduce_in_fp32"] else "bf16 grads")
    if "expert_tensor_parallel" not in row.get("recipe", {}) and p.get("expert_tensor_parallel", 1) > 1:
        chosen.append(f"etp {int(p['expert_tensor_parallel'])}")  # the planner's expert tensor parallelism
    recipe = [f"{k} = {' / '.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"  # pinned from the
              for k, v in row.get("recipe", {}).items()]  # run's recipe (a list: the settings it allows)
    return f"{p['recompute']}" + (" + " + ", ".join(switches) if switches else "") + "".join(f"; {x}" for x in chosen) + "".join(f"; {x}" for x in recipe)


def worst_runs(rows: list[dict], group: str = "H100 dense", n: int = 3) -> str:
    """The time breakdown of the ``n`` priced runs of ``group`` furthest from their measured time."""
    priced = sorted((r for r in rows if r["group"] == group and r["error_percent"] is not None),
                    key=lambda r: -abs(r["error_percent"]))[:n]
    if not priced:
        return "(no priced run in this group)"
    parts = list(dict.fromkeys(part for r in priced for part in r["breakdown"]))
    lines = ["| part | " + " | ".join(_cell(r["label"]) for r in priced) + " |",
             "|---|" + "---:|" * len(priced)]
    for part in parts:
        cells = [f"{r['breakdown'].get(part, 0.0):.2f} s ({100 * r['breakdown'].get(part, 0.0) / r['predicted_s']:.0f} %)"
                 for r in priced]
        lines.append(f"| {part} | " + " | ".join(cells) + " |")
    lines.append("| **predicted** | " + " | ".join(f"**{r['predicted_s']:.2f} s**" for r in priced) + " |")
    lines.append("| measured | " + " | ".join(f"{r['measured_s']:.2f} s" for r in priced) + " |")
    lines.append("| planner's choice | " + " | ".join(planner_choice(r) for r in priced) + " |")
    return "\n".join(lines)


def summary_table(groups: list[dict]) -> str:
    head = ["| group | runs | priced | feasible | mean \\|error\\| | max \\|error\\| | issue 25's bar |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for g in groups:
        mean = f"{g['mean_abs_error_percent']:.1f} %" if g["mean_abs_error_percent"] is not None else "—"
        worst = f"{g['max_abs_error_percent']:.1f} %" if g["max_abs_error_percent"] is not None else "—"
        head.append(f"| {g['group']} | {g['runs']} | {g['priced']} | {g['feasible']} | {mean} | {worst} | {g['bar']} |")
    return "\n".join(head)


def _predicted(row: dict) -> str:
    return f"{row['predicted_s']:.2f}" if row["predicted_s"] is not None else "—"


def _error(row: dict, missing: str = "—") -> str:
    return f"{row['error_percent']:+.1f} %" if row["error_percent"] is not None else missing


def outside_table(rows: list[tuple[dict, dict, str]]) -> str:
    """The runs outside the summary: (row with the recipe's options, row without, the assumption)."""
    lines = ["| run | measured s | predicted s | error | without the recipe's options | assumption |",
             "|---|---:|---:|---:|---:|---|"]
    for r, plain, assumption in rows:
        errs = [_error(x, _cell(x["status"])) for x in (r, plain)]
        lines.append(f"| {r['label']} | {r['measured_s']:.3f} | {_predicted(r)} | {errs[0]} | {errs[1]} | {assumption} |")
    return "\n".join(lines)


def render(rows: list[dict], groups: list[dict], plain: list[dict], outside: list | None = None) -> str:
    """The page: ``groups`` summarises ``rows`` (recipe options on), ``plain`` the runs without them,
    ``outside`` the runs priced outside the summary (:func:`outside_table`)."""
    lines = ["| run | GPUs | GBS × seq | t·p·c·e·d / mb / v | measured s | predicted s | error | planner's choice "
             "| status |", "|---|---:|---|---|---:|---:|---:|---|---|"]
    for r in rows:
        lay = r["layout"]
        shape = (f"{lay['tensor_parallel']}·{lay['pipeline_parallel']}·{lay['context_parallel']}·"
                 f"{lay['expert_parallel']}·{lay['data_parallel']} / {lay.get('microbatch_size', '?')} / {lay.get('interleaving', '?')}"
                 + (" fsdp" if lay.get("fsdp") else ""))
        status = r["status"] if len(r["status"]) <= STATUS_CHARS else r["status"][:STATUS_CHARS] + " …"
        lines.append(f"| {r['label']} | {r['gpus']:,} | {r['gbs']:,} × {r['seq_len']:,} | {shape} | "
                     f"{r['measured_s']:.3f} | {_predicted(r)} | {_error(r)} | {planner_choice(r)} | {_cell(status)} |")
    table = "\n".join(lines)
    sources = "\n".join(f"- `{key}`: {title}, <{url}>" for key, (title, url) in heldout.SOURCES.items())
    return (TEMPLATE.read_text().replace("{{SUMMARY}}", summary_table(groups)).replace("{{TABLE}}", table)
            .replace("{{SUMMARY_PLAIN}}", summary_table(plain))
            .replace("{{WORST}}", worst_runs(rows)).replace("{{WORST_MOE}}", worst_runs(rows, "H100 MoE"))
            .replace("{{BY_SOURCE}}", by_source(rows)).replace("{{BY_DISPATCHER}}", by_dispatcher(rows)).replace("{{OUTSIDE}}", outside_table(outside or []))
            .replace("{{SOURCES}}", sources))


def plot(rows: list[dict], path: Path) -> None:
    """Predicted against measured iteration time (log-log, the diagonal and ±25 %) and each group's
    errors against the issue's bars (matplotlib, the ``plot`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    priced = [r for r in rows if r["predicted_s"] is not None]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [1.1, 1]})
    for k, group in enumerate(GROUPS):
        mine = [r for r in priced if r["group"] == group]
        left.scatter([r["measured_s"] for r in mine], [r["predicted_s"] for r in mine], s=18, label=group, alpha=0.8)
        errors = sorted(r["error_percent"] for r in mine)
        right.scatter([k + (i + 0.5) / max(len(errors), 1) * 0.8 - 0.4 for i in range(len(errors))], errors, s=14)
        bar = BARS.get(group)
        if bar:  # the worst-run bar for the group
            right.hlines([-bar[1], bar[1]], k - 0.45, k + 0.45, colors="grey", linestyles="dashed")
    lo = min(min(r["measured_s"], r["predicted_s"]) for r in priced) / 1.5
    hi = max(max(r["measured_s"], r["predicted_s"]) for r in priced) * 1.5
    for factor, style in ((1.0, "-"), (1.25, ":"), (0.75, ":")):
        left.plot([lo, hi], [lo * factor, hi * factor], "k" + style, linewidth=0.8)
    left.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured iteration time (s)",
             ylabel="predicted (s)", title="held-out runs: predicted against measured (±25 % dotted)")
    left.legend(fontsize=8)
    right.axhline(0.0, color="k", linewidth=0.8)
    right.set_xticks(range(len(GROUPS)), GROUPS)
    right.set(ylabel="error (%)", title="errors per group (dashed: issue 25's worst-run bar)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the rows and the summary as JSON")
    parser.add_argument("--out", type=Path, default=OUT, help=f"markdown page (default {OUT.relative_to(ROOT)})")
    parser.add_argument("--problems", type=Path, metavar="DIR",
                        help="also write each run as a problem file with its whole published layout in [fix] "
                             "(as issue 25 judges; it needs every decision it pins, context and expert parallel included)")
    parser.add_argument("--plot", type=Path, metavar="PNG",
                        help="also draw predicted against measured and the errors per group (needs matplotlib)")
    parser.add_argument("--match", action="append", metavar="TEXT",
                        help="only runs whose label contains TEXT (repeatable)")
    parser.add_argument("--cost", action="append", default=[], metavar="KEY=VALUE",
                        help="a cost option (VALUE in JSON) for every run, over its recipe: a what-if, not the "
                             "validation, so its page must be named with --out; e.g. attention_tflops=[619,541]")
    args = parser.parse_args(argv)
    try:
        extra = {k: json.loads(v) for k, _, v in (c.partition("=") for c in args.cost)}
    except json.JSONDecodeError as exc:
        print(f"error: --cost takes KEY=VALUE with a JSON value ({exc}); e.g. --cost moe_comm_sms=24", file=sys.stderr)
        return 2
    if extra and args.out == OUT:
        print(f"error: --cost is a what-if; name its page with --out instead of {OUT.relative_to(ROOT)}",
              file=sys.stderr)
        return 2
    runs = [r for r in heldout_runs.runs() if not args.match or any(m in r.label for m in args.match)]
    beside = [(r, why) for r, why in heldout_runs.outside() if not args.match or any(m in r.label for m in args.match)]
    if not runs and not beside:
        print(f"error: no held-out run matches {args.match}; labels look like "
              f"'{heldout_runs.runs()[0].label}'", file=sys.stderr)
        return 2
    if args.problems:
        args.problems.mkdir(parents=True, exist_ok=True)
        for run in runs:
            name = "".join(c if c.isalnum() or c in ".-" else "-" for c in run.label.lower()).strip("-")
            (args.problems / f"{name.replace('--', '-')}.toml").write_text(problem_toml(run), encoding="utf-8")
    rows = [predict(run, extra=extra) for run in runs]
    outside = [(predict(run, extra=extra), predict(run, recipe=False, extra=extra), why) for run, why in beside]
    every = rows + [r for r, _, _ in outside]
    if extra and not any(r["predicted_s"] for r in every):
        print(f"error: --cost {args.cost}: {every[0]['status']}", file=sys.stderr)
        return 2
    groups = summary(rows)
    plain = summary([predict(run, recipe=False, extra=extra) for run in runs])  # the problem files as written
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(rows, groups, plain, outside) + "\n", encoding="utf-8")
    if args.out == OUT and not args.match:  # the validation itself: what megatron-3d reports beside a plan
        ACCURACY.write_text(json.dumps({"summary": groups, "summary_without_recipe_options": plain}, indent=1) + "\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "summary": groups, "summary_without_recipe_options": plain,
                                         "outside": [{**r, "assumption": why} for r, _, why in outside]},
                                        indent=1, default=float))
    if args.plot:
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        plot(rows, args.plot)
    for name, summaries in (("", groups), (" (without the recipes' options)", plain)):
        for g in summaries:
            if g["runs"]:
                mean, worst = g["mean_abs_error_percent"], g["max_abs_error_percent"]
                errs = f"mean {mean:.1f} %, max {worst:.1f} %" if mean is not None else "no prediction"
                print(f"{g['group']:13s} {g['runs']:3d} runs, {g['priced']} priced, {g['feasible']} feasible: {errs}{name}")
    print(f"wrote {args.out}" + "".join(f" and {p}" for p in (args.json, args.plot) if p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
