"""The decisions of a pipeline: stage count, layer cuts, device boundaries, micro-batches, and
every decision of the inner formulation, as one joined design space.

- ``stages`` (1 ... the effective maximum): how many pipeline stages;
- ``cut{k}`` (k < stages): stage k+1 starts at the ``cut{k}``-th cut position of the workload
  (:func:`optmap.workload.slicing.cut_positions`: one tensor crosses, a weighted layer follows);
- ``devices{k}``: stage k+1 starts at device unit ``devices{k}``. Devices go to stages in
  contiguous ranges of whole units of ``unit`` devices (ids in the system's order), so stage 1
  holds the first layers on the first devices;
- ``microbatches``: the micro-batches of one iteration (active with two stages or more);
- the inner formulation's decisions: one copy of each decision tied to a layer (a variable
  tagged ``layer``), which the stage that holds the layer applies, under the inner name
  (``L0:conv1``); one copy per stage of every other decision (``stage2.ratio0``). A
  formulation with its own repair, or with conditions between the two kinds, is copied whole
  per stage (its repair then runs on each copy).

The repair sorts the active cuts and device boundaries and spreads equal ones apart, so every
vector is a valid pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from optmap.errors import OptmapError
from optmap.schedule import increasing_cuts
from optmap.space import DesignSpace, Part, categorical, integer, join


@dataclass(frozen=True)
class Stage:
    """One stage of a row: layers ``order[first:stop]``, device units ``[unit0, unit1)``."""

    index: int
    first: int
    stop: int
    unit0: int
    unit1: int


def default_unit(devices: int, groups: tuple[int, ...], max_stages: int) -> int:
    """Devices per unit: ``devices / parts`` for the most ``parts ≤ 2·max_stages`` whose unit
    divides every group's count, so groups start and end on unit boundaries."""
    for parts in range(2 * max_stages, 0, -1):
        if devices % parts == 0 and all(count % (devices // parts) == 0 for count in groups):
            return devices // parts
    return 1


class Structure:
    """The joined space of a pipeline over ``template`` (the inner formulation on the whole
    workload and system) and how to read a row's stages from it."""

    def __init__(self, template_space: DesignSpace, positions: tuple[int, ...], layers: int, units: int,
                 max_stages: int, microbatches: tuple[int, ...]) -> None:
        self.positions, self.layers, self.units = positions, layers, units
        self.bounds = np.array([0, *positions, layers])  # layer boundaries a stage may start or end at
        self.max_stages = max(1, min(max_stages, len(positions) + 1, units))
        self.microbatches = microbatches if self.max_stages > 1 else (1,)
        S = self.max_stages
        head = [integer("stages", 1, S)]
        for k in range(1, S):
            more = {"stages": list(range(k + 1, S + 1))}
            head += [integer(f"cut{k}", 1, len(positions), active_if=more),
                     integer(f"devices{k}", 1, units - 1, active_if=more)]
        if S > 1:
            head.append(categorical("microbatches", self.microbatches, active_if={"stages": list(range(2, S + 1))}))
        self.parts = self._parts(template_space)
        self.joined = join(self.parts, head, repair=self._repair)
        self.space = self.joined.space
        self._stages_col = self.space.index("stages")

    def _parts(self, template: DesignSpace) -> list[Part]:
        per_layer = [v for v in template.variables if v.tag("layer") is not None]
        other = [v for v in template.variables if v.tag("layer") is None]
        names = {v.name for v in per_layer}
        crossing = any(parent not in names for v in per_layer for parent, _ in v.active_if) or \
            any(parent in names for v in other for parent, _ in v.active_if)
        whole = template.custom_repair is not None or template.custom_sample is not None or crossing
        shared, copied = ([], list(template.variables)) if whole else (per_layer, other)
        self.copies_whole = whole
        parts = [Part("", DesignSpace(shared))] if shared else []
        if copied:
            space = template if whole else DesignSpace(copied)
            parts += [Part(f"stage{k}", space, (("stages", tuple(range(k, self.max_stages + 1))),))
                      for k in range(1, self.max_stages + 1)]
        return parts

    def joined_name(self, inner: str, stage: int, layer_tagged: bool) -> str:
        """Where the inner decision ``inner`` of stage ``stage`` (1-based) sits in the joined space."""
        return inner if layer_tagged and not self.copies_whole else f"stage{stage}.{inner}"

    def _repair(self, X: np.ndarray) -> np.ndarray:
        X = np.array(X, float)
        S = np.round(X[:, self._stages_col]).astype(int)
        for s in np.unique(S):
            rows = S == s
            if s < 2:
                continue
            for name, high in (("cut", len(self.positions)), ("devices", self.units - 1)):
                cols = [self.space.index(f"{name}{k}") for k in range(1, s)]
                X[np.ix_(rows, cols)] = increasing_cuts(X[np.ix_(rows, cols)], 1, high)
        return X

    # --- reading rows -------------------------------------------------------------------------
    def key(self, x: np.ndarray) -> tuple:
        """(stages, cut indices, device boundaries, micro-batches) of one repaired row."""
        S = int(round(x[self._stages_col]))
        cuts = tuple(int(x[self.space.index(f"cut{k}")]) for k in range(1, S))
        units = tuple(int(x[self.space.index(f"devices{k}")]) for k in range(1, S))
        m = self.microbatches[int(x[self.space.index("microbatches")])] if S > 1 else 1
        return S, cuts, units, m

    def stages(self, key: tuple) -> list[Stage]:
        """The stages of a row's ``key``: layer and device-unit ranges."""
        S, cuts, units, _ = key
        layer_edges = [0, *(int(self.bounds[c]) for c in cuts), self.layers]
        unit_edges = [0, *units, self.units]
        return [Stage(k, layer_edges[k], layer_edges[k + 1], unit_edges[k], unit_edges[k + 1]) for k in range(S)]

    def head_values(self, S: int, cuts, units, m: int) -> dict:
        """The head decisions by name, for :meth:`DesignSpace.encode`."""
        values = {"stages": S}
        for k in range(1, S):
            values[f"cut{k}"], values[f"devices{k}"] = int(cuts[k - 1]), int(units[k - 1])
        if S > 1:
            values["microbatches"] = m
        return values


def check_microbatches(candidates: tuple[int, ...], batch: int) -> tuple[int, ...]:
    """The candidates that divide ``batch`` (at least 1 is always one)."""
    if any(m < 1 for m in candidates):
        raise OptmapError(f"microbatches must be whole numbers >= 1, got {list(candidates)}")
    kept = tuple(sorted({m for m in candidates if batch % m == 0} | {1}))
    return kept
