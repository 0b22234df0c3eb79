"""A small formulation of its own: cut a network into pipeline stages and place them on devices.

It shows what a third-party formulation needs from optmap and nothing more: a design space with
a permutation variable and a formulation-supplied repair and sampler, a maximised primary
metric, a per-stage table in the report, and a vectorised batch evaluation. The generic engines
(``ga``, ``optuna``, ``random``, ``exhaustive``) search it with no change to optmap.

Formulation (GPipe-style inter-layer pipelining of one training step, no paper behind it):

* the workload's layers in topological order are cut into ``S`` contiguous, non-empty stages,
  ``S`` = the number of devices: integer decisions ``cut1 < cut2 < ... < cut{S-1}``, the index of
  the first layer of each stage after the first;
* a permutation ``placement`` of the devices: stage ``s`` runs on ``placement[s]``;
* stage time = its training FLOPs / the device's peak FLOP/s (for the workload's dtype) + the
  activations it sends forward and the gradients it receives back over the path to the next
  stage's device (bytes / path bandwidth + path latency);
* ``period`` = the slowest stage (the pipeline's steady-state interval per mini-batch) and
  ``throughput`` = batch / period samples per second, the metric a problem maximises by default.

The repair sorts the cuts and spreads equal ones apart, so every vector is a valid partition.
Stage bounds, per-stage sums, transfers and the period come from :mod:`optmap.schedule`.
"""

from __future__ import annotations

import numpy as np
from optmap import schedule
from optmap.cost import BATCH, CostModel, CostReport
from optmap.errors import OptmapError
from optmap.space import DesignSpace, integer, permutation


class StagePipeline(CostModel):
    """Pipeline stages: cut the layer order into one stage per device and place the stages (example plugin)."""

    metrics = ("throughput", "period", "max_stage_flops")
    senses = {"throughput": "max"}
    capabilities = frozenset({BATCH})

    def __init__(self, workload, system) -> None:
        layers = workload.layers()
        self.stages, self.layers = system.count, len(layers)
        if self.stages < 2 or self.stages > self.layers:
            raise OptmapError(f"stage-pipeline needs between 2 and {self.layers} devices (one stage per device, "
                              f"at least one layer per stage), got {self.stages}")
        flops = [workload.phase_flops(layer.flops(workload.batch)).total for layer in layers]
        self.prefix = schedule.prefix_sums(flops)  # FLOPs of layers [0, i)
        self.sent = np.array([2.0 * layer.out_elements * workload.batch * workload.bytes_per_element
                              for layer in layers])  # activations forward + their gradients back
        self.speed = np.array([d.flops_per_s(workload.dtype) for d in system.devices])
        n = system.count
        self.bandwidth = np.array([[system.path_bandwidth(a, b) for b in range(n)] for a in range(n)])
        self.latency = np.array([[system.path_latency(a, b) for b in range(n)] for a in range(n)])
        self.batch = workload.batch
        cuts = [integer(f"cut{k}", 1, self.layers - 1) for k in range(1, self.stages)]
        self.space = DesignSpace([*cuts, permutation("placement", range(n))],
                                 repair=self._repair, sample=self._sample)

    # --- a formulation-supplied repair and sampler --------------------------------------------
    def _repair(self, X: np.ndarray) -> np.ndarray:
        """Sorted, strictly increasing cuts in [1, layers - 1]: every vector a valid partition."""
        X = X.copy()
        k = self.stages - 1
        X[:, :k] = schedule.increasing_cuts(X[:, :k], 1, self.layers - 1)  # non-empty stages before and after each cut
        return X

    def _sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Uniform partitions (distinct cut points drawn without replacement) and placements."""
        k = self.stages - 1
        cuts = np.sort(np.array([rng.choice(np.arange(1, self.layers), k, replace=False) for _ in range(n)]), 1)
        return np.hstack([cuts, rng.random((n, self.stages))])

    # --- scoring ---------------------------------------------------------------------------------
    def _stages(self, X: np.ndarray):
        X = np.atleast_2d(X)
        k = self.stages - 1
        bounds = schedule.stage_bounds(X[:, :k], self.layers)
        device = np.argsort(X[:, k:], axis=1, kind="stable")  # placement: stage s -> device
        flops = schedule.stage_sums(self.prefix, bounds)
        compute = flops / self.speed[device]
        last = bounds[:, 1:-1] - 1  # the last layer of every stage but the final one
        # two messages per boundary: the activations forward and their gradients back
        transfer = schedule.stage_transfers(self.sent[last], device, self.bandwidth, self.latency, messages=2)
        stage_time = compute + np.hstack([transfer, np.zeros((len(X), 1))])
        return bounds, device, flops, compute, stage_time

    def evaluate_batch(self, X: np.ndarray) -> dict[str, np.ndarray]:
        _, _, flops, _, stage_time = self._stages(X)
        period = schedule.period(stage_time)
        return {"throughput": self.batch / period, "period": period, "max_stage_flops": flops.max(1)}

    def evaluate(self, mapping) -> CostReport:
        bounds, device, flops, compute, stage_time = (a[0] for a in self._stages(mapping.array[None]))
        period = float(schedule.period(stage_time))
        rows = [{"stage": s, "device": int(device[s]), "layers": f"{bounds[s]}..{bounds[s + 1] - 1}",
                 "GFLOP": flops[s] / 1e9, "compute_s": float(compute[s]), "stage_s": float(stage_time[s])}
                for s in range(self.stages)]
        metrics = {"throughput": self.batch / period, "period": period, "max_stage_flops": float(flops.max())}
        return CostReport(metrics, plan={"cuts": bounds[1:-1].tolist(), "placement": device.tolist()},
                          tables={"stages": rows})
