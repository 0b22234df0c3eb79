"""The shared compute model: how long an operation takes on an accelerator.

Every kernel of an operation (see :mod:`optmap.compute.lowering`) takes

    t = kernel_s + smax_p( flops / ceiling,            # math: the pass's contraction ceiling
                           gathered / gather_bandwidth, # the im2col operand through on-chip memory
                           moved / copy_bandwidth,      # device-memory traffic at the copy ceiling
                           written / output_bandwidth ) # the output epilogue

where ``smax_p(x) = (Σ xᵢᵖ)^(1/p)`` is a smooth roofline (p → ∞ is the plain maximum) and the
ceiling is ``math_flops`` forward, ``backward_flops`` for backward kernels, and
``unaligned_flops`` for a layer whose channels are not a multiple of ``align_elements`` (the
tensor cores need aligned channels; cuDNN then runs a slow direct kernel, whose gathered operand
also moves at its own ``unaligned_gather_bandwidth``). Every term grows with
every dimension of the shape, so a bigger shard never takes less time.

Two contexts:

* :func:`compute_time` — device time inside a busy stream (a training step, a pipeline stage):
  the kernels' times add; host dispatch overlaps them.
* :func:`isolated_time` — one operation timed alone between CUDA events, as the measurements
  were taken: the host dispatches each kernel (``dispatch_s``; the first backward kernel after
  ``backward_call_s``) and the device starts a kernel once it is dispatched and the previous
  one has finished.

An accelerator without a :class:`~optmap.compute.Calibration` (or ``peak_only=True``, for a
formulation that must stay paper-faithful) is priced as before: FLOPs over its datasheet peak,
memory-bound work over its datasheet memory bandwidth.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from optmap.system import Accelerator
from optmap.workload import dtype_bytes

from .calibration import Calibration, calibration_of
from .lowering import Kernel, lower


def smooth_max(terms: list, p: float):
    """(Σ tᵖ)^(1/p), computed relative to the largest term; 0 where every term is 0."""
    arrays = np.broadcast_arrays(*[np.asarray(t, float) for t in terms])
    top = np.maximum.reduce(arrays)
    safe = np.where(top > 0, top, 1.0)
    total = sum((a / safe) ** p for a in arrays)
    return np.where(top > 0, top * total ** (1.0 / p), 0.0)


def kernel_seconds(calibration: Calibration, kernel: Kernel, math_scale: float = 1.0):
    """Device time of one kernel in a busy stream (module docstring)."""
    ceiling = calibration.backward_flops if kernel.backward else calibration.math_flops
    ceiling = np.where(kernel.unaligned, calibration.unaligned_flops, ceiling) * math_scale
    terms = [
        np.asarray(kernel.flops, float) / ceiling,
        np.asarray(kernel.gathered, float)
        / np.where(np.logical_and(kernel.unaligned, kernel.gathers_input), calibration.unaligned_gather_bandwidth,
                   calibration.gather_bandwidth),
        np.asarray(kernel.moved, float) / calibration.copy_bandwidth,
        np.asarray(kernel.written, float) / calibration.output_bandwidth,
    ]
    return kernel.launches * calibration.kernel_s + smooth_max(terms, calibration.smoothness)


def _math_scale(accelerator: Accelerator, calibration: Calibration, dtype: str) -> float:
    """Ceilings measured in the calibration's dtype, scaled to ``dtype`` by the datasheet peaks."""
    if dtype == calibration.dtype:
        return 1.0
    return accelerator.flops_per_s(dtype) / accelerator.flops_per_s(calibration.dtype)


def _peak_seconds(accelerator: Accelerator, kernels: list[Kernel], dtype: str):
    """Datasheet pricing: FLOPs over the peak; memory-only kernels over the memory bandwidth."""
    total = 0.0
    for kernel in kernels:
        flops = np.asarray(kernel.flops, float)
        memory = np.asarray(kernel.moved, float) / accelerator.memory_bandwidth
        total = total + np.where(flops > 0, flops / accelerator.flops_per_s(dtype), memory)
    return total


def _scalar(value):
    return float(value) if np.ndim(value) == 0 else value


def compute_time(
    accelerator: Accelerator,
    op: str,
    shape: Mapping[str, Any],
    *,
    dtype: str = "bf16",
    passes="forward",
    peak_only: bool = False,
):
    """Seconds ``accelerator`` spends on ``op`` of ``shape`` inside a busy stream.

    ``op`` is one of conv2d, linear, gemm (matmul), attention, memory; ``shape`` maps that op's
    named sizes to numbers or numpy arrays (they broadcast: price a whole population at once);
    ``passes`` is "forward", "training" (forward + backward_data + weight_grad), "backward" or a
    tuple of pass names. Returns a float or an array of the broadcast shape.
    """
    calibration = None if peak_only else calibration_of(accelerator)
    size = dtype_bytes(dtype)
    align = calibration.align_elements if calibration else 8
    kernels = lower(op, shape, passes, align, size)
    if calibration is None:
        return _scalar(_peak_seconds(accelerator, kernels, dtype))
    scale = _math_scale(accelerator, calibration, dtype)
    return _scalar(sum((kernel_seconds(calibration, k, scale) for k in kernels), 0.0))


def isolated_seconds(calibration: Calibration, kernels: list[Kernel], math_scale: float = 1.0):
    """The host/device recurrence of :func:`isolated_time` for lowered ``kernels``."""
    ready = end = 0.0
    started_backward = False
    for kernel in kernels:
        if kernel.backward and not started_backward:
            ready = ready + calibration.backward_call_s
            started_backward = True
        else:
            ready = ready + calibration.dispatch_s * np.asarray(kernel.launches, float)
        end = np.maximum(end, ready) + kernel_seconds(calibration, kernel, math_scale)
    return end


def isolated_time(accelerator: Accelerator, op: str, shape: Mapping[str, Any], *, dtype: str = "bf16",
                  passes="forward"):
    """Seconds between CUDA events around ``op`` run alone (how the measurements were taken).

    The host dispatches the kernels one after the other; the device runs each once it is
    dispatched and its predecessor is done (module docstring). Without a calibration this is
    :func:`compute_time` (the datasheet knows no host).
    """
    calibration = calibration_of(accelerator)
    if calibration is None:
        return compute_time(accelerator, op, shape, dtype=dtype, passes=passes)
    kernels = lower(op, shape, passes, calibration.align_elements, dtype_bytes(dtype))
    return _scalar(isolated_seconds(calibration, kernels, _math_scale(accelerator, calibration, dtype)))
