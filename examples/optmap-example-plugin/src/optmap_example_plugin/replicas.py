"""A composite formulation of its own: data parallelism around any registered formulation.

It shows what nesting a built-in takes and nothing more: the factory declares a keyword-only
``host`` and builds the inner formulation by its registered name (never by importing its
plugin); the inner model prices one replica's batch share (a workload slice of every layer at
``batch / replicas``) on one replica's devices (a sub-system); the space is the inner space under
the prefix ``replica.`` (a joined space), and the report carries the inner report as a child.

Formulation (no paper behind it): ``replicas`` copies of the inner mapping, each on an equal,
contiguous share of the devices, run their share of the batch; then the weights' gradients are
all-reduced across the replicas over a ring through each replica's first device (Thakur et al.
2005's ring: ``2 (r − 1)·α + 2 (r − 1)/r · bytes / β``). ``time`` = the replica's time + the
all-reduce; ``memory_bytes`` = the replica's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from optmap.collectives import allreduce
from optmap.cost import CostModel, CostReport
from optmap.errors import OptmapError
from optmap.space import Part, join
from optmap.system.subsystem import sub_system
from optmap.workload.slicing import slice_workload


class Replicas(CostModel):
    """Data-parallel replicas of any registered formulation (example plugin)."""

    metrics = ("time", "memory_bytes", "allreduce_time")

    def __init__(self, workload, system, *, replicas: int = 2, inner: dict[str, Any], host) -> None:
        options = dict(inner)
        name = options.pop("model", None)
        if not isinstance(name, str):
            raise OptmapError('[cost.inner] needs model = "<cost model>", e.g. model = "accpar"')
        if replicas < 1 or system.count % replicas or workload.batch % replicas:
            raise OptmapError(f"replicas = {replicas} must divide the {system.count} devices and the batch "
                              f"{workload.batch}")
        self.replicas, per = replicas, system.count // replicas
        share = slice_workload(workload, range(len(workload.order)), batch=workload.batch // replicas)
        self.inner = host.build("cost_model", name, share, sub_system(system, range(per)), options=options,
                                where=f"[cost.inner] model '{name}'")
        self.space = join([Part("replica", self.inner.space)]).space  # decisions named replica.<inner name>
        firsts = [r * per for r in range(replicas)]
        ring = list(zip(firsts, firsts[1:] + firsts[:1]))
        bandwidth = min(system.path_bandwidth(a, b) for a, b in ring) if replicas > 1 else np.inf
        latency = max(system.path_latency(a, b) for a, b in ring) if replicas > 1 else 0.0
        gradients = workload.params * workload.bytes_per_element
        self.allreduce = float(allreduce(gradients, replicas, bandwidth, latency)) if replicas > 1 else 0.0

    def evaluate(self, mapping) -> CostReport:
        replica = self.inner.evaluate(self.inner.space.decode(mapping.array))  # the same columns, unprefixed
        time = replica.metrics["time"] + self.allreduce
        memory = replica.metrics.get("memory_bytes", float("nan"))
        return CostReport({"time": time, "memory_bytes": memory, "allreduce_time": self.allreduce},
                          replica.feasible, replica.reason, plan={"replicas": self.replicas},
                          children={"replica": replica})
