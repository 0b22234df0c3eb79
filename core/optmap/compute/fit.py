"""Fitting a :class:`Calibration` to timed operations, and checking it on operations it never saw.

The fit minimises the robust (soft-L1) sum of squared log-ratios of predicted to measured time of
every sample (:func:`optmap.compute.isolated_time`, the context the samples were timed in), over
the ceilings, the two extra bandwidths, the smoothness and the two host times. The copy ceiling
and the per-kernel device time are measured directly and stay fixed. Needs scipy
(``pip install 'optmap[calibrate]'``).

:func:`cross_validate` predicts each sample with a calibration fitted without its group (a
network, a hidden size): the held-out errors the documentation reports.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Iterable, Sequence

import numpy as np

from optmap.errors import OptmapError
from optmap.workload import dtype_bytes

from .calibration import Calibration
from .lowering import lower
from .measurements import Sample
from .model import isolated_seconds

# Fitted fields and their bounds (SI). Bounds only keep the search physical.
FITTED = {
    "math_flops": (1e6, 1e17),
    "backward_flops": (1e6, 1e17),
    "unaligned_flops": (1e5, 1e17),
    "gather_bandwidth": (1e6, 1e15),
    "unaligned_gather_bandwidth": (1e5, 1e15),
    "output_bandwidth": (1e5, 1e15),
    "smoothness": (1.0, 30.0),
    "dispatch_s": (1e-8, 1e-1),
    "backward_call_s": (1e-8, 1.0),
}


def _batches(samples: Sequence[Sample]):
    """Samples grouped so that each group is priced in one vectorised call."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        groups[(s.op, s.passes, tuple(sorted(s.shape)))].append(i)
    out = []
    for (op, passes, keys), index in groups.items():
        shape = {k: np.array([samples[i].shape[k] for i in index]) for k in keys}
        out.append((np.array(index), op, passes, shape))
    return out


def predict(calibration: Calibration, samples: Sequence[Sample], batches=None) -> np.ndarray:
    """Predicted isolated seconds of every sample, in order."""
    size = dtype_bytes(calibration.dtype)
    out = np.empty(len(samples))
    for index, op, passes, shape in batches or _batches(samples):
        kernels = lower(op, shape, passes, calibration.align_elements, size)
        out[index] = isolated_seconds(calibration, kernels)
    return out


def start_values(gemm_flops: float, copy_bandwidth: float, kernel_s: float) -> dict[str, float]:
    """Where the fit starts: fractions of the measured ceilings (shape effects only slow a kernel)."""
    return {"math_flops": gemm_flops, "backward_flops": 0.8 * gemm_flops, "unaligned_flops": 0.05 * gemm_flops,
            "gather_bandwidth": 2 * copy_bandwidth, "unaligned_gather_bandwidth": 0.2 * copy_bandwidth,
            "output_bandwidth": 0.5 * copy_bandwidth, "smoothness": 4.0, "dispatch_s": max(kernel_s, 1e-6),
            "backward_call_s": 5 * max(kernel_s, 1e-6)}


def fit_calibration(samples: Sequence[Sample], *, dtype: str, copy_bandwidth: float, kernel_s: float,
                    gemm_flops: float, source: str = "") -> Calibration:
    """The calibration that best predicts ``samples`` (module docstring), started from the
    measured ceilings (:func:`start_values`)."""
    from scipy.optimize import least_squares

    if len(samples) < len(FITTED):
        raise OptmapError(f"calibration fit: {len(samples)} samples cannot fix {len(FITTED)} parameters; "
                          "measure more (drop --quick)")
    names = list(FITTED)
    start = start_values(gemm_flops, copy_bandwidth, kernel_s)
    x0 = [start[n] for n in names]
    low = np.log([FITTED[n][0] for n in names])
    high = np.log([FITTED[n][1] for n in names])
    x0 = np.clip(np.log(x0), low + 1e-9, high - 1e-9)
    measured = np.log([s.seconds for s in samples])
    batches = _batches(samples)
    base = Calibration(**start, copy_bandwidth=copy_bandwidth, kernel_s=kernel_s, dtype=dtype, source=source)

    def calibration(theta) -> Calibration:
        return replace(base, **dict(zip(names, np.exp(theta))))

    def residuals(theta):
        return np.log(predict(calibration(theta), samples, batches)) - measured

    result = least_squares(residuals, x0, bounds=(low, high), loss="soft_l1", f_scale=0.1, x_scale=1.0)
    return calibration(result.x)


def cross_validate(samples: Sequence[Sample], folds: Iterable[set[str]], **fit_options) -> np.ndarray:
    """Each sample predicted by a calibration fitted without the fold holding its group."""
    out = np.full(len(samples), np.nan)
    for held_out in folds:
        train = [s for s in samples if s.group not in held_out]
        test = [i for i, s in enumerate(samples) if s.group in held_out]
        if not test:
            continue
        calibration = fit_calibration(train, **fit_options)
        out[test] = predict(calibration, [samples[i] for i in test])
    return out


def error_rows(samples: Sequence[Sample], predicted: np.ndarray, by=lambda s: (s.family, s.passes)) -> list[dict]:
    """Per key of ``by``: count, median, mean and 90th-percentile |predicted/measured - 1| (in %)."""
    keyed: dict = defaultdict(list)
    for s, p in zip(samples, predicted):
        if np.isfinite(p):
            keyed[by(s)].append(p / s.seconds - 1.0)
    rows = []
    for key, errors in sorted(keyed.items()):
        e = np.abs(errors)
        rows.append({"key": key, "n": len(e), "median_pct": 100 * float(np.median(e)),
                     "mean_pct": 100 * float(np.mean(e)), "p90_pct": 100 * float(np.percentile(e, 90)),
                     "bias_pct": 100 * float(np.median(errors))})
    return rows
