"""megatron-3d cost model: space, validity, feasibility, parts by hand, clusters and links."""


import numpy as np
import pytest

from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.plugins.hardware.accelerators import A100
from optmap.plugins.llm.cluster import dgx_a100, dgx_h100, group_link
from optmap.plugins.llm.model import DECISIONS
from optmap.problem import build_problem
from optmap.system import GroupSpec


def problem(preset="gpt3-175b", gpus=64, batch=64, **cost):
    return build_problem({
        "workload": {"model": "transformer", "preset": preset, "batch": batch, "dtype": "fp16"},
        "system": {"topology": "dgx-a100", "groups": [{"accelerator": "a100", "count": gpus}]},
        "cost": {"model": "megatron-3d", **cost}, "search": {"engine": "megatron-3d"}})


KORTHIKANTI_175B = {"tensor_parallel": 8, "pipeline_parallel": 8, "data_parallel": 1, "microbatch_size": 1,
                    "interleaving": 3, "recompute": "selective", "sequence_parallel": True,
                    "optimizer_sharding": False, "dp_overlap": False}


def test_registered():
    host = load_host()
    assert host.get("cost_model", "megatron-3d").plugin == "llm"
    assert host.get("search_engine", "megatron-3d").plugin == "llm"
    assert {"dgx-a100", "dgx-h100"} <= set(host.names("topology"))
    assert host.get("accelerator", "h100").resolve().name == "h100"


def test_space_choices_are_divisors():
    m = problem().cost_model
    choices = {v.name: v.choices for v in m.space.variables}
    assert tuple(choices) == DECISIONS
    assert choices["tensor_parallel"] == (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)  # divisors of 96 heads, <= 64
    assert choices["pipeline_parallel"] == (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)  # of 96 layers, <= 64 GPUs
    assert choices["microbatch_size"] == (1, 2, 4, 8, 16)
    assert choices["recompute"] == ("none", "selective", "full")


def test_validity_reasons():
    m = problem().cost_model
    bad = {**KORTHIKANTI_175B, "data_parallel": 2}
    assert "exceeds the system's 64" in m.evaluate(m.space.mapping(bad)).reason
    bad = {**KORTHIKANTI_175B, "tensor_parallel": 4, "pipeline_parallel": 2, "data_parallel": 8, "microbatch_size": 16}
    assert "not divisible" in m.evaluate(m.space.mapping(bad)).reason
    bad = {**KORTHIKANTI_175B, "interleaving": 16}
    assert "interleaving 16" in m.evaluate(m.space.mapping(bad)).reason
    strict = problem(use_all_gpus=True).cost_model
    bad = {**KORTHIKANTI_175B, "pipeline_parallel": 4}
    assert "differs from" in strict.evaluate(strict.space.mapping(bad)).reason


def test_memory_infeasible_with_reason_and_feasible_fits():
    m = problem().cost_model
    none = {**KORTHIKANTI_175B, "recompute": "none", "sequence_parallel": False}
    report = m.evaluate(m.space.mapping(none))
    # Korthikanti Figure 1: 45.6 GiB of weights + 66.8 GiB of activations do not fit in 80 GiB
    assert not report.feasible and "GiB per GPU" in report.reason and report.metrics["memory_gib"] > 100
    ok = m.evaluate(m.space.mapping(KORTHIKANTI_175B))
    assert ok.feasible and ok.metrics["memory_gib"] <= 80 - 2
    # weights+grads+optimizer: 18 bytes x (8 layers' params + embeddings) / 8 ranks of the first stage
    cfg = m.config
    params = (12 * cfg.layer_params + (51200 + 2048) * 12288) / 8
    assert ok.metrics["memory_weights_gib"] == pytest.approx(18 * params / 2**30)


def test_batch_and_single_evaluation_agree():
    m = problem().cost_model
    rng = np.random.default_rng(0)
    X = m.space.sample(rng, 200)
    cols = m.evaluate_batch(X)
    for i in range(0, 200, 37):
        report = m.evaluate(m.space.decode(X[i]))
        assert report.metrics["time"] == pytest.approx(cols["time"][i])
        assert report.feasible == bool(cols["feasible"][i])


def test_parts_add_up_and_tp_comm_by_hand():
    m = problem().cost_model
    r = m.evaluate(m.space.mapping({**KORTHIKANTI_175B, "sequence_parallel": False, "recompute": "full"}))
    parts = [k for k in r.metrics if k.endswith("_s")]
    assert sum(r.metrics[k] for k in parts) == pytest.approx(r.metrics["time"])
    # full recompute, no sp: per layer and micro-batch 3 ring All-Reduces of [b, s, h] fp16 each way
    # (2 fwd + 2 bwd + 2 recomputed fwd = 6) over 8 GPUs at 300 GB/s and 1 µs (Thakur et al. 2005)
    n = 2 * 2048 * 12288
    one = 2 * 7 * 1e-6 + 2 * 7 / 8 * n / 300e9
    assert r.metrics["tp_comm_s"] == pytest.approx(64 * 12 * 6 * one, rel=1e-9)  # 64 micro-batches, 12 layers


def test_group_link_matches_system_routing():
    system = dgx_a100([GroupSpec(A100, 24)])
    assert system.params["nodes"] == 3
    for devices in ([0, 1, 2, 3], [0, 8], [0, 4, 8, 12, 16, 20], [8, 9, 10, 11, 12, 13, 14, 15]):
        link = group_link(system, devices)
        assert link.bandwidth == system.subset_bandwidth(devices)
        assert link.latency == pytest.approx(system.subset_latency(devices))
    assert group_link(system, [0, 1]).bandwidth == 300e9 and group_link(system, [0, 8]).bandwidth == 25e9
    h100 = dgx_h100([GroupSpec(A100, 16)])
    assert group_link(h100, [0, 1]).bandwidth == 450e9 and group_link(h100, [0, 8]).bandwidth == 50e9


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(OptmapError, match="decoder-only or encoder"):
        problem(preset="TF8", gpus=8, batch=8)
    with pytest.raises(OptmapError, match="max_microbatch"):
        problem(max_microbatch=0)
    with pytest.raises(OptmapError, match="recompute"):
        problem(recompute=["sometimes"])
