"""Whole-plan scores on the paths that test_accpar_speed's recorded problems leave out: network
latency, ``comm_only``, measured accelerators (the shared step model), a single accelerator,
"linear" shares with ``combine = "sum"``, odd accelerator counts. ``evaluate_batch`` must give,
bit for bit, the scores the plugin printed before its scoring gathered Table 4 and SHRINK from
per-(state, node) tables (tests/data/accpar_speed/scores-before-table-gathers.json, printed at
commit 68c2c4c), through numpy and through the compiled kernel."""

import json

import numpy as np
import pytest

import optmap.plugins.accpar.model as accpar_model
from conftest import DATA, make_problem

CASES = json.loads((DATA / "accpar_speed" / "scores-before-table-gathers.json").read_text())


def _name(case):
    groups = "+".join(f"{g['count']}{g['accelerator']}" for g in case["spec"]["system"]["groups"])
    return f"{case['spec']['workload']['model']}-{groups}-{case['spec']['cost'].get('mode', 'time')}"


@pytest.mark.parametrize("kernel_rows", [10**9, 1], ids=["numpy", "kernel"])
@pytest.mark.parametrize("case", CASES, ids=_name)
def test_scores_equal_the_code_before_the_table_gathers(case, kernel_rows, monkeypatch):
    monkeypatch.setattr(accpar_model, "KERNEL_ROWS", kernel_rows)  # every batch through one path
    model = make_problem(json.loads(json.dumps(case["spec"]))).cost_model
    X = np.array(case["X"], float)
    for chunk in (None, 3):  # one pass, and passes of three rows (the last one short)
        scores = model.evaluate_batch(X, chunk)
        for metric, values in case["scores"].items():
            assert np.asarray(scores[metric]).tolist() == values, (metric, chunk)
