"""The example plugin's ``replicas`` formulation: a third-party composite that nests a built-in
formulation through the host (installed from outside the repository, as a user's plugin is)."""

import pytest

import optmap
from optmap.host import load_host
from optmap.system.subsystem import sub_system
from optmap.workload.slicing import slice_workload

from conftest import ROOT

PROBLEM = ROOT / "examples/optmap-example-plugin/replicas.toml"


def test_replicas_nest_accpar_by_name_and_add_a_ring_allreduce_by_hand():
    problem = optmap.load(PROBLEM)
    model, wl, system = problem.cost_model, problem.workload, problem.system
    assert all(name.startswith("replica.L") for name in model.space.names)
    mapping = problem.space.mapping({v.name: "I" for v in model.space.variables})
    report = model.evaluate(mapping)
    # the inner model, built here on its own: every layer at batch 64 / 2 on devices 0 and 1
    inner = load_host().build("cost_model", "accpar", slice_workload(wl, range(len(wl.order)), batch=32),
                              sub_system(system, [0, 1]))
    alone = inner.evaluate(inner.space.mapping({v.name: "I" for v in inner.space.variables}))
    # ring all-reduce of the gradients over 2 replicas (Thakur et al. 2005): 2(r−1)α + 2(r−1)/r · n/β
    n = wl.params * wl.bytes_per_element
    ring = 2 * system.path_latency(0, 2) + n / system.path_bandwidth(0, 2)
    assert report.metrics["time"] == pytest.approx(alone.metrics["time"] + ring, rel=1e-12)
    assert report.children["replica"].metrics == alone.metrics
