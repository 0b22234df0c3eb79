"""``optmap show`` on saved files and model files; ``run --plot`` and ``compare --plot`` figures."""

from __future__ import annotations

import json
from pathlib import Path

import optmap
import pytest
from conftest import two_kinds_problem
from optmap.cli import main
from optmap.saved import read_saved, result_from_json

ROOT = Path(__file__).resolve().parents[2]
ALEXNET_TXT = ROOT / "problems" / "accpar" / "networks" / "Alexnet.txt"
PNG = b"\x89PNG\r\n\x1a\n"

PROBLEM = two_kinds_problem("vgg11 on 2 tpu-v2 + 2 tpu-v3", "vgg11", 32)


@pytest.fixture
def problem(tmp_path):
    path = tmp_path / "vgg11.toml"
    path.write_text(PROBLEM)
    return str(path)


def test_show_renders_a_saved_result_without_rerunning(problem, tmp_path, capsys, monkeypatch):
    saved = tmp_path / "result.json"
    assert main(["run", problem, "--json", str(saved), "--plot", str(tmp_path / "run.png")]) == 0
    assert (tmp_path / "run.png").read_bytes()[:8] == PNG
    capsys.readouterr()
    data = json.loads(saved.read_text())
    import optmap.run

    monkeypatch.setattr(optmap.run, "solve", lambda *a, **k: pytest.fail("show must not search"))
    assert main(["show", str(saved), "--plot", str(tmp_path / "again.png")]) == 0
    printed = capsys.readouterr().out
    assert f"saved result of {data['problem']['name']}" in printed
    for layer in data["report"]["layers"]:  # every layer of the per-layer table
        assert layer["name"] in printed
    assert "plan" in printed and "levels" in printed and "share[" in printed
    assert f"{data['values']['time']:.4g}" in printed
    assert (tmp_path / "again.png").read_bytes()[:8] == PNG


def test_a_saved_result_reads_back_to_the_run(problem, tmp_path):
    result = optmap.solve(optmap.load(problem))
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"problem": {"name": "p"}, **result.to_json()}, default=float))
    kind, data = read_saved(path)
    again = result_from_json(data)
    assert kind == "result" and again.values == result.values and again.report.metrics == result.report.metrics
    assert [(r.name, r.compute, r.communication, r.decisions) for r in again.report.layers] == [
        (r.name, r.compute, r.communication, r.decisions) for r in result.report.layers]
    assert again.history == result.history and again.extra["mapping"] == result.best.as_dict()


def test_show_renders_a_comparison_and_a_sweep(problem, tmp_path, capsys):
    assert main(["compare", problem, "--search", "dp,accpar", "--json", str(tmp_path / "c.json"),
                 "--plot", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").read_bytes()[:8] == PNG
    assert main(["sweep", problem, "--vary", "workload.batch=16,32", "--out", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    assert main(["show", str(tmp_path / "c.json")]) == 0
    printed = capsys.readouterr().out
    assert "gap_percent" in printed and "accpar" in printed and "dp" in printed
    assert main(["show", str(tmp_path / "s.json"), "--plot", str(tmp_path / "s.png")]) == 0
    printed = capsys.readouterr().out
    assert "workload.batch" in printed and "16" in printed and "32" in printed
    assert (tmp_path / "s.png").read_bytes()[:8] == PNG


def test_show_reads_a_model_file_through_its_reader(capsys):
    # the accpar plugin reads the authors' layer files (.txt); the same path serves .onnx
    assert main(["show", str(ALEXNET_TXT), "--set", "workload.batch=4"]) == 0
    printed = capsys.readouterr().out
    direct = optmap.load(ROOT / "problems" / "accpar" / "reference-alexnet.toml").workload
    assert "batch 4" in printed
    for layer in direct.layers():
        assert layer.name in printed


@pytest.mark.parametrize("name, content, message", [
    ("x.json", '{"a": 1}', "not an optmap result"),
    ("y.json", "{", "not a readable JSON file"),
    ("m.onnx", b"\x08\x07\x12\x04\xff\xfe\x00", "pip install 'optmap[onnx]'"),
])
def test_show_bad_files_are_one_line(tmp_path, capsys, name, content, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    # -p no:onnx: the message for a machine without the ONNX plugin, whether or not it is installed
    assert main(["show", str(path), "-p", "no:onnx"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
