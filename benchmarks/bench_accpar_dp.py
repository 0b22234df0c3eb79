"""Speed of AccPar's layer-wise DP (engine `accpar`), in-process.

    python benchmarks/bench_accpar_dp.py

Targets (issue 3): ResNet-152 over 1024 accelerators (10 levels) under 50 ms; a synthetic
1,000-layer chain. Prints the median of several runs; not a test.
"""

from __future__ import annotations

import statistics
import time

from optmap.plugins.accpar.engines import level_plans
from optmap.problem import build_problem
from optmap.workload import WorkloadBuilder


def problem(workload_table, count=1024):
    return build_problem({
        "workload": workload_table,
        "system": {"topology": "fully-connected", "groups": [{"accelerator": "tpu-v3", "count": count}]},
        "cost": {"model": "accpar"},
    })


def chain_workload(layers: int):
    builder = WorkloadBuilder(f"chain{layers}", (256,))
    x = "input"
    for i in range(layers):
        x = builder.linear(x, 256 + 64 * (i % 5), name=f"fc{i}")
    return builder.build(512, "bf16")


def timed(model, repeats=7) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        level_plans(model, {})
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    resnet = problem({"model": "resnet152", "batch": 512, "dtype": "bf16"}).cost_model
    print(f"resnet152: {len(resnet.graph.names)} nodes, {resnet.hierarchy.depth} levels: "
          f"{timed(resnet) * 1e3:.1f} ms per full DP (target < 50 ms)")
    chain_problem = problem({"model": "vgg11", "batch": 512, "dtype": "bf16"})
    from optmap.plugins.accpar.model import AccParCostModel

    chain = AccParCostModel(chain_workload(1000), chain_problem.system)
    print(f"1000-layer chain: {chain.hierarchy.depth} levels: {timed(chain, 3) * 1e3:.1f} ms per full DP")


if __name__ == "__main__":
    main()
