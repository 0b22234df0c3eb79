"""A measured accelerator's compute calibration: the parameters of the shared compute model.

A :class:`Calibration` travels with its :class:`~optmap.system.Accelerator`, in
``attrs["calibration"]`` (see :func:`with_calibration` / :func:`calibration_of`). An accelerator without one is priced at its
datasheet peak, exactly as every formulation did before measured presets existed.

All fields are SI (FLOP/s, B/s, s); preset files speak ``*_tflops``, ``*_gBps`` and ``*_us``
(:meth:`Calibration.to_table` / :meth:`Calibration.from_table`). What each parameter means is
documented in :mod:`optmap.compute.model` and ``docs/calibration.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from optmap.errors import OptmapError
from optmap.system import Accelerator, canonical_dtype
from optmap.units import (
    bytes_per_s_to_gBps,
    flops_to_tflops,
    gBps_to_bytes_per_s,
    s_to_us,
    tflops_to_flops,
    us_to_s,
)

# Field name -> (preset-file key, SI -> file unit, file unit -> SI, what it is).
_UNITS = {
    "math_flops": ("math_tflops", flops_to_tflops, tflops_to_flops, "forward contraction ceiling"),
    "backward_flops": ("backward_tflops", flops_to_tflops, tflops_to_flops, "backward contraction ceiling"),
    "unaligned_flops": ("unaligned_tflops", flops_to_tflops, tflops_to_flops,
                        "ceiling when the layer's channels are not a multiple of align_elements"),
    "gather_bandwidth": ("gather_gBps", bytes_per_s_to_gBps, gBps_to_bytes_per_s,
                         "rate of the gathered (im2col) operand of a contraction"),
    "copy_bandwidth": ("copy_gBps", bytes_per_s_to_gBps, gBps_to_bytes_per_s,
                       "device-memory traffic ceiling (read + write), the copy ceiling"),
    "unaligned_gather_bandwidth": ("unaligned_gather_gBps", bytes_per_s_to_gBps, gBps_to_bytes_per_s,
                                   "gathered-operand rate of a layer whose channels are not aligned"),
    "output_bandwidth": ("output_gBps", bytes_per_s_to_gBps, gBps_to_bytes_per_s,
                         "rate at which a contraction writes its output (epilogue)"),
    "kernel_s": ("kernel_us", s_to_us, us_to_s, "device time every kernel costs (launch gap)"),
    "dispatch_s": ("dispatch_us", s_to_us, us_to_s, "host time to dispatch one framework operation"),
    "backward_call_s": ("backward_call_us", s_to_us, us_to_s, "host time to start one backward call"),
}


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters of the compute model for one dtype (SI units)."""

    math_flops: float
    backward_flops: float
    unaligned_flops: float
    gather_bandwidth: float
    unaligned_gather_bandwidth: float
    copy_bandwidth: float
    output_bandwidth: float
    smoothness: float  # exponent p of the smooth maximum over the roofline terms
    kernel_s: float
    dispatch_s: float
    backward_call_s: float
    dtype: str = "bf16"
    align_elements: int = 8
    source: str = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("dtype", "source"):
                if not isinstance(value, str):
                    raise OptmapError(f"calibration: {f.name} must be a string, got {value!r}")
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise OptmapError(f"calibration: {f.name} must be a finite number, got {value!r}")
            positive = f.name not in ("kernel_s", "dispatch_s", "backward_call_s")
            if value < 0 or (positive and value == 0):
                raise OptmapError(f"calibration: {f.name} must be {'> 0' if positive else '>= 0'}, got {value!r}")
        if self.smoothness < 1:
            raise OptmapError(f"calibration: smoothness must be >= 1 (1 adds the terms, large values "
                              f"take their maximum), got {self.smoothness!r}")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        object.__setattr__(self, "align_elements", int(self.align_elements))

    def to_table(self) -> dict[str, Any]:
        """The ``[attrs.calibration]`` table of a preset file (file units: TFLOP/s, GB/s, µs)."""
        table: dict[str, Any] = {"dtype": self.dtype}
        for name, (key, to_file, _, _) in _UNITS.items():
            table[key] = float(f"{to_file(getattr(self, name)):.6g}")
        table["smoothness"] = float(f"{self.smoothness:.6g}")
        table["align_elements"] = self.align_elements
        if self.source:
            table["source"] = self.source
        return table

    @classmethod
    def from_table(cls, table: Mapping[str, Any], where: str = "calibration") -> "Calibration":
        """Read an ``[attrs.calibration]`` table; unknown or missing keys are one clear error."""
        if not isinstance(table, Mapping):
            raise OptmapError(f"{where}: expected a table of calibration keys, got {type(table).__name__}")
        file_keys = {key: name for name, (key, *_) in _UNITS.items()}
        valid = set(file_keys) | {"dtype", "smoothness", "align_elements", "source"}
        unknown = sorted(set(table) - valid)
        if unknown:
            raise OptmapError(f"{where}: unknown key '{unknown[0]}'; valid keys: {', '.join(sorted(valid))}")
        missing = sorted((set(file_keys) | {"smoothness"}) - set(table))
        if missing:
            raise OptmapError(f"{where}: missing key '{missing[0]}' (run `optmap calibrate` to write a complete table)")
        values: dict[str, Any] = {}
        for key, name in file_keys.items():
            number = table[key]
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                raise OptmapError(f"{where}: {key} must be a number, got {number!r}")
            values[name] = _UNITS[name][2](float(number))
        values["smoothness"] = table["smoothness"]
        for key in ("dtype", "align_elements", "source"):
            if key in table:
                values[key] = table[key]
        return cls(**values)

    def scaled(self, math: float = 1.0, memory: float = 1.0, **overrides: Any) -> "Calibration":
        """This calibration with every math ceiling × ``math`` and every bandwidth × ``memory``."""
        return replace(
            self,
            math_flops=self.math_flops * math,
            backward_flops=self.backward_flops * math,
            unaligned_flops=self.unaligned_flops * math,
            gather_bandwidth=self.gather_bandwidth * memory,
            unaligned_gather_bandwidth=self.unaligned_gather_bandwidth * memory,
            copy_bandwidth=self.copy_bandwidth * memory,
            output_bandwidth=self.output_bandwidth * memory,
            **overrides,
        )


ATTR = "calibration"  # the key of Accelerator.attrs that holds it


def with_calibration(accelerator: Accelerator, calibration: Calibration | None) -> Accelerator:
    """``accelerator`` carrying ``calibration`` in its ``attrs`` (None: an uncalibrated copy,
    priced at its datasheet peak)."""
    attrs = {k: v for k, v in accelerator.attrs.items() if k != ATTR}
    if calibration is not None:
        if not isinstance(calibration, Calibration):
            raise OptmapError(f"accelerator '{accelerator.name}': calibration must be a Calibration")
        attrs[ATTR] = calibration
    return replace(accelerator, attrs=attrs)


def calibration_of(accelerator: Accelerator) -> Calibration | None:
    """The accelerator's calibration (``attrs["calibration"]``: a :class:`Calibration`, or the
    ``[attrs.calibration]`` table of a preset file in file units), or None when it is priced at
    its datasheet peak."""
    value = accelerator.attrs.get(ATTR)
    if value is None or isinstance(value, Calibration):
        return value
    return Calibration.from_table(value, f"accelerator '{accelerator.name}': attrs.calibration")
