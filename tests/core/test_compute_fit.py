"""Fitting recovers a known calibration from timings it generated; held-out checks exclude the fold."""

import numpy as np
import pytest

from optmap.compute import Calibration, Sample
from optmap.compute.fit import cross_validate, error_rows, fit_calibration, predict

TRUE = Calibration(math_flops=300e12, backward_flops=250e12, unaligned_flops=20e12, gather_bandwidth=3e12,
                   unaligned_gather_bandwidth=0.3e12, copy_bandwidth=1.5e12, output_bandwidth=0.8e12,
                   smoothness=5.0, kernel_s=3e-6, dispatch_s=20e-6, backward_call_s=150e-6)


def _samples():
    """Convolution and GEMM shapes spanning every roofline term, timed by TRUE itself."""
    shapes = []
    for batch in (4, 32, 256):
        for cin, cout in ((3, 64), (16, 64), (64, 64), (256, 512), (512, 8), (8, 512)):
            for hw, kernel in ((56 * 56, 9), (14 * 14, 1), (112 * 112, 9)):
                shapes.append(("conv2d", {"batch": batch, "cin": cin, "cout": cout, "in_hw": hw, "out_hw": hw,
                                          "kernel": kernel, "aligned": cin % 8 == 0}))
    shapes += [("gemm", {"m": m, "n": n, "k": k}) for m in (256, 4096) for n in (512, 8192) for k in (128, 8192)]
    samples = [Sample("family", f"g{i % 3}", str(i), op, shape, passes, 1.0)
               for i, (op, shape) in enumerate(shapes)
               for passes in (("forward", "training") if op == "conv2d" else ("forward",))]
    return [Sample(s.family, s.group, s.label, s.op, s.shape, s.passes, float(t))
            for s, t in zip(samples, predict(TRUE, samples))]


def test_fit_recovers_the_parameters_that_generated_the_timings():
    samples = _samples()
    fitted = fit_calibration(samples, dtype="bf16", copy_bandwidth=TRUE.copy_bandwidth, kernel_s=TRUE.kernel_s,
                             gemm_flops=400e12)
    assert np.max(np.abs(predict(fitted, samples) / [s.seconds for s in samples] - 1)) < 1e-3
    for name in ("math_flops", "backward_flops", "gather_bandwidth", "output_bandwidth", "dispatch_s"):
        assert getattr(fitted, name) == pytest.approx(getattr(TRUE, name), rel=0.02), name


def test_cross_validation_predicts_every_sample_from_the_other_folds():
    samples = _samples()
    held_out = cross_validate(samples, [{"g0"}, {"g1"}, {"g2"}], dtype="bf16", copy_bandwidth=TRUE.copy_bandwidth,
                              kernel_s=TRUE.kernel_s, gemm_flops=400e12)
    assert np.all(np.isfinite(held_out))
    rows = error_rows(samples, held_out, by=lambda s: "all")
    assert rows[0]["n"] == len(samples) and rows[0]["median_pct"] < 0.5  # exact model: tiny held-out error
