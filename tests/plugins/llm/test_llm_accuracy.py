"""The held-out accuracy megatron-3d reports beside a plan (optmap.plugins.llm.accuracy)."""

import json
import sys
from pathlib import Path

import pytest

from optmap.plugins.llm import accuracy, heldout_runs
from optmap.problem import build_problem
from optmap.run import solve

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
import validate_llm  # noqa: E402


def test_the_shipped_summary_is_what_the_model_predicts_today():
    # recomputed from the held-out runs with the model as it is: a stale file (a model change without
    # `python examples/validate_llm.py`) fails here
    runs = heldout_runs.runs()
    want = {"summary": validate_llm.summary([validate_llm.predict(r) for r in runs]),
            "summary_without_recipe_options": validate_llm.summary([validate_llm.predict(r, recipe=False) for r in runs])}
    shipped = json.loads((Path(accuracy.__file__).parent / accuracy.FILE).read_text(encoding="utf-8"))
    for key, groups in want.items():
        for got, expect in zip(shipped[key], groups, strict=True):
            assert got["group"] == expect["group"] and got["runs"] == expect["runs"]
            assert got["mean_abs_error_percent"] == pytest.approx(expect["mean_abs_error_percent"], abs=1e-6)
            assert got["max_abs_error_percent"] == pytest.approx(expect["max_abs_error_percent"], abs=1e-6)


@pytest.mark.parametrize("accelerator, moe, group", [
    ("h100-sxm", False, "H100 dense"), ("h100", True, "H100 MoE"), ("b200", False, "B200 / GB200"),
    ("gb200", True, "B200 / GB200"), ("a100-sxm", False, None), ("v100", True, None)])
def test_a_run_belongs_to_its_accelerators_group(accelerator, moe, group):
    assert accuracy.group(accelerator, moe) == group
    rows = accuracy.table(accelerator, moe)
    assert len(rows) == (2 if group else 0)
    assert all(row["published runs"].startswith(group) for row in rows)


def _plan(accelerator: str, preset: str, gpus: int):
    return solve(build_problem({
        "workload": {"model": "transformer", "preset": preset, "batch": 64, "dtype": "bf16"},
        "system": {"topology": "dgx-h100" if accelerator.startswith("h100") else "dgx-a100",
                   "groups": [{"accelerator": accelerator, "count": gpus}]},
        "cost": {"model": "megatron-3d"}, "search": {"engine": "megatron-3d"}})).report


def test_a_plan_reports_its_groups_held_out_errors_and_none_without_held_out_runs():
    shipped = accuracy.summary()
    report = _plan("h100-sxm", "mixtral-8x7b", 64)
    rows = report.tables["held_out_accuracy"]
    moe = {g["group"]: g for g in shipped["summary"]}["H100 MoE"]
    assert rows[1] == {"published runs": f"H100 MoE ({moe['runs']})", "priced as": "with their recipes' options",
                       "mean |error| %": round(moe["mean_abs_error_percent"], 1),
                       "worst |error| %": round(moe["max_abs_error_percent"], 1)}
    assert "held_out_accuracy" not in _plan("a100-sxm", "megatron-22b", 16).tables
