"""megatron-3d on an accelerator preset that carries measured kernel ceilings (``[attrs.kernels]``,
what ``optmap calibrate`` writes): its fitted device is derived from them as the H100's was, and its
FP8 GEMM and fused-attention rates are the defaults of ``fp8_gemm_efficiency`` and ``attention_tflops``.

The reference is independent: a preset with the H100's datasheet and the ceilings the ``h100``
calibration was built from (774.2 TFLOP/s bf16 8192³, 2,980 GB/s copy; ``plugins/llm/compute.py``)
must price every plan as the shipped ``h100-sxm`` does, and measured FP8 and attention rates must
price as the same rates given as cost options.
"""

import json
import re
from pathlib import Path

import pytest

import optmap
from optmap.errors import OptmapError
from optmap.plugins.hardware import PRESET_FILES

H100_PRESET = PRESET_FILES / "h100-sxm.toml"  # the shipped preset, where the package is installed
LAYOUT = {"tensor_parallel": 4, "pipeline_parallel": 2, "data_parallel": 8, "microbatch_size": 1}


def _preset(tmp_path, kernels: str) -> Path:
    """The shipped h100-sxm preset renamed ``lab-h100``, with ``kernels`` as its [attrs.kernels] body."""
    text = H100_PRESET.read_text().replace('name = "h100-sxm"', 'name = "lab-h100"')
    path = tmp_path / "lab.toml"
    path.write_text(text + "\n[attrs.kernels]\n" + kernels)
    return path


