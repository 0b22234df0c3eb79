"""AccTFM on the shared ``transformer`` workload: registration and the problem-file section."""

import pytest

from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.plugins.transformer.workload import transformer
from optmap.problem import build_problem


def test_registered_as_plugin():
    host = load_host()
    assert host.get("workload", "transformer").resolve() is transformer
    assert host.get("cost_model", "acctfm").plugin == "acctfm"
    assert {"acctfm", "megatron"} <= set(host.names("search_engine"))


def test_problem_file_section():
    spec = {
        "workload": {"model": "transformer", "preset": "gpt2", "seq_len": 32, "batch": 8},
        "system": {"topology": "fully-connected", "groups": [{"accelerator": "titan-rtx", "count": 4}]},
        "cost": {"model": "acctfm"},
    }
    problem = build_problem(spec)
    assert problem.workload.config.seq_len == 32 and problem.cost_model.L == 24
    spec["workload"]["colour"] = "red"
    with pytest.raises(OptmapError, match="unknown key 'colour'"):
        build_problem(spec)
