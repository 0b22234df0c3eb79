"""The workload IR: `Layer` (op kind + per-sample shapes + attributes) and `Workload` (a DAG of layers).

Conventions, shared by every cost model:

- Shapes are per sample, without the batch dimension: ``(C, H, W)`` for images, ``(F,)`` or
  ``(T, F)`` for feature vectors/sequences. Rank-3 tensors are channels-first ``(C, H, W)`` except
  for ``matmul``, whose operands are always features-last ``(..., M, K)``.
- "Weighted" layers are the tensor contractions conv2d / linear / matmul (AccPar's CONV/FC layers,
  the partitionable states of a layer-wise DP). Norm layers have parameters but are not weighted.
- FLOPs: a weighted layer's forward is 2 x MACs per sample; its backward_data and weight_grad are
  each equal to the forward (the two transposed products have the same MAC count). Bias additions
  are neglected. Element-wise, norm and pooling layers count one FLOP per output element (pooling:
  kernel elements per output element) forward and the same backward; norm layers, which have
  affine parameters, also count one FLOP per output element for their weight gradient. ``matmul``
  multiplies two activations, so its backward_data is 2 x forward and its weight_grad is 0.
  ``input``, ``flatten`` and ``concat`` move data only and count 0 FLOPs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

from optmap.errors import OptmapError, did_you_mean

DTYPE_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
PHASES = ("training", "inference")

# The op vocabulary. Adding an op ("attention", "lstm", ...) means adding it here and to the
# shape/params/MACs/FLOPs cases of `Layer` and a method of `WorkloadBuilder`.
OPS = frozenset({
    "input", "conv2d", "linear", "maxpool2d", "avgpool2d", "adaptive_avgpool2d", "batchnorm2d",
    "layernorm", "activation", "add", "concat", "flatten", "dropout", "matmul",
})
WEIGHTED_OPS = frozenset({"conv2d", "linear", "matmul"})  # tensor contractions (AccPar CONV/FC)
MERGE_OPS = frozenset({"add", "concat"})  # where the parallel paths of a block re-join
POOL_OPS = frozenset({"maxpool2d", "avgpool2d", "adaptive_avgpool2d"})
NORM_OPS = frozenset({"batchnorm2d", "layernorm"})
MOVE_OPS = frozenset({"input", "flatten", "concat"})  # data movement only: 0 FLOPs
ACTIVATIONS = frozenset({
    "relu", "relu6", "leaky_relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "hardswish",
})

Shape = tuple[int, ...]


def dtype_bytes(name: str) -> int:
    """Bytes per element of the dtype ``name`` (e.g. ``"bf16"`` -> 2)."""
    try:
        return DTYPE_BYTES[name]
    except (KeyError, TypeError):
        raise OptmapError(f"unknown dtype '{name}'{did_you_mean(str(name), DTYPE_BYTES)}") from None


def _prod(shape: Shape) -> int:
    return math.prod(shape)


def _adaptive_window_sum(n_in: int, n_out: int) -> tuple[int, int]:
    """(sum, max) of PyTorch adaptive-pool window lengths along one axis."""
    lengths = [-(-(i + 1) * n_in // n_out) - (i * n_in // n_out) for i in range(n_out)]
    return sum(lengths), max(lengths)


@dataclass(frozen=True)
class LayerFlops:
    """FLOPs of one layer (or a sum of layers) for a whole batch, split by pass."""

    forward: int = 0
    backward_data: int = 0
    weight_grad: int = 0

    @property
    def total(self) -> int:
        """Forward + backward_data + weight_grad."""
        return self.forward + self.backward_data + self.weight_grad

    def __add__(self, other: LayerFlops) -> LayerFlops:
        return LayerFlops(self.forward + other.forward, self.backward_data + other.backward_data,
                          self.weight_grad + other.weight_grad)


@dataclass(frozen=True)
class Layer:
    """One operator with its per-sample input/output shapes and attributes (see module docstring).

    ``attrs`` may be given as a mapping; it is stored as a key-sorted tuple of pairs so layers
    stay hashable. Keys in use: kernel, stride, padding (pairs), groups, bias, ceil_mode,
    output_size, kind (activation), axis (concat), p (dropout), transpose_b (matmul).
    """

    name: str
    op: str
    in_shapes: tuple[Shape, ...]
    out_shape: Shape
    attrs: tuple[tuple[str, object], ...] | Mapping[str, object] = field(default=())

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise OptmapError(f"layer '{self.name}': unknown op '{self.op}'{did_you_mean(self.op, OPS)}")
        attrs = self.attrs.items() if isinstance(self.attrs, Mapping) else self.attrs
        object.__setattr__(self, "attrs", tuple(sorted((str(k), v) for k, v in attrs)))
        object.__setattr__(self, "in_shapes", tuple(tuple(int(d) for d in s) for s in self.in_shapes))
        object.__setattr__(self, "out_shape", tuple(int(d) for d in self.out_shape))

    def attr(self, name: str, default: object = None) -> object:
        """The attribute ``name``, or ``default`` when the layer does not have it."""
        return dict(self.attrs).get(name, default)

    # --- shapes -------------------------------------------------------------------------------
    @property
    def weighted(self) -> bool:
        """True for tensor contractions (conv2d, linear, matmul); norm layers have params but are not weighted."""
        return self.op in WEIGHTED_OPS

    @property
    def _in_shape(self) -> Shape:
        return self.in_shapes[0] if self.in_shapes else self.out_shape

    def _channels_first(self, shape: Shape) -> bool:
        return len(shape) == 3 and self.op != "matmul"

    def _channels(self, shape: Shape) -> int:
        return shape[0] if self._channels_first(shape) else shape[-1]

    def _spatial(self, shape: Shape) -> int:
        return _prod(shape[1:]) if self._channels_first(shape) else _prod(shape[:-1])

    @property
    def in_channels(self) -> int:
        """D_i: channels (C of (C,H,W)) or features (last dim) of the first input."""
        return self._channels(self._in_shape)

    @property
    def out_channels(self) -> int:
        """D_o: channels or features of the output."""
        return self._channels(self.out_shape)

    @property
    def in_spatial(self) -> int:
        """Hin*Win for images; the product of the non-feature dims (1 for a vector) otherwise."""
        return self._spatial(self._in_shape)

    @property
    def out_spatial(self) -> int:
        """Hout*Wout for images; the product of the non-feature dims (1 for a vector) otherwise."""
        return self._spatial(self.out_shape)

    @property
    def in_elements(self) -> int:
        """Elements of the first input, per sample."""
        return _prod(self._in_shape)

    @property
    def out_elements(self) -> int:
        """Elements of the output, per sample."""
        return _prod(self.out_shape)

    @property
    def kernel_elements(self) -> int:
        """kh*kw for conv and pooling (the largest window for adaptive pooling); 1 otherwise."""
        if self.op == "adaptive_avgpool2d":
            (_, h, w), (_, oh, ow) = self._in_shape, self.out_shape
            return _adaptive_window_sum(h, oh)[1] * _adaptive_window_sum(w, ow)[1]
        kernel = self.attr("kernel")
        return _prod(kernel) if kernel is not None else 1

    # --- work ---------------------------------------------------------------------------------
    @property
    def weight_elements(self) -> int:
        """Contraction weights: Cin/groups*Cout*kh*kw (conv), Din*Dout (linear); 0 otherwise (no bias)."""
        if self.op == "conv2d":
            return self.in_channels // self.attr("groups", 1) * self.out_channels * self.kernel_elements
        if self.op == "linear":
            return self.in_channels * self.out_channels
        return 0

    @property
    def params(self) -> int:
        """Trainable parameters (weights, bias, norm affine), as PyTorch counts them."""
        if self.op in ("conv2d", "linear"):
            return self.weight_elements + (self.out_channels if self.attr("bias", True) else 0)
        if self.op in NORM_OPS:
            return 2 * self.in_channels  # gamma and beta (running stats are buffers)
        return 0

    @property
    def macs(self) -> int:
        """Multiply-accumulates of one sample's forward pass (0 for non-weighted layers)."""
        if self.op in ("conv2d", "linear"):
            return self.weight_elements * self.out_spatial  # conv: Cout*Ho*Wo*(Cin/g)*kh*kw
        if self.op == "matmul":
            return self.out_elements * self.in_channels  # (..., M, N) outputs, K products each
        return 0

    def flops(self, batch: int) -> LayerFlops:
        """FLOPs of this layer for ``batch`` samples, by the convention of the module docstring."""
        if self.op == "matmul":
            fwd = 2 * self.macs * batch
            return LayerFlops(fwd, 2 * fwd, 0)
        if self.weighted:
            fwd = 2 * self.macs * batch
            return LayerFlops(fwd, fwd, fwd)
        if self.op in MOVE_OPS:
            return LayerFlops()
        if self.op == "adaptive_avgpool2d":
            (c, h, w), (_, oh, ow) = self._in_shape, self.out_shape
            per_sample = c * _adaptive_window_sum(h, oh)[0] * _adaptive_window_sum(w, ow)[0]
        elif self.op in POOL_OPS:
            per_sample = self.kernel_elements * self.out_elements
        elif self.op == "add":
            per_sample = (len(self.in_shapes) - 1) * self.out_elements
        else:  # activation, dropout, norms
            per_sample = self.out_elements
        fwd = per_sample * batch
        return LayerFlops(fwd, fwd, fwd if self.params else 0)


