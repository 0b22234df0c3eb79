"""Speed of AccPar's layer-wise DP (issue 14, item 2), in-process.

- ResNet-152 on 1024 TPU-v3 (10 levels): one full DP, ``level_plans`` (target <= 5 ms);
- ResNet-152 on 512 TPU-v2 + 512 TPU-v3 (10 levels): the ``accpar`` engine with its share
  search, 59 DPs over the share grid in one batch plus their scoring (target <= 0.2 s);
- a synthetic 1,000-layer chain on 1024 TPU-v3.

Medians of several runs, in CPU seconds (and wall). Not a test.

    python benchmarks/bench_accpar_dp.py
"""

from __future__ import annotations

from timing import accpar_problem, machine, timed, verdict

from optmap.plugins.accpar.engines import AccParSearch, level_plans
from optmap.plugins.accpar.model import AccParCostModel
from optmap.search import Evaluator
from optmap.workload import WorkloadBuilder


def chain_workload(layers: int):
    builder = WorkloadBuilder(f"chain{layers}", (256,))
    x = "input"
    for i in range(layers):
        x = builder.linear(x, 256 + 64 * (i % 5), name=f"fc{i}")
    return builder.build(512, "bf16")


def main() -> None:
    print(machine())
    homog = accpar_problem("resnet152", [("tpu-v3", 1024)]).cost_model
    t = timed(lambda: level_plans(homog, {}), 15)
    print(f"resnet152, 1024 tpu-v3, {len(homog.graph.names)} nodes, {homog.hierarchy.depth} levels, one DP: {t}; "
          f"target <= 5 ms: {verdict(t.cpu, 5e-3)}")
    hetero = accpar_problem("resnet152", [("tpu-v2", 512), ("tpu-v3", 512)]).cost_model
    t = timed(lambda: AccParSearch().search(Evaluator(hetero, ["time"]), 0), 3)
    print(f"resnet152, 512 tpu-v2 + 512 tpu-v3, {hetero.hierarchy.depth} levels, accpar engine "
          f"({hetero.ratio_steps - 1} shares): {t}; target <= 0.2 s: {verdict(t.cpu, 0.2)}")
    chain = AccParCostModel(chain_workload(1000), accpar_problem("vgg11", [("tpu-v3", 1024)]).system)
    print(f"1000-layer chain, {chain.hierarchy.depth} levels, one DP: {timed(lambda: level_plans(chain, {}), 3)}")


if __name__ == "__main__":
    main()
