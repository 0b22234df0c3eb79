"""Walks an :class:`OnnxGraph` and emits workload layers for the ONNX nodes that compute activations.

Op handlers (``handlers.py``, ``elementwise.py``, ``movement.py``, each with its table
``HANDLERS`` of ONNX op types, joined by ``reader.py`` and given to the :class:`Converter`) turn a
node into layers through the converter's small API (``emit``, ``alias``) or raise
:class:`Unsupported`.
Every node the importer cannot map is collected and all of them are reported together in one
line, so a user sees the whole list at once. Layers are named once the walk is over, when it is
known which nodes became layers (``naming.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import onnx

from optmap.errors import OptmapError
from optmap.workload import OpKind, WorkloadBuilder

from .graph import SHAPE_ONLY_INPUTS, OnnxGraph
from .naming import Namer, base_names, op_label

Handler = Callable[["Converter", onnx.NodeProto], None]


def attributes(node: onnx.NodeProto) -> dict[str, object]:
    """A node's attributes as Python values (strings decoded, lists as tuples)."""
    values = {}
    for attribute in node.attribute:
        value = onnx.helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, list):
            value = tuple(v.decode() if isinstance(v, bytes) else v for v in value)
        values[attribute.name] = value
    return values


def has_input(node: onnx.NodeProto, index: int) -> bool:
    """True when the optional input ``index`` is given."""
    return len(node.input) > index and bool(node.input[index])


class Unsupported(Exception):
    """Raised by a handler: this node (described by ``label``, e.g. "Conv (3-D)") cannot be mapped."""

    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.label = label


@dataclass
class _Pending:
    """A layer a handler asked for; it is named and built once the whole graph is walked."""

    node: onnx.NodeProto
    op: str | OpKind
    inputs: tuple[int, ...]  # indices of the producing layers
    shape: tuple[int, ...]  # per sample
    suffix: str
    attrs: dict[str, object]


