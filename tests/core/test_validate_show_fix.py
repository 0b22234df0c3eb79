"""What a newcomer reads: ``show`` gives model totals, ``validate`` every error of a file, ``--fix``
takes a share as results print it (issue 27, part 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from optmap.cli import main
from optmap.errors import OptmapError
from optmap.problem import load
from optmap.space import integer

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "problems" / "quickstart.toml"

BAD = """\
name = "bad"
colour = "red"
[workload]
model = "vgg16"
batch = "256"
dtype = "bf16"
shuffle = true
[system]
topology = "hierarchical"
latency_us = 0.0
[[system.groups]]
accelerator = "tpu-v2"
count = 8
[cost]
model = "accpar"
[objective]
minimize = ["tiem"]
[constraints]
max_memory = 1
[search]
engine = "accpar"
budget = { evaluations = 0 }
"""


def test_show_prints_the_model_totals(capsys):
    assert main(["show", str(QUICK)]) == 0
    out = capsys.readouterr().out
    # VGG-16: 138,357,544 parameters (torchvision's model card); 15.47 G multiply-adds per 224x224
    # image there, so at least 2 x 15.47e9 x 256 = 7,921 GFLOP forward (activations and pooling add
    # a little); training adds the backward pass, about twice the forward (data and weight gradients)
    assert "parameters      138,357,544" in out
    totals = out.split("model totals")[1]
    forward = float(totals.split("forward GFLOP")[1].split()[0].replace(",", ""))
    training = float(totals.split("training GFLOP")[1].split()[0].replace(",", ""))
    assert 2 * 15.47 * 256 <= forward <= 2 * 15.47 * 256 * 1.01
    assert training == pytest.approx(3 * forward, rel=0.01)
    assert "training GFLOP" in out.split("model totals")[0]  # the per-layer column says which FLOPs


def test_validate_lists_every_error_one_line_each(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(BAD)
    assert main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert all(line.startswith("error: ") for line in lines)
    # the top-level key, then both of [workload]'s keys (one line per key: a model's own checks, such
    # as the dtype's name, come after its options are valid); the system is fine but without a workload
    # no cost model can be built, so nothing after [cost] can be checked yet
    assert len(lines) == 3
    assert "unknown top-level key 'colour'" in lines[0]
    assert "unknown key 'shuffle'" in lines[1] and "key 'batch'" in lines[2]
    # with the workload fixed, every later section's error shows up at once
    path.write_text(BAD.replace('batch = "256"', "batch = 256").replace("shuffle = true\n", ""))
    assert main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 2)[2][:14] for line in lines] == [
        "unknown top-le", "[objective] mi", "[constraints] ", "[search] budge"]


def test_loading_still_stops_at_the_first_error(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(BAD)
    with pytest.raises(OptmapError, match="unknown top-level key 'colour'") as caught:
        load(path)
    assert caught.value.problems == [str(caught.value)]


def test_fix_takes_the_share_a_result_prints():
    # AccPar's share is step k of 60: the result prints k / 60 to four digits (0.3333 for k = 20)
    name = "share[L0:8xtpu-v2]"
    by_value = load(QUICK, fixes=[f"{name}=0.3333"])
    by_index = load(QUICK, fixes=[f"{name}=20"])
    assert by_value.space.pinned[name] == by_index.space.pinned[name] == 20
    with pytest.raises(OptmapError, match=r"0.355 is not on its grid .* nearest: 0.35 \(21\) or 0.3667 \(22\)"):
        load(QUICK, fixes=[f"{name}=0.355"])


def test_a_stepped_integer_parses_values_and_indices():
    share = integer("s", 1, 9, step=0.1)
    assert share.parse(0.3) == 3 and share.parse(3) == 3 and share.parse(0.9) == 9
    with pytest.raises(OptmapError, match="nearest: 0.9 \\(9\\)"):
        share.parse(0.97)  # past the last step
    with pytest.raises(OptmapError, match="not a whole number"):
        integer("n", 1, 9).parse(0.3)  # without a step, still an index only
