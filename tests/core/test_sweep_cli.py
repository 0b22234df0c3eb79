"""``optmap sweep`` as a user runs it: the table, OUT.csv / OUT.json, the figure, Ctrl-C and reruns."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import optmap
import pytest
from conftest import two_kinds_problem
from optmap.cli import main

ROOT = Path(__file__).resolve().parents[2]
_SCRIPT = Path(sys.executable).with_name("optmap")
OPTMAP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "optmap.cli"]

PROBLEM = two_kinds_problem("lenet on tpu-v2 + tpu-v3", "lenet-caffe", 64, evaluations=1500)


@pytest.fixture
def problem(tmp_path):
    path = tmp_path / "lenet.toml"
    path.write_text(PROBLEM)
    return str(path)


def test_scaling_sweep_prints_a_table_and_writes_csv_json_and_a_figure(problem, tmp_path, capsys):
    out, png = tmp_path / "scaling", tmp_path / "scaling.png"
    assert main(["sweep", problem, "--vary", "system.groups.0.count=2,4,8", "--out", str(out), "--plot", str(png),
                 "--markdown", str(tmp_path / "scaling.md")]) == 0
    printed = capsys.readouterr().out
    assert "system.groups.0.count" in printed and "time" in printed and "accpar" in printed
    with open(tmp_path / "scaling.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(row["system.groups.0.count"]) for row in rows] == [2, 4, 8]
    stored = json.loads((tmp_path / "scaling.json").read_text())["rows"]
    for row, saved in zip(rows, stored):
        # the row is what `optmap run --set system.groups.0.count=N` finds
        alone = optmap.solve(optmap.load(problem, [f"system.groups.0.count={row['system.groups.0.count']}"]))
        assert float(row["time"]) == pytest.approx(alone.values["time"], rel=1e-12)
        assert saved["metrics"]["comm_time"] == pytest.approx(alone.report.metrics["comm_time"], rel=1e-12)
        assert set(alone.report.metrics) <= set(row)  # every metric is a column
    assert png.read_bytes()[:4] == b"\x89PNG"
    table = (tmp_path / "scaling.md").read_text().splitlines()
    assert table[0] == "| system.groups.0.count | accpar |" and len(table) == 5
    assert main(["sweep", problem, "--vary", "system.groups.0.count=2,4,8", "--out", str(out)]) == 0
    assert "3 points, 3 already in" in capsys.readouterr().out


def test_local_workers_give_the_rows_of_a_sequential_sweep(problem, tmp_path, capsys):
    args = ["sweep", problem, "--vary", "system.groups.*.count=2,4", "--search", "dp,accpar", "--set",
            "search.budget.evaluations=100"]
    assert main(args + ["--out", str(tmp_path / "one")]) == 0
    assert main(args + ["--out", str(tmp_path / "two"), "--workers", "2"]) == 0
    one, two = (json.loads((tmp_path / f"{name}.json").read_text())["rows"] for name in ("one", "two"))
    assert {r["id"]: r["objectives"] for r in one} == {r["id"]: r["objectives"] for r in two}
    assert len(one) == 4


@pytest.mark.parametrize("args, message", [
    (["--vary", "system.groups.0.count"], "expected KEY=V1,V2"),
    (["--vary", "system.groups.0.count=8:2"], "empty or endless"),
    (["--vary", "system.groups.5.count=2,4"], "index 5 is out of range (valid: 0 to 1)"),
    (["--vary", "sytem.batch=2"], "unknown section 'sytem'"),
    (["--search", "acpar"], "did you mean 'accpar'"),
    (["--variants", "missing.toml"], "no such problem file"),
    (["--baseline", "engine"], "expected COORDINATE=VALUE"),
    (["--seeds", "0,x"], "--seeds"),
    (["--vary", "workload.batch=0"], "batch"),
])
def test_bad_input_is_one_line_and_exit_2(problem, tmp_path, capsys, args, message):
    assert main(["sweep", problem, "--out", str(tmp_path / "bad"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not (tmp_path / "bad.json").exists()  # nothing ran


def test_ctrl_c_keeps_finished_points_and_a_rerun_runs_only_the_rest(problem, tmp_path):
    command = OPTMAP + ["sweep", problem, "--vary", "system.groups.0.count=2,4", "--search", "ga",
                        "--out", str(tmp_path / "cut")]
    store = tmp_path / "cut.json"
    sweep = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not store.exists() and time.time() < deadline and sweep.poll() is None:
        time.sleep(0.05)
    sweep.send_signal(signal.SIGINT)  # the second point's GA is running (about 2 s of search)
    _, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 130, err
    assert "1 of 2 points left; rerun the same command" in err
    first = json.loads(store.read_text())["rows"]
    assert [row["set"]["system.groups.0.count"] for row in first] == [2]
    again = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 0, again.stderr
    assert "2 points, 1 already in" in again.stdout and "[1/1] system.groups.0.count=4" in again.stderr
    rows = json.loads(store.read_text())["rows"]
    assert rows[0] == first[0] and len(rows) == 2


def test_points_run_on_a_dask_cluster_like_here(problem, tmp_path):
    distributed = pytest.importorskip("distributed")
    from optmap.sweep import sweep

    vary = ["system.groups.*.count=2,4", "workload.batch=32,64"]
    here = sweep([problem], vary=vary, out=tmp_path / "here")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        there = sweep([problem], vary=vary, out=tmp_path / "there", scheduler=cluster.scheduler_address)
    assert there.complete and len(there.rows) == 4
    assert [(r["id"], r["objectives"]) for r in there.rows] == [(r["id"], r["objectives"]) for r in here.rows]
