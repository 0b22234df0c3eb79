"""Slices of a workload: some of its layers as a `Workload` of their own, and where it may be cut.

A composite formulation (a pipeline of stages, each mapped by another formulation) prices each
stage on a :class:`WorkloadSlice`: the layers it holds, their edges inside the slice, and the
tensors that cross its boundary (``inputs`` arrive from layers before it, ``outputs`` leave for
layers after it). A layer whose producer lies outside the slice becomes one of its input layers;
its ``in_shapes`` still say what it receives.

:func:`cut_positions` lists where a workload in topological order can be cut into contiguous
stages such that a single tensor crosses each cut (a chain's every gap; between residual blocks,
never inside one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from optmap.errors import OptmapError
from optmap.schedule import prefix_sums
from optmap.workload.graph import Workload


@dataclass(frozen=True)
class Crossing:
    """A tensor crossing a slice's boundary: ``producer``'s output read by ``consumer``,
    ``elements`` per sample."""

    producer: str
    consumer: str
    elements: int


@dataclass(frozen=True, eq=False)
class WorkloadSlice(Workload):
    """Some layers of a parent workload as a workload of their own, with the tensors that cross
    its boundary: ``inputs`` (produced before the slice, read inside) and ``outputs`` (produced
    inside, read after). ``parent`` names the workload it was cut from."""

    parent: str = ""
    inputs: tuple[Crossing, ...] = ()
    outputs: tuple[Crossing, ...] = ()

    def crossing_elements(self, side: str = "outputs") -> int:
        """Per-sample elements crossing the boundary on ``side``, each producer's tensor once."""
        seen = {c.producer: c.elements for c in getattr(self, side)}
        return sum(seen.values())


def slice_workload(workload: Workload, layers: Iterable[str] | range | slice, batch: int | None = None,
                   name: str | None = None) -> WorkloadSlice:
    """The layers named in ``layers`` (or a ``range`` / ``slice`` of positions in
    ``workload.order``) as a :class:`WorkloadSlice`, at ``batch`` (default: the workload's)."""
    order = workload.order
    if isinstance(layers, (range, slice)):
        chosen = list(order[layers] if isinstance(layers, slice) else (order[i] for i in layers))
    else:
        chosen = list(layers)
        for n in chosen:
            workload.layer(n)  # an unknown name: one line with a suggestion
    if not chosen:
        raise OptmapError(f"workload '{workload.name}': a slice needs at least one layer")
    inside = set(chosen)
    kept = [n for n in order if n in inside]  # the parent's topological order
    producers = {v: tuple(u for u in workload.producers.get(v, ()) if u in inside) for v in kept}
    inputs = tuple(Crossing(u, v, workload.layer(u).out_elements) for v in kept
                   for u in workload.producers.get(v, ()) if u not in inside)
    outputs = tuple(Crossing(u, v, workload.layer(u).out_elements) for v in order if v not in inside
                    for u in workload.producers.get(v, ()) if u in inside)
    label = name or f"{workload.name}[{kept[0]}..{kept[-1]}]"
    return WorkloadSlice(label, {n: workload.layers_by_name[n] for n in kept},
                         {v: p for v, p in producers.items() if p}, batch if batch is not None else workload.batch,
                         workload.dtype, workload.phase, parent=workload.name, inputs=inputs, outputs=outputs)


def cut_positions(workload: Workload, before_weighted: bool = True) -> tuple[int, ...]:
    """Positions ``i`` (1 ≤ i < layers) of ``workload.order`` where cutting ``order[:i]`` from
    ``order[i:]`` leaves exactly one tensor crossing (one producer read after the cut).

    ``before_weighted`` keeps only cuts right before a weighted layer and after another one, so
    every stage holds a layer a partitioning formulation decides and starts with it (the
    element-wise tail of a layer stays with it; inputs stay with the first stage).
    """
    order = workload.order
    position = {n: i for i, n in enumerate(order)}
    last_use = {}  # producer -> position of its last consumer
    for v in order:
        for u in workload.producers.get(v, ()):
            last_use[u] = max(last_use.get(u, -1), position[v])
    cuts, live, weighted_before = [], set(), False
    for i in range(1, len(order)):
        live = {u for u in live | {order[i - 1]} if last_use.get(u, -1) >= i}
        weighted_before = weighted_before or workload.layer(order[i - 1]).weighted
        if len(live) == 1 and (not before_weighted or (weighted_before and workload.layer(order[i]).weighted)):
            cuts.append(i)
    return tuple(cuts)


def balanced_cuts(workload: Workload, positions: tuple[int, ...], groups: int) -> tuple[int, ...]:
    """At most ``groups − 1`` of ``positions`` that cut the layer order into contiguous groups of
    balanced work: the least largest group's training FLOPs (a linear-partition DP), as Alpa
    clusters operators into layers before slicing stages (Zheng et al., OSDI 2022, §5.2).
    Ties keep the earliest cuts."""
    if groups >= len(positions) + 1:
        return tuple(positions)
    flops = [workload.phase_flops(layer.flops(workload.batch)).total for layer in workload.layers()]
    prefix = prefix_sums(flops).tolist()
    edges = [0, *positions, len(flops)]
    n = len(edges) - 1  # atoms between consecutive candidate cuts
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(groups + 1)]  # best[k][j]: first j atoms in k groups
    back = [[0] * (n + 1) for _ in range(groups + 1)]
    best[0][0] = 0.0
    for k in range(1, groups + 1):
        for j in range(1, n + 1):
            for i in range(k - 1, j):
                value = max(best[k - 1][i], prefix[edges[j]] - prefix[edges[i]])
                if value < best[k][j]:
                    best[k][j], back[k][j] = value, i
    cuts, j = [], n
    for k in range(groups, 0, -1):
        j = back[k][j]
        cuts.append(j)
    return tuple(edges[i] for i in sorted(cuts) if 0 < i < n)
