"""Issue 26: what optmap reads back (saved results, comparisons, sweep stores, measurement files)
and the grammars it checks piece by piece (sweep grids, output paths). One test per kind of fault
the issue reports, each reproducing its case: a damaged file is exactly one ``error:`` line naming
the file, the key and what was expected, exit 2, and the file it protects is left as it was."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, two_kinds_problem
from optmap.cli import main
from optmap.errors import OptmapError

LENET = ROOT / "problems" / "accpar" / "homog-lenet.toml"
_SCRIPT = Path(sys.executable).with_name("optmap")
OPTMAP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "optmap.cli"]


def one_error(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if not line.startswith(("warning:", "note:"))]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    return lines[0]


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, dict]:
    """A result, a comparison and a sweep of LeNet written by optmap itself (JSON contents)."""
    folder = tmp_path_factory.mktemp("saved")
    assert main(["run", str(LENET), "--search", "dp", "--json", str(folder / "r.json"), "--quiet"]) == 0
    assert main(["compare", str(LENET), "--search", "dp,owt", "--json", str(folder / "c.json")]) == 0
    assert main(["sweep", str(LENET), "--vary", "workload.batch=8,16", "--search", "dp",
                 "--out", str(folder / "s")]) == 0
    return {kind: json.loads((folder / f"{kind}.json").read_text()) for kind in ("r", "c", "s")}


def _set(path: list, value):
    def change(data):
        for key in path[:-1]:
            data = data[key]
        if value is KeyError:
            del data[path[-1]]
        else:
            data[path[-1]] = value
    return change


# the cases: a non-string format, rows without problem or engine, a list where a title
# should be, a string metric; and more of each kind
DAMAGE = [
    ("s", ["format"], 3, "key 'format': expected one of \"optmap-sweep/1\", got 3"),
    ("s", ["rows", 0, "problem"], KeyError, "key 'rows[0].problem' is missing (expected a string)"),
    ("s", ["rows", 1, "engine"], KeyError, "key 'rows[1].engine' is missing"),
    ("s", ["title"], ["a"], "key 'title': expected a string, got [\"a\"]"),
    ("s", ["rows", 0, "objectives", "time"], "fast", "key 'rows[0].objectives.time': expected a number or null"),
    ("s", ["rows", 0, "set"], [], "key 'rows[0].set': expected an object, got []"),
    ("c", ["rows", 0, "engine"], KeyError, "key 'rows[0].engine' is missing (expected a string)"),
    ("c", ["objective"], ["time"], "key 'objective': expected a string"),
    ("c", ["rows", 1, "best_mean"], "1.0", "key 'rows[1].best_mean': expected a number or null, got \"1.0\""),
    ("c", ["runs", 0, "history"], {"a": 1}, "key 'runs[0].history': expected a list"),
    ("r", ["report", "metrics", "time"], "1 ms", "key 'report.metrics.time': expected a number or null"),
    ("r", ["values"], [], "key 'values': expected an object, got []"),
    ("r", ["history", 0], [1, 2], "key 'history[0]'"),
    ("r", ["report", "layers", 0, "name"], 7, "key 'report.layers[0].name': expected a string, got 7"),
    ("r", ["problem"], "lenet", "key 'problem': expected an object"),
    ("r", ["seed"], -1, "key 'seed': expected a whole number >= 0, got -1"),
]


@pytest.mark.parametrize("kind, path, value, message", DAMAGE)
def test_show_of_a_damaged_saved_file_is_one_line_naming_the_key(saved, tmp_path, capsys, kind, path, value, message):
    data = json.loads(json.dumps(saved[kind]))
    _set(path, value)(data)
    file = tmp_path / "damaged.json"
    file.write_text(json.dumps(data))
    before = file.read_bytes()
    line = one_error(main(["show", str(file)]), capsys.readouterr().err)
    assert str(file) in line and message in line, line
    assert file.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["damaged.json"]


def test_the_python_api_reads_through_the_same_schema(saved, tmp_path):
    from optmap.saved import read_saved, result_from_json

    data = json.loads(json.dumps(saved["r"]))
    assert result_from_json(data).values == data["values"]
    data["evaluations"] = "many"
    with pytest.raises(OptmapError, match="key 'evaluations': expected a whole number"):
        result_from_json(data)
    (tmp_path / "x.json").write_text(json.dumps({"rows": "none", "runs": []}))
    with pytest.raises(OptmapError, match=r"x.json \(a saved comparison\): key 'problem' is missing"):
        read_saved(tmp_path / "x.json")


def test_show_of_a_sweep_file_two_sweeps_wrote(tmp_path, capsys, monkeypatch):
    """The default optmap-results/<problem>/sweep.json after two sweeps of one problem over
    different keys (was KeyError 'system.groups.0.count'): both sweeps' rows, each key shown."""
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(LENET), "--vary", "system.groups.0.count=2,4", "--search", "dp"]) == 0
    assert main(["sweep", str(LENET), "--vary", "workload.batch=8,16", "--search", "dp"]) == 0
    store = next((tmp_path / "optmap-results").glob("*/sweep.json"))
    assert len(json.loads(store.read_text())["rows"]) == 4
    capsys.readouterr()
    assert main(["show", str(store), "--plot", str(tmp_path / "s.png")]) == 0
    out = capsys.readouterr().out
    assert "system.groups.0.count" in out and "workload.batch" in out
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("path, value, message", [
    (["rows", 0, "problem"], KeyError, "key 'rows[0].problem' is missing"),
    (["rows", 1, "metrics", "time"], "slow", "key 'rows[1].metrics.time': expected a number or null"),
    (["rows", 0, "id"], 5, "key 'rows[0].id': expected a string"),
])
def test_a_sweep_rerun_refuses_a_damaged_store_before_running_anything(saved, tmp_path, capsys, path, value, message):
    data = json.loads(json.dumps(saved["s"]))
    _set(path, value)(data)
    store = tmp_path / "s.json"
    store.write_text(json.dumps(data))
    before = store.read_bytes()
    # a grid with a point not in the store: before issue 26 it ran, then crashed reading the store
    code = main(["sweep", str(LENET), "--vary", "workload.batch=8,16,32", "--search", "dp",
                 "--out", str(tmp_path / "s")])
    line = one_error(code, capsys.readouterr().err)
    assert message in line and "another --out" in line
    assert store.read_bytes() == before and not (tmp_path / "s.csv").exists()


