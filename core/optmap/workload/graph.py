"""`Workload`: a DAG of layers plus batch size, dtype and phase.

The layers and their producers are plain dictionaries; the networkx view (:attr:`Workload.graph`)
is built on first use, so a formulation that reads the layers in order never pays networkx's
import (0.16–0.2 s, most of a small problem's run; issues 14 and 16).

A cost model that reads only a summary of the model (``megatron-3d`` reads a transformer's
``TransformerConfig``) need not pay for its layers at all: Llama 3.1 405B's graph has about 6,000,
most of the time of loading its problem (issue 25). A :class:`DeferredGraph` holds a factory that
returns a Workload, built and checked as any other; its ``layers_by_name`` and ``producers`` are
mappings that call the factory once, on the first access of either, and read the built workload's.
A Workload given both checks its graph then, not at once.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from optmap.errors import OptmapError, did_you_mean
from optmap.workload.layer import PASSES, PHASE_PASSES, Layer, check_phase, dtype_bytes
from optmap.workload.ops import LayerFlops
from optmap.workload.views import BlockItem, Node, series_parallel_view

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True, eq=False)
class Workload:
    """A DNN workload: a DAG of layers plus batch size, dtype and phase.

    ``layers_by_name`` maps each layer's name to its :class:`Layer` (insertion order);
    ``producers`` maps a layer's name to the layers feeding its inputs, by input position (layers
    without inputs may be left out). :meth:`from_graph` takes a networkx graph instead. Both may
    be the mappings of one :class:`DeferredGraph`, built on first use.
    """

    name: str
    layers_by_name: Mapping[str, Layer]
    producers: Mapping[str, tuple[str, ...]]
    batch: int
    dtype: str = "fp32"
    phase: str = "training"

    def __post_init__(self) -> None:
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch <= 0:
            raise OptmapError(f"workload '{self.name}': batch must be a positive integer, got {self.batch!r}")
        dtype_bytes(self.dtype)
        check_phase(self.phase, f"workload '{self.name}'")
        if isinstance(self.layers_by_name, DeferredMapping) and self.layers_by_name.graph.owns(
                self.layers_by_name, self.producers):
            return  # a deferred graph is checked as it is built, on first use (DeferredGraph)
        for n, layer in self.layers_by_name.items():
            if not isinstance(layer, Layer) or layer.name != n:
                raise OptmapError(f"workload '{self.name}': node '{n}' lacks a Layer named '{n}'")
        for v, inputs in self.producers.items():
            for u in (v, *inputs):
                if u not in self.layers_by_name:
                    raise OptmapError(f"workload '{self.name}': edge into '{v}' names an unknown layer '{u}'")
        self.order  # noqa: B018 -- sorts the layers once, which also rejects a cycle

    @classmethod
    def from_graph(cls, name: str, graph: nx.DiGraph, batch: int, dtype: str = "fp32",
                   phase: str = "training") -> Workload:
        """A workload from a networkx graph: node attribute ``"layer"`` (a :class:`Layer`), edges
        producer -> consumer with attribute ``"index"`` = the consumer's input position."""
        layers = {n: data.get("layer") for n, data in graph.nodes(data=True)}
        producers = {v: tuple(u for u, _, _ in sorted(graph.in_edges(v, data="index"), key=lambda e: e[2]))
                     for v in graph.nodes if graph.in_degree(v)}
        return cls(name, layers, producers, batch, dtype, phase)

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The layers as a networkx DiGraph (built on first use): nodes are layer names with
        attribute ``"layer"``; edges go producer -> consumer with attribute ``"index"``."""
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from((n, {"layer": layer}) for n, layer in self.layers_by_name.items())
        graph.add_edges_from((u, v, {"index": i}) for v in self.layers_by_name
                             for i, u in enumerate(self.producers.get(v, ())))
        return graph

    # --- layers -------------------------------------------------------------------------------
    @cached_property
    def order(self) -> tuple[str, ...]:
        """Layer names in a deterministic topological order (insertion order where free)."""
        rank = {n: i for i, n in enumerate(self.layers_by_name)}
        waiting = {n: len(self.producers.get(n, ())) for n in rank}
        consumers: dict[str, list[str]] = {n: [] for n in rank}
        for v, inputs in self.producers.items():
            for u in inputs:
                consumers[u].append(v)
        ready = [rank[n] for n, count in waiting.items() if count == 0]
        heapq.heapify(ready)  # Kahn's algorithm, the lowest insertion rank first (as networkx's lexicographical sort)
        names, order = list(rank), []
        while ready:
            n = names[heapq.heappop(ready)]
            order.append(n)
            for v in consumers[n]:
                waiting[v] -= 1
                if waiting[v] == 0:
                    heapq.heappush(ready, rank[v])
        if len(order) != len(names):
            raise OptmapError(f"workload '{self.name}': the layer graph has a cycle")
        return tuple(order)

    def layers(self) -> tuple[Layer, ...]:
        """All layers in a deterministic topological order (insertion order where free)."""
        return tuple(self.layers_by_name[n] for n in self.order)

    def layer(self, name: str) -> Layer:
        """The layer called ``name``."""
        if name not in self.layers_by_name:
            hint = did_you_mean(str(name), self.layers_by_name)
            raise OptmapError(f"workload '{self.name}' has no layer '{name}'{hint}")
        return self.layers_by_name[name]

    def weighted_layers(self) -> tuple[Layer, ...]:
        """The weighted layers (conv2d, linear, matmul) in topological order."""
        return tuple(layer for layer in self.layers() if layer.weighted)

    def inputs_of(self, name: str) -> tuple[str, ...]:
        """Producers of ``name``'s inputs, ordered by input position."""
        self.layer(name)
        return tuple(self.producers.get(name, ()))

    def input_elements_of(self, name: str, index: int = 0) -> int:
        """Per-sample elements that ``name`` receives at input ``index`` (after any collapsed pool/flatten)."""
        return math.prod(self.layer(name).in_shapes[index])

    # --- totals -------------------------------------------------------------------------------
    @property
    def params(self) -> int:
        """Total trainable parameters."""
        return sum(layer.params for layer in self.layers())

    @property
    def macs(self) -> int:
        """Total MACs of one sample's forward pass."""
        return sum(layer.macs for layer in self.layers())

    def flops(self) -> LayerFlops:
        """Total FLOPs for the whole batch, of the passes the phase runs (inference: forward only)."""
        total = sum((layer.flops(self.batch) for layer in self.layers()), LayerFlops())
        return self.phase_flops(total)

    def phase_flops(self, flops: LayerFlops) -> LayerFlops:
        """``flops`` with the passes this workload's phase does not run set to zero."""
        runs = PHASE_PASSES[self.phase]
        return LayerFlops(*(getattr(flops, p) if p in runs else 0 for p in PASSES))

    @property
    def bytes_per_element(self) -> int:
        """Bytes per tensor element of this workload's dtype."""
        return dtype_bytes(self.dtype)

    # --- structural views ---------------------------------------------------------------------
    def describe(self) -> list[dict[str, object]]:
        """One row per layer for tables: op, output shape, parameters, and the FLOPs of the passes
        the phase runs at this batch (training: forward and backward; inference: forward), the
        column named after them."""
        column = f"{self.phase} GFLOP"
        rows = []
        for layer in self.layers():
            total = self.phase_flops(layer.flops(self.batch)).total
            rows.append({"layer": layer.name, "op": layer.op, "output": "x".join(map(str, layer.out_shape)),
                         "params": layer.params, column: total / 1e9})
        return rows

    def totals(self) -> str:
        """The model's totals, a few short lines: trainable parameters, and the FLOPs of one step at
        this batch, forward alone and for training (forward + backward: data and weight gradients)."""
        passes = sum((layer.flops(self.batch) for layer in self.layers()), LayerFlops())

        def giga(flops: int) -> str:
            value = flops / 1e9
            return f"{value:,.0f}" if value >= 1000 else f"{value:.4g}"

        return (f"model totals, one step of batch {self.batch}:\n"
                f"  parameters      {self.params:,}\n"
                f"  forward GFLOP   {giga(passes.forward)}\n"
                f"  training GFLOP  {giga(passes.total)} (forward + backward)")

    def is_chain(self) -> bool:
        """True when the weighted layers form a simple chain (no forks or merges)."""
        try:
            view = self.block_view()
        except OptmapError:
            return False
        return all(isinstance(it, Node) and self.layer(it.name).weighted for it in view)


    def block_view(self) -> tuple[BlockItem, ...]:
        """The series-parallel view for layer-wise DPs (:func:`optmap.workload.views.series_parallel_view`)."""
        return series_parallel_view(self)


