"""One pipeline stage priced by the inner formulation: its slice of the workload on its devices.

A stage holding layers ``order[first:stop]`` on device units ``[unit0, unit1)`` with ``m``
micro-batches is the inner formulation built (through the host, by its registered name) on
:func:`~optmap.workload.slicing.slice_workload` at the micro-batch size and on
:func:`~optmap.system.subsystem.sub_system` of those devices. Built once and kept.

Per micro-batch the stage also moves the tensor crossing its cut: forward activations to the
next stage and, in training, their gradients back to the previous one, each at the rate
:func:`~optmap.system.subsystem.stage_transfer` gives (every device of the sending stage sends
its share at once). The stage is busy while it sends (``send + compute``), as the LLM planner
prices Megatron's blocking point-to-point transfers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from optmap.cost import evaluate_batch
from optmap.schedule import transfer_time
from optmap.space import DesignSpace
from optmap.system.subsystem import groups_of, stage_transfer, sub_system
from optmap.workload import PHASE_PASSES
from optmap.workload.slicing import slice_workload

from .structure import Stage, Structure


@dataclass(eq=False)
class StageModel:
    """One stage: what the pipeline adds to it, and its inner cost model (built on first use,
    shared by every stage whose slice, micro-batch and devices are alike: :func:`signature`)."""

    devices: tuple[int, ...]
    send_s: float  # this stage's sends per micro-batch: activations forward, gradients back
    activation_bytes: float  # bytes per device of one micro-batch's stored activations
    capacity: float  # the smallest memory of its devices (bytes)
    groups: int  # the system's groups its devices come from
    key: tuple  # (first layer, stop, micro-batches, signature): stages with one key share a model
    build: Callable[[], Any] = field(repr=False)
    _model: Any = field(default=None, repr=False)

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = self.build()
        return self._model


def signature(system, devices: Sequence[int]) -> tuple:
    """What a stage's devices are to a formulation: their accelerators in order and the links
    between neighbours. Ranges with one signature are priced once (exact for the topologies whose
    links depend only on the groups, e.g. hierarchical or switched; on a ring or torus, ranges
    that look alike to their neighbours may still differ in the paths beyond them)."""
    kinds = tuple(system.devices[d].name for d in devices)
    links = tuple((system.path_bandwidth(a, b), system.path_latency(a, b)) for a, b in zip(devices, devices[1:]))
    return kinds, links


class StagePricer:
    """Builds, keeps and translates the stage models of one pipeline problem."""

    def __init__(self, workload, system, structure: Structure, unit: int, build_inner) -> None:
        self.workload, self.system, self.structure, self.unit = workload, system, structure, unit
        self.build_inner = build_inner  # (slice, sub-system) -> inner cost model
        self.training = "backward_data" in PHASE_PASSES[workload.phase]
        self._names = set(structure.space.names)
        self._stages: dict[tuple, StageModel] = {}
        self._models: dict[tuple, Any] = {}
        self._signatures: dict[tuple, tuple] = {}
        self._sources: dict[tuple, Any] = {}  # (stage model, stage[, "columns"]) -> its joined decisions

    def __getstate__(self) -> dict:
        """Without the kept stages and models (a worker process builds its own)."""
        return {**self.__dict__, "_stages": {}, "_models": {}, "_sources": {}}

    def stage(self, stage: Stage, m: int) -> StageModel:
        """The stage ``stage`` with ``m`` micro-batches per iteration."""
        key = (stage.first, stage.stop, stage.unit0, stage.unit1, m)
        built = self._stages.get(key)
        if built is None:
            built = self._stages[key] = self._frame(stage, m)
        return built

    def _frame(self, stage: Stage, m: int) -> StageModel:
        wl, unit = self.workload, self.unit
        devices = tuple(range(stage.unit0 * unit, stage.unit1 * unit))
        part = slice_workload(wl, range(stage.first, stage.stop), batch=wl.batch // m)
        element = wl.bytes_per_element * (wl.batch // m)  # bytes of one element per sample of a micro-batch
        send = 0.0
        if stage.stop < self.structure.layers:  # activations to the next stage
            rate, latency = stage_transfer(self.system, devices, (stage.unit1 * unit,))
            send += float(transfer_time(part.crossing_elements("outputs") * element, rate, latency))
        if stage.first > 0 and self.training:  # gradients back to the previous stage
            rate, latency = stage_transfer(self.system, devices[::-1], (stage.unit0 * unit - 1,))
            send += float(transfer_time(part.crossing_elements("inputs") * element, rate, latency))
        stored = sum(layer.out_elements for layer in part.layers()) * element if self.training else 0.0
        groups = groups_of(self.system, devices)
        capacity = min(group.accelerator.memory_bytes for group, _ in groups)
        span = (stage.unit0, stage.unit1)
        if span not in self._signatures:
            self._signatures[span] = signature(self.system, devices)
        key = (stage.first, stage.stop, m, self._signatures[span])
        return StageModel(devices, send, stored / len(devices), capacity, len(groups), key,
                          lambda: self._model(key, part, devices))

    def _model(self, key: tuple, part, devices: tuple[int, ...]) -> Any:
        if key not in self._models:
            self._models[key] = self.build_inner(part, sub_system(self.system, devices))
        return self._models[key]

    def sources(self, built: StageModel, stage: int) -> list[str | None]:
        """Per variable of ``built``'s space as stage ``stage`` (1-based), the joined decision it
        reads: the same name (a layer's decision) or ``stage<k>.<name>``; failing that, the
        stage's copy of a decision of the same kind and tags (AccPar names a share after its
        side, ``share[L0:2xtpu-v2]``, which a smaller stage calls ``share[L0:1xtpu-v2]``)."""
        key = (id(built.model), stage)
        if key not in self._sources:
            joined, used, names = self.structure.space, set(), []
            for v in built.model.space.variables:
                name = self.structure.joined_name(v.name, stage, v.tag("layer") is not None)
                if name not in self._names or not _alike(joined.variables[joined.index(name)], v):
                    prefix = f"stage{stage}."
                    name = next((u.name for u in joined.variables if u.name.startswith(prefix) and u.name not in used
                                 and _alike(u, v) and tuple(t for t in u.tags if t[0] != "part") == v.tags), None)
                used.add(name)
                names.append(name)
            self._sources[key] = names
        return self._sources[key]

    def translation(self, built: StageModel, stage: int) -> tuple[np.ndarray, list]:
        """For each column of the stage's space, the joined column holding its decision (-1: none,
        the stage's first value) and a code table for a categorical whose choices differ."""
        key = (id(built.model), stage, "columns")
        if key not in self._sources:
            joined = self.structure.space
            columns, lookup = [], []
            for v, name in zip(built.model.space.variables, self.sources(built, stage)):
                if name is None:
                    columns += [-1] * v.width
                    lookup += [None] * v.width
                    continue
                source = joined.variables[joined.index(name)]
                columns += list(range(joined.columns(name).start, joined.columns(name).stop))
                lookup += [np.array([v.choices.index(c) if c in v.choices else 0 for c in source.choices], float)
                           if v.kind == "categorical" else None] * v.width
            self._sources[key] = (np.array(columns, int), lookup)
        return self._sources[key]

    def vectors(self, built: StageModel, stage: int, X: np.ndarray) -> np.ndarray:
        """Rows of the joined space as rows of stage ``stage``'s own space (repaired)."""
        space = built.model.space
        columns, lookup = self.translation(built, stage)
        Y = np.tile(space.lower, (len(X), 1))
        for j, (col, table) in enumerate(zip(columns, lookup)):
            if col < 0:
                continue
            Y[:, j] = X[:, col] if table is None else table[np.round(X[:, col]).astype(int)]
        return space.repair(Y)

    def joined_values(self, built: StageModel, y: np.ndarray, stage: int) -> dict[str, Any]:
        """A stage's own decisions (vector ``y``) by their joined names."""
        mapping = built.model.space.decode(y).as_dict()
        return {name: mapping[v.name] for v, name in zip(built.model.space.variables, self.sources(built, stage))
                if name is not None and v.name in mapping}

    def score(self, built: StageModel, Y: np.ndarray) -> dict[str, np.ndarray]:
        """The inner metrics of rows ``Y`` of the stage's space (one vectorised call)."""
        return evaluate_batch(built.model, Y)


def _alike(a, b) -> bool:
    """Two variables a value can pass between: the same kind and width."""
    return a.kind == b.kind and a.width == b.width