# --- calibrate --refit ----------------------------------------------------------------------------

def measurement_file() -> dict:
    """16 timings: GEMMs at 500 GFLOP/s + 4 µs and training convolutions at 400 GFLOP/s + 20 µs
    (made up, positive, enough for the fit's 9 parameters)."""
    rows = [{"family": "gemm", "group": "gemm", "label": f"{m}x{n}x{k}", "op": "gemm",
             "shape": {"m": m, "n": n, "k": k}, "passes": "forward", "seconds": 2 * m * n * k / 5e11 + 4e-6, "split": 1}
            for m, n, k in itertools.product((64, 256, 1024), (64, 512), (128, 1024))]
    rows += [{"family": "conv-batch", "group": "vgg16", "label": f"conv {b} {c}", "op": "conv2d",
              "shape": {"batch": b, "cin": c, "cout": c, "in_hw": 256, "out_hw": 256, "kernel": 9, "aligned": True},
              "passes": "training", "seconds": 6 * b * c * c * 256 * 9 / 4e11 + 2e-5, "split": 1}
             for b, c in itertools.product((8, 32), (16, 64))]
    return {"device": "test (cpu)", "dtype": "fp32", "rows": rows,
            "ceilings": {"gemm_flops": 5e11, "copy_bandwidth": 2e10, "kernel_s": 4e-6, "memory_bytes": 1.6e10}}


