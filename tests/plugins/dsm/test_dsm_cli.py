"""DSM from the command line: run with --json, the chip's options on a group, and one-line errors (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SMALL = ROOT / "problems" / "dsm" / "small.toml"
_SCRIPT = Path(sys.executable).with_name("optmap")
OPTMAP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "optmap.cli"]


def optmap(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OPTMAP, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_run_writes_the_per_pass_breakdown(tmp_path):
    out = tmp_path / "small.json"
    done = optmap("run", str(SMALL), "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "per-layer mapping" in done.stdout and "per pass (Fig. 13)" in done.stdout
    result = json.loads(out.read_text())
    report = result["report"]
    rows = report["tables"]["per pass (Fig. 13)"]
    assert {r["pass"] for r in rows} == {"fwd", "bwd", "upd"}
    for row in rows:  # the categories of each pass add up to its total
        parts = sum(v for k, v in row.items() if k.endswith(" s") and k != "total s")
        assert parts == pytest.approx(row["total s"], rel=1e-9)
    assert sum(r["total s"] for r in rows) == pytest.approx(report["metrics"]["time"], rel=1e-9)
    assert {"parallelism", "fwd split", "reuse", "dysm", "util"} <= set(report["layers"][1])


def test_chip_options_on_a_group_change_the_answer(tmp_path):
    small, large = (tmp_path / f"{mb}.json" for mb in ("half", "four"))
    assert optmap("run", str(SMALL), "--quiet", "--json", str(small), "--set", "system.groups.0.spad_mb=0.5").returncode == 0
    assert optmap("run", str(SMALL), "--quiet", "--json", str(large), "--set", "system.groups.0.spad_mb=4").returncode == 0
    times = [json.loads(p.read_text())["values"]["time"] for p in (small, large)]
    assert times[1] <= times[0]  # more scratchpad never hurts the best plan


@pytest.mark.parametrize("problem, overrides, message", [
    ("small", ["system.shape=[4, 4]"], "shape [4, 4] holds 16 chips but the groups give 4"),
    ("small", ["cost.core_splits=[{in = 4, out = 4}]"], "multiply to 16, but a chip has 32 cores"),
    ("vgg16-train", ['workload.model="transformer"', 'workload.preset="TF8"'], "cannot price op 'matmul'"),
    ("small", ['system.groups.0.accelerator="v100"'], "needs DSM chips"),
])
def test_bad_input_is_one_line_and_exit_2(problem, overrides, message):
    sets = [arg for o in overrides for arg in ("--set", o)]
    done = optmap("run", str(SMALL.with_name(f"{problem}.toml")), *sets)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