def _time(tmp_path, accelerator: str, dtype: str = "bf16", cost: str = "", name: str = "problem") -> float:
    """The predicted iteration time of Llama 3 70B (8K tokens, batch 128) on 64 GPUs, layout pinned."""
    file = f'[accelerators.lab-h100]\nfile = "lab.toml"\n' if accelerator == "lab-h100" else ""
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""{file}
[workload]
model = "transformer"
preset = "llama3-70b"
seq_len = 8192
batch = 128
dtype = "{dtype}"
[system]
topology = "dgx-h100"
[[system.groups]]
accelerator = "{accelerator}"
count = 64
[cost]
model = "megatron-3d"
{cost}
[search]
engine = "megatron-3d"
[fix]
""" + "\n".join(f"{k} = {v}" for k, v in LAYOUT.items()) + "\n")
    result = optmap.solve(optmap.load(path), seed=0)
    assert result.report.plan["calibrated_accelerator"] is True
    return result.report.metrics["time"]


def test_the_h100s_measured_ceilings_price_as_the_shipped_h100_sxm(tmp_path):
    _preset(tmp_path, 'dtype = "bf16"\ngemm_tflops = 774.2\n')
    # copy_gBps of the shipped calibration is 2,980.1 where the h100 fit takes 2,980: the same to 1e-4
    assert _time(tmp_path, "lab-h100") == pytest.approx(_time(tmp_path, "h100-sxm"), rel=1e-4)
    assert _time(tmp_path, "lab-h100", "fp8") == pytest.approx(_time(tmp_path, "h100-sxm", "fp8"), rel=1e-4)


def test_a_preset_whose_peak_is_its_measured_ceiling_prices_as_h100_sxm(tmp_path):
    """What `optmap calibrate` writes without --peak-tflops: the bf16 peak and the HBM rate are the
    measured GEMM ceiling and copy. Efficiency 1 of those, and the half_dim of the same measured ridge
    point, is the h100 fit again (774.2 / 989.4 of the datasheet peak, 2,980 / 3,350 of its HBM)."""
    path = _preset(tmp_path, 'dtype = "bf16"\ngemm_tflops = 774.2\n')
    text = re.sub(r"^peak_tflops = .*$", "peak_tflops = { bf16 = 774.2 }", path.read_text(), flags=re.M)
    path.write_text(text.replace("memory_bandwidth_gBps = 3350", "memory_bandwidth_gBps = 2980"))
    assert _time(tmp_path, "lab-h100") == pytest.approx(_time(tmp_path, "h100-sxm"), rel=1e-4)


def test_measured_fp8_and_attention_rates_are_the_defaults_and_options_still_win(tmp_path):
    _preset(tmp_path, 'dtype = "bf16"\ngemm_tflops = 774.2\nfp8_gemm_tflops = 1320.0\n'
                      'attention_tflops = [619.0, 541.0]\nattention_kernel = "cudnn"\n')
    measured = _time(tmp_path, "lab-h100", "fp8")
    as_options = _time(tmp_path, "h100-sxm", "fp8",
                       f"fp8_gemm_efficiency = {1320.0 / 1978.9!r}\nattention_tflops = [619.0, 541.0]")
    assert measured == pytest.approx(as_options, rel=1e-4)
    _preset(tmp_path, 'dtype = "bf16"\ngemm_tflops = 774.2\nfp8_gemm_tflops = 1320.0\n')
    assert _time(tmp_path, "lab-h100", "fp8") > _time(tmp_path, "h100-sxm", "fp8")  # FP8 at 0.667 of its peak, not 0.78
    _preset(tmp_path, 'dtype = "bf16"\ngemm_tflops = 774.2\nfp8_gemm_tflops = 1320.0\n'
                      'attention_tflops = [619.0, 541.0]\nattention_kernel = "cudnn"\n')
    # a cost option given in the problem wins over the preset's measurement
    given = _time(tmp_path, "lab-h100", "fp8", "fp8_gemm_efficiency = 0.5\nattention_tflops = [300.0, 250.0]")
    assert given == pytest.approx(_time(tmp_path, "h100-sxm", "fp8",
                                        "fp8_gemm_efficiency = 0.5\nattention_tflops = [300.0, 250.0]"), rel=1e-4)
    # unfused attention ignores a fused kernel's rates
    unfused = 'attention = "unfused"'
    assert _time(tmp_path, "lab-h100", cost=unfused) == pytest.approx(_time(tmp_path, "h100-sxm", cost=unfused), rel=1e-4)


@pytest.mark.parametrize("kernels, message", [
    ('gemm_tflops = 774.2\n', "needs dtype"),
    ('dtype = "bf16"\ngemm_tflops = -1\n', "gemm_tflops must be a rate > 0"),
    ('dtype = "bf16"\nattention_tflops = [619.0]\n', r"attention_tflops must be \[forward, backward\]"),
    ('dtype = "bf16"\nspeed = 3\n', "unknown key 'speed'"),
])
def test_a_bad_kernels_table_is_one_line(tmp_path, kernels, message):
    from optmap.compute import read_preset

    with pytest.raises(OptmapError, match=message):
        read_preset(_preset(tmp_path, kernels))
    # named by a problem file: refused where the problem defines the accelerator
    with pytest.raises(OptmapError, match=r"problem\.toml: \[accelerators\.lab-h100\]: \[attrs\.kernels\] .*" + message):
        _time(tmp_path, "lab-h100")


def test_calibrate_writes_the_kernels_it_measured(tmp_path, monkeypatch, capsys):
    """`optmap calibrate --device cpu --quick`: [attrs.kernels] holds the measured GEMM ceiling (its
    measurement file's gemm_flops) and the fused attention's rates; a CPU has no FP8 GEMM."""
    pytest.importorskip("torch")
    pytest.importorskip("scipy")
    from optmap.cli import main
    from optmap.compute import kernels_of, read_preset

    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--device", "cpu", "--quick", "-o", "cpu.toml"]) == 0
    kernels = kernels_of(read_preset(tmp_path / "cpu.toml"))
    ceilings = json.loads((tmp_path / "cpu.json").read_text())["ceilings"]
    assert kernels["dtype"] == "fp32" and "fp8_gemm_tflops" not in kernels
    assert kernels["gemm_tflops"] == pytest.approx(ceilings["gemm_flops"] / 1e12, rel=1e-5)
    assert kernels["attention_tflops"] == pytest.approx(
        [ceilings["attention_flops"] / 1e12, ceilings["attention_backward_flops"] / 1e12], rel=1e-5)
    assert kernels["attention_kernel"] == ceilings["attention_kernel"] == "default"
    said = " ".join(capsys.readouterr().err.split())
    assert f"kernel ceilings: fp32 GEMM {kernels['gemm_tflops']:,.4g} TFLOP/s; fused attention (default)" in said
    # --refit reads them back from the measurement file
    assert main(["calibrate", "--refit", "cpu.json", "--quick", "-o", "again.toml"]) == 0
    assert kernels_of(read_preset(tmp_path / "again.toml")) == kernels
