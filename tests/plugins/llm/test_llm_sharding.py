"""FSDP (ZeRO-3) and offloading: memory and exposed time by hand, engine axes, export flags."""

import json

import numpy as np
import pytest

from optmap.plugins.llm import offload, sharding
from optmap.plugins.llm.engine import plan_table
from optmap.problem import build_problem

from test_llm_model import problem


def test_fsdp_memory_is_18_bytes_per_parameter_over_d_plus_two_layers():
    # 1e9 local parameters of 10 layers of 1e8 over d = 8: (2 + 4 + 12)·1e9/8 = 2.25e9 bytes, plus two
    # gathered 16-bit layers 2·2·1e8 = 0.4e9 (ZeRO stage 3, Rajbhandari et al. SC'20 §5)
    w, g, s, _ = sharding.static_bytes(1e9, 1e8, np.array(True), np.array(False), 8.0)
    assert float(w + g + s) == pytest.approx(18e9 / 8 + 4e8)
    assert float(w) == pytest.approx(2e9 / 8 + 4e8) and float(g) == 4e9 / 8 and float(s) == 12e9 / 8
    # without FSDP: ZeRO-1 shards the optimizer state only (6 + 12/d), nothing sharded: 18
    w, g, s, _ = sharding.static_bytes(1e9, 1e8, np.array(False), np.array([True, False]), 8.0)
    assert np.allclose(w + g + s, [6e9 + 12e9 / 8, 18e9])


def test_fsdp_gathers_and_reduce_scatter_by_hand():
    # one layer of 1e8 parameters over 8 ranks at 50 GB/s, no latency: ring all-gather of its 16-bit
    # weights 7/8 · 2e8 B / 50e9 = 3.5 ms, reduce-scatter of fp32 gradients 7/8 · 4e8 / 50e9 = 7 ms.
    # Forward 2 ms hides 2 of the gather's 3.5; backward 8 ms hides 8 of gather + scatter 10.5
    fwd, bwd = sharding.layer_exposed(1e8, 4.0, 8, 50e9, 0.0, 2e-3, 8e-3)
    assert float(fwd) == pytest.approx(1.5e-3) and float(bwd) == pytest.approx(2.5e-3)
    # without resharding after forward (Llama 3's FSDP, FSDP2 reshard_after_forward=False) the backward
    # only reduce-scatters: 7 ms beside 8 ms, hidden; the stage's 1e9 weights stay gathered (2e9 bytes)
    fwd, bwd = sharding.layer_exposed(1e8, 4.0, 8, 50e9, 0.0, 2e-3, 8e-3, reshard=False)
    assert float(fwd) == pytest.approx(1.5e-3) and float(bwd) == 0.0
    w, g, s, _ = sharding.static_bytes(1e9, 1e8, np.array(True), np.array(False), 8.0, reshard=False)
    assert float(w) == pytest.approx(2e9 / 8 + 2e9)


def test_fsdp_shards_and_gathers_routed_experts_over_the_expert_data_parallel_group():
    # Megatron-FSDP shards experts over their expert-data-parallel mesh (mcore_fsdp_adapter.py). A
    # layer of 1e8 dense parameters over 8 ranks and 4e8 local expert parameters over edp = 4, both at
    # 50 GB/s: gathers 7/8 · 2e8 / 50e9 = 3.5 ms + 3/4 · 8e8 / 50e9 = 12 ms; reduce-scatters of fp32
    # gradients 7 ms + 3/4 · 16e8 / 50e9 = 24 ms. Forward 10 ms hides 10 of 15.5; backward 30 ms hides
    # 30 of 15.5 + 31 = 46.5
    fwd, bwd = sharding.layer_exposed(1e8, 4.0, 8, 50e9, 0.0, 10e-3, 30e-3, experts=(4e8, 4.0, 50e9, 0.0))
    assert float(fwd) == pytest.approx(5.5e-3) and float(bwd) == pytest.approx(16.5e-3)
    # a dense layer has no experts to gather: not even the expert group's latency is paid
    dense = sharding.layer_exposed(1e8, 4.0, 8, 50e9, 5e-6, 1e-3, 2e-3)
    assert sharding.layer_exposed(1e8, 4.0, 8, 50e9, 5e-6, 1e-3, 2e-3, experts=(0.0, 16.0, 50e9, 5e-6)) == dense
    # a stage's 4e9 expert parameters over edp = 4: (2 + 4 + 12)·4e9/4 = 18e9 bytes plus two gathered
    # 16-bit layers of 4e8 (1.6e9); ZeRO-1 alone (no FSDP) leaves weights and gradients whole
    w, g, s, _ = sharding.static_bytes(4e9, 4e8, np.array(True), np.array(True), 4.0)
    assert float(w + g + s) == pytest.approx(18e9 + 1.6e9)
    w, g, s, _ = sharding.static_bytes(4e9, 4e8, np.array(False), np.array(True), 4.0)
    assert float(w + g + s) == pytest.approx(6 * 4e9 + 12 * 4e9 / 4)  # 36e9


