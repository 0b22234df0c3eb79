"""The shared, efficiency-aware compute model (see :mod:`optmap.compute.model`).

``compute_time(accelerator, op, shape, dtype=..., passes=...)`` prices an operation (conv2d,
linear, gemm, attention, memory) on an accelerator: a smooth roofline over math throughput and
memory traffic whose ceilings come from the accelerator's measured :class:`Calibration`, plus a
per-kernel launch cost. An accelerator without a calibration is priced at its datasheet peak,
exactly as before. :func:`isolated_time` predicts an operation timed alone (host dispatch
included), the way calibration measurements are taken. Names are imported on first use, so
reading a preset file does not load numpy.
"""

_API = {
    "Calibration": "optmap.compute.calibration",
    "calibration_of": "optmap.compute.calibration",
    "with_calibration": "optmap.compute.calibration",
    "check_kernels": "optmap.compute.kernels",
    "kernels_of": "optmap.compute.kernels",
    "PASSES": "optmap.compute.lowering",
    "lower": "optmap.compute.lowering",
    "Measurements": "optmap.compute.measurements",
    "Sample": "optmap.compute.measurements",
    "read_measurements": "optmap.compute.measurements",
    "compute_time": "optmap.compute.model",
    "isolated_time": "optmap.compute.model",
    "read_preset": "optmap.compute.preset",
    "write_preset": "optmap.compute.preset",
    "save_preset": "optmap.compute.preset",
}

__all__ = sorted(_API)


def __getattr__(name):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'optmap.compute' has no attribute {name!r}")
