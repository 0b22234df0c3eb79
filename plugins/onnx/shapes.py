"""Per-sample shapes: where the batch is in every activation.

The first dimension of every network input is the batch. When it is symbolic (the model was
exported with a dynamic batch), ONNX shape inference runs twice, at batch 2 and at batch 3: the
one axis of an activation whose size grows in proportion is where the batch lives. That is the
first axis almost everywhere, but PyTorch's ``nn.MultiheadAttention`` moves the batch to the
second axis (S, B, E) and folds it into the heads (B*heads, S, d). The per-sample shape drops
that axis when it holds the batch alone and divides it by the batch when the batch is folded in
((B*heads) -> heads). When the file fixes the batch to a number, inference runs once and the
batch must be every activation's first dimension.

Inference runs in strict mode with data propagation, so ``Shape -> Gather -> Concat -> Reshape``
chains resolve; other symbolic input dimensions (a sequence length) get sizes from ``dims``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping

import onnx

from optmap.errors import OptmapError

PROBES = (2, 3)  # the two batch sizes of a symbolic batch


def _dims(value_type: onnx.TypeProto) -> list[int | str] | None:
    """A tensor type's dimensions: numbers, symbol names, or "?" where unknown; None without a shape."""
    tensor = value_type.tensor_type
    if not value_type.HasField("tensor_type") or not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim]


def _infer(model: onnx.ModelProto, where: str) -> dict[str, onnx.TypeProto]:
    try:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as exc:  # InferenceError, ValidationError: the model itself is inconsistent
        message = " ".join(str(exc).split())
        raise OptmapError(f"{where}: ONNX shape inference failed: {message[:300]}") from None
    graph = model.graph
    return {v.name: v.type for v in (*graph.value_info, *graph.input, *graph.output)}


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def _evaluate(expression: str, sizes: Mapping[str, int]) -> int | None:
    """The value of a dimension expression an exporter wrote (``batch``, ``12*batch``, ``s0 + 1``)
    for the symbol sizes ``sizes``; None when it is not plain integer arithmetic of known symbols."""
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Name) and node.id in sizes:
            return sizes[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            return _ARITHMETIC[type(node.op)](value(node.left), value(node.right))
        raise ValueError(expression)

    try:
        result = value(tree)
    except (ValueError, ZeroDivisionError):
        return None
    return result if result > 0 else None


class Shapes:
    """Inferred types of every tensor and the per-sample shapes of activations."""

    def __init__(self, model: onnx.ModelProto, inputs: list[onnx.ValueInfoProto], where: str,
                 dims: Mapping[str, int]) -> None:
        self.where = where
        marks = self._fix_input_dims(inputs, dims)
        numbers = {m for m in marks if isinstance(m, int)}
        if len(numbers) > 1 or (numbers and len(marks) > 1):
            raise OptmapError(f"{where}: the inputs disagree on the batch (first dimensions {sorted(marks, key=str)})")
        self.fixed_batch = numbers.pop() if numbers else None
        probes = (None,) if self.fixed_batch is not None else PROBES
        self.runs = [_infer(self._sized(model, {**dims, **{m: b for m in marks if b is not None}}), where)
                     for b in probes]
        self.types = self.runs[0]

    @staticmethod
    def _sized(model: onnx.ModelProto, sizes: Mapping[str, int]) -> onnx.ModelProto:
        """A copy of ``model`` whose symbolic dimensions of known ``sizes`` are numbers."""
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        graph = copy.graph
        for value in (*graph.input, *graph.value_info, *graph.output):  # the exporter's shapes too
            for dim in value.type.tensor_type.shape.dim:
                size = _evaluate(dim.dim_param, sizes) if dim.dim_param else None
                if size is not None:
                    dim.dim_value = size
        return copy

    def _fix_input_dims(self, inputs: list[onnx.ValueInfoProto], dims: Mapping[str, int]) -> set[int | str]:
        """Give symbolic input dimensions the sizes of ``dims``; return the batch marks (dim 0)."""
        marks: set[int | str] = set()
        seen: set[str] = set()
        for value in inputs:
            shape = value.type.tensor_type.shape
            if not value.type.HasField("tensor_type") or not shape.dim:
                raise OptmapError(f"{self.where}: input '{value.name}' has no shape; optmap needs (batch, ...)")
            for axis, dim in enumerate(shape.dim):
                seen.add(dim.dim_param)
                if axis == 0 and dim.HasField("dim_param") and dim.dim_param in dims:
                    raise OptmapError(f"{self.where}: dims names '{dim.dim_param}', the batch dimension of input "
                                      f"'{value.name}'; give the batch as [workload] batch = {dims[dim.dim_param]} "
                                      f"(dims is for the other symbolic dimensions)")
                if dim.HasField("dim_param") and dim.dim_param in dims:
                    dim.dim_value = int(dims[dim.dim_param])  # clears dim_param (a oneof)
                if axis == 0:
                    if not dim.HasField("dim_value") and not dim.dim_param:
                        dim.dim_param = "batch"  # an unnamed dynamic batch
                    marks.add(dim.dim_value if dim.HasField("dim_value") else dim.dim_param)
                elif not dim.HasField("dim_value"):
                    raise OptmapError(
                        f"{self.where}: input '{value.name}' dimension {axis} is symbolic ('{dim.dim_param or '?'}'); "
                        f"give its size in [workload] dims = {{ {dim.dim_param or 'NAME'} = N }}")
        unused = sorted(set(dims) - seen)
        if unused:
            raise OptmapError(f"{self.where}: dims names {unused}, which no input dimension of the model uses")
        return marks

    def full(self, name: str) -> list[int | str] | None:
        """Inferred dimensions of ``name`` (at the first probe batch when the batch is symbolic)."""
        value_type = self.types.get(name)
        return None if value_type is None else _dims(value_type)

    def per_sample(self, name: str, what: str) -> tuple[int, ...]:
        """The shape of one sample of the activation ``name`` (``what`` describes it for errors)."""
        runs = [self.runs[i].get(name) for i in range(len(self.runs))]
        shapes = [None if t is None else _dims(t) for t in runs]
        if any(not s for s in shapes):
            raise OptmapError(f"{self.where}: ONNX shape inference gives no shape for {what}; optmap needs "
                              f"every activation's shape")
        if not all(isinstance(d, int) and d > 0 for s in shapes for d in s):
            raise OptmapError(f"{self.where}: {what} has shape {shapes[0]} with unknown dimensions; give the "
                              f"input's symbolic sizes in [workload] dims = {{ NAME = N }}")
        if self.fixed_batch is not None:
            if shapes[0][0] != self.fixed_batch:
                raise OptmapError(
                    f"{self.where}: {what} has shape {shapes[0]}, whose first dimension is not the batch "
                    f"({self.fixed_batch}); export the model with a dynamic batch so optmap can find it")
            return tuple(shapes[0][1:]) or (1,)
        small, big = shapes
        moved = [axis for axis, (a, b) in enumerate(zip(small, big)) if a != b]
        if len(small) != len(big) or len(moved) != 1 or small[moved[0]] * PROBES[1] != big[moved[0]] * PROBES[0]:
            raise OptmapError(f"{self.where}: {what} has shape {small} at batch {PROBES[0]} and {big} at batch "
                              f"{PROBES[1]}; optmap needs one axis that carries the batch")
        axis = moved[0]
        folded = small[axis] // PROBES[0]  # the other factor of a (batch * heads) axis, 1 for the batch alone
        rest = small[:axis] + ([folded] if folded > 1 else []) + small[axis + 1:]
        return tuple(rest) or (1,)