def test_offload_by_hand():
    # a layer's 0.64 GB of activations over a 64 GB/s link: 10 ms out, 10 ms back; beside a 4 ms forward
    # and a 12 ms backward 6 ms are exposed (Calculon's offload overhead, max(0, move - compute))
    assert float(offload.activation_exposed(0.64e9, 64e9, 4e-3, 12e-3)) == pytest.approx(6e-3)
    # the offloaded step: 12 bytes of state per parameter for 1e9 parameters cross the link each way at
    # 64 GB/s (0.1875 s), longer than its 20 ms of HBM traffic
    assert float(offload.optimizer_time(0.02, 1e9, 64e9)) == pytest.approx(0.1875)
    # host memory: 3 GB of offloaded state, and 10 layer-micro-batches of 0.5 GB activations beyond the
    # two resident ones: 3 + 8 × 0.5 = 7 GB; activations kept on the GPU add nothing
    assert float(offload.host_bytes(3e9, True, 0.5e9, 10.0)) == pytest.approx(7e9)
    assert float(offload.host_bytes(3e9, False, 0.5e9, 10.0)) == pytest.approx(3e9)
    assert offload.optimizer_offloaded([0, 1, 2, 3]).tolist() == [False, True, False, True]
    assert offload.activations_offloaded([0, 1, 2, 3]).tolist() == [False, False, True, True]


def test_offload_and_fsdp_in_a_plan():
    # GPT-3 175B on 64 A100s (tensor 8, pipeline 8, d 1 -> FSDP and ZeRO-1 cannot act), no recomputation
    m = problem(offload=["none", "optimizer", "activations", "both"]).cost_model
    plan = {"tensor_parallel": 8, "pipeline_parallel": 8, "data_parallel": 1, "microbatch_size": 1,
            "interleaving": 1, "recompute": "none", "sequence_parallel": True, "optimizer_sharding": False,
            "dp_overlap": False}
    parts = {o: {r["part"]: r["GiB"] for r in m.evaluate(m.space.mapping({**plan, "offload": o})).tables[
        "memory_per_gpu"]} for o in offload.OFFLOAD}
    cfg, t = m.config, 8
    # optimizer offloaded: one layer's 12 bytes per parameter stay (the buffer)
    assert parts["optimizer"]["optimizer state (fp32 master, Adam m and v)"] == pytest.approx(
        12 * cfg.layer_params / t / 2**30)
    # activations offloaded: two layers of one micro-batch stay instead of 12 layers × 8 in flight. Without
    # offloading the first stage holds the most (its 8 micro-batches' layers and embedding inputs, s·b·h/t
    # each); with it the last one does, two layers and its logits (fp16 output, fp32 softmax: 6·s·b·V/t)
    none_layer = (parts["none"]["activations"] - 2048 * 12288 * 8 / t / 2**30) / (12 * 8)
    logits = 6 * 2048 * 51200 / t / 2**30
    assert parts["activations"]["activations"] == pytest.approx(2 * none_layer + logits)
    assert parts["both"]["activations"] == pytest.approx(parts["activations"]["activations"])
    # and FSDP at d·cp = 1 cannot act: the same plan as without it (Megatron ignores it)
    one = m.evaluate(m.space.mapping({**plan, "fsdp": True}))
    off = m.evaluate(m.space.mapping(plan))
    assert one.metrics == off.metrics


def test_engine_counts_inert_fsdp_once_and_searches_offload_when_asked():
    m = problem(preset="megatron-22b", gpus=8, batch=8, max_context_parallel=1).cost_model
    allowed = {v.name: np.array(v.choices, dtype=object) for v in m.space.variables}
    values, cols = plan_table(m, allowed)
    d = values["data_parallel"]
    assert not (values["fsdp"].astype(bool) & (d == 1)).any()  # FSDP on at d = 1 duplicates off
    assert not (values["fsdp"].astype(bool) & values["optimizer_sharding"].astype(bool)).any()
    assert set(values["offload"].tolist()) == {0}  # default: no offloading
    m4 = problem(preset="megatron-22b", gpus=8, batch=8, max_context_parallel=1,
                 offload=["none", "optimizer", "activations", "both"]).cost_model
    values4, _ = plan_table(m4, {v.name: np.array(v.choices, dtype=object) for v in m4.space.variables})
    assert len(values4["offload"]) == 4 * len(values["offload"]) and set(values4["offload"].tolist()) == {0, 1, 2, 3}


