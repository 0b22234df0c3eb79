"""Speed of the megatron-3d planner: Turing-NLG 530B on 5,128 A100s (batch 2,520), every valid plan;
with ``--problem qwen3``, Qwen3-235B-A22B (mixture of experts) on 2,048 H100s, every decision free
(expert_parallel included; issue 25's target: under 2 s whole process); with ``--problem llama405``,
Llama 3.1 405B on 16,384 H100s, every decision free (issue 25's target: under 1 s whole process).

Prints, for the whole ``optmap run`` process (median of ``--repeat`` runs after one warm-up run
that also writes the bytecode caches), its wall time and its CPU time (user + system, which a
shared, loaded machine inflates far less than the wall time; the issue's target is 1 s, and
Calculon's exhaustive search of the same question takes about 23 s); then, in process, the CPU
time of each phase (imports, building the problem, the search, the report) and the plans the
search scores per second.

    python benchmarks/bench_llm.py [--repeat 5] [--gpus 5128] [--problem turing|qwen3|llama405]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = {"turing": (ROOT / "problems" / "llm" / "turing-530b.toml", 5128, "turing-530b", "A100s"),
            "qwen3": (ROOT / "problems" / "llm" / "qwen3-235b-a22b.toml", 2048, "qwen3-235b-a22b", "H100s"),
            "llama405": (ROOT / "problems" / "llm" / "llama3.1-405b.toml", 16384, "llama3.1-405b", "H100s")}


def whole_run(command: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {child.stderr.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime


def phases(problem_file: Path, overrides: list[str], out: Path) -> dict[str, float]:
    """CPU seconds of the phases of an ``optmap run``, in this process (imports first)."""
    clock = time.process_time
    marks = {"start": clock()}
    import optmap.commands.run  # noqa: F401  (what the CLI imports before reading the problem)
    from optmap.output import json_text, save
    from optmap.problem import load
    from optmap.report import result_table, report_tables
    from optmap.run import solve
    from rich.console import Console

    marks["imports"] = clock()
    problem = load(problem_file, overrides)
    marks["problem"] = clock()
    result = solve(problem)
    marks["search"] = clock()
    save(out, json_text({"problem": problem.spec, **result.to_json()}))
    console = Console(file=open(os.devnull, "w"), width=220)
    for table in [result_table(result), *report_tables(result)]:
        console.print(table)
    marks["report"] = clock()
    names = list(marks)
    return {"plans": float(result.evaluations), **{b: marks[b] - marks[a] for a, b in zip(names, names[1:])}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gpus", type=int, default=None, help="GPU count (default: the problem's)")
    parser.add_argument("--problem", choices=sorted(PROBLEMS), default="turing")
    args = parser.parse_args()
    path, default_gpus, label, kind = PROBLEMS[args.problem]
    gpus = args.gpus or default_gpus
    overrides = [f"system.groups.0.count={gpus}"]
    out = Path(tempfile.mkdtemp()) / "result.json"
    optmap = Path(sys.executable).with_name("optmap")
    command = [str(optmap), "run", str(path), "--set", overrides[0], "--quiet", "--json", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: with .pyc
    whole_run(command, env)  # warm-up: bytecode caches, file-system caches
    runs = [whole_run(command, env) for _ in range(args.repeat)]
    walls, cpus = zip(*runs)
    print(f"optmap run {label} on {gpus:,} {kind}, whole process over {args.repeat} runs: "
          f"wall median {statistics.median(walls):.2f} s (min {min(walls):.2f}), "
          f"CPU median {statistics.median(cpus):.2f} s (min {min(cpus):.2f})")
    sample = [phases(path, overrides, out) for _ in range(args.repeat)]
    cost = {k: statistics.median(s[k] for s in sample) for k in sample[0]}
    print(f"in process, CPU seconds: imports {sample[0]['imports']:.3f} (once), then medians: "
          + ", ".join(f"{k} {cost[k]:.3f}" for k in ("problem", "search", "report")))
    print(f"{cost['plans']:,.0f} valid plans scored in {cost['search']:.3f} s of CPU: "
          f"{cost['plans'] / cost['search']:,.0f} plans/s")


if __name__ == "__main__":
    main()
