"""Speed of the megatron-3d planner: Turing-NLG 530B on 5,128 A100s (batch 2,520).

Prints the wall time of the whole ``optmap run`` process (median of ``--repeat`` runs, the issue's
target is 1 s; Calculon's exhaustive search of the same question takes about 23 s) and, in
process, plans scored per second by the cost model's vectorised pass.

    python benchmarks/bench_llm.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "llm" / "turing-530b.toml"


def problem_file(gpus: int) -> Path:
    """turing-530b.toml with ``gpus`` GPUs (``--set`` cannot reach list elements yet)."""
    text = PROBLEM.read_text().replace("count = 2520", f"count = {gpus}")
    path = Path(tempfile.mkdtemp()) / "turing-530b-5128.toml"
    path.write_text(text)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gpus", type=int, default=5128)
    args = parser.parse_args()
    path = problem_file(args.gpus)
    optmap = Path(sys.executable).with_name("optmap")
    walls = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        subprocess.run([str(optmap), "run", str(path), "--quiet", "--json", str(path.with_suffix(".json"))],
                       check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
    print(f"optmap run turing-530b on {args.gpus} A100s: median {statistics.median(walls):.2f} s "
          f"(min {min(walls):.2f} s) over {args.repeat} runs")

    from optmap.plugins.llm.engine import enumerate_plans
    from optmap.problem import load

    model = load(path).cost_model
    choices = {v.name: np.array(v.choices, dtype=object) for v in model.space.variables}
    start = time.perf_counter()
    X = enumerate_plans(model, choices)
    enum_s = time.perf_counter() - start
    rates = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        model.evaluate_batch(X)
        rates.append(len(X) / (time.perf_counter() - start))
    print(f"{len(X):,} valid plans enumerated in {enum_s:.3f} s; scored at {statistics.median(rates):,.0f} plans/s "
          f"(median of {args.repeat})")


if __name__ == "__main__":
    main()
