"""Small ONNX models written with onnx.helper for the importer's tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT


def weight(name: str, *shape: int, value: float = 0.0) -> onnx.TensorProto:
    """An initializer ``name`` of ``shape`` filled with ``value``."""
    return numpy_helper.from_array(np.full(shape, value, np.float32), name)


def ints(name: str, *values: int) -> onnx.TensorProto:
    """An int64 initializer (a shape, axes or split sizes)."""
    return numpy_helper.from_array(np.array(values, np.int64), name)


def scalar(name: str, value: float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, np.float32), name)


def value(name: str, *dims: int | str, elem: int = FLOAT) -> onnx.ValueInfoProto:
    """A graph input/output ``name`` with dimensions ``dims`` (strings are symbolic)."""
    return helper.make_tensor_value_info(name, elem, list(dims))


def model(nodes: list[onnx.NodeProto], inputs: list, outputs: list, initializers: list, opset: int = 17,
          extra_opsets: dict[str, int] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=initializers)
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in (extra_opsets or {}).items()]
    return helper.make_model(graph, opset_imports=opsets)


def save(m: onnx.ModelProto, path: Path) -> Path:
    onnx.save_model(m, str(path))
    return path


def node(op: str, inputs: list[str], outputs: list[str], name: str | None = None, **attrs) -> onnx.NodeProto:
    return helper.make_node(op, inputs, outputs, name=name or outputs[0], **attrs)
