"""The layers MARS maps and the tensors that flow between them (Sec. II-B, III; note §1.5, §3.5).

MARS flattens the DNN's DAG in topological order into L_1..L_N and maps **convolutions** (the
"#Convs" of Table III); fully connected layers join with ``include_fc = true`` (note §6.22), as a
loop nest with H = W = K = 1. Every other op (pooling, batch norm, activations, residual adds,
concatenations, flatten) is free and only routes tensors; so are an imported graph's other
data-movement layers (reshape, transpose, slice, copy): a consumer reads its own input's elements
from the producers behind them, in the shares they supplied (a channel shuffle keeps each
producer's share of the elements, not its channel range).

Each mapped layer is a six-dimensional loop nest (C_out, C_in, H, W, K_h, K_w) with H, W the
output extents, its stride, and the element counts of its input, output and weight tensors.

Dependencies (decision, note §3.5 "skip connections: treat the shortcut tensor as an extra input
with its own re-layout"):

* ``in`` edge u → v: v reads u's output (through free ops) as its input; ``lo, hi`` is the slice
  of v's input channels that u supplies (a concatenation gives several slices).
* ``out`` edge u → v: a residual add of u's output into v's output. The sum is formed where v's
  output lies (the add's first input, the main path), so u's output is re-laid-out to v's
  output layout; consumers of the sum read it from v.
* ``host_inputs``: layers that read a network input (sent from the host); ``host_outputs``:
  layers whose output no mapped layer consumes (sent back to the host).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optmap.errors import OptmapError
from optmap.workload import Layer, Workload

FREE_OPS = {"maxpool2d", "avgpool2d", "adaptive_avgpool2d", "batchnorm2d", "layernorm", "activation",
            "flatten", "dropout"}
INPUT = -1  # a "producer" that is the network input itself


@dataclass(frozen=True)
class LoopNest:
    """One mapped layer: extents (C_out, C_in, H, W, K_h, K_w), stride and tensor element counts."""

    name: str
    op: str
    dims: tuple[int, int, int, int, int, int]
    stride: int
    in_elems: int
    out_elems: int
    weight_elems: int

    @property
    def macs(self) -> int:
        return int(np.prod(self.dims, dtype=np.int64))


@dataclass(frozen=True)
class Edge:
    """A tensor from mapped layer ``src`` to mapped layer ``dst`` (indices in topological order)."""

    src: int
    dst: int
    kind: str  # "in" (src output → dst input) or "out" (src output added into dst output)
    elems: int  # elements moved
    lo: float = 0.0  # slice of dst's tensor channels that src supplies
    hi: float = 1.0


@dataclass(frozen=True)
class LayerGraph:
    """The mapped layers in topological order, their edges, and host traffic (element counts)."""

    layers: tuple[LoopNest, ...]
    edges: tuple[Edge, ...]
    host_inputs: tuple[tuple[int, int], ...]  # (layer, elements read from a network input)
    host_outputs: tuple[tuple[int, int], ...]  # (layer, elements sent to the host)

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def dims(self) -> np.ndarray:
        return np.array([layer.dims for layer in self.layers], dtype=float)

    @property
    def strides(self) -> np.ndarray:
        return np.array([layer.stride for layer in self.layers], dtype=float)


def loop_nest(layer: Layer) -> LoopNest:
    """The six-dimensional loop nest of a conv2d (per group) or linear layer."""
    if layer.op == "conv2d":
        kh, kw = layer.attr("kernel")
        sh, sw = layer.attr("stride")
        c_out, h, w = layer.out_shape
        c_in = layer.in_channels // layer.attr("groups", 1)
        dims = (c_out, c_in, h, w, kh, kw)
        stride = max(sh, sw)
    else:
        dims = (layer.out_channels, layer.in_channels, 1, 1, 1, 1)
        stride = 1
    return LoopNest(layer.name, layer.op, dims, stride, layer.in_elements, layer.out_elements,
                    layer.weight_elements)


Part = tuple[int, float, float]  # (producer, lo, hi) of a tensor's channels


def layer_graph(workload: Workload, include_fc: bool = False) -> LayerGraph:
    """Mapped layers, tensor edges and host traffic of ``workload`` (module docstring)."""
    mapped_ops = {"conv2d", "linear"} if include_fc else {"conv2d"}
    index: dict[str, int] = {}
    nests: list[LoopNest] = []
    edges: list[Edge] = []
    host_in: list[tuple[int, int]] = []
    parts: dict[str, list[Part]] = {}
    for layer in workload.layers():
        inputs = workload.inputs_of(layer.name)
        if layer.op == "input":
            parts[layer.name] = [(INPUT, 0.0, 1.0)]
        elif layer.op in mapped_ops:
            i = index[layer.name] = len(nests)
            nests.append(loop_nest(layer))
            elems = layer.in_elements
            for src, lo, hi in parts[inputs[0]]:
                if src == INPUT:
                    host_in.append((i, round(elems * (hi - lo))))
                else:
                    edges.append(Edge(src, i, "in", round(elems * (hi - lo)), lo, hi))
            parts[layer.name] = [(i, 0.0, 1.0)]
        elif layer.op in FREE_OPS or layer.op == "linear" or (layer.kind.data_movement and len(inputs) == 1):
            parts[layer.name] = [] if layer.op == "linear" else list(parts[inputs[0]])  # unmapped FC: a sink
        elif layer.op == "add":
            main = parts[inputs[0]]
            for other in inputs[1:]:
                for src, lo, hi in parts[other]:
                    for dst, dlo, dhi in main:
                        overlap = min(hi, dhi) - max(lo, dlo)
                        if src != dst and src != INPUT and dst != INPUT and overlap > 0:
                            edges.append(Edge(src, dst, "out", round(layer.out_elements * overlap)))
            parts[layer.name] = list(main)
        elif layer.op == "concat":
            if layer.attr("axis", 0) != 0:
                raise OptmapError(f"layer '{layer.name}': MARS concatenates along channels only (axis 0)")
            total = layer.out_shape[0]
            offset, joined = 0, []
            for name, shape in zip(inputs, layer.in_shapes):
                share = shape[0] / total
                base = offset / total
                joined += [(src, base + lo * share, base + hi * share) for src, lo, hi in parts[name]]
                offset += shape[0]
            parts[layer.name] = joined
        else:
            raise OptmapError(f"layer '{layer.name}' ({layer.op}): MARS maps convolution (and, with "
                              f"include_fc, linear) layers; this workload has an op it cannot route")
    if not nests:
        raise OptmapError(f"workload '{workload.name}' has no convolution layer for MARS to map")
    consumed = {e.src for e in edges}
    host_out = tuple((i, n.out_elems) for i, n in enumerate(nests) if i not in consumed)
    return LayerGraph(tuple(nests), tuple(edges), tuple(host_in), host_out)
