"""The composite ``pipeline`` formulation: pipeline stages whose inside any registered formulation maps.

The workload's layers, in topological order, are cut into ``stages`` contiguous stages (cuts
where one tensor crosses), the system's devices into as many contiguous ranges of whole units;
each stage is priced by the inner formulation (``[cost.stage] model = "accpar"``, with its own
options) on its slice of the workload at the micro-batch size and on its sub-system, with the
inner decisions the mapping holds (:mod:`.structure`). Per micro-batch a stage takes its inner
``time`` plus its sends (:mod:`.stages`). One iteration of ``m`` micro-batches takes the
schedule's time over the stages (:func:`optmap.schedule.pipeline_time`: GPipe and 1F1B take the
same time). Memory per device: the inner ``memory_bytes`` of one micro-batch plus the activations
of the micro-batches the schedule keeps in flight beyond it (:func:`optmap.schedule.in_flight`),
spread evenly over the stage's devices. With ``max_stages = 1`` the formulation is exactly the
inner one.

Each micro-batch is priced as the inner formulation prices a step of that batch, so a gradient
exchange the inner model counts per step is counted per micro-batch (an upper bound: frameworks
accumulate gradients and exchange them once per iteration).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

import numpy as np
from optmap.bounds import MAX_BATCH, ints
from optmap.cost import BATCH, CostModel, CostReport, LayerCost, missing
from optmap.errors import OptmapError
from optmap.host import call_with_options
from optmap.schedule import bubble_time, in_flight, pipeline_time
from optmap.workload.slicing import balanced_cuts, cut_positions

from .stages import StagePricer
from .structure import Structure, check_microbatches, default_unit

# Capability the native joint engine needs: stages priced one by one (``stage_table``).
PIPELINE_STAGES = "pipeline_stages"


class PipelineCostModel(CostModel):
    """Pipeline stages × any registered formulation inside each stage, decided jointly."""

    formulation = 'the composite pipeline formulation ([cost] model = "pipeline")'
    capabilities = frozenset({BATCH, PIPELINE_STAGES})
    default_engine = "pipeline"
    metrics = ("time", "memory_bytes", "bubble_time", "period", "stages", "microbatches")

    def __init__(
        self,
        workload,
        system,
        *,
        stage: dict[str, Any],
        max_stages: ints(1, 64) = 4,
        schedule: Literal["1f1b", "gpipe"] = "1f1b",
        microbatches: tuple[ints(1, MAX_BATCH), ...] = (1, 2, 4, 8, 16, 32),
        device_unit: ints(1, 2**30) | None = None,
        layer_groups: ints(1, 10_000) = 8,
        cross_groups: bool = False,
        check_memory: bool = True,
        host=None,
    ) -> None:
        """``stage``: the inner formulation, ``{model = "<cost model>", <its options>}``
        (``[cost.stage]``); ``max_stages``: most stages (1: exactly the inner formulation);
        ``schedule``: "1f1b" or "gpipe" (same time, different activations in flight);
        ``microbatches``: the micro-batch counts to choose from (those dividing the batch);
        ``device_unit``: devices per unit of the device split (default: the count over the most
        parts ≤ 2·max_stages whose unit divides every group); ``layer_groups``: cut only between
        this many groups of layers of balanced FLOPs (Alpa's operator clustering, §5.2; the
        search grows with its square); ``cross_groups``: a stage of a pipeline may hold devices
        of several groups (off: every stage lies in one group, as an Alpa submesh lies in its
        hosts, and one-kind stages need no heterogeneous split); ``check_memory``: a mapping
        whose stage exceeds its devices' memory is infeasible."""
        options = dict(stage)
        name = options.pop("model", None)
        if not isinstance(name, str):
            raise OptmapError('[cost.stage] needs model = "<cost model>", the formulation inside each stage '
                              '(e.g. model = "accpar")')
        if host is None:
            raise OptmapError("the pipeline formulation builds its inner one through the host: build it with "
                              "optmap.load or Host.build")
        entry = host.get("cost_model", name)
        self.inner_name, self.inner_options = name, options
        self._factory, self._plugin = entry.resolve(), entry.plugin
        self._where = f"[cost.stage] model '{name}'"
        self.template = self._build_inner(workload, system)
        if "time" not in self.template.metrics:
            raise OptmapError(f"{self._where}: the pipeline composes stage times, but '{name}' reports no 'time' "
                              f"metric (it reports {', '.join(self.template.metrics)})")
        unit = device_unit or default_unit(system.count, tuple(g.count for g in system.groups), max_stages)
        if system.count % unit:
            raise OptmapError(f"device_unit = {unit} does not divide the system's {system.count} devices")
        self.workload, self.system, self.schedule, self.check_memory = workload, system, schedule, check_memory
        self.cross_groups = cross_groups
        positions = balanced_cuts(workload, cut_positions(workload), layer_groups)
        self.structure = Structure(self.template.space, positions, len(workload.order),
                                   system.count // unit, max_stages, check_microbatches(microbatches, workload.batch))
        self.space = self.structure.space
        self.pricer = StagePricer(workload, system, self.structure, unit, self._build_inner)
        self.inner_engine = getattr(self.template, "default_engine", None)
        self.topologies = getattr(self.template, "topologies", None)  # what the inner model prices
        self.system_options = getattr(self.template, "system_options", None)

    def _build_inner(self, workload, system):
        model = call_with_options(self._where, self._factory, self.inner_options, workload, system,
                                  plugin=self._plugin)
        absent = missing(model)
        if absent:
            raise OptmapError(f"{self._where}: plugin '{self._plugin}' returned {type(model).__name__}, not {absent}")
        return model

    # --- scoring --------------------------------------------------------------------------------
    def _score(self, key: tuple, X: np.ndarray) -> tuple[dict[str, np.ndarray], list[dict]]:
        """The metrics of rows ``X`` that share one pipeline ``key``, and per stage its parts."""
        S, _, _, m = key
        n = len(X)
        times, memory = np.zeros((n, S)), np.zeros((n, S))
        feasible = np.ones(n, bool)
        parts = []
        for stage in self.structure.stages(key):
            built = self.pricer.stage(stage, m)
            Y = self.pricer.vectors(built, stage.index + 1, X)
            inner = self.pricer.score(built, Y)
            times[:, stage.index] = inner["time"] + built.send_s  # busy while sending (stages.py)
            extra = (in_flight(S, m, stage.index, self.schedule) - 1) * built.activation_bytes  # schedule's in-flight
            memory[:, stage.index] = np.nan_to_num(inner.get("memory_bytes", np.zeros(n))) + extra
            fits = memory[:, stage.index] <= built.capacity if self.check_memory else True
            feasible &= np.asarray(inner["feasible"], bool) & fits & self.allowed(built, S)
            parts.append({"stage": stage, "built": built, "Y": Y, "inner": inner})
        metrics = {
            "time": pipeline_time(times, m),  # optmap.schedule: m·max + (Σ − max)
            "memory_bytes": memory.max(axis=1),
            "bubble_time": bubble_time(times),
            "period": times.max(axis=1),
            "stages": np.full(n, float(S)),
            "microbatches": np.full(n, float(m)),
            "feasible": feasible,
        }
        return metrics, parts

    def prepare(self, rows: int) -> None:
        """Let the inner formulation set itself up once for a search of ``rows`` plans (AccPar
        loads its compiled kernel), off the search's clock (``Evaluator.prepare``)."""
        prepare = getattr(self.template, "prepare", None)
        if callable(prepare):
            prepare(rows)

    def allowed(self, built, stages: int) -> bool:
        """Whether a stage's devices may come from several groups (``cross_groups``)."""
        return self.cross_groups or stages == 1 or built.groups == 1

    def evaluate_batch(self, X: np.ndarray) -> dict[str, np.ndarray]:
        X = np.atleast_2d(np.asarray(X, float))
        out = {name: np.full(len(X), np.nan) for name in self.metrics}
        out["feasible"] = np.zeros(len(X), bool)
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, x in enumerate(X):
            groups[self.structure.key(x)].append(i)
        for key, rows in groups.items():
            metrics, _ = self._score(key, X[rows])
            for name, values in metrics.items():
                out[name][rows] = values
        return out

    def evaluate(self, mapping) -> CostReport:
        x = np.asarray(mapping.array, float)[None]
        key = self.structure.key(x[0])
        metrics, parts = self._score(key, x)
        names = self.workload.order
        rows, children, layers, reasons = [], {}, [], []
        for part in parts:
            stage, built, inner = part["stage"], part["built"], part["inner"]
            label = f"stage{stage.index + 1}"
            child = built.model.evaluate(built.model.space.decode(part["Y"][0]))
            children[label] = child
            layers += [LayerCost(row.name, row.compute, row.communication, row.memory_bytes,
                                 {"stage": stage.index + 1, **row.decisions}) for row in child.layers]
            if not child.feasible:
                reasons.append(f"{label}: {child.reason or 'infeasible'}")
            memory = float(np.nan_to_num(inner.get("memory_bytes", np.zeros(1)))[0])
            rows.append({"stage": stage.index + 1, "layers": f"{names[stage.first]}..{names[stage.stop - 1]}",
                         "devices": f"{built.devices[0]}..{built.devices[-1]}",
                         "inner_s": float(inner["time"][0]), "send_s": built.send_s,
                         "seconds": float(inner["time"][0]) + built.send_s, "memory_bytes": memory,
                         "capacity_bytes": built.capacity})
        values = {name: float(metrics[name][0]) for name in self.metrics}
        feasible = bool(metrics["feasible"][0])
        if not feasible and not reasons:
            straddles = [r["stage"] for p, r in zip(parts, rows) if not self.allowed(p["built"], key[0])]
            reasons.append(f"stage {straddles[0]} holds devices of several groups (set cross_groups = true to allow it)"
                           if straddles else "a stage's memory (its micro-batches in flight included) exceeds its "
                                             "devices'")
        plan = {"stages": key[0], "micro_batches": key[3], "schedule": self.schedule, "inner": self.inner_name,
                "stage_layers": [r["layers"] for r in rows], "stage_devices": [r["devices"] for r in rows]}
        return CostReport(values, feasible, "; ".join(reasons), tuple(layers), plan, {"stages": rows}, children)