class DeferredGraph:
    """A layer graph that ``build`` makes on first use. ``build`` must pickle (a module-level
    function or a ``functools.partial`` of one) so that workloads travel to workers."""

    def __init__(self, build: Callable[[], Workload]) -> None:
        self.build = build
        self.layers_by_name = DeferredMapping(self, "layers_by_name")
        self.producers = DeferredMapping(self, "producers")

    @cached_property
    def built(self) -> Workload:
        """The workload ``build`` returns (its own checks run as it is made)."""
        return self.build()

    def owns(self, layers_by_name: Mapping, producers: Mapping) -> bool:
        """True when ``layers_by_name`` and ``producers`` are this graph's mappings."""
        return layers_by_name is self.layers_by_name and producers is self.producers


class DeferredMapping(Mapping):
    """One mapping (``layers_by_name`` or ``producers``) of a :class:`DeferredGraph`'s workload."""

    def __init__(self, graph: DeferredGraph, field: str) -> None:
        self.graph = graph
        self._field = field

    @property
    def _built(self) -> Mapping:
        return getattr(self.graph.built, self._field)

    def __getitem__(self, key: str) -> Any:
        return self._built[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built)

    def __len__(self) -> int:
        return len(self._built)

    def __contains__(self, key: object) -> bool:
        return key in self._built

    def get(self, key: str, default: Any = None) -> Any:
        return self._built.get(key, default)

    def keys(self):
        return self._built.keys()

    def items(self):
        return self._built.items()

    def values(self):
        return self._built.values()

    def __repr__(self) -> str:
        built = "built" if "built" in self.graph.__dict__ else "not built yet"
        return f"<{self._field} of a deferred layer graph, {built}>"
