"""An ONNX model as optmap sees it: activations with per-sample shapes, and constants.

The model is loaded without its external weight data (only names, types and dimensions are
read), local functions are inlined, and ONNX shape inference (with data propagation, so
``Shape -> Gather -> Concat -> Reshape`` chains resolve) gives every tensor its shape.

Tensors fall in two classes:

* **activations**: the network inputs (graph inputs without an initializer) and everything
  computed from them. Only the *values* of an input count: ``Shape``/``Size`` read just its
  shape and ``CastLike`` just the element type of its second input, so shape arithmetic and
  constants built from it stay constants.
* **constants**: initializers (weights), ``Constant`` nodes and whatever is computed from them
  alone. Constant computations are not layers.

The first dimension of every network input is the batch. It may be symbolic (``"batch"``) or a
number (the batch the model was exported with); every activation must keep it as its first
dimension, and the rest of its shape (the per-sample shape of the workload IR) must be known.
Other symbolic input dimensions (a sequence length) are given sizes by the ``dims`` option.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import networkx as nx
import numpy as np
import onnx
from onnx import numpy_helper

from optmap.errors import OptmapError

from .naming import describe

# Inputs read only for their shape or element type, never for their values (op -> input positions).
SHAPE_ONLY_INPUTS: dict[str, frozenset[int] | None] = {
    "Shape": None, "Size": None, "CastLike": frozenset({1}),  # None: every input
}
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
    if model.functions:
        from onnx import inliner

        model = inliner.inline_local_functions(model)
    return model


def _dims(value_type: onnx.TypeProto) -> list[int | str] | None:
    """A tensor type's dimensions: numbers, symbol names, or "?" where unknown; None without a shape."""
    tensor = value_type.tensor_type
    if not value_type.HasField("tensor_type") or not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim]


class OnnxGraph:
    """Shapes, constants and activations of one ONNX model (see the module docstring)."""

    def __init__(self, model: onnx.ModelProto, where: str, dims: Mapping[str, int] | None = None) -> None:
        self.where = where
        graph = model.graph
        self.initializers = {t.name: t for t in graph.initializer}
        self.inputs = [v for v in graph.input if v.name not in self.initializers]
        if not self.inputs:
            raise OptmapError(f"{where}: the ONNX graph has no inputs (every graph input is an initializer)")
        self.batch_marks = self._fix_input_dims(dims or {})
        try:
            model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        except Exception as exc:  # InferenceError, ValidationError: the model itself is inconsistent
            message = " ".join(str(exc).split())
            raise OptmapError(f"{where}: ONNX shape inference failed: {message[:300]}") from None
        self.model = model
        self.nodes = self._sorted_nodes(model.graph)
        self.types = {v.name: v.type for v in (*model.graph.value_info, *model.graph.input, *model.graph.output)}
        self.producer = {out: node for node in self.nodes for out in node.output if out}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in self.nodes:
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        self.outputs = [v.name for v in model.graph.output]
        self.activations = self._activations()

    # --- construction ---------------------------------------------------------------------------
    def _fix_input_dims(self, dims: Mapping[str, int]) -> set[int | str]:
        """Give symbolic input dimensions the sizes of ``dims``; return the batch markers (dim 0)."""
        marks: set[int | str] = set()
        seen: set[str] = set()
        for value in self.inputs:
            shape = value.type.tensor_type.shape
            if not value.type.HasField("tensor_type") or not shape.dim:
                raise OptmapError(f"{self.where}: input '{value.name}' has no shape; optmap needs (batch, ...)")
            for axis, dim in enumerate(shape.dim):
                seen.add(dim.dim_param)
                if dim.HasField("dim_param") and dim.dim_param in dims:
                    dim.dim_value = int(dims[dim.dim_param])  # clears dim_param (a oneof)
                if axis == 0:
                    if not dim.HasField("dim_value") and not dim.dim_param:
                        dim.dim_param = "batch"  # an unnamed dynamic batch
                    marks.add(dim.dim_value if dim.HasField("dim_value") else dim.dim_param)
                elif not dim.HasField("dim_value"):
                    symbol = dim.dim_param or "?"
                    raise OptmapError(
                        f"{self.where}: input '{value.name}' dimension {axis} is symbolic ('{symbol}'); "
                        f"give its size in [workload] dims = {{ {dim.dim_param or 'NAME'} = N }}")
        unused = sorted(set(dims) - seen)
        if unused:
            raise OptmapError(f"{self.where}: dims names {unused}, which no input dimension of the model uses")
        return marks

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
        """The inferred dimensions of ``name`` (with the batch for activations), None when unknown."""
        if name in self.initializers:
            return list(self.initializers[name].dims)
        value_type = self.types.get(name)
        return None if value_type is None else _dims(value_type)

    def shape(self, name: str) -> tuple[int, ...]:
        """Per-sample shape of an activation (batch dimension removed; a per-sample scalar is (1,))."""
        dims = self.full_shape(name)
        source = self.producer.get(name)
        what = f"tensor '{name}'" + (f" (output of {describe(source)})" if source is not None else "")
        if dims is None or not dims:
            raise OptmapError(f"{self.where}: ONNX shape inference gives no shape for {what}; "
                              f"optmap needs every activation's shape")
        if dims[0] not in self.batch_marks:
            marks = ", ".join(repr(m) for m in sorted(self.batch_marks, key=str))
            raise OptmapError(f"{self.where}: {what} has shape {dims}, whose first dimension is not the batch "
                              f"({marks}); optmap needs every activation to keep the batch first")
        rest = dims[1:]
        if not all(isinstance(d, int) and d > 0 for d in rest):
            raise OptmapError(f"{self.where}: {what} has shape {dims} with unknown dimensions; give the "
                              f"input's symbolic sizes in [workload] dims = {{ NAME = N }}")
        return tuple(rest) or (1,)

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
        """The batch size the file fixes (a number as every input's first dimension), else None."""
        numbers = {m for m in self.batch_marks if isinstance(m, int)}
        return numbers.pop() if len(numbers) == 1 and len(self.batch_marks) == 1 else None
