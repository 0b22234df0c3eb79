"""``read_onnx``: an ONNX model file as an optmap Workload."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


from optmap.bounds import Batch, Dimension
from optmap.errors import OptmapError
from optmap.workload import Workload

# ONNX element types (TensorProto enum values: FLOAT, FLOAT16, BFLOAT16, FLOAT8E4M3FN, FLOAT8E5M2,
# INT8) -> optmap dtypes; the default dtype is the model input's.
DTYPES = {1: "fp32", 10: "fp16", 16: "bf16", 17: "fp8", 19: "fp8", 3: "int8"}


def read_onnx(file: str | Path, *, batch: Batch | None = None, dtype: str | None = None,
              phase: str = "training", dims: Mapping[str, Dimension] | None = None,
              name: str | None = None) -> Workload:
    """The workload of the ONNX model in ``file``: one layer per node that computes activations.

    ``batch`` defaults to the batch the file fixes (1 when it is symbolic); ``dtype`` to the
    model input's element type (fp32 for float32); ``dims`` gives sizes to symbolic input
    dimensions other than the batch (``{"seq": 128}``); ``name`` defaults to the file's stem.
    Unsupported ops are all named in one OptmapError.
    """
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise OptmapError("reading ONNX models needs the onnx package: pip install 'optmap[onnx]'") from None
    from . import elementwise, handlers, movement
    from .convert import Converter
    from .graph import OnnxGraph, load_model

    path = Path(file)
    where = str(path)
    graph = OnnxGraph(load_model(path), where, dims)
    if batch is None:
        batch = graph.fixed_batch() or 1
    if dtype is None:
        dtype = DTYPES.get(graph.input_dtype(), "fp32")
    table = {**elementwise.HANDLERS, **handlers.HANDLERS, **movement.HANDLERS}  # disjoint op types
    workload = Converter(graph, name or path.stem, table).run().build(batch, dtype, phase)
    if not any(layer.op != "input" for layer in workload.layers()):
        raise OptmapError(f"{where}: the ONNX graph computes nothing from its inputs")
    return workload


read_onnx.imports = ("onnx",)  # optmap.extras: `plugins --check` flags a missing onnx