MEASUREMENT_DAMAGE = [  # the cases first
    (["rows", 0, "seconds"], 0, "key 'rows[0].seconds': expected a number >= 1e-09, got 0"),
    (["rows", 1, "seconds"], -1, "key 'rows[1].seconds'"),
    (["rows", 2, "seconds"], float("nan"), "key 'rows[2].seconds'"),
    (["rows", 3, "seconds"], "0.1", "key 'rows[3].seconds': expected a number, got \"0.1\""),
    (["rows", 4, "seconds"], None, "key 'rows[4].seconds': expected a number, got null"),
    (["rows", 0, "shape"], "64x64x64", "key 'rows[0].shape': expected an object"),
    (["rows", 0, "shape"], [64, 64, 64], "key 'rows[0].shape': expected an object"),
    (["ceilings", "kernel_s"], "4us", "key 'ceilings.kernel_s': expected a number"),
    (["ceilings", "gemm_flops"], KeyError, "key 'ceilings.gemm_flops' is missing (expected a number)"),
    (["ceilings", "gemm_flops"], 0, "key 'ceilings.gemm_flops': expected a number >= 1e+06, got 0"),
    (["rows", 0, "shape", "m"], -64, "key 'rows[0].shape.m': expected a size > 0"),
    (["rows", 0, "shape", "k"], 0, "key 'rows[0].shape.k': expected a size > 0"),
    (["rows", 0, "split"], "x", "key 'rows[0].split': expected a whole number, got \"x\""),
    (["rows", 0, "shape", "n"], KeyError, "key 'rows[0]': op 'gemm' needs shape key 'n'"),
    (["rows", 0, "passes"], "sideways", "key 'rows[0]': unknown pass 'sideways'"),
    (["dtype"], "fp64", "key 'dtype': expected one of"),
]


@pytest.mark.parametrize("path, value, message", MEASUREMENT_DAMAGE)
def test_refit_refuses_damaged_measurements_in_one_line(tmp_path, capsys, path, value, message):
    data = measurement_file()
    _set(path, value)(data)
    file = tmp_path / "m.json"
    file.write_text(json.dumps(data))
    line = one_error(main(["calibrate", "--refit", str(file), "-o", str(tmp_path / "p.toml")]), capsys.readouterr().err)
    assert "m.json" in line and message in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no preset written


def test_refit_writes_through_the_safe_writer_and_names_its_measurements(tmp_path, capsys, monkeypatch):
    pytest.importorskip("scipy")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mine.json").write_text(json.dumps(measurement_file()))
    # a folder that does not exist yet is made (was a traceback)
    assert main(["calibrate", "--refit", "data/mine.json", "-o", "new/gpu.toml"]) == 0
    header = (tmp_path / "new" / "gpu.toml").read_text().splitlines()[1]
    assert header.endswith("Measurements: ../data/mine.json")  # the file fitted, not new/gpu.json
    # a parent that is a file: the preset is saved elsewhere, said so, and the exit status is 3
    (tmp_path / "afile").write_text("")
    capsys.readouterr()
    assert main(["calibrate", "--refit", "data/mine.json", "-o", "afile/gpu.toml"]) == 3
    err = capsys.readouterr().err
    assert "afile is a file, not a folder" in err and (tmp_path / "gpu.toml").exists()


