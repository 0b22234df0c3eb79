"""AccPar prices the [system] it is given (issue 10): what the file sets changes the answer by the
amounts worked out by hand below, what it does not set keeps the paper's figures, and a network
AccPar cannot price is refused at load."""

import pytest

from conftest import make_problem
from optmap.errors import OptmapError
from optmap.run import solve

MLP = """num_layers 2
fc1 FC
in_ch 1024
out_ch 1024
fc2 FC
in_ch 1024
out_ch 1000
"""


def problem(tmp_path, **system):
    (tmp_path / "mlp.txt").write_text(MLP)
    spec = {
        "workload": {"file": "mlp.txt", "batch": 64, "dtype": "bf16"},
        "system": {"topology": "fully-connected", "groups": [{"accelerator": "tpu-v3", "count": 2}], **system},
        "cost": {"model": "accpar", "check_memory": False},
        "fix": {"L0:fc1": "I", "L0:fc2": "I"},  # data parallel: each layer all-reduces its weight gradient
    }
    return make_problem(spec, tmp_path / "p.toml")


def time_of(p):
    return solve(p, engine="exhaustive").report.metrics


def test_unset_options_keep_the_paper_figures(tmp_path):
    base = time_of(problem(tmp_path))
    # fc1: 1024 x 1024 weights, Type-I Table 4 psum A(W) per side; bf16 = 2 bytes; TPU-v3 16 Gb/s = 2e9 B/s
    assert base["comm_time"] == pytest.approx((1024 * 1024 + 1024 * 1000) * 2 / 2e9)
    assert time_of(problem(tmp_path, switch=True))["time"] == base["time"]  # a drawing choice: same rates


def test_a_slower_link_than_the_accelerators_slows_every_transfer(tmp_path):
    base = time_of(problem(tmp_path))
    slow = time_of(problem(tmp_path, bandwidth_gbps=1.0))  # 1.25e8 B/s < 2e9 B/s: 16 x longer transfers
    assert slow["comm_time"] == pytest.approx(16 * base["comm_time"])
    fast = time_of(problem(tmp_path, bandwidth_gbps=1e5))  # faster than the devices: they still limit
    assert fast["comm_time"] == pytest.approx(base["comm_time"])


def test_latency_is_one_per_transfer_that_moves_data(tmp_path):
    base = time_of(problem(tmp_path))
    late = time_of(problem(tmp_path, latency_us=5.0))
    # two weight all-reduces (fc1, fc2 Type-I), no layout conversion between two Type-I layers
    assert late["comm_time"] - base["comm_time"] == pytest.approx(2 * 5e-6)


def test_groups_are_crossed_at_the_inter_group_rate(tmp_path):
    (tmp_path / "mlp.txt").write_text(MLP)
    spec = {
        "workload": {"file": "mlp.txt", "batch": 64, "dtype": "bf16"},
        "system": {"topology": "hierarchical", "groups": [{"accelerator": "tpu-v3", "count": 1},
                                                          {"accelerator": "tpu-v3", "count": 1}]},
        "cost": {"model": "accpar", "check_memory": False},
        "fix": {"L0:fc1": "I", "L0:fc2": "I"},
    }
    base = time_of(make_problem(spec, tmp_path / "p.toml"))
    spec["system"]["inter_bandwidth_gbps"] = 4.0  # 5e8 B/s between the two groups: 4 x slower
    assert time_of(make_problem(spec, tmp_path / "p.toml"))["comm_time"] == pytest.approx(4 * base["comm_time"])


@pytest.mark.parametrize("topology", ["ring", "chain", "mesh2d", "torus2d"])
def test_networks_with_shared_links_are_refused(tmp_path, topology):
    with pytest.raises(OptmapError, match=f"cost model 'accpar' cannot price topology '{topology}'.*non-blocking"):
        problem(tmp_path, topology=topology)