@dataclass(frozen=True)
class Node:
    """A weighted or merge layer in a block view."""

    name: str


@dataclass(frozen=True)
class Parallel:
    """Paths between the preceding fork Node and the following merge Node; () is an identity path."""

    paths: tuple[tuple[str, ...], ...]


BlockItem = Node | Parallel


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
        if self.phase not in PHASES:
            hint = did_you_mean(str(self.phase), PHASES)
            raise OptmapError(f"workload '{self.name}': unknown phase '{self.phase}'{hint}")
        if not nx.is_directed_acyclic_graph(self.graph):
            raise OptmapError(f"workload '{self.name}': the layer graph has a cycle")
        for n, data in self.graph.nodes(data=True):
            if not isinstance(data.get("layer"), Layer) or data["layer"].name != n:
                raise OptmapError(f"workload '{self.name}': node '{n}' lacks a Layer named '{n}'")

    # --- layers -------------------------------------------------------------------------------
    @cached_property
    def _order(self) -> tuple[str, ...]:
        rank = {n: i for i, n in enumerate(self.graph.nodes)}
        return tuple(nx.lexicographical_topological_sort(self.graph, key=rank.__getitem__))

    def layers(self) -> tuple[Layer, ...]:
        """All layers in a deterministic topological order (insertion order where free)."""
        return tuple(self.graph.nodes[n]["layer"] for n in self._order)

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
        return _prod(self.layer(name).in_shapes[index])

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
        """Total FLOPs for the whole batch; in the inference phase only the forward pass counts."""
        total = sum((layer.flops(self.batch) for layer in self.layers()), LayerFlops())
        return total if self.phase == "training" else LayerFlops(total.forward)

    @property
    def bytes_per_element(self) -> int:
        """Bytes per tensor element of this workload's dtype."""
        return dtype_bytes(self.dtype)

    # --- structural views ---------------------------------------------------------------------
    def describe(self) -> list[dict[str, object]]:
        """One row per layer for tables: op, output shape, parameters, training FLOPs at this batch."""
        rows = []
        for layer in self.layers():
            flops = layer.flops(self.batch)
            total = flops.forward if self.phase == "inference" else flops.total
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
        """The series-parallel view for layer-wise DPs: Nodes (weighted or merge layers) and Parallels.

        Non-weighted single-input ops (pool, activation, norm, flatten, dropout) are collapsed away.
        Each Parallel stands between its fork Node and its merge Node; its paths are ordered by the
        merge's input position. Nested forks, multi-input layers inside a path and paths that merge
        at different nodes are not series-parallel in this sense and raise OptmapError.
        """
        layers = {n: self.graph.nodes[n]["layer"] for n in self._order}
        kept = [n for n in self._order if layers[n].weighted or layers[n].op in MERGE_OPS]

        def fail(detail: str) -> OptmapError:
            return OptmapError(f"workload '{self.name}' is not series-parallel (forks must re-merge at one "
                               f"add/concat without nested forks): {detail}")

        def source(n: str) -> str | None:  # the kept layer whose output reaches n's output, or None for the input
            while layers[n].op not in WEIGHTED_OPS | MERGE_OPS:
                preds = self.inputs_of(n)
                if not preds:
                    return None
                if len(preds) != 1:
                    raise fail(f"'{n}' ({layers[n].op}) has {len(preds)} inputs")
                n = preds[0]
            return n

        sources = {v: [source(u) for u in self.inputs_of(v)] for v in kept}
        succ: dict[str, list[tuple[str, int]]] = {v: [] for v in kept}
        for v in kept:
            for i, u in enumerate(sources[v]):
                if u is not None:
                    succ[u].append((v, i))
        if not kept:
            return ()
        starts = [v for v in kept if None in sources[v]]
        if len(starts) != 1 or sources[starts[0]] != [None]:
            raise fail(f"the network input must feed exactly one weighted layer, it feeds {starts}")

        u = starts[0]
        items: list[BlockItem] = [Node(u)]
        seen = {u}
        while succ[u]:
            outs = succ[u]
            if len(outs) == 1:
                v = outs[0][0]
                if len(sources[v]) != 1:
                    raise fail(f"'{v}' joins '{u}' with a branch that did not fork from it")
                items.append(Node(v))
                seen.add(v)
                u = v
                continue
            paths, merge = [], None
            for v, i in outs:
                path: list[str] = []
                while layers[v].op not in MERGE_OPS:
                    if len(sources[v]) != 1:
                        raise fail(f"'{v}' inside a branch of '{u}' has {len(sources[v])} inputs")
                    if len(succ[v]) != 1:
                        raise fail(f"'{v}' inside a branch of '{u}' has {len(succ[v])} consumers")
                    path.append(v)
                    v, i = succ[v][0]
                if merge is None:
                    merge = v
                elif v != merge:
                    raise fail(f"branches from '{u}' merge at both '{merge}' and '{v}'")
                paths.append((i, tuple(path)))
                seen.update(path)
            if sorted(i for i, _ in paths) != list(range(len(sources[merge]))):
                raise fail(f"'{merge}' merges branches that did not all fork from '{u}'")
            items += [Parallel(tuple(p for _, p in sorted(paths))), Node(merge)]
            seen.add(merge)
            u = merge
        missing = [v for v in kept if v not in seen]
        if missing:
            raise fail(f"layers {missing[:3]} are off the main path")
        return tuple(items)