def test_export_of_cp_fsdp_and_offload(tmp_path):
    m = build_problem({
        "workload": {"model": "transformer", "preset": "llama3.1-405b", "batch": 64, "dtype": "bf16"},
        "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": 1024}]},
        "cost": {"model": "megatron-3d"}, "search": {"engine": "megatron-3d"}}).cost_model
    plan = {"tensor_parallel": 8, "pipeline_parallel": 16, "data_parallel": 4, "microbatch_size": 1,
            "interleaving": 1, "recompute": "full", "sequence_parallel": True, "optimizer_sharding": True,
            "dp_overlap": True, "context_parallel": 2, "fsdp": True, "offload": "both"}
    text, notes = m.export(plan, "megatron")
    for flag in ("--context-parallel-size 2", "--cp-comm-type p2p", "--use-megatron-fsdp",
                 "--data-parallel-sharding-strategy optim_grads_params", "--optimizer-cpu-offload"):
        assert flag in text
    assert "--use-distributed-optimizer" not in text and "--overlap-grad-reduce" not in text
    assert any("refuses pipeline parallelism" in n for n in notes)
    config, notes = m.export(plan, "deepspeed")
    zero = json.loads(config)["zero_optimization"]
    assert zero["stage"] == 3 and zero["offload_optimizer"]["device"] == "cpu"
    assert json.loads(config)["activation_checkpointing"]["cpu_checkpointing"] is True
    assert any("context_parallel = 2" in n for n in notes)


def test_host_link_of_each_topology():
    # datasheets: PCIe Gen4 x16 on DGX A100 (32 GB/s each way), Gen5 x16 on DGX H100 / B200 (64 GB/s),
    # NVLink-C2C on GB200 (900 GB/s bidirectional: 450 GB/s each way); option host_gbps overrides
    from optmap.plugins.hardware.accelerators import A100
    from optmap.plugins.llm.cluster import dgx_a100, dgx_b200, dgx_h100, gb200_nvl72
    from optmap.system import GroupSpec

    groups = [GroupSpec(A100, 16)]
    assert [f(groups).params["host_bandwidth"] for f in (dgx_a100, dgx_h100, dgx_b200, gb200_nvl72)] == \
        [32e9, 64e9, 64e9, 450e9]
    assert dgx_h100(groups, host_gbps=256.0).params["host_bandwidth"] == 32e9
    # and the cost model reads it
    m = problem(gpus=64).cost_model
    assert m.options.host_bandwidth == 32e9


def test_offloaded_state_must_fit_in_host_memory():
    # GPT-3 175B on 64 A100s (tensor 8, pipeline 8): offloading the optimizer puts the largest stage's
    # whole state in host memory (the GPU keeps a one-layer staging buffer beside it): 12 layers + the
    # embedding (53,248 × 12,288, a third of a layer's 12 · 12,288²) of 1/8 shards, at 12 bytes per
    # parameter (fp32 master weight, Adam's m and v): between 12 and 13 layers' worth. DGX A100's 1 TiB over 8 GPUs (128 GiB each) holds it; 1 GiB does not.
    def model(**topology):
        return build_problem({
            "workload": {"model": "transformer", "preset": "gpt3-175b", "batch": 64, "dtype": "fp16"},
            "system": {"topology": "dgx-a100", "groups": [{"accelerator": "a100", "count": 64}], **topology},
            "cost": {"model": "megatron-3d", "offload": ["none", "optimizer"]},
            "search": {"engine": "megatron-3d"}}).cost_model
    plan = {"tensor_parallel": 8, "pipeline_parallel": 8, "data_parallel": 1, "microbatch_size": 1,
            "interleaving": 1, "recompute": "full", "sequence_parallel": True, "optimizer_sharding": False,
            "dp_overlap": False, "offload": "optimizer"}
    roomy = model()
    assert roomy.evaluate(roomy.space.mapping(plan)).feasible
    tight = model(host_memory_gib=1.0)
    report = tight.evaluate(tight.space.mapping(plan))
    assert not report.feasible and "host_memory_gib" in report.reason
    offloaded = float(report.reason.split("offloads ")[1].split(" GiB")[0])
    layer = 12 * tight.config.layer_params / 8 / 2**30  # one layer's state shard, GiB
    assert 12 * layer < offloaded < 13 * layer
