"""Regressions from a new-user pass over the command line: each case was a traceback, an option
silently ignored, a result overwritten or text lost; each now works or is one `error:` line."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from optmap.cli import main

QUICK = ROOT / "problems" / "quickstart.toml"
LENET = ROOT / "problems" / "accpar" / "homog-lenet.toml"
TINY_TFM = ROOT / "problems" / "acctfm" / "tiny.toml"


def run_cli(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(code, err) -> str:
    progress = ("warning:", "note:", "[")  # a sweep's per-point lines come before a figure's error
    lines = [line for line in err.splitlines() if not line.startswith(progress)]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["--json", ""], "--json '': give a file name"),
    (["--json", "{tmp}/"], "is a folder"),
    (["--json", "{tmp}/r.json", "--checkpoint", "{tmp}/r.json"], "the result would overwrite the checkpoint"),
    (["--plot", "{tmp}/fig.pdf"], "optmap draws PNG images; name the file fig.png"),
    (["--set", "system.groups.5.count=2"], "index 5 is out of range (valid: 0 to 1)"),
    (["-p", "no:acctfn"], "no installed plugin is called 'acctfn'; did you mean 'acctfm'?"),
])
def test_run_refuses_bad_outputs_and_overrides_in_one_line(args, message, tmp_path, capsys):
    argv = ["run", QUICK, "--quiet", *[a.format(tmp=tmp_path) for a in args]]
    code, _, err = run_cli(argv, capsys)
    assert message in one_error(code, err)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_refused_run_keeps_the_earlier_result(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert run_cli(["run", TINY_TFM, "--search", "exhaustive", "--quiet", "--json", out], capsys)[0] == 0
    before = out.read_text()
    code, _, err = run_cli(["run", TINY_TFM, "--search", "exhaustive", "--quiet", "--json", out,
                            "--set", "search.exhaustive.max_size=10"], capsys)
    assert "more than max_size = 10" in one_error(code, err)
    assert out.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_compare_writes_json_to_standard_output_and_says_why_an_engine_failed(capsys):
    code, out, err = run_cli(["compare", QUICK, "--search", "dp,exhaustive", "--json", "-"], capsys)
    assert code == 0
    assert [row["engine"] for row in json.loads(out)["rows"]] == ["dp", "exhaustive"]
    assert "note: exhaustive (seed 0) failed: engine 'exhaustive': the design space has" in err
    code, _, err = run_cli(["compare", QUICK, "--search", "exhaustive"], capsys)
    assert "no run produced a result: exhaustive (seed 0)" in one_error(code, err)


def test_brackets_in_names_survive_the_terminal(tmp_path, capsys):
    problem = tmp_path / "p.toml"
    problem.write_text(QUICK.read_text().replace('name = "quickstart"', 'name = "qs [red] [L0:v2]"'))
    assert 'name = "qs [red]' in problem.read_text()  # the quickstart's own name was replaced
    code, out, _ = run_cli(["run", problem, "--quiet", "--json", tmp_path / "r.json"], capsys)
    assert code == 0
    code, out, _ = run_cli(["show", tmp_path / "r.json"], capsys)
    assert code == 0 and "saved result of qs [red] [L0:v2]" in out


def test_show_lists_the_decisions_that_fix_takes(capsys):
    code, out, _ = run_cli(["show", LENET, "--decisions"], capsys)
    assert code == 0 and "L0:" in out and "I, II, III" in out
    code, _, err = run_cli(["show", LENET, "--plot", "x.png"], capsys)
    # issue 27 added comparisons to what --plot redraws; a problem file is still refused
    assert "--plot redraws a saved result, comparison or sweep" in one_error(code, err)


def test_sweep_files_and_missing_files_say_what_they_are(capsys):
    sweep_file = ROOT / "problems" / "acctfm" / "ablation.sweep.toml"
    code, _, err = run_cli(["validate", sweep_file], capsys)
    assert "is a sweep file, not a problem: run it with optmap sweep PROBLEM.toml --variants" in one_error(code, err)
    code, _, err = run_cli(["show", "nothere.onnx"], capsys)
    assert "nothere.onnx: no such file" in one_error(code, err)


@pytest.mark.parametrize("args, message", [
    (["--vary", "workload.batch=64,128", "--x", "bogus"], "--x bogus: not a coordinate of this sweep"),
    (["--vary", "workload.batch=64,128", "--y", "bogus"], "--y bogus: no point of this sweep has that metric"),
    (["--vary", "workload.batch=64", "--vary", "workload.batch=128"], "--vary workload.batch is given twice"),
    (["--vary", "workload.batch=64", "--seed", "3", "--seeds", "0,1"], "--seed and --seeds"),
    (["--vary", "workload.batch=64", "--baseline", "engine=ga"], "--baseline engine=ga: no point of the sweep has it"),
])
def test_sweep_options_that_would_be_ignored_are_refused(args, message, tmp_path, capsys):
    code, _, err = run_cli(["sweep", LENET, "--out", tmp_path / "s", *args], capsys)
    assert message in one_error(code, err)


def test_exhaustive_enumerates_its_space_and_says_it_finished(tmp_path, capsys):
    """The problem's evaluation budget (1 here) sizes the other engines of a comparison;
    exhaustive's count is its space's size, and the run says it is complete."""
    out = tmp_path / "r.json"
    code, _, _ = run_cli(["run", TINY_TFM, "--search", "exhaustive", "--quiet", "--json", out,
                          "--set", "search.budget.evaluations=1"], capsys)
    saved = json.loads(out.read_text())
    assert code == 0 and saved["stopped"] == "complete" and saved["extra"]["complete"] is True
    assert saved["evaluations"] == saved["extra"]["space_size"] > 1


def test_a_multi_objective_run_prints_its_front(tmp_path, capsys):
    llm = ROOT / "problems" / "llm" / "megatron-22b.toml"
    code, out, _ = run_cli(["run", llm, "--quiet", "--json", tmp_path / "r.json",
                            "--set", 'objective={minimize=["time","memory_gib"]}'], capsys)
    front = json.loads((tmp_path / "r.json").read_text())["front"]
    assert code == 0 and len(front) > 1  # faster plans need more memory: a trade-off, not one point
    assert f"Pareto front: {len(front)} plans" in out
    code, out, _ = run_cli(["show", tmp_path / "r.json"], capsys)
    assert f"Pareto front: {len(front)} plans" in out


@pytest.mark.parametrize("plans, message", [
    ('["dp", "layer-dpp"]', "seed_plans: unknown search engine 'layer-dpp', and cost model 'accpar' names no such "
                            "plan; did you mean 'layer-dp'?"),
    ('["acctfm"]', "seed_plans: engine 'acctfm' does not fit cost model 'accpar'"),
])
def test_validate_checks_the_names_a_search_is_seeded_with(plans, message, capsys):
    # AccPar names data-parallel, one-weird-trick, layer-dp and hypar-dp; dp and acctfm are engines
    ga = ["--set", 'search.engine="ga"']
    code, out, _ = run_cli(["validate", QUICK, *ga, "--set", 'search.ga.seed_plans=["data-parallel", "dp"]'], capsys)
    assert code == 0 and "ok" in out
    code, _, err = run_cli(["validate", QUICK, *ga, "--set", f"search.ga.seed_plans={plans}"], capsys)
    assert message in one_error(code, err)
