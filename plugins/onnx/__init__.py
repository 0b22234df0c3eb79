"""ONNX import: ``[workload] file = "model.onnx"`` reads a real ONNX graph as an optmap workload.

Workload reader ``onnx`` (:func:`read_onnx`), picked by the ``.onnx`` suffix. Needs the optional
``onnx`` package: ``pip install 'optmap[onnx]'``.
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
