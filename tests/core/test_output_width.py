"""Every line that ``optmap run``, ``show``, ``compare`` and ``sweep`` print on standard output fits
80 columns (issue 27): at ``COLUMNS=80`` on every shipped problem, tables included (captured output
is not a terminal, so this is also the piped case, which follows ``COLUMNS``). Standard error holds
progress and one-line notes, which the project keeps on one line whatever their length."""

import json
from pathlib import Path

import pytest

from optmap.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = sorted(p for p in (ROOT / "problems").rglob("*.toml")
                  if not p.name.endswith(".sweep.toml") and "networks" not in p.parts)
WIDTH = 80
# MARS's native engine takes 11-73 s per shipped problem on this 2-core machine: there the run
# uses `random` with a few evaluations (the tables printed are the formulation's, whichever engine
# found the plan). Elsewhere the problem's own engine runs as the file says (DSM's: random plans
# are infeasible).
SLOW_NATIVE = {"mars"}
# DSM's engine takes 18-25 s on these; dsm/small and dsm/gnmt-train print the same training tables
SHOW_ONLY = {"dsm/resnet50-train.toml", "dsm/vgg16-train.toml"}
FEW = ["--search", "random", "--set", "search.budget.evaluations=32"]
# compare and sweep on one small problem of each formulation: its engine beside random
ONE_EACH = [ROOT / "problems" / name for name in (
    "quickstart.toml", "accpar/homog-lenet.toml", "acctfm/tiny.toml", "calibration/h100-resnet50-step.toml",
    "dsm/small.toml", "fpdeep/alexnet-15.toml", "llm/megatron-22b.toml", "mars/alexnet.toml")]


def _printed(command: list[str], capsys) -> list[str]:
    """What ``optmap COMMAND`` printed on standard output, after it succeeded."""
    assert main(command) == 0, command
    return capsys.readouterr().out.splitlines()


def _check(printed: list[str]) -> None:
    assert any("┃" in line for line in printed)  # tables with headers were printed
    wide = [line for line in printed if len(line) > WIDTH]
    assert not wide, wide


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT / "problems"))


@pytest.mark.parametrize("problem", PROBLEMS, ids=_name)
def test_show_run_and_show_result_fit_80_columns(problem, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    result = tmp_path / "result.json"
    engine = FEW if problem.parent.name in SLOW_NATIVE else []
    printed = _printed(["show", str(problem)], capsys)
    if _name(problem) not in SHOW_ONLY:
        printed += _printed(["run", str(problem), *engine, "--json", str(result)], capsys)
        printed += _printed(["show", str(result)], capsys)
    _check(printed)


@pytest.mark.parametrize("problem", ONE_EACH, ids=_name)
def test_compare_and_sweep_fit_80_columns(problem, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    slow = problem.parent.name in SLOW_NATIVE
    engines = "random,ga" if slow else f"{_own_engine(problem)},random"
    budget = ["--set", "search.budget.evaluations=32"] if slow else ["--set", "search.budget.seconds=1"]
    printed = _printed(["compare", str(problem), "--search", engines, *budget, "--json", str(tmp_path / "c.json")],
                       capsys)
    printed += _printed(["show", str(tmp_path / "c.json")], capsys)
    printed += _printed(["sweep", str(problem), "--search", engines.split(",")[0], *budget, "--seeds", "0,1",
                         "--out", str(tmp_path / "sweep")], capsys)
    _check(printed + _printed(["show", str(tmp_path / "sweep.json")], capsys))


def _own_engine(problem: Path) -> str:
    from optmap.problem import load

    return load(str(problem)).search.engine
