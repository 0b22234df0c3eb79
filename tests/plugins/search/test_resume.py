"""Interrupt and resume: a real `optmap run` receives SIGINT / SIGTERM part-way, writes its best
result and a JSON checkpoint, and `--resume` continues it with nothing lost."""

import json
import signal
import subprocess
import sys

import pytest

pytest.importorskip("pymoo")
pytest.importorskip("optuna")

from conftest import ROOT
from optmap.errors import OptmapError
from optmap.problem import load
from optmap.run import solve
from optmap.search import Budget

HETERO = ROOT / "problems" / "accpar" / "hetero-vgg19.toml"


def optmap(*args, cwd):
    return subprocess.Popen([sys.executable, "-m", "optmap.cli", *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def interrupt(process, sig):
    """Wait for the first progress line (the search is running), then send ``sig``."""
    lines = []
    for line in process.stderr:
        lines.append(line)
        if "evaluations, best" in line:
            break
    process.send_signal(sig)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, "".join(lines) + err


def points(result):
    return [tuple(point) for point in result["history"]]


@pytest.mark.parametrize("engine, sig, options", [
    ("ga", signal.SIGINT, []),
    ("optuna", signal.SIGTERM, ["--set", 'search.optuna.sampler="random"', "--set", "search.optuna.max_trials=10000000"]),
])
def test_interrupted_run_resumes_with_nothing_lost(tmp_path, engine, sig, options):
    out = tmp_path / f"{engine}.json"
    checkpoint = tmp_path / f"{engine}.checkpoint.json"
    common = [str(HETERO), "--search", engine, "--seed", "3", "--json", str(out), "--quiet", *options]
    code, _, err = interrupt(optmap("run", *common, "--set", "search.budget.evaluations=10000000", cwd=tmp_path), sig)
    assert code == 128 + sig, err
    first = json.loads(out.read_text())
    assert first["stopped"] == "interrupted" and first["extra"]["signal"] == sig
    assert 0 < first["evaluations"] < 10_000_000
    assert "--resume" in err and str(checkpoint) in err
    stored = json.loads(checkpoint.read_text())  # JSON, no pickle
    assert stored["format"] == "optmap-checkpoint/1" and stored["evaluator"]["evaluations"] == first["evaluations"]

    target = first["evaluations"] + 300
    resumed = subprocess.run([sys.executable, "-m", "optmap.cli", "run", *common, "--resume",
                              "--set", f"search.budget.evaluations={target}"],
                             cwd=tmp_path, text=True, capture_output=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    second = json.loads(out.read_text())
    assert second["stopped"] == "budget" and second["evaluations"] == target
    assert second["values"]["time"] <= first["values"]["time"]
    # the first part's history (all but its closing point) is the start of the resumed history
    before = points(first)[:-1]
    assert points(second)[: len(before)] == before
    assert second["history"][-1][0] == target and second["seconds"] > first["seconds"]


def test_checkpoint_of_another_run_is_refused(tmp_path):
    problem = load(HETERO)
    path = tmp_path / "ga.checkpoint.json"
    solve(problem, "ga", seed=0, budget=Budget(evaluations=200), checkpoint=path)
    assert json.loads(path.read_text())["evaluator"]["evaluations"] == 200
    with pytest.raises(OptmapError, match=r"belongs to another run \(differs in: seed\)"):
        solve(problem, "ga", seed=1, checkpoint=path, resume=True)
    with pytest.raises(OptmapError, match=r"differs in: options"):
        solve(problem, "ga", seed=0, checkpoint=path, resume=True, options={"pop_size": 50})
    # the budget is not part of it: a larger one continues the run
    longer = solve(problem, "ga", seed=0, budget=Budget(evaluations=300), checkpoint=path, resume=True)
    assert longer.evaluations == 300
    path.write_text("not json")
    with pytest.raises(OptmapError, match="cannot be read"):
        solve(problem, "ga", seed=0, checkpoint=path, resume=True)
    path.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(OptmapError, match="not an optmap checkpoint"):
        solve(problem, "ga", seed=0, checkpoint=path, resume=True)


def test_resume_needs_a_resumable_engine_and_tolerates_a_missing_checkpoint(tmp_path, capsys):
    problem = load(HETERO)
    with pytest.raises(OptmapError, match="engine 'accpar' cannot resume"):
        solve(problem, "accpar", checkpoint=tmp_path / "x.json", resume=True)
    result = solve(problem, "ga", seed=0, budget=Budget(evaluations=100), checkpoint=tmp_path / "none.json", resume=True)
    assert result.evaluations == 100 and "starting afresh" in capsys.readouterr().err
