"""An ONNX model as optmap sees it: activations with per-sample shapes, and constants.

The model is loaded without its external weight data (only names, types and dimensions are
read), local functions are inlined, and shapes come from ONNX shape inference (``shapes.py``,
which also finds the batch in every activation).

Tensors fall in two classes:

* **activations**: the network inputs (graph inputs without an initializer) and everything
  computed from them. Only the *values* of an input count: ``Shape``/``Size`` read just its
  shape and ``CastLike`` just the element type of its second input, so shape arithmetic and
  constants built from it stay constants.
* **constants**: initializers (weights), ``Constant`` nodes and whatever is computed from them
  alone. Constant computations are not layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import networkx as nx
import numpy as np
import onnx
from onnx import external_data_helper, numpy_helper

from optmap.errors import OptmapError

from .naming import describe
from .shapes import Shapes

# Inputs read only for their shape or element type, never for their values (op -> input positions).
SHAPE_ONLY_INPUTS: dict[str, frozenset[int] | None] = {
    "Shape": None, "Size": None, "CastLike": frozenset({1}),  # None: every input
}
INDEX_TYPES = frozenset({onnx.TensorProto.INT64, onnx.TensorProto.INT32})
FLOAT_TYPES = frozenset({
    onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE,
})


def load_model(path: Path) -> onnx.ModelProto:
    """The model at ``path`` without its external weight data, local functions inlined."""
    try:
        model = onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise OptmapError(f"{path}: no such ONNX file") from None
    except IsADirectoryError:
        raise OptmapError(f"{path}: is a folder, not an ONNX file") from None
    except Exception as exc:  # protobuf's DecodeError and friends: not an ONNX file
        raise OptmapError(f"{path}: not a readable ONNX model ({type(exc).__name__}); export it with "
                          f"torch.onnx.export or check the file") from None
    if not model.graph.node:
        raise OptmapError(f"{path}: the ONNX graph has no nodes (is this an ONNX model file?)")
    for tensor in model.graph.initializer:  # integer constants (shapes, axes) stored beside the model
        if tensor.data_location == onnx.TensorProto.EXTERNAL and tensor.data_type in INDEX_TYPES:
            try:
                external_data_helper.load_external_data_for_tensor(tensor, str(path.parent))
            except OSError:
                pass  # not there: shape inference will say which shape it cannot find
    if model.functions:
        from onnx import inliner

        model = inliner.inline_local_functions(model)
    return model


class OnnxGraph:
    """Shapes, constants and activations of one ONNX model (see the module docstring)."""

    def __init__(self, model: onnx.ModelProto, where: str, dims: Mapping[str, int] | None = None) -> None:
        self.where = where
        graph = model.graph
        self.initializers = {t.name: t for t in graph.initializer}
        self.inputs = [v for v in graph.input if v.name not in self.initializers]
        if not self.inputs:
            raise OptmapError(f"{where}: the ONNX graph has no inputs (every graph input is an initializer)")
        self.shapes = Shapes(model, self.inputs, where, dims or {})
        self.nodes = self._sorted_nodes(model.graph)
        self.types = self.shapes.types
        self.producer = {out: node for node in self.nodes for out in node.output if out}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in self.nodes:
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        self.outputs = [v.name for v in model.graph.output]
        self.activations = self._activations()

    # --- construction ---------------------------------------------------------------------------
    def _sorted_nodes(self, graph: onnx.GraphProto) -> list[onnx.NodeProto]:
        """The nodes in a topological order (a file's own order where it is one)."""
        made = {name for name in self.initializers} | {v.name for v in graph.input}
        order = nx.DiGraph()
        order.add_nodes_from(range(len(graph.node)))
        producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
        for i, node in enumerate(graph.node):
            for name in node.input:
                if name and name not in made:
                    if name not in producer:
                        raise OptmapError(f"{self.where}: {describe(node)} reads '{name}', which nothing produces")
                    order.add_edge(producer[name], i)
        try:
            ranks = list(nx.lexicographical_topological_sort(order))
        except nx.NetworkXUnfeasible:
            raise OptmapError(f"{self.where}: the ONNX graph has a cycle") from None
        return [graph.node[i] for i in ranks]

    def _activations(self) -> set[str]:
        active = {v.name for v in self.inputs}
        for node in self.nodes:
            skip = SHAPE_ONLY_INPUTS.get(node.op_type, frozenset())
            data = [name for i, name in enumerate(node.input) if name and skip is not None and i not in skip]
            if any(name in active for name in data):
                active.update(out for out in node.output if out)
        return active

    # --- queries --------------------------------------------------------------------------------
    def is_activation(self, name: str) -> bool:
        """True when ``name`` carries values computed from the network inputs."""
        return name in self.activations

    def full_shape(self, name: str) -> list[int | str] | None:
        """The inferred dimensions of ``name`` (with a batch for activations), None when unknown."""
        if name in self.initializers:
            return list(self.initializers[name].dims)
        return self.shapes.full(name)

    def shape(self, name: str) -> tuple[int, ...]:
        """Per-sample shape of an activation (batch removed; a per-sample scalar is (1,))."""
        source = self.producer.get(name)
        what = f"tensor '{name}'" + (f" (output of {describe(source)})" if source is not None else "")
        return self.shapes.per_sample(name, what)

    def const_shape(self, name: str) -> tuple[int, ...]:
        """Full shape of a constant (a weight); one-line error when it is unknown."""
        dims = self.full_shape(name)
        if dims is None or not all(isinstance(d, int) for d in dims):
            raise OptmapError(f"{self.where}: the shape of constant '{name}' is unknown")
        return tuple(dims)

    def const_value(self, name: str) -> np.ndarray | None:
        """The value of a small constant held in the file (an inline initializer or a Constant node)."""
        tensor = self.initializers.get(name)
        if tensor is None:
            node = self.producer.get(name)
            if node is None or node.op_type != "Constant":
                return None
            attribute = node.attribute[0]
            if attribute.name != "value":
                return np.array(onnx.helper.get_attribute_value(attribute))
            tensor = attribute.t
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            return None
        return numpy_helper.to_array(tensor)

    def const_scalar(self, name: str) -> float | None:
        """The value of a one-element constant, looking through the casts an exporter wraps around
        it (``CastLike(Constant(6), x)``); None when it is not a known one-element constant."""
        value = self._through_casts(name)
        return None if value is None or value.size != 1 else float(value.reshape(()))

    def is_zero_constant(self, name: str) -> bool:
        """True when the constant ``name`` is known to be all zeros: a zero initializer or Constant,
        or one broadcast from a zero scalar (``Expand(CastLike(0, x), Shape(w))``, ``ConstantOfShape``)."""
        source = self.producer.get(name)
        if source is not None and source.op_type == "Expand":
            return self.is_zero_constant(source.input[0])
        if source is not None and source.op_type == "ConstantOfShape":
            fill = source.attribute[0].t if source.attribute else None
            return fill is None or not numpy_helper.to_array(fill).any()
        value = self._through_casts(name)
        return value is not None and value.size > 0 and not value.any()

    def _through_casts(self, name: str) -> np.ndarray | None:
        """``const_value`` of ``name`` or of the constant a Cast, CastLike or Identity chain starts from."""
        while name not in self.initializers and not self.is_activation(name):
            source = self.producer.get(name)
            if source is None or source.op_type not in ("Cast", "CastLike", "Identity"):
                break
            name = source.input[0]
        return None if self.is_activation(name) else self.const_value(name)

    def is_float(self, name: str) -> bool:
        """True when ``name`` holds floating-point numbers."""
        if name in self.initializers:
            return self.initializers[name].data_type in FLOAT_TYPES
        value_type = self.types.get(name)
        return value_type is not None and value_type.tensor_type.elem_type in FLOAT_TYPES

    def input_dtype(self) -> int:
        """Element type (TensorProto enum) of the first floating-point network input, else the first input."""
        for value in self.inputs:
            if value.type.tensor_type.elem_type in FLOAT_TYPES:
                return value.type.tensor_type.elem_type
        return self.inputs[0].type.tensor_type.elem_type

    def fixed_batch(self) -> int | None:
        """The batch size the file fixes (every input's first dimension), None when it is symbolic."""
        return self.shapes.fixed_batch
