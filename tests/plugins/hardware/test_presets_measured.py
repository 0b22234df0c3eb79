"""The measured presets: h100-sxm fitted to the H100 measurements (errors as docs/calibration.md
states them), a100-sxm moved to A100 datasheet figures, both registered by the hardware plugin."""

from pathlib import Path

import numpy as np
import pytest

from optmap.compute import calibration_of, read_preset
from optmap.compute.fit import cross_validate, predict
from optmap.compute.step import training_step
from optmap.host import load_host
from optmap.plugins.hardware import PRESET_FILES, h100
from optmap.plugins.zoo.models import resnet50

H100 = read_preset(PRESET_FILES / "h100-sxm.toml")
A100 = read_preset(PRESET_FILES / "a100-sxm.toml")


def test_datasheet_fields_and_calibration():
    # NVIDIA H100 SXM5 datasheet: 989.4 TFLOPS bf16 dense, 80 GB HBM3 at 3.35 TB/s, NVLink 900 GB/s
    assert H100.flops_per_s("bf16") == 989.4e12 and H100.memory_bandwidth == 3350e9
    assert H100.network_bandwidth == 900e9 and H100.memory_bytes == 80 * 2**30
    cal = calibration_of(H100)
    # the copy ceiling is the measured one (ceilings.json: 2980.1 GB/s read + write)
    assert cal.copy_bandwidth == pytest.approx(h100.ceilings()["copy_bandwidth"], rel=1e-5)
    # fitted math ceilings sit below the measured 8192³ GEMM (774 TFLOP/s) and above half of it
    assert 0.5 * 774e12 < cal.backward_flops < cal.math_flops < 774e12


def test_a100_is_the_h100_fit_scaled_by_datasheet_ratios():
    h, a = calibration_of(H100), calibration_of(A100)
    assert a.math_flops == pytest.approx(h.math_flops * 312 / 989.4, rel=1e-5)
    assert a.copy_bandwidth == pytest.approx(h.copy_bandwidth * 2039 / 3350, rel=1e-5)
    assert a.dispatch_s == h.dispatch_s and A100.flops_per_s("bf16") == 312e12


def test_unsplit_layers_within_the_stated_error():
    # docs/calibration.md: every unsplit CNN layer within 45 %, median 9 % forward / 14 % forward +
    # backward, 90 % within 28 % (shipped preset, isolated timing as measured).
    samples = [s for s in h100.cnn_samples(load_host()) if s.split == 1]
    predicted = predict(calibration_of(H100), samples)
    for passes, median in (("forward", 0.10), ("training", 0.15)):
        e = np.array([abs(p / s.seconds - 1) for s, p in zip(samples, predicted) if s.passes == passes])
        assert len(e) == 36 and e.max() < 0.45 and np.median(e) < median and np.percentile(e, 90) < 0.30


def test_held_out_errors_as_stated():
    # docs/calibration.md held-out table: GEMM median 6.9 %, CNN batch splits 13.8 % / 15.2 %.
    samples = h100.samples(load_host())
    c = h100.ceilings()
    held_out = cross_validate(samples, ({"vgg16", "h4096", "h12288"}, {"resnet50", "h2048", "h8192"}),
                              dtype="bf16", copy_bandwidth=c["copy_bandwidth"], kernel_s=h100.KERNEL_S,
                              gemm_flops=c["gemm_flops"])
    errors = np.abs(held_out / [s.seconds for s in samples] - 1)
    for family, bound in (("gemm", 0.08), ("conv-batch", 0.17), ("conv-out", 0.17)):
        assert np.median(errors[[s.family == family for s in samples]]) < bound, family


def test_transformer_blocks_never_fitted_are_predicted():
    # docs/calibration.md: forward median 4.2 %, forward + backward median 9.1 % (under-predicted)
    errors = h100.block_errors(calibration_of(H100))
    assert np.median(np.abs(errors["forward"])) < 0.06
    assert np.median(np.abs(errors["training"])) < 0.12


def test_gpt_blocks_do_not_ask_for_slower_element_wise_kernels():
    # docs/calibration.md, "Whole training steps": the blocks' layer norms, GELU and residual adds
    # are the one measured sequence of element-wise kernels. Fitted to the device-bound sequences,
    # the forward ones run at least at the copy ceiling the step model prices them at (1.18 x), the
    # backward ones within 10 % of it (0.93 x), and flash-attention's backward far below the
    # backward GEMM ceiling (0.21 x): the copy ceiling is not what makes whole steps too fast.
    factors = h100.memory_bound_factors(calibration_of(H100))
    assert factors["sequences"] >= 80
    assert factors["forward_memory"] >= 1.0
    assert 0.9 <= factors["backward_memory"] <= 1.1
    assert factors["attention_backward"] < 0.5


def test_whole_resnet50_step_is_a_sum_of_its_parts():
    step = training_step(H100, resnet50(batch=256, dtype="bf16"))
    # device-bound at batch 256: the step is its layers' device time plus the launch gaps where the
    # host falls behind (issue 24: a recurrence, not max(device, host); under 1 % here)
    assert step["time"] == pytest.approx(sum(step["layers"].values()), rel=0.01)
    assert step["device"] > 2 * step["host"]


def test_presets_are_registered():
    from optmap.host import load_host

    host = load_host()
    assert {"h100-sxm", "a100-sxm"} <= set(host.names("accelerator"))
    assert calibration_of(host.get("accelerator", "h100-sxm").resolve()) == calibration_of(H100)


@pytest.mark.parametrize("network, batch", [("resnet50", 256), ("vgg16", 128), ("resnet18", 64)])
def test_one_device_accpar_problem_predicts_the_training_step(network, batch):
    # problems/calibration/h100-resnet50-step.toml: one h100-sxm, fully-connected, accpar, dp. Every
    # layer is local, so AccPar's time is the single-device step of optmap.compute.step.
    import optmap
    from optmap.plugins.zoo.models import MODELS

    problem = optmap.load(Path(__file__).parents[3] / "problems" / "calibration" / "h100-resnet50-step.toml",
                          overrides=[f"workload.model={network}", f"workload.batch={batch}"])
    result = optmap.solve(problem, seed=0)
    expected = training_step(H100, MODELS[network](batch=batch, dtype="bf16"))["time"]
    assert result.report.metrics["time"] == pytest.approx(expected, rel=1e-9)
    assert result.report.metrics["comm_time"] == 0
