"""Preset files: round trip, one-line errors, and `optmap calibrate --device cpu --quick`."""

import json
import tomllib

import pytest

from optmap.cli import main
from optmap.compute import Calibration, calibration_of, read_preset, write_preset
from optmap.compute.preset import DATASHEET_KEYS
from optmap.compute.step import training_step
from optmap.errors import OptmapError
from optmap.plugins.zoo.models import vgg11
from optmap.system import Accelerator

FIELDS = {"name": "lab-gpu", "peak_tflops": {"bf16": 400}, "memory_gib": 48, "memory_bandwidth_gBps": 1500,
          "network_gbps": 400, "power_watts": 350, "description": "our lab's card"}
CAL = Calibration(math_flops=300e12, backward_flops=250e12, unaligned_flops=20e12, gather_bandwidth=3e12,
                  unaligned_gather_bandwidth=0.3e12, copy_bandwidth=1.4e12, output_bandwidth=0.8e12,
                  smoothness=5.0, kernel_s=3e-6, dispatch_s=20e-6, backward_call_s=150e-6)


def test_round_trip_keeps_the_datasheet_and_the_calibration(tmp_path):
    accelerator = write_preset(tmp_path / "lab.toml", FIELDS, CAL, header="our card")
    assert accelerator.name == "lab-gpu"
    assert accelerator.flops_per_s("bf16") == 400e12 and accelerator.memory_bytes == 48 * 2**30
    assert accelerator.memory_bandwidth == 1500e9 and accelerator.network_bandwidth == 400e9 / 8
    read = calibration_of(accelerator)
    for name in ("math_flops", "gather_bandwidth", "kernel_s", "dispatch_s", "smoothness"):
        assert getattr(read, name) == pytest.approx(getattr(CAL, name), rel=1e-5)
    # the file's top-level keys are exactly Accelerator.from_datasheet's keyword arguments
    table = tomllib.loads((tmp_path / "lab.toml").read_text())
    assert set(table) - {"name", "calibration"} <= set(DATASHEET_KEYS)
    reference = Accelerator.from_datasheet("lab-gpu", **{k: v for k, v in FIELDS.items() if k != "name"})
    assert accelerator.peak_flops == reference.peak_flops and accelerator.memory_bytes == reference.memory_bytes


def test_a_preset_without_calibration_is_priced_at_its_peak(tmp_path):
    accelerator = write_preset(tmp_path / "plain.toml", FIELDS, None)
    assert calibration_of(accelerator) is None


@pytest.mark.parametrize("text, message", [
    ('peak_tflops = 1\nmemory_gib = 1\nmemory_bandwidth_gBps = 1\nnetwork_gbps = 1\nspeed = 3\n', "unknown key 'speed'"),
    ('peak_tflops = 1\nmemory_gib = 1\nnetwork_gbps = 1\n', "missing key 'memory_bandwidth_gBps'"),
    ('peak_tflops = 1\nmemory_gib = 1\nmemory_bandwidth_gBps = 1\nnetwork_gbps = 1\n[attrs.calibration]\nmath_tflops = 1\n',
     "missing key"),
    ('peak_tflops = [1\n', "not valid TOML"),
])
def test_bad_preset_files_are_one_line_errors(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(OptmapError, match=message):
        read_preset(path)


PROBLEM = """
name = "vgg11 on two calibrated devices"
[accelerators.{name}]
file = "{file}"
[workload]
model = "vgg11"
batch = 8
dtype = "{dtype}"
image_size = 32
[system]
topology = "fully-connected"
[[system.groups]]
accelerator = "{name}"
count = 2
[cost]
model = "accpar"
compute = "{compute}"
[search]
engine = "dp"
"""


def _problem_times(tmp_path, name, file, dtype):
    """compute_time of the DP plan for the problem priced measured and at the peak."""
    import optmap

    times = {}
    for compute in ("auto", "peak"):
        path = tmp_path / f"problem-{compute}.toml"
        path.write_text(PROBLEM.format(name=name, file=file, dtype=dtype, compute=compute))
        result = optmap.solve(optmap.load(path), seed=0)
        times[compute] = result.report.metrics["compute_time"]
    return times


def test_a_problem_file_names_a_preset_file_next_to_it(tmp_path):
    write_preset(tmp_path / "lab.toml", {**FIELDS, "peak_tflops": {"bf16": 400}}, CAL)
    times = _problem_times(tmp_path, "lab-gpu", "lab.toml", "bf16")
    # measured pricing is slower than the 400 TFLOP/s peak (ceilings 300/250 TFLOP/s, traffic)
    assert times["auto"] > times["peak"] > 0


def _calibrate_extra() -> None:
    """optmap calibrate needs the [calibrate] extra (PyTorch, SciPy): skipped locally without it,
    a failure under CI (.ci/run installs it), so CI never passes without running this test."""
    import importlib.util
    import os

    missing = [name for name in ("torch", "scipy") if importlib.util.find_spec(name) is None]
    if missing and os.environ.get("CI"):
        pytest.fail(f"CI must run optmap calibrate's test; missing {', '.join(missing)}")
    if missing:
        pytest.skip(f"optmap calibrate needs {', '.join(missing)}: pip install 'optmap[calibrate]'")


def test_calibrate_quick_on_cpu_writes_a_preset_a_problem_can_use(tmp_path, monkeypatch):
    _calibrate_extra()
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--device", "cpu", "--quick", "-o", "mygpu.toml"]) == 0
    accelerator = read_preset(tmp_path / "mygpu.toml")
    assert accelerator.name == "mygpu" and calibration_of(accelerator).dtype == "fp32"
    assert (tmp_path / "mygpu.json").exists()
    # a problem file names the written preset; AccPar prices it measured, not at the peak
    times = _problem_times(tmp_path, "mygpu", "mygpu.toml", "fp32")
    assert times["auto"] != times["peak"]
    # `optmap run` on one device of it: the whole step, priced by the measured model
    (tmp_path / "one.toml").write_text(PROBLEM.format(name="mygpu", file="mygpu.toml", dtype="fp32", compute="auto")
                                       .replace("count = 2", "count = 1"))
    assert main(["run", "one.toml", "--quiet", "--json", "one.json"]) == 0
    step = training_step(accelerator, vgg11(batch=8, dtype="fp32", image_size=32))["time"]
    assert json.loads((tmp_path / "one.json").read_text())["report"]["metrics"]["time"] == pytest.approx(step)
    # refitting the written measurements gives the same preset
    assert main(["calibrate", "--refit", "mygpu.json", "--quick", "-o", "again.toml"]) == 0
    assert calibration_of(read_preset(tmp_path / "again.toml")).math_flops == pytest.approx(
        calibration_of(accelerator).math_flops, rel=1e-3)


def test_calibrate_rejects_bad_arguments_in_one_line(tmp_path, capsys):
    assert main(["calibrate", "--refit", str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.toml")]) == 2
    assert main(["calibrate", "-o", str(tmp_path / "x.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