class Converter:
    """State of one conversion: the layers asked for, the layer behind each activation, what failed."""

    def __init__(self, graph: OnnxGraph, name: str, handlers: Mapping[str, Handler]) -> None:
        self.g = graph
        self.name = name
        self.handlers = handlers  # ONNX op type (default domain) -> handler
        self.layers: list[_Pending | str] = []  # network inputs (their names) and pending layers
        self.layer_of: dict[str, int] = {}  # activation tensor -> index of the layer that outputs it
        self.skip: set[int] = set()  # nodes already folded into another layer (a MatMul's bias Add)
        self.failed: dict[str, list[onnx.NodeProto]] = {}
        self.sequences: dict[str, onnx.NodeProto] = {}  # a tensor sequence -> the SplitToSequence making it
        self._counted: set[str] = set()  # constants already counted as some layer's parameters
        self._node: onnx.NodeProto | None = None
        for value in graph.inputs:
            self.layer_of[value.name] = len(self.layers)
            self.layers.append(value.name)

    # --- the walk -----------------------------------------------------------------------------
    def run(self) -> WorkloadBuilder:
        for node in self.g.nodes:
            if id(node) in self.skip or not any(self.g.is_activation(out) for out in node.output):
                continue  # a constant computation, or already part of a layer
            handler = self.handlers.get(node.op_type) if node.domain in ("", "ai.onnx") else None
            if handler is None:
                self._fail(op_label(node), node)
                continue
            if any(self.g.is_activation(x) and x not in self.layer_of for x in node.input):
                continue  # downstream of a node already reported
            self._node = node
            try:
                handler(self, node)
                self._check_outputs(node)
            except Unsupported as exc:
                self._fail(exc.label, node)
        if self.failed:
            raise OptmapError(f"{self.g.where}: {self._failure_summary()}")
        return self._build()

    def _build(self) -> WorkloadBuilder:
        """Name the layers (now that it is known which nodes became layers) and build them."""
        namer = Namer()
        pending = [p for p in self.layers if isinstance(p, _Pending)]
        bases = base_names(list({id(p.node): p.node for p in pending}.values()))
        names = [namer(p) if isinstance(p, str) else namer(bases[id(p.node)] + p.suffix) for p in self.layers]
        b = None
        for value in self.g.inputs:
            name = names[self.layer_of[value.name]]
            if b is None:
                b = WorkloadBuilder(self.name, self.g.shape(value.name), input_name=name)
            else:
                b.input(self.g.shape(value.name), name)
        for index, p in enumerate(self.layers):
            if isinstance(p, str):
                continue
            inputs = tuple(names[i] for i in p.inputs)
            if p.op == "activation":  # WorkloadBuilder.op's own ``kind`` parameter hides the attribute
                b.activation(inputs[0], p.attrs["kind"], name=names[index])
            else:
                b.op(p.op, inputs, p.shape, name=names[index], **p.attrs)
        return b

    def _check_outputs(self, node: onnx.NodeProto) -> None:
        """Outputs a handler left unmapped (a MaxPool's indices) must be unused."""
        for out in node.output:
            if out and self.g.is_activation(out) and out not in self.layer_of:
                if self.g.consumers.get(out) or out in self.g.outputs:
                    raise Unsupported(f"{node.op_type} (output '{out}' used)")

    def _fail(self, label: str, node: onnx.NodeProto) -> None:
        self.failed.setdefault(label, []).append(node)

    def _failure_summary(self) -> str:
        parts = []
        for label, nodes in sorted(self.failed.items()):
            first = nodes[0].name or nodes[0].output[0]
            parts.append(f"{label} x{len(nodes)} (e.g. '{first}')" if len(nodes) > 1 else f"{label} ('{first}')")
        count = sum(len(nodes) for nodes in self.failed.values())
        return (f"{count} ONNX node{'s' if count > 1 else ''} optmap cannot import: {', '.join(parts)}; "
                f"the supported ops are listed under \"Your own model (ONNX)\" in README.md")

    # --- the handlers' API --------------------------------------------------------------------
    def activations(self, node: onnx.NodeProto) -> list[str]:
        """The node's inputs that are activations, in input order."""
        return [x for x in node.input if x and self.g.is_activation(x)]

    def trainable_elements(self, node: onnx.NodeProto) -> int:
        """Elements of the floating-point initializers, other than scalars, that the node's constant
        inputs are made from (a bias, a PReLU slope, a position embedding, a class token expanded to
        the batch): the trainable constants of an element-wise or copy layer, each counted once.
        Scales, epsilons and constants built in the graph (masks) are not."""
        total, stack = 0, [x for x in node.input if x and not self.g.is_activation(x)]
        while stack:
            name = stack.pop()
            if name in self._counted:
                continue
            self._counted.add(name)
            if name in self.g.initializers:
                elements = math.prod(self.g.const_shape(name))
                total += elements if self.g.is_float(name) and elements > 1 else 0
            elif name in self.g.producer:  # a constant computed from other constants: look through it
                source = self.g.producer[name]
                skip = SHAPE_ONLY_INPUTS.get(source.op_type, frozenset())
                stack += [x for i, x in enumerate(source.input) if x and skip is not None and i not in skip]
        return total

    def emit(self, op: str | OpKind, inputs: list[str], output: str, /, suffix: str = "",
             shape: tuple[int, ...] | None = None, **attrs: object) -> None:
        """A layer of kind ``op`` reading the activations ``inputs`` and producing the tensor ``output``
        (of per-sample ``shape``, by default the inferred one)."""
        assert self._node is not None
        layers = tuple(dict.fromkeys(self.layer_of[x] for x in inputs))  # x op x reads x once
        self.layer_of[output] = len(self.layers)
        self.layers.append(_Pending(self._node, op, layers, shape or self.g.shape(output), suffix, attrs))

    def sequence(self, output: str, split: onnx.NodeProto) -> None:
        """``output`` is the tensor sequence ``split`` (a SplitToSequence) makes: no layer; each
        SequenceAt of it becomes one."""
        self.sequences[output] = split
        self.alias(output, split.input[0])

    def alias(self, output: str, source: str) -> None:
        """``output`` is ``source`` (Identity, Cast): no layer."""
        self.layer_of[output] = self.layer_of[source]