# --- sweep grids ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--vary", "workload.batch=1:10000", "--vary", "system.groups.0.count=1:10000"],
     "the sweep has 100,000,000 points (10,000 values of workload.batch × 10,000 values of system.groups.0.count)"),
    (["--vary", "workload.batch=,,"], "--vary 'workload.batch=,,': no values"),
    (["--search", ","], "--search ',': expected comma-separated engine names"),
    (["--search", "dp,dp"], "'dp' is listed twice"),
    (["--out", "."], "--out .: is a folder"),
    (["--out", ""], "--out '': give a file stem"),
    # every value of an axis is built before anything runs (the first value alone was before)
    (["--vary", "workload.batch=8,-1"], "the sweep's point workload.batch=-1: "),
])
def test_sweep_grammar_is_checked_whole_before_anything_runs(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    out = [] if "--out" in args else ["--out", "x"]
    line = one_error(main(["sweep", str(LENET), *out, *args]), capsys.readouterr().err)
    assert message in line, line
    assert time.perf_counter() - start < 20  # the product is counted, never built
    assert list(tmp_path.iterdir()) == []


def test_a_grid_just_over_the_limit_is_refused_and_one_at_it_counted(tmp_path):
    from optmap.sweep.design import GRID_LIMIT, grid_size

    vary = [("a", ["1"] * 100), ("b", ["1"] * 100)]
    assert grid_size(1, 0, vary, 1, 1) == GRID_LIMIT  # 100 × 100 = 10,000: allowed
    product = r"20,000 points \(100 values of a × 50 values of b × 2 engines × 2 seeds\)"
    with pytest.raises(OptmapError, match=product):
        grid_size(1, 0, [("a", ["1"] * 100), ("b", ["1"] * 50)], 2, 2)  # 100 × 50 × 2 × 2 = 20,000


@pytest.mark.parametrize("text, message", [
    ('cumulative = "no"', "cumulative must be true or false, got 'no'"),
    ("cumulative = 1", "cumulative must be true or false"),
    ("title = [1]", "title must be a string"),
    ("search = []", "search must be an engine name or a non-empty list"),
    ("seeds = []", "seeds must be a non-empty list"),
    ('[plot]\ny = 3', "[plot] y must be a non-empty string or a list of them"),
    ('[plot]\nxscale = "logarithmic"', "[plot] xscale must be one of linear, log"),
])
def test_sweep_file_values_are_typed_strictly(tmp_path, capsys, text, message):
    (tmp_path / "study.toml").write_text(text + "\n")
    code = main(["sweep", str(LENET), "--variants", str(tmp_path / "study.toml"), "--out", str(tmp_path / "x")])
    assert message in one_error(code, capsys.readouterr().err)
    assert not (tmp_path / "x.json").exists()


def test_sweep_lock_refusal_names_out(tmp_path, capsys):
    from optmap.output import exclusive

    with exclusive(tmp_path / "x.json", "--out"):
        code = main(["sweep", str(LENET), "--vary", "workload.batch=8", "--search", "dp", "--out", str(tmp_path / "x")])
    line = one_error(code, capsys.readouterr().err)
    assert "another optmap process is writing" in line and "--out" in line and "--json" not in line


def test_sweep_out_under_a_file_is_named_as_such(tmp_path, capsys):
    (tmp_path / "afile").write_text("")
    code = main(["sweep", str(LENET), "--vary", "workload.batch=8", "--search", "dp",
                 "--out", str(tmp_path / "afile" / "x")])
    assert "afile is a file, not a folder" in one_error(code, capsys.readouterr().err)


def test_sigterm_during_a_sweep_exits_143_as_run_does(tmp_path):
    problem = tmp_path / "lenet.toml"
    problem.write_text(two_kinds_problem("lenet on tpu-v2 + tpu-v3", "lenet-caffe", 64, evaluations=1500))
    command = OPTMAP + ["sweep", str(problem), "--vary", "system.groups.0.count=2,4", "--search", "ga",
                        "--out", str(tmp_path / "cut")]
    store = tmp_path / "cut.json"
    sweep = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not store.exists() and time.time() < deadline and sweep.poll() is None:
        time.sleep(0.05)
    sweep.send_signal(signal.SIGTERM)  # the second point's GA is running
    _, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 143, err
    assert "1 of 2 points left" in err
    assert len(json.loads(store.read_text())["rows"]) == 1
