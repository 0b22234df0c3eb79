"""Composition study: the inner formulation alone, a pipeline whose stages keep a fixed plan, two
steps (stages first, then the partition), and the joint search — on one cost model.

    python examples/compose_study.py [--problems hetero-vgg19-pipeline,f1-resnet34-pipeline]
                                     [--generic ga,random] [--out docs/compose.md]

Every row is a search on ``problems/compose/<name>.toml``:

- *inner alone*: ``--set cost.max_stages=1`` (exactly the inner formulation; tested);
- *stages, data-parallel inside*: the joint engine with ``stage_engine = "dp"`` (every layer
  Type-I at every level in each stage: stages and device split chosen for that plan);
- *two steps*: the stages, device split and micro-batches of the row above pinned (``--fix``),
  then each stage partitioned by AccPar's engine;
- *joint*: the ``pipeline`` engine (stages and partitions together);
- the generic engines on the joint space (seed 0, ``--evaluations`` each).

Times are the pipeline's predicted seconds per iteration; search seconds are the process CPU
seconds each search took on the machine that ran the study (the page says which).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import optmap

ROOT = Path(__file__).resolve().parent.parent
HEAD = ("| method | time per iteration (s) | speedup over the inner formulation alone | stages | "
        "micro-batches | devices per stage | search CPU s |\n|---|---|---|---|---|---|---|\n")


def _run(path: Path, engine: str, overrides=(), fixes=(), options=None, budget=None):
    problem = optmap.load(path, overrides=list(overrides), fixes=list(fixes))
    start = time.process_time()
    result = optmap.solve(problem, engine=engine, seed=0, options=options, budget=budget)
    return result, time.process_time() - start


def _row(label: str, result, seconds: float, alone: float) -> str:
    plan = result.report.plan
    devices = ", ".join(str(int(d.split("..")[1]) - int(d.split("..")[0]) + 1) for d in plan["stage_devices"])
    return (f"| {label} | {result.values['time']:.4g} | {alone / result.values['time']:.2f}x | {plan['stages']} | "
            f"{plan['micro_batches']} | {devices} | {seconds:.1f} |\n")


def study(name: str, generic: list[str], evaluations: int) -> str:
    path = ROOT / "problems" / "compose" / f"{name}.toml"
    alone, t_alone = _run(path, "pipeline", overrides=["cost.max_stages=1"])
    base = alone.values["time"]
    rows = [_row("inner formulation alone (AccPar)", alone, t_alone, base)]
    fixed, t_fixed = _run(path, "pipeline", options={"stage_engine": "dp"})
    rows.append(_row("stages, data parallel inside", fixed, t_fixed, base))
    structure = {k: v for k, v in fixed.best.as_dict().items() if k in ("stages", "microbatches")
                 or k.startswith("cut") or k.startswith("devices")}
    two, t_two = _run(path, "pipeline", fixes=[f"{k}={v}" for k, v in structure.items()])
    rows.append(_row("two steps: those stages, then AccPar inside", two, t_fixed + t_two, base))
    joint, t_joint = _run(path, "pipeline")
    rows.append(_row("joint (pipeline engine)", joint, t_joint, base))
    for engine in generic:
        result, seconds = _run(path, engine, budget=optmap.Budget(evaluations=evaluations))
        rows.append(_row(f"joint space, `{engine}` (seed 0, {result.evaluations:,} evaluations)", result, seconds,
                         base))
    description = optmap.load(path).spec.get("description", "")
    return f"### {name}\n\n{description}\n\n" + HEAD + "".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="hetero-vgg19-pipeline,f1-resnet34-pipeline")
    parser.add_argument("--generic", default="ga,random", help="generic engines to add ('' for none)")
    parser.add_argument("--evaluations", type=int, default=2000, help="budget of each generic engine")
    parser.add_argument("--out", default=str(ROOT / "docs" / "compose.md"))
    args = parser.parse_args()
    template = (ROOT / "docs" / "compose.template.md").read_text()
    tables = "".join(study(name, [e for e in args.generic.split(",") if e], args.evaluations) for name in args.problems.split(","))
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.machine()) if Path("/proc/cpuinfo").exists() else ""
    machine = f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"
    Path(args.out).write_text(template.replace("{{tables}}", tables).replace("{{machine}}", machine))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
