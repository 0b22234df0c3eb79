"""ONNX import: ``[workload] file = "model.onnx"`` reads a real ONNX graph as an optmap workload.

Workload ``onnx`` (:func:`read_onnx`) and the reader of ``.onnx`` files; ONNX ops the built-in
kinds do not cover map onto the IR's general kinds (:mod:`optmap.workload.general_ops`: element-wise,
binary, reduce, norm, embedding, attention, data movement). Reading needs the optional ``onnx`` package:
``pip install 'optmap[onnx]'``.
"""

from optmap.hookspecs import hookimpl

__all__ = ["read_onnx"]


def __getattr__(name: str):
    if name == "read_onnx":
        from optmap.plugins.onnx.reader import read_onnx

        return read_onnx
    raise AttributeError(f"module 'optmap.plugins.onnx' has no attribute '{name}'")


@hookimpl
def optmap_register_workloads(register):
    register("onnx", "optmap.plugins.onnx.reader:read_onnx")


@hookimpl
def optmap_register_workload_readers(register):
    register(".onnx", "onnx")

