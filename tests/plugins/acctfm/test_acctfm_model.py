"""AccTFM cost model: System-driven All-Reduce, space, batch evaluator, metrics, compression settings."""

import copy

import numpy as np
import pytest

from optmap.cost import BATCH
from optmap.errors import OptmapError
from optmap.plugins.acctfm import schedule
from optmap.plugins.acctfm.model import ACCTFM_TABLES, SERIAL_ROW, AccTFMCostModel
from optmap.problem import build_problem

SPEC = {
    "workload": {"model": "transformer", "preset": "TF8", "seq_len": 32, "batch": 16},
    "system": {"topology": "fully-connected", "bandwidth_gbps": 10, "latency_us": 50,
               "groups": [{"accelerator": "titan-rtx", "count": 4}]},
    "cost": {"model": "acctfm", "keep_ratio": 0.5, "bits": 4},
}


def _problem(**sections):
    spec = copy.deepcopy(SPEC)
    for section, values in sections.items():
        spec[section].update(values)
    return build_problem(spec)


def test_space_and_capabilities():
    model = _problem().cost_model
    assert isinstance(model, AccTFMCostModel) and {BATCH, ACCTFM_TABLES} <= model.capabilities
    names = model.space.names
    assert names[0] == "enc0.self_attn:fwd" and names[30] == "enc0.self_attn:bwd" and len(names) == 62
    assert names[-2:] == ["keep_ratio", "bits"] and model.space.variables[0].choices == (1, 2, 4)
    assert model.settings() == [(1.0, 32), (1.0, 4), (0.5, 32), (0.5, 4)]
    plain = _problem(cost={"keep_ratio": 1.0, "bits": 32}).cost_model
    assert len(plain.space) == 60 and plain.settings() == [(1.0, 32)]


def test_allreduce_bandwidth_and_latency_come_from_the_system():
    m = 16 * 32 * 1024 * 4  # [B, S, d_model] fp32, K = 1
    for latency, algorithm, expect in [
        (50, "recursive_doubling", 2 * (50e-6 + m / 1.25e9)),  # Eq. 3: log2 4 steps, whole message
        (0, "recursive_doubling", 2 * m / 1.25e9),
        (50, "ring", 6 * 50e-6 + 1.5 * m / 1.25e9),  # 2(N-1) α + 2(N-1)/N β m
    ]:
        model = _problem(system={"latency_us": latency}, cost={"algorithm": algorithm}).cost_model
        assert model.tables().tcm_fwd[1, 0] == pytest.approx(expect)  # enc0.ffn: no An message
    slow = _problem(system={"bandwidth_gbps": 5}).cost_model
    assert slow.tables().tcm_fwd[1, 0] == pytest.approx(2 * (50e-6 + m / 0.625e9))


def test_compute_peak_from_accelerator_dtype():
    fp32 = _problem().cost_model
    fp16 = _problem(workload={"dtype": "fp16"}).cost_model
    assert fp32.peak == 16.3e12 and fp16.peak == 130e12
    assert fp16.tables().tcp_fwd[0, 0] < fp32.tables().tcp_fwd[0, 0]
    assert fp16.tables().tcm_fwd[1, 0] < fp32.tables().tcm_fwd[1, 0]  # 2-byte messages
    assert fp16.settings() == [(1.0, 16), (1.0, 4), (0.5, 16), (0.5, 4)]


def test_batch_matches_single_and_schedule():
    model = _problem().cost_model
    rng = np.random.default_rng(0)
    X = model.space.sample(rng, 64)
    batch = model.evaluate_batch(X)
    assert set(batch) == set(model.metrics)
    for i in (0, 7, 33):
        report = model.evaluate(model.space.decode(X[i]))
        for name in model.metrics:
            assert report.metrics[name] == pytest.approx(batch[name][i], rel=1e-12)
        plan = report.plan
        setting = (plan["compression"]["keep_ratio"], plan["compression"]["bits"])
        ref = schedule.evaluate(model.tables(setting), list(plan["k_fwd"].values()), list(plan["k_bwd"].values()))
        assert report.metrics["time"] == pytest.approx(ref.iter_time)
        assert report.metrics["idle_rate"] == pytest.approx(ref.idle_rate)
        assert report.metrics["comm_bytes"] == pytest.approx(ref.comm_bytes)
        rows = report.layers
        assert rows[-1].name == SERIAL_ROW and set(rows[0].decisions) == {"K fwd", "K bwd"}
        assert sum(r.compute for r in rows) == pytest.approx(ref.compute_time)
        assert sum(r.communication for r in rows) == pytest.approx(ref.comm_time)


def test_megatron_baseline_and_metrics():
    model = _problem().cost_model
    plans = model.plans()
    assert set(plans) == {"megatron", "uniform-2", "uniform-4", "compression-only"}
    base = model.evaluate(plans["megatron"]).metrics
    assert base["speedup"] == pytest.approx(1.0) and base["traffic_reduction"] == pytest.approx(1.0)
    assert base["compression_ratio"] == 1.0
    assert base["idle_rate"] == pytest.approx(base["comm_time"] / base["time"])  # serial: idle = comm share
    comp = model.evaluate(plans["compression-only"]).metrics
    assert comp["compression_ratio"] == pytest.approx(16.0)  # (32/4) x (1/0.5), note §3.5
    assert 1 < comp["traffic_reduction"] < 16  # An, scales and uncompressed serial messages
    assert comp["speedup"] > 1 and comp["compute_time"] > base["compute_time"]  # kernels on the compute stream
    quant_only = model.evaluate(model.space.decode(model.plan_vector([1] * 30, [1] * 30, (1.0, 4)))).metrics
    assert quant_only["compression_ratio"] == pytest.approx(8.0)


def test_inference_plans_forward_only():
    model = _problem(workload={"phase": "inference"}).cost_model
    assert len(model.space) == 32 and all(n.endswith(":fwd") for n in model.space.names[:30])
    X = model.space.sample(np.random.default_rng(1), 8)
    out = model.evaluate_batch(X)
    np.testing.assert_allclose(out["bwd_time"], 0, atol=1e-15)
    report = model.evaluate(model.space.decode(X[0]))
    assert set(report.layers[0].decisions) == {"K fwd"} and "k_bwd" not in report.plan


def test_option_errors():
    with pytest.raises(OptmapError, match="not divisible by micro-batch counts"):
        _problem(workload={"batch": 6})
    with pytest.raises(OptmapError, match="keep_ratio"):
        _problem(cost={"keep_ratio": 0})
    with pytest.raises(OptmapError, match="heads"):
        build_problem({**SPEC, "system": {"topology": "fully-connected",
                                          "groups": [{"accelerator": "titan-rtx", "count": 3}]}})
    with pytest.raises(OptmapError, match="a transformer; use \\[workload\\] model"):
        build_problem({**SPEC, "workload": {"model": "lenet", "batch": 8}})
    with pytest.raises(OptmapError, match="unknown key 'bandwith"):
        _problem(cost={"bandwith": 1})
