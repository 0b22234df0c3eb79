"""ONNX import: ``[workload] file = "model.onnx"`` reads a real ONNX graph as an optmap workload.

Workload ``onnx`` (:func:`read_onnx`), the reader of ``.onnx`` files, and the op kinds it adds
to the workload IR (``optmap.plugins.onnx.ops``). Reading needs the optional ``onnx`` package:
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


@hookimpl
def optmap_register_ops(register):
    from optmap.plugins.onnx.ops import KINDS  # the IR installs op kinds when the host loads

    for kind in KINDS:
        register(kind.name, kind)
