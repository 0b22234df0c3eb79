"""The shared compute model: peak pricing, the smooth roofline and the host recurrence by hand,
and monotonicity (a bigger shard never takes less time)."""

import itertools

import numpy as np
import pytest

from optmap.compute import Calibration, calibration_of, compute_time, isolated_time, with_calibration
from optmap.compute.model import smooth_max
from optmap.errors import OptmapError
from optmap.system import Accelerator

PEAK = Accelerator("peaky", {"bf16": 100e12, "fp32": 25e12}, 16e9, 1e12, 1e9)
CAL = Calibration(math_flops=50e12, backward_flops=40e12, unaligned_flops=5e12, gather_bandwidth=4e12,
                  unaligned_gather_bandwidth=0.5e12, copy_bandwidth=1e12, output_bandwidth=2e12, smoothness=4.0,
                  kernel_s=2e-6, dispatch_s=10e-6, backward_call_s=100e-6)
MEASURED = with_calibration(PEAK, CAL)
CONV = {"batch": 32, "cin": 64, "cout": 128, "in_hw": 28 * 28, "out_hw": 28 * 28, "kernel": 9}


def test_uncalibrated_accelerator_is_priced_at_its_peak():
    # 2·MACs per pass over the datasheet peak: MACs = 32·784·128·64·9 (forward = dgrad = wgrad).
    macs = 32 * 784 * 128 * 64 * 9
    assert compute_time(PEAK, "conv2d", CONV, passes="forward") == pytest.approx(2 * macs / 100e12, rel=1e-12)
    assert compute_time(PEAK, "conv2d", CONV, passes="training") == pytest.approx(6 * macs / 100e12, rel=1e-12)
    assert compute_time(PEAK, "gemm", {"m": 10, "n": 20, "k": 30}, dtype="fp32") == pytest.approx(
        2 * 6000 / 25e12, rel=1e-12)
    # memory-bound work at the datasheet memory bandwidth (1 TB/s): 1 GB → 1 ms
    assert compute_time(PEAK, "memory", {"bytes": 1e9}) == pytest.approx(1e-3)
    # peak_only keeps a measured accelerator on the datasheet too (paper-faithful formulations)
    assert compute_time(MEASURED, "conv2d", CONV, passes="training", peak_only=True) == pytest.approx(
        6 * macs / 100e12, rel=1e-12)


def test_gemm_forward_by_hand():
    # m=n=k=4096 bf16: flops 2·4096³ at 50 TFLOP/s; gathered = m·k·2 B at 4 TB/s; moved =
    # (mk + kn + mn)·2 B at 1 TB/s; written = mn·2 B at 2 TB/s; p = 4; plus 2 µs.
    n = 4096
    terms = [2 * n**3 / 50e12, n * n * 2 / 4e12, 3 * n * n * 2 / 1e12, n * n * 2 / 2e12]
    expected = 2e-6 + sum(t**4 for t in terms) ** 0.25
    assert compute_time(MEASURED, "gemm", {"m": n, "n": n, "k": n}) == pytest.approx(expected, rel=1e-12)


def test_smooth_max_limits():
    assert smooth_max([3.0, 4.0], 1.0) == pytest.approx(7.0)  # p = 1 adds
    assert smooth_max([3.0, 4.0], 2.0) == pytest.approx(5.0)  # p = 2: Euclidean
    assert smooth_max([3.0, 4.0], 200.0) == pytest.approx(4.0, rel=1e-2)  # large p: the maximum
    assert smooth_max([0.0, 0.0], 4.0) == 0.0


def test_isolated_time_follows_the_host_recurrence():
    # forward: dispatch, then the kernel. training: forward; the backward-data kernel starts when
    # dispatched (dispatch + backward call) or when the forward ends, whichever is later; the
    # weight-gradient kernel likewise one dispatch later.
    g = [compute_time(MEASURED, "conv2d", CONV, passes=p) for p in ("forward", "backward_data", "weight_grad")]
    d, call = CAL.dispatch_s, CAL.backward_call_s
    assert isolated_time(MEASURED, "conv2d", CONV) == pytest.approx(d + g[0])
    end = max(d + g[0], d + call) + g[1]
    end = max(end, d + call + d) + g[2]
    assert isolated_time(MEASURED, "conv2d", CONV, passes="training") == pytest.approx(end)


