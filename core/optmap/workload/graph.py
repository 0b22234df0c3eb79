"""`Workload`: a DAG of layers plus batch size, dtype and phase."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import networkx as nx

from optmap.errors import OptmapError, did_you_mean
from optmap.workload.layer import PASSES, PHASE_PASSES, Layer, check_phase, dtype_bytes
from optmap.workload.ops import LayerFlops
from optmap.workload.views import BlockItem, Node, series_parallel_view


@dataclass(frozen=True, eq=False)
class Workload:
    """A DNN workload: a DAG of layers plus batch size, dtype and phase.

    ``graph`` nodes are layer names with node attribute ``"layer"`` (a :class:`Layer`); edges go
    producer -> consumer with attribute ``"index"`` = the consumer's input position.
    """

    name: str
    graph: nx.DiGraph
    batch: int
    dtype: str = "fp32"
    phase: str = "training"

    def __post_init__(self) -> None:
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch <= 0:
            raise OptmapError(f"workload '{self.name}': batch must be a positive integer, got {self.batch!r}")
        dtype_bytes(self.dtype)
        check_phase(self.phase, f"workload '{self.name}'")
        if not nx.is_directed_acyclic_graph(self.graph):
            raise OptmapError(f"workload '{self.name}': the layer graph has a cycle")
        for n, data in self.graph.nodes(data=True):
            if not isinstance(data.get("layer"), Layer) or data["layer"].name != n:
                raise OptmapError(f"workload '{self.name}': node '{n}' lacks a Layer named '{n}'")

    # --- layers -------------------------------------------------------------------------------
    @cached_property
    def order(self) -> tuple[str, ...]:
        """Layer names in a deterministic topological order (insertion order where free)."""
        rank = {n: i for i, n in enumerate(self.graph.nodes)}
        return tuple(nx.lexicographical_topological_sort(self.graph, key=rank.__getitem__))

    def layers(self) -> tuple[Layer, ...]:
        """All layers in a deterministic topological order (insertion order where free)."""
        return tuple(self.graph.nodes[n]["layer"] for n in self.order)

    def layer(self, name: str) -> Layer:
        """The layer called ``name``."""
        if name not in self.graph:
            hint = did_you_mean(str(name), self.graph.nodes)
            raise OptmapError(f"workload '{self.name}' has no layer '{name}'{hint}")
        return self.graph.nodes[name]["layer"]

    def weighted_layers(self) -> tuple[Layer, ...]:
        """The weighted layers (conv2d, linear, matmul) in topological order."""
        return tuple(layer for layer in self.layers() if layer.weighted)

    def inputs_of(self, name: str) -> tuple[str, ...]:
        """Producers of ``name``'s inputs, ordered by input position."""
        self.layer(name)
        preds = self.graph.in_edges(name, data="index")
        return tuple(u for u, _, i in sorted(preds, key=lambda e: e[2]))

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
        """One row per layer for tables: op, output shape, parameters, training FLOPs at this batch."""
        rows = []
        for layer in self.layers():
            total = self.phase_flops(layer.flops(self.batch)).total
            rows.append({"layer": layer.name, "op": layer.op, "output": "x".join(map(str, layer.out_shape)),
                         "params": layer.params, "GFLOP": total / 1e9})
        return rows

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