def _pair(value: int | tuple[int, int], what: str, where: str, minimum: int) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in pair):
        raise OptmapError(f"{where}: {what} must be an integer >= {minimum} or a pair of them, got {value!r}")
    return pair  # type: ignore[return-value]


def _pool_out(n: int, k: int, s: int, p: int, ceil_mode: bool, where: str) -> int:
    """PyTorch's pooling output length (including its ceil_mode rule)."""
    span = n + 2 * p - k
    if span < 0:
        raise OptmapError(f"{where}: kernel {k} is larger than the padded input {n + 2 * p}")
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= n + p else out  # the last window must start inside the input


class WorkloadBuilder:
    """Builds a Workload layer by layer with shape inference; each method returns the new layer's name."""

    def __init__(self, name: str, input_shape: Shape, input_name: str = "input") -> None:
        self.name = name
        self._graph = nx.DiGraph()
        self._counts: dict[str, int] = {}
        self.input(tuple(input_shape), input_name)

    def input(self, shape: Shape, name: str) -> str:
        """Another network input (e.g. the target tokens of an encoder-decoder model)."""
        shape = tuple(shape)
        if not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
            raise OptmapError(f"workload '{self.name}': input shape must be positive integers, got {shape!r}")
        return self._add(Layer(self._name(name, "input"), "input", (), shape), ())

    def shape(self, x: str) -> Shape:
        """Output shape (per sample) of layer ``x``."""
        if x not in self._graph:
            raise OptmapError(f"workload '{self.name}': no layer '{x}'{did_you_mean(str(x), self._graph.nodes)}")
        return self._graph.nodes[x]["layer"].out_shape

    def _name(self, name: str | None, stem: str) -> str:
        if name is None:
            self._counts[stem] = self._counts.get(stem, 0) + 1
            name = f"{stem}_{self._counts[stem]}"
        if name in self._graph:
            raise OptmapError(f"workload '{self.name}': layer name '{name}' is used twice")
        return name

    def _add(self, layer: Layer, inputs: tuple[str, ...]) -> str:
        if len(set(inputs)) != len(inputs):
            raise OptmapError(f"layer '{layer.name}': the same tensor is passed twice; insert a layer between")
        self._graph.add_node(layer.name, layer=layer)
        for i, x in enumerate(inputs):
            self._graph.add_edge(x, layer.name, index=i)
        return layer.name

    def _unary(self, op: str, x: str, out: Shape, name: str | None, stem: str | None = None, **attrs) -> str:
        name = self._name(name, stem or op)
        return self._add(Layer(name, op, (self.shape(x),), out, attrs), (x,))

    def _image(self, op: str, x: str, name: str | None) -> tuple[int, int, int]:
        shape = self.shape(x)
        if len(shape) != 3:
            raise OptmapError(f"{op} '{name or op}': input '{x}' has shape {shape}, expected (C, H, W)")
        return shape  # type: ignore[return-value]

    # --- weighted -----------------------------------------------------------------------------
    def conv2d(self, x: str, out_channels: int, kernel: int | tuple[int, int], stride: int | tuple[int, int] = 1,
               padding: int | tuple[int, int] = 0, groups: int = 1, bias: bool = True, name: str | None = None) -> str:
        """2-D convolution (PyTorch nn.Conv2d semantics, dilation 1)."""
        where = f"conv2d '{name or 'conv2d'}'"
        c, h, w = self._image("conv2d", x, name)
        k, s = _pair(kernel, "kernel", where, 1), _pair(stride, "stride", where, 1)
        p = _pair(padding, "padding", where, 0)
        if not isinstance(out_channels, int) or out_channels < 1:
            raise OptmapError(f"{where}: out_channels must be a positive integer, got {out_channels!r}")
        if not isinstance(groups, int) or groups < 1 or c % groups or out_channels % groups:
            raise OptmapError(f"{where}: groups={groups} must divide in_channels={c} and out_channels={out_channels}")
        ho, wo = (_pool_out(n, kk, ss, pp, False, where) for n, kk, ss, pp in zip((h, w), k, s, p))
        return self._unary("conv2d", x, (out_channels, ho, wo), name, kernel=k, stride=s, padding=p,
                           groups=groups, bias=bool(bias))

    def linear(self, x: str, out_features: int, bias: bool = True, name: str | None = None) -> str:
        """Fully connected layer on the last dimension (nn.Linear)."""
        if not isinstance(out_features, int) or out_features < 1:
            raise OptmapError(f"linear '{name or 'linear'}': out_features must be a positive integer, "
                              f"got {out_features!r}")
        shape = self.shape(x)
        if len(shape) == 3:
            raise OptmapError(f"linear '{name or 'linear'}': input '{x}' has image shape {shape}; flatten it first")
        return self._unary("linear", x, shape[:-1] + (out_features,), name, bias=bool(bias))

    def matmul(self, a: str, b: str, transpose_b: bool = False, name: str | None = None) -> str:
        """Product of two activations (..., M, K) @ (..., K, N), e.g. attention scores; batch dims must match."""
        where = f"matmul '{name or 'matmul'}'"
        sa, sb = self.shape(a), self.shape(b)
        if transpose_b and len(sb) >= 2:
            sb = sb[:-2] + (sb[-1], sb[-2])
        if len(sa) < 2 or len(sb) < 2 or sa[:-2] != sb[:-2] or sa[-1] != sb[-2]:
            raise OptmapError(f"{where}: shapes {self.shape(a)} and {self.shape(b)} do not multiply"
                              f"{' (b transposed)' if transpose_b else ''}")
        name = self._name(name, "matmul")
        layer = Layer(name, "matmul", (self.shape(a), self.shape(b)), sa[:-1] + (sb[-1],),
                      {"transpose_b": bool(transpose_b)})
        return self._add(layer, (a, b))

    # --- pooling ------------------------------------------------------------------------------
    def _pool(self, op: str, x: str, kernel, stride, padding, ceil_mode: bool, name: str | None) -> str:
        where = f"{op} '{name or op}'"
        c, h, w = self._image(op, x, name)
        k = _pair(kernel, "kernel", where, 1)
        s = k if stride is None else _pair(stride, "stride", where, 1)
        p = _pair(padding, "padding", where, 0)
        if any(pp > kk // 2 for pp, kk in zip(p, k)):
            raise OptmapError(f"{where}: padding {p} must be at most half the kernel {k}")
        ho, wo = (_pool_out(n, kk, ss, pp, ceil_mode, where) for n, kk, ss, pp in zip((h, w), k, s, p))
        return self._unary(op, x, (c, ho, wo), name, kernel=k, stride=s, padding=p, ceil_mode=bool(ceil_mode))

    def maxpool2d(self, x: str, kernel: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
                  padding: int | tuple[int, int] = 0, ceil_mode: bool = False, name: str | None = None) -> str:
        """Max pooling (nn.MaxPool2d; stride defaults to the kernel)."""
        return self._pool("maxpool2d", x, kernel, stride, padding, ceil_mode, name)

    def avgpool2d(self, x: str, kernel: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
                  padding: int | tuple[int, int] = 0, ceil_mode: bool = False, name: str | None = None) -> str:
        """Average pooling (nn.AvgPool2d; stride defaults to the kernel)."""
        return self._pool("avgpool2d", x, kernel, stride, padding, ceil_mode, name)

    def adaptive_avgpool2d(self, x: str, output_size: int | tuple[int, int], name: str | None = None) -> str:
        """Adaptive average pooling to ``output_size`` (nn.AdaptiveAvgPool2d)."""
        c, _, _ = self._image("adaptive_avgpool2d", x, name)
        out = _pair(output_size, "output_size", f"adaptive_avgpool2d '{name or 'adaptive_avgpool2d'}'", 1)
        return self._unary("adaptive_avgpool2d", x, (c,) + out, name, output_size=out)

    # --- element-wise and shape ops -----------------------------------------------------------
    def batchnorm2d(self, x: str, name: str | None = None) -> str:
        """Batch normalisation over the channels of a (C, H, W) tensor, with affine parameters."""
        return self._unary("batchnorm2d", x, self._image("batchnorm2d", x, name), name)

    def layernorm(self, x: str, name: str | None = None) -> str:
        """Layer normalisation over the last dimension, with affine parameters."""
        return self._unary("layernorm", x, self.shape(x), name)

    def activation(self, x: str, kind: str = "relu", name: str | None = None) -> str:
        """Element-wise activation function ``kind`` (relu, gelu, softmax, ...)."""
        if kind not in ACTIVATIONS:
            hint = did_you_mean(str(kind), ACTIVATIONS)
            raise OptmapError(f"activation '{name or kind}': unknown kind '{kind}'{hint}")
        return self._unary("activation", x, self.shape(x), name, stem=kind, kind=kind)

    def dropout(self, x: str, p: float = 0.5, name: str | None = None) -> str:
        """Dropout with drop probability ``p``."""
        if not 0.0 <= p < 1.0:
            raise OptmapError(f"dropout '{name or 'dropout'}': p must be in [0, 1), got {p!r}")
        return self._unary("dropout", x, self.shape(x), name, p=float(p))

    def flatten(self, x: str, name: str | None = None) -> str:
        """Flatten a sample to a vector (torch.flatten(x, 1))."""
        return self._unary("flatten", x, (_prod(self.shape(x)),), name)

    def add(self, *xs: str, name: str | None = None) -> str:
        """Element-wise sum of two or more tensors of the same shape (e.g. a residual merge)."""
        shapes = [self.shape(x) for x in xs]
        if len(xs) < 2 or len(set(shapes)) != 1:
            raise OptmapError(f"add '{name or 'add'}': needs two or more inputs of one shape, got {shapes}")
        name = self._name(name, "add")
        return self._add(Layer(name, "add", tuple(shapes), shapes[0]), xs)

    def concat(self, *xs: str, axis: int = 0, name: str | None = None) -> str:
        """Concatenation along per-sample ``axis`` (0 = channels of (C, H, W))."""
        where = f"concat '{name or 'concat'}'"
        shapes = [self.shape(x) for x in xs]
        rank = len(shapes[0]) if shapes else 0
        if len(xs) < 2 or any(len(s) != rank for s in shapes) or not -rank <= axis < rank:
            raise OptmapError(f"{where}: needs two or more inputs of one rank and a valid axis, "
                              f"got {shapes}, axis={axis}")
        axis %= rank
        if len({s[:axis] + s[axis + 1:] for s in shapes}) != 1:
            raise OptmapError(f"{where}: shapes {shapes} differ outside axis {axis}")
        out = shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1:]
        name = self._name(name, "concat")
        return self._add(Layer(name, "concat", tuple(shapes), out, {"axis": axis}), xs)

    def build(self, batch: int, dtype: str = "fp32", phase: str = "training") -> Workload:
        """The finished Workload (a copy of the graph built so far)."""
        return Workload(self.name, self._graph.copy(), batch, dtype, phase)
