"""The shared, efficiency-aware compute model (see :mod:`optmap.compute.model`).

``compute_time(accelerator, op, shape, dtype=..., passes=...)`` prices an operation (conv2d,
linear, gemm, attention, memory) on an accelerator: a smooth roofline over math throughput and
memory traffic whose ceilings come from the accelerator's measured :class:`Calibration`, plus a
per-kernel launch cost. An accelerator without a calibration is priced at its datasheet peak,
exactly as before. :func:`isolated_time` predicts an operation timed alone (host dispatch
included), the way calibration measurements are taken.
"""

from .calibration import Calibration, MeasuredAccelerator, calibration_of, with_calibration
from .lowering import PASSES, lower
from .measurements import Measurements, Sample, read_measurements
from .model import compute_time, isolated_time
from .preset import read_preset, write_preset

__all__ = [
    "Calibration",
    "MeasuredAccelerator",
    "Measurements",
    "PASSES",
    "Sample",
    "calibration_of",
    "compute_time",
    "isolated_time",
    "lower",
    "read_measurements",
    "read_preset",
    "with_calibration",
    "write_preset",
]