def test_unaligned_layers_use_their_own_ceilings():
    # 3 input channels (not a multiple of 8): math at 5 TFLOP/s and the gathered input at
    # 0.5 TB/s instead of 50 TFLOP/s and 4 TB/s. By hand, forward: m = 32·784, n = 128, k = 3·9.
    first = {**CONV, "cin": 3}
    m, n, k = 32 * 784, 128, 27
    moved = (32 * 3 * 784 + 3 * 9 * 128 + 32 * 128 * 784) * 2

    def expected(math, gather):
        terms = [2 * m * n * k / math, m * k * 2 / gather, moved / 1e12, m * n * 2 / 2e12]
        return 2e-6 + sum(t**4 for t in terms) ** 0.25

    assert compute_time(MEASURED, "conv2d", first) == pytest.approx(expected(5e12, 0.5e12), rel=1e-12)
    assert compute_time(MEASURED, "conv2d", {**first, "aligned": True}) == pytest.approx(expected(50e12, 4e12), rel=1e-12)


def test_monotone_in_every_shard_dimension():
    h100 = _h100()
    grid = {"batch": [1, 2, 7, 64, 256], "cin": [3, 16, 64, 512], "cout": [1, 32, 128, 2048]}
    base = {"in_hw": 56 * 56, "out_hw": 56 * 56, "kernel": 9}
    for passes in ("forward", "backward_data", "weight_grad", "training"):
        for aligned in (True, False):
            for dim, values in grid.items():
                others = [k for k in grid if k != dim]
                for combo in itertools.product(*(grid[k] for k in others)):
                    shape = {**base, **dict(zip(others, combo)), "aligned": aligned,
                             dim: np.linspace(values[0], values[-1], 200)}
                    t = compute_time(h100, "conv2d", shape, passes=passes)
                    assert np.all(np.diff(t) >= 0), (passes, aligned, dim, combo)


def test_arrays_broadcast_like_scalars():
    batch = np.array([8.0, 64.0, 256.0])
    together = compute_time(MEASURED, "conv2d", {**CONV, "batch": batch}, passes="training")
    apart = [compute_time(MEASURED, "conv2d", {**CONV, "batch": b}, passes="training") for b in batch]
    assert together == pytest.approx(apart)


def test_bad_shapes_and_ops_are_one_line_errors():
    with pytest.raises(OptmapError, match="needs shape key 'cout'"):
        compute_time(MEASURED, "conv2d", {"batch": 1, "cin": 1})
    with pytest.raises(OptmapError, match="unknown op 'conv3d'"):
        compute_time(MEASURED, "conv3d", CONV)
    with pytest.raises(OptmapError, match="unknown pass"):
        compute_time(MEASURED, "conv2d", CONV, passes="sideways")
    with pytest.raises(OptmapError, match="smoothness"):
        Calibration(**{**CAL.__dict__, "smoothness": 0.5})


def test_calibration_travels_with_the_accelerator():
    assert calibration_of(MEASURED) is CAL and calibration_of(PEAK) is None
    assert calibration_of(with_calibration(MEASURED, None)) is None
    assert MEASURED.attrs["calibration"] is CAL and not PEAK.attrs
    assert len({MEASURED: 1, PEAK: 2}) == 2  # hashable and distinct (AccPar groups devices by accelerator)
    # a group's datasheet override keeps the calibration (attrs are merged)
    assert calibration_of(MEASURED.with_datasheet(memory_gib=8)) is CAL


def _h100():
    from optmap.plugins.hardware import PRESET_FILES
    from optmap.compute import read_preset

    return read_preset(PRESET_FILES / "h100-sxm.toml")
