"""The workload as DSM sees it: primary computations N{in, out, ij, kij, mb} with auxiliary ops folded in (DSM §II-A).

Every contraction of the common workload IR becomes one :class:`PrimaryLayer`:

* ``conv2d``  in = C_in, out = C_out, ij = H_out*W_out, kij = kh*kw (groups must be 1);
* ``linear``  ij = kij = 1 (or ij = the sequence length when applied to a (T, F) tensor);
* ``lstm``    ij = kij = 1, ``timesteps`` = T, in = H_in + H (each step reads the previous
  layer and its own previous step, §II-A), out = 4H gates (x2 directions when bidirectional;
  2 x 4H x (H + H) = 16.78 MFLOP per step and sample for H = 1024, note §2.1);
* ``attention`` every query step (ij) against the source steps: in = H, out = the source length,
  two products (scores and context), with a per-sample "kernel" (the encoder outputs: no weight
  gradient, no gradient reduction).

Every other op is auxiliary work on the special function processors of the layer whose output it
consumes (its *owner*, found through its first input): activations, bias, residual add (the
shortcut tensor is an extra read), pooling, softmax, batch/layer norm, dropout. ``input``,
``flatten``, ``concat`` only move data (a concat of a layer's output with that layer's own inputs,
GNMT's query beside its context, belongs to the layer). The other data-movement kinds of the IR
(an imported graph's ``reshape``, ``transpose``, ``slice``, ``copy``) compute nothing: a reshape is
a view (no access), the others copy their output through the owner's SFPs (a read and a write per
element, each pass). The SFPs are scratchpad-bandwidth bound (§II-D: "these
computations require high bandwidth from the local scratchpad"), so an aux op is described by its
scratchpad element accesses per element ([R], listed in ``_aux_accesses``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx

from optmap.errors import OptmapError
from optmap.workload import Layer, Workload

PRIMARY_OPS = ("conv2d", "linear", "lstm", "attention")
MOVE_OPS = ("input", "flatten", "concat")
VIEW_OPS = ("reshape",)  # data movement that only renames the elements
AUX_OPS = ("activation", "add", "maxpool2d", "avgpool2d", "adaptive_avgpool2d", "batchnorm2d", "layernorm",
           "dropout")

# [R] SFP scratchpad accesses of an LSTM cell per hidden unit and step (§II-A, Fig. 2): gate
# non-linearities on 4H (read + write: 8), c = f*c + i*g (4 reads, 1 write), tanh(c) (2),
# h = o*tanh(c) (2 reads, 1 write) = 18; the backward pass touches every operand twice (36).
LSTM_CELL_FWD, LSTM_CELL_BWD = 18, 36
SGD_ACCESSES = 3  # [R] weight update w -= lr*dw on the owned shard: read w, read dw, write w (note §7.12)


@dataclass(frozen=True)
class PrimaryLayer:
    """One primary computation and the auxiliary work folded into it (sizes per sample and step)."""

    name: str
    kind: str  # conv | fc | lstm | attention
    n_in: int
    n_out: int
    n_ij: int
    n_kij: int
    stride: int = 1
    in_ij: int = 1  # input feature size per channel (stride and padding included)
    timesteps: int = 1
    repeats: int = 1  # identical products per step (attention: scores and context)
    recurrent: bool = False  # LSTM: weights reused across timesteps, timesteps run in order
    pipelinable: bool = False  # a unidirectional LSTM can join a timestep-pipelining group (§III-D)
    shared_kernel: bool = True  # False: the "kernel" is per sample (attention keys), no GR
    out_ratio: float = 1.0  # elements leaving the layer (after pooling) / elements computed
    aux_fwd: float = 0.0  # SFP scratchpad accesses per sample and step, forward
    aux_bwd: float = 0.0  # the same, backward
    shortcut_elements: int = 0  # residual operand read by the owner's add, per sample and step
    producers: tuple[str, ...] = ()  # primary layers whose outputs this layer reads, main input first
    from_input: bool = False  # the main input is a network input (its BWD output is never used)

    @property
    def kernel_side(self) -> int:
        return max(1, math.isqrt(self.n_kij))

    @property
    def macs_per_sample(self) -> int:
        """Forward multiply-accumulates per sample over all timesteps."""
        return self.n_in * self.n_out * self.n_ij * self.n_kij * self.timesteps * self.repeats

    @property
    def out_elements(self) -> float:
        """Elements per sample and step leaving the layer (what the next layer reads)."""
        return self.n_out * self.n_ij * self.out_ratio

    @property
    def in_elements(self) -> int:
        """Elements per sample and step of the main input feature map."""
        return (self.n_in * self.in_ij) if not self.recurrent else self.n_in

    @property
    def weight_elements(self) -> int:
        return self.n_out * self.n_in * self.n_kij * self.repeats if self.shared_kernel else 0


def flops_per_byte(layer: PrimaryLayer, batch: int = 1, element_bytes: int = 2) -> float:
    """FLOPs per byte of Input, Kernel and Output of one step (DSM §I: 842.5 for VGG16 CONV3_2, 25.7 for CONV1_1)."""
    flops = 2.0 * layer.n_in * layer.n_out * layer.n_ij * layer.n_kij * layer.repeats * batch
    tensors = layer.in_elements * batch + layer.weight_elements + layer.n_out * layer.n_ij * batch
    return flops / (element_bytes * tensors)


@dataclass(frozen=True)
class DSMGraph:
    """Primary layers in topological order and the data edges between them (networkx DiGraph).

    Edge attribute ``elements``: per-sample, per-step elements of the tensor carried; ``main``:
    the edge is the consumer's main input; ``reuse``: the only edge on which the consumer may keep
    the producer's output in the scratchpad (its main input, and the producer's first consumer).
    """

    layers: tuple[PrimaryLayer, ...]
    graph: nx.DiGraph = field(repr=False)

    def layer(self, name: str) -> PrimaryLayer:
        return self.graph.nodes[name]["layer"]

    def reuse_producer(self, name: str) -> str | None:
        """The producer whose output ``name`` may read from the scratchpad, if any."""
        for u, _, data in self.graph.in_edges(name, data=True):
            if data["reuse"]:
                return u
        return None

    def reuse_consumer(self, name: str) -> str | None:
        for _, v, data in self.graph.out_edges(name, data=True):
            if data["reuse"]:
                return v
        return None


def _aux_accesses(layer: Layer) -> tuple[float, float]:
    """([R]) scratchpad accesses per sample of an auxiliary op, forward and backward."""
    out = layer.out_elements
    if layer.op == "activation":
        return (4.0 * out, 4.0 * out) if layer.attr("kind") == "softmax" else (2.0 * out, 3.0 * out)  # r+w / r,r,w
    if layer.op == "dropout":
        return 2.0 * out, 2.0 * out
    if layer.op in ("batchnorm2d", "layernorm"):
        return 3.0 * out, 5.0 * out  # statistics pass + normalise; backward: two reductions + output
    if layer.op == "add":
        n = len(layer.in_shapes)
        return (n + 1.0) * out, float(n) * out  # read n, write 1; backward: read 1, write n-1 copies
    if layer.kind.data_movement:  # [R] a copy reads and writes each element once (a reshape is a view)
        return (0.0, 0.0) if layer.op in VIEW_OPS else (2.0 * out, 2.0 * out)
    if layer.op in ("maxpool2d", "avgpool2d", "adaptive_avgpool2d"):
        if layer.in_elements == out:
            return 0.0, 0.0  # an identity pool (e.g. VGG's 7x7 adaptive pool on 7x7 maps)
        return float(layer.in_elements + out), float(layer.in_elements + out)
    return 0.0, 0.0


def _primary(layer: Layer) -> dict:
    """The N{...} dimensions of a contraction (DSM Fig. 2)."""
    op, where = layer.op, f"layer '{layer.name}'"
    if op == "conv2d":
        if layer.attr("groups", 1) != 1:
            raise OptmapError(f"{where}: the dsm cost model cannot price grouped convolutions (groups = "
                              f"{layer.attr('groups')}); DSM's five parameters describe dense convolutions only")
        stride = layer.attr("stride", (1, 1))
        bias = 2.0 * layer.out_elements if layer.attr("bias", True) else 0.0
        return dict(kind="conv", n_in=layer.in_channels, n_out=layer.out_channels, n_ij=layer.out_spatial,
                    n_kij=layer.kernel_elements, stride=int(stride[0]), in_ij=layer.in_spatial,
                    aux_fwd=bias, aux_bwd=bias / 2)
    if op == "linear":
        bias = 2.0 * layer.out_elements if layer.attr("bias", True) else 0.0
        return dict(kind="fc", n_in=layer.in_channels, n_out=layer.out_channels, n_ij=layer.out_spatial, n_kij=1,
                    in_ij=layer.out_spatial, aux_fwd=bias, aux_bwd=bias / 2)
    if op == "lstm":
        (steps, h_in), (_, h_out) = layer.in_shapes[0], layer.out_shape
        dirs = 2 if layer.attr("bidirectional", False) else 1
        hidden = h_out // dirs
        return dict(kind="lstm", n_in=h_in + hidden, n_out=4 * hidden * dirs, n_ij=1, n_kij=1, timesteps=steps,
                    recurrent=True, pipelinable=dirs == 1, aux_fwd=LSTM_CELL_FWD * hidden * dirs,
                    aux_bwd=LSTM_CELL_BWD * hidden * dirs)
    if op == "attention":  # all query steps at once: the queries do not depend on the attention's output
        heads, steps, source = layer.attr("heads", 1), layer.attr("q_len"), layer.attr("kv_len")
        width = heads * (layer.attr("head_dim") + layer.attr("v_head_dim")) // 2  # scores and context: 2 products
        softmax = 4.0 * heads * source * steps
        return dict(kind="attention", n_in=width, n_out=source, n_ij=steps, n_kij=1, in_ij=steps, repeats=2,
                    shared_kernel=False, aux_fwd=softmax, aux_bwd=softmax)
    raise AssertionError(op)


def build_graph(workload: Workload) -> DSMGraph:
    """Fold the IR into primary layers and edges; one-line errors for ops DSM cannot price."""
    owner: dict[str, str | None] = {}  # the primary layer whose SFPs run an op (None: a network input)
    sources: dict[str, tuple[str | None, ...]] = {}  # the primary layers whose data an op's output holds
    fields: dict[str, dict] = {}
    shortcuts: list[tuple[str, str, int]] = []
    for layer in workload.layers():
        preds = workload.inputs_of(layer.name)
        if layer.op in PRIMARY_OPS:
            owner[layer.name], sources[layer.name] = layer.name, (layer.name,)
            fields[layer.name] = dict(_primary(layer), inputs=preds)
        elif layer.op in MOVE_OPS:
            owner[layer.name] = owner[preds[0]] if layer.op == "flatten" else _absorbing(workload, preds, owner)
            if owner[layer.name] is not None and layer.op == "concat":
                sources[layer.name] = (owner[layer.name],)
            else:
                sources[layer.name] = tuple(s for p in preds for s in sources[p]) if preds else (None,)
        elif layer.op in AUX_OPS or _copy(layer):
            main = owner[preds[0]]
            owner[layer.name], sources[layer.name] = main, (main,)
            if main is not None:
                fwd, bwd = _aux_accesses(layer)
                steps = fields[main].get("timesteps", 1)
                fields[main]["aux_fwd"] += fwd / steps
                fields[main]["aux_bwd"] += bwd / steps
                shortcuts += [(extra, main, workload.input_elements_of(layer.name, i))
                              for i, extra in enumerate(preds[1:], 1) if layer.op == "add"]
        else:
            raise OptmapError(f"layer '{layer.name}': the dsm cost model cannot price op '{layer.op}'; it prices "
                              f"{', '.join(PRIMARY_OPS)}, the auxiliary ops {', '.join(AUX_OPS)} and data "
                              f"movement without parameters{_advice(layer)}")
    if not fields:
        raise OptmapError(f"workload '{workload.name}' has no layer DSM can map (conv2d, linear, lstm, attention)")
    leaving = _leaving_elements(workload, owner, fields)

    graph = nx.DiGraph()
    first_consumer: dict[str, str] = {}
    for name, spec in fields.items():
        producers = [s for p in spec.pop("inputs") for s in sources[p]]
        spec["from_input"] = not producers or producers[0] is None
        spec["producers"] = tuple(dict.fromkeys(p for p in producers if p is not None))
        graph.add_node(name)
        for p in spec["producers"]:
            main = producers[0] == p
            _add_edge(graph, p, name, leaving[p], main, reuse=main and p not in first_consumer)
            first_consumer.setdefault(p, name)
    for extra, main, elements in shortcuts:
        for p in sources[extra]:
            if p is not None and p != main:
                steps = fields[main].get("timesteps", 1)
                fields[main]["shortcut_elements"] = fields[main].get("shortcut_elements", 0) + elements / steps
                _add_edge(graph, p, main, elements, main=False, reuse=False)
    layers = []
    for name in graph.nodes:
        spec = fields[name]
        computed = spec["n_out"] * spec["n_ij"] * spec.get("timesteps", 1)
        layer = PrimaryLayer(name=name, out_ratio=leaving[name] / computed, **spec)
        graph.nodes[name]["layer"] = layer
        layers.append(layer)
    return DSMGraph(tuple(layers), graph)


def _copy(layer: Layer) -> bool:
    """A data-movement layer outside MOVE_OPS without parameters (a learned class token is refused)."""
    return layer.kind.data_movement and layer.op not in MOVE_OPS and not layer.params


def _advice(layer: Layer) -> str:
    """Which formulation to use instead, for the ops of a transformer."""
    if layer.op in ("matmul", "binary", "elementwise", "norm", "embedding", "reduce"):
        return ("; a transformer is planned by acctfm or megatron-3d from its sizes ([workload] model = "
                "\"transformer\")")
    return ""


def _absorbing(workload: Workload, preds: tuple[str, ...], owner: dict) -> str | None:
    """The primary layer a concatenation belongs to, if it joins that layer's output with its own
    inputs (GNMT's query beside its attention context): the layer holds both and writes them out."""
    for p in preds:
        layer = owner.get(p)
        if layer is not None and all(q == p or q in workload.inputs_of(layer) for q in preds):
            return layer
    return None


def _add_edge(graph: nx.DiGraph, u: str, v: str, elements: float, main: bool, reuse: bool) -> None:
    """An edge carrying ``elements`` per sample (all timesteps); a shortcut between neighbours joins the main edge."""
    if graph.has_edge(u, v):
        data = graph.edges[u, v]
        data.update(elements=data["elements"] + elements, main=data["main"] or main, reuse=data["reuse"] or reuse)
    else:
        graph.add_edge(u, v, elements=elements, main=main, reuse=reuse)


def _leaving_elements(workload: Workload, owner: dict, fields: dict) -> dict[str, float]:
    """Per-sample elements (all timesteps) leaving each primary layer's group of ops (e.g. after pooling)."""
    leaving = {name: 0.0 for name in fields}
    for layer in workload.layers():
        own = owner.get(layer.name)
        if own is None:
            continue
        consumers = list(workload.graph.successors(layer.name))
        if not consumers or any(owner.get(c) != own or c in fields for c in consumers):
            leaving[own] += layer.out_elements
    return leaving
