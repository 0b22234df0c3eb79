"""The DSM system: chip peak, the 2-D torus as an ordinary System, presets and bad shapes."""

from __future__ import annotations

import pytest

from optmap.errors import OptmapError
from optmap.plugins.dsm.chip import build_dsm_chip
from optmap.plugins.dsm.torus import Torus, dsm_torus
from optmap.problem import build_problem, read_spec
from optmap.system import GroupSpec
from tests.conftest import ROOT

CHIP = build_dsm_chip()


def torus(count: int, **options):
    return dsm_torus([GroupSpec(CHIP, count)], **options)


def test_peaks_are_exact():
    # Fig. 10: 32 cores x 1024 FP16 MACs x 2 FLOP x 2 GHz; 64 chips
    assert CHIP.flops_per_s("fp16") == 32 * 1024 * 2 * 2e9 == 131.072e12
    system = torus(64, preset="dsm-8pf-sym")
    assert sum(d.flops_per_s("fp16") for d in system.devices) == 8.388608e15


@pytest.mark.parametrize("preset, x, y", [("dsm-8pf-sym", 80e9, 80e9), ("dsm-8pf-asym", 120e9, 40e9)])
def test_presets_build_a_4x16_torus(preset, x, y):
    system = torus(64, preset=preset)
    assert system.params["shape"] == (4, 16)
    assert all(system.graph.degree(d) == 4 for d in range(64))  # +X, -X, +Y, -Y
    # a chip's X bandwidth is shared by its two X links (160 GB/s out of a chip in all, §IV)
    assert system.link(0, 1).bandwidth == x / 2 and system.link(0, 4).bandwidth == y / 2
    assert system.path_bandwidth(0, 1) == x / 2  # what any other cost model sees
    assert Torus.of(system) == Torus(4, 16, x, y, 0.0)


def test_a_dimension_of_two_is_one_link_of_the_whole_axis_bandwidth():
    system = torus(4, shape=[2, 2], x_bandwidth_gBps=120, y_bandwidth_gBps=40)
    assert system.graph.number_of_edges() == 4
    assert Torus.of(system) == Torus(2, 2, 120e9, 40e9, 0.0)


def test_single_chip_preset():
    system = torus(1, preset="dsm-128tf-1chip")
    assert system.graph.number_of_edges() == 0 and Torus.of(system).chips == 1


def test_shape_must_match_the_chip_count():
    with pytest.raises(OptmapError, match=r"shape \[4, 8\] holds 32 chips but the groups give 64"):
        torus(64, shape=[4, 8])


def test_other_cost_models_run_on_the_dsm_torus():
    # AccTFM's tiny transformer, Megatron tensor parallelism over the torus's 4 chips (fp16: the chip's dtype)
    spec = read_spec(ROOT / "problems" / "acctfm" / "tiny.toml")
    spec["workload"]["dtype"] = "fp16"
    spec["cost"]["bits"] = 16
    spec["system"] = {"topology": "dsm-torus", "shape": [2, 2], "groups": [{"accelerator": "dsm-chip", "count": 4}]}
    problem = build_problem(spec)
    report = problem.cost_model.evaluate(problem.cost_model.plans()["megatron"])
    assert report.metrics["time"] > 0
