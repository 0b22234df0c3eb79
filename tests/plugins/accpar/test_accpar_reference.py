"""comm_only mode against the AccPar authors' reference program (linghaosong/AccPar @ 8f28c36).

The expected plans and per-level costs in tests/data/accpar_reference/*.json were printed by that
program itself (built here, batch and levels taken from its command line; see the README there),
so they are independent of this code. Plans must match exactly: our DP breaks ties towards the
lowest type index, as the program does.
"""

import json

import pytest

from optmap.run import solve

from conftest import DATA, make_problem

REFERENCE = DATA / "accpar_reference"
RUNS = [
    pytest.param(network, run, id=f"{network.stem}-b{run['batch']}-h{run['levels']}")
    for network in sorted(REFERENCE.glob("*.txt"))
    for run in json.loads(network.with_suffix(".json").read_text())
]
TYPE_INDEX = {"I": 0, "II": 1, "III": 2}


def reference_problem(network, batch, levels):
    return make_problem({
        "workload": {"file": str(network), "batch": batch},
        "system": {"topology": "fully-connected", "groups": [{"accelerator": "tpu-v3", "count": 2**levels}]},
        "cost": {"model": "accpar", "mode": "comm_only"},
        "objective": {"minimize": ["comm_elements"]},
    })


def levels_of(result):
    return result.report.plan["levels"]


@pytest.mark.parametrize("network, run", RUNS)
def test_accpar_plans_and_costs_equal_reference(network, run):
    result = solve(reference_problem(network, run["batch"], run["levels"]), engine="accpar")
    levels = levels_of(result)
    assert [level["comm_elements"] for level in levels] == run["level_costs"]
    assert result.values["comm_elements"] == run["total"]
    assert [[TYPE_INDEX[t] for t in level["types"].values()] for level in levels] == run["plans"]


@pytest.mark.parametrize("network, run", RUNS)
def test_hypar_and_data_parallel_equal_reference(network, run):
    problem = reference_problem(network, run["batch"], run["levels"])
    hypar = solve(problem, engine="hypar")
    assert [level["comm_elements"] for level in levels_of(hypar)] == run["hypar"]["level_costs"]
    assert [[TYPE_INDEX[t] for t in level["types"].values()] for level in levels_of(hypar)] == run["hypar"]["plans"]
    data_parallel = solve(problem, engine="dp")
    assert [level["comm_elements"] for level in levels_of(data_parallel)] == run["data_parallel"]["level_costs"]
