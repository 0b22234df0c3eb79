"""What a new user sees: optmap run on the FPDeep problems, and one-line errors for bad input."""

import json
from pathlib import Path

import pytest

from optmap.cli import main

PROBLEMS = Path(__file__).resolve().parents[3] / "problems" / "fpdeep"


def test_run_prints_every_fpga_and_writes_json(tmp_path, capsys):
    out = tmp_path / "vgg16.json"
    assert main(["run", str(PROBLEMS / "vgg16-15.toml"), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    for word in ("period", "throughput", "epochs_per_hour", "devices", "fpga", "layers", "DSPs", "on-chip MB",
                 "BRAM %", "link Gb/s", "GOPS", "features.0 all, features.2 II 0:"):
        assert word in text
    report = json.loads(out.read_text())["report"]
    devices = report["tables"]["devices"]
    assert len(devices) == 15 and all(0 < d["DSPs"] <= 2880 for d in devices)  # 80 % of 3600 DSPs
    assert "features.0" in devices[0]["layers"] and "classifier.6" in devices[-1]["layers"]
    assert report["plan"]["links"] and report["metrics"]["throughput"] > 0


def write(tmp_path, count=15, model="alexnet-original"):
    text = (PROBLEMS / "alexnet-15.toml").read_text().replace("count = 15", f"count = {count}")
    path = tmp_path / "p.toml"
    path.write_text(text.replace('model = "alexnet-original"', f'model = "{model}"'))
    return str(path)


@pytest.mark.parametrize("args, message", [
    (["--set", "system.bandwidth_gbps=0"], "bandwidth_gbps"),  # a link of zero bandwidth
    (["--set", "cost.dsp_budget=0.05"], "needs 363 DSPs for one 11x11 tile"),  # conv1 does not fit 180 DSPs
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    assert main(["run", write(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1 and message in err


def test_more_fpgas_than_work_units(tmp_path, capsys):
    assert main(["run", write(tmp_path, count=700, model="lenet")]) == 2  # LeNet-5 has at most 626 units
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "use at most 626 FPGAs" in err
