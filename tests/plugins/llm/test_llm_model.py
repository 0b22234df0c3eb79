"""megatron-3d cost model: space, validity, feasibility, parts by hand, clusters and links."""


import numpy as np
import pytest

from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.plugins.hardware.accelerators import A100
from optmap.plugins.llm import memory, timing, userbuffers
from optmap.plugins.llm.cluster import dgx_a100, dgx_h100, group_link, plan_links
from optmap.plugins.llm.model import DECISIONS
from optmap.problem import build_problem
from optmap.system import GroupSpec


def problem(preset="gpt3-175b", gpus=64, batch=64, **cost):
    return build_problem({
        "workload": {"model": "transformer", "preset": preset, "batch": batch, "dtype": "fp16"},
        "system": {"topology": "dgx-a100", "groups": [{"accelerator": "a100", "count": gpus}]},
        "cost": {"model": "megatron-3d", **cost},
        "search": {"engine": "megatron-3d", "budget": {"evaluations": 10_000_000}}})


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
    # divisors of 96 layers (<= 64 GPUs), and with uneven first and last stages (Megatron-Core's
    # account-for split, uneven_stages = "balanced") the divisors of 96 + 2 = 98: 7, 14, 49; and the
    # powers of two (64), which the split refuses with its reason when pinned (issue 25: DeepSeek-V3's
    # published pipeline 8 and 16 divide neither 61 nor 63 layers)
    assert choices["pipeline_parallel"] == (1, 2, 3, 4, 6, 7, 8, 12, 14, 16, 24, 32, 48, 49, 64)
    even = problem(uneven_stages="never").cost_model.space.variables[1].choices
    assert even == (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)
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


def _table(report, name):
    return {row["part"]: row for row in report.tables[name]}


def test_memory_infeasible_with_reason_and_feasible_fits():
    # (issue 25: Korthikanti's figures are for the unfused attention of Megatron-LM 2022, which stores
    # the scores; the cost model's default became flash attention, which does not)
    m = problem(attention="unfused").cost_model
    none = {**KORTHIKANTI_175B, "recompute": "none", "sequence_parallel": False}
    report = m.evaluate(m.space.mapping(none))
    # Korthikanti Figure 1: 45.6 GiB of weights + 66.8 GiB of activations do not fit in 80 GiB
    assert not report.feasible and "GiB per GPU" in report.reason and report.metrics["memory_gib"] > 100
    ok = m.evaluate(m.space.mapping(KORTHIKANTI_175B))
    assert ok.feasible and ok.metrics["memory_gib"] <= 80 - 2
    # weights 2 + gradients 4 + optimizer state 12 bytes x (8 layers' params + embeddings) / 8 ranks of
    # the first stage (Megatron-LM docs/distrib_optimizer.md)
    cfg = m.config
    params = (12 * cfg.layer_params + (51200 + 2048) * 12288) / 8
    rows = _table(ok, "memory_per_gpu")
    assert rows["weights (16-bit)"]["GiB"] == pytest.approx(2 * params / 2**30)
    # fp16 (this problem's dtype): 16-bit main gradients, and the optimizer steps on their fp32 copy beside
    # the fp32 master weight and Adam's m and v: 2 + 2 + 12 + 4 = 20 bytes (distrib_optimizer.md's table).
    # The copy exists only at the step (distrib_optimizer.py: .float() at the step, freed by zero_grad
    # before the next forward), so the peak holds the larger of it and the activations
    assert rows["main gradients (fp32 or 16-bit: grad_reduce_in_fp32)"]["GiB"] == pytest.approx(2 * params / 2**30)
    assert rows["optimizer state (fp32 master, Adam m and v)"]["GiB"] == pytest.approx(12 * params / 2**30)
    copy = rows["fp32 copy of 16-bit gradients (optimizer step only, not beside activations)"]["GiB"]
    assert copy == pytest.approx(4 * params / 2**30) and copy < rows["activations"]["GiB"]
    parts = [r["GiB"] for name, r in rows.items()
             if name not in ("total", "available (capacity - reserve)") and not name.startswith("fp32 copy")]
    assert sum(parts) == pytest.approx(rows["total"]["GiB"]) == pytest.approx(ok.metrics["memory_gib"])
    sharded = m.evaluate(m.space.mapping({**KORTHIKANTI_175B, "optimizer_sharding": True}))
    # data parallel 1: the distributed optimizer has nothing to shard it over
    assert _table(sharded, "memory_per_gpu")["total"]["GiB"] == pytest.approx(rows["total"]["GiB"])


def test_batch_and_single_evaluation_agree():
    m = problem().cost_model
    rng = np.random.default_rng(0)
    X = m.space.sample(rng, 200)
    cols = m.evaluate_batch(X)
    for i in range(0, 200, 37):
        report = m.evaluate(m.space.decode(X[i]))
        assert report.metrics["time"] == pytest.approx(cols["time"][i])
        assert report.feasible == bool(cols["feasible"][i])


def _allreduce(nbytes, p=8, bw=300e9, lat=1e-6):
    return 2 * (p - 1) * lat + 2 * (p - 1) / p * nbytes / bw  # ring (Thakur et al. 2005)


def test_parts_add_up_and_tp_comm_by_hand():
    plan = {**KORTHIKANTI_175B, "sequence_parallel": False, "recompute": "full"}
    n = 2 * 2048 * 12288  # [b, s, h] fp16
    # 2021 Megatron-LM (synchronous collectives): per layer and micro-batch 2 All-Reduces forward, 2
    # backward, 2 in the recomputed forward, over 8 GPUs at 300 GB/s and 1 µs (NVLink, DGX A100)
    m = problem(tp_overlap=False).cost_model
    r = m.evaluate(m.space.mapping(plan))
    parts = _table(r, "time_breakdown")
    assert sum(row["seconds"] for row in parts.values()) == pytest.approx(r.metrics["time"])
    assert sum(row["percent"] for row in parts.values()) == pytest.approx(100)
    assert parts["tensor-parallel communication"]["seconds"] == pytest.approx(64 * 12 * 6 * _allreduce(n), rel=1e-9)
    # asynchronous (2022+): each backward All-Reduce (0.5 ms) runs beside a weight-gradient GEMM of the
    # column-parallel layer it follows (QKV: 2·2048·12288·4608 FLOPs, > 0.5 ms at any efficiency here)
    m = problem().cost_model
    r = m.evaluate(m.space.mapping(plan))
    assert _table(r, "time_breakdown")["tensor-parallel communication"]["seconds"] == pytest.approx(
        64 * 12 * 4 * _allreduce(n), rel=1e-9)


def test_sequence_parallel_comm_by_hand():
    # sequence parallelism: forward 2 all-gathers + 2 reduce-scatters of [b, s, h]; backward the 2
    # all-gathers of the row-parallel outputs' gradients stay exposed, the column-parallel layers'
    # reduce-scatters and LayerNorm re-gathers run beside their GEMMs (async, hidden here)
    n = 2 * 2048 * 12288
    ring = 7 * 1e-6 + 7 / 8 * n / 300e9  # ring all-gather = ring reduce-scatter (Thakur et al. 2005)
    m = problem(tp_comm_overlap=False).cost_model  # whole collectives (Megatron-LM 2022, no userbuffers)
    r = m.evaluate(m.space.mapping(KORTHIKANTI_175B))  # selective + sp: no recomputed forward comm
    assert _table(r, "time_breakdown")["tensor-parallel communication"]["seconds"] == pytest.approx(
        64 * 12 * 6 * ring, rel=1e-9)
    m = problem(tp_overlap=False, tp_comm_overlap=False).cost_model  # synchronous: + 2 RS + 2 re-gathers
    r = m.evaluate(m.space.mapping(KORTHIKANTI_175B))
    assert _table(r, "time_breakdown")["tensor-parallel communication"]["seconds"] == pytest.approx(
        64 * 12 * 10 * ring, rel=1e-9)


def test_userbuffers_chunks_by_hand():
    # a two-stage pipeline of n chunks, transfer c/n and GEMM g/n each: it ends after g/n + (n-1)·max(c, g)/n
    # + c/n (a reduce-scatter's last chunk) or g/n + (n-1)·max(c, g)/n (an all-gather's first chunk is local)
    assert float(userbuffers.chunked(8.0, 4.0, 4)) == pytest.approx(3 / 4 * 4.0)  # 1 + 3·2 - 4
    assert float(userbuffers.chunked(8.0, 4.0, 4, trailing=True)) == pytest.approx(3 + 2)  # 1 + 3·2 + 2 - 4
    assert float(userbuffers.chunked(2.0, 4.0, 8)) == 0.0 and float(userbuffers.chunked(2.0, 4.0, 8, True)) == 0.25
    # GPT-3 175B, TP 8 + sp (Korthikanti's plan): per layer forward, each all-gather hides behind its
    # GEMM's 8 chunks and each reduce-scatter leaves its last of 4 chunks (ring/4) plus the chunked
    # GEMMs' extra time, which the fitted roofline gives thin GEMMs (1/8 and 1/4 of 2,048 tokens)
    m = problem().cost_model
    ring = 7 * 1e-6 + 7 / 8 * 2 * 2048 * 12288 / 300e9
    dev, h, tok = m.device, 12288, 2048.0
    extra = 0.0
    for n, k in ((3 * h / 8, h), (h, h / 8), (4 * h / 8, h), (h, 4 * h / 8)):  # QKV, proj, MLP in, MLP out
        chunks = 4 if n == h else 8  # row-parallel forward: pipeline (4); column-parallel: ring exchange (8)
        extra += chunks * float(dev.gemm_time(tok / chunks, n, k)) - float(dev.gemm_time(tok, n, k))
    forward, _ = userbuffers.exposed(m.config, dev, tok, 8, ring, ring)
    assert float(forward) == pytest.approx(2 * ring / 4 + extra, rel=1e-9)
    assert extra > 0  # thinner GEMMs are slower per FLOP


def test_unfused_gradient_accumulation_by_hand():
    # without fusion each micro-batch adds the stage's 16-bit gradients into the main gradients:
    # read 2 + grad_bytes, write grad_bytes per local parameter, at the A100's 2,039 GB/s × memory efficiency
    m = problem(grad_accumulation_fusion=False).cost_model
    r = m.evaluate(m.space.mapping(KORTHIKANTI_175B))
    params = (12 * m.config.layer_params + (51200 + 2048) * 12288) / 8
    eff = m.device.eff
    per_micro_batch = eff.launch + (2 + 2 * 2) * params / (2039e9 * eff.memory)  # fp16: 2-byte main grads
    assert _table(r, "time_breakdown")["gradient accumulation"]["seconds"] == pytest.approx(64 * per_micro_batch)
    fused = problem().cost_model
    assert "gradient accumulation" not in _table(fused.evaluate(fused.space.mapping(KORTHIKANTI_175B)),
                                                 "time_breakdown")


def test_optimizer_bytes():
    # Megatron-LM's fp16 optimizer per parameter: unscale 8 + norm 4 + Adam 28 + weight copy 6 + zero grads,
    # and with 16-bit main gradients their copy to fp32 (6)
    assert memory.optimizer_bytes(2) == 8 + 4 + 28 + 6 + 2 + 6 == 54
    assert memory.optimizer_bytes(4) == 8 + 4 + 28 + 6 + 4 == 50


def test_data_parallel_groups_use_every_adapter_of_a_node():
    # 4 DGX nodes: a DP group with k members per node runs k rings, one per InfiniBand adapter (25 GB/s)
    system = dgx_a100([GroupSpec(A100, 32)])
    links = plan_links(system, np.array([1, 2, 4, 8, 1]), np.array([32, 16, 8, 4, 8]), np.array([1, 1, 1, 1, 4]))
    assert links["dp_bw"].tolist() == [8 * 25e9, 4 * 25e9, 2 * 25e9, 25e9, 300e9]  # the last inside a node
    assert links["tp_bw"].tolist() == [np.inf, 300e9, 300e9, 300e9, np.inf]
    assert links["pp_bw"].tolist() == [np.inf] * 4 + [25e9]  # stage hop 8 ranks apart: the next node
    assert links["pp_crosses_nodes"].tolist() == [False] * 4 + [True]


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


def test_shared_compute_model_on_a_measured_preset():
    from optmap.compute import compute_time

    shared = build_problem({
        "workload": {"model": "transformer", "preset": "gpt3-175b", "batch": 64, "dtype": "fp16"},
        "system": {"topology": "dgx-a100", "groups": [{"accelerator": "a100-sxm", "count": 64}]},
        "cost": {"model": "megatron-3d", "compute": "shared"},
        "search": {"engine": "megatron-3d", "budget": {"evaluations": 10_000_000}}}).cost_model
    acc = shared.system.devices[0]
    # the QKV shard of 175B at tensor 8: the shared model's gemm op, forward and backward passes
    shape = {"m": 2048, "n": 3 * 12288 / 8, "k": 12288, "count": 1.0}
    fwd, bwd = shared.device.gemm_times(2048, 3 * 12288 / 8, 12288)
    assert fwd == compute_time(acc, "gemm", shape, dtype="fp16", passes="forward")
    assert bwd == compute_time(acc, "gemm", shape, dtype="fp16", passes="backward") > fwd
    report = shared.evaluate(shared.space.mapping(KORTHIKANTI_175B))
    fitted = problem().cost_model.evaluate(problem().cost_model.space.mapping(KORTHIKANTI_175B))
    assert report.feasible and report.metrics["time"] != fitted.metrics["time"]
    # model FLOPs utilisation of a measured-efficiency model: between the papers' 40-60 % and peak
    assert 0.3 < report.metrics["model_tflops_per_gpu"] / 312 < 0.7
    with pytest.raises(OptmapError, match="lacks; use a measured preset"):
        problem(compute="shared")  # the datasheet 'a100' carries no calibration


def test_non_16_bit_training_is_refused():
    """The memory and message sizes (Korthikanti's formulas) assume 16-bit values; fp32 would be
    priced with 2-byte weights and activations, so it is refused rather than mispriced."""
    spec = {
        "workload": {"model": "transformer", "preset": "megatron-22b", "batch": 64, "dtype": "fp32"},
        "system": {"topology": "dgx-a100", "groups": [{"accelerator": "a100", "count": 64}]},
        "cost": {"model": "megatron-3d"},
    }
    with pytest.raises(OptmapError, match='not 16-bit: use "bf16" or "fp16"'):
        build_problem(spec)
    spec["workload"]["dtype"] = "bf16"
    assert build_problem(spec).cost_model.batch == 64


def _slowest_by_listing(groups: np.ndarray, gpn: int = 8, nvlink: float = 300e9, ib: float = 25e9) -> float:
    """Brute force: every group (a row of ranks) priced over its nodes, the slowest kept."""
    worst = np.inf
    for row in groups:
        nodes, counts = np.unique(row // gpn, return_counts=True)
        bw = nvlink if len(nodes) == 1 else min(nvlink, counts.min() * ib)
        worst = min(worst, bw if len(row) > 1 else np.inf)
    return worst


def test_every_group_is_priced_over_the_nodes_it_spans():
    # Megatron's rank order (tensor innermost, then data, then pipeline), every group listed and
    # priced by hand: a spanning group runs one ring per adapter of its emptiest node (25 GB/s each)
    system = dgx_a100([GroupSpec(A100, 96)])
    shapes = [(t, d, p) for t in (1, 2, 3, 4, 5, 6, 7, 8, 12, 16) for d in (1, 2, 3, 4, 5, 6, 8)
              for p in (1, 2, 3, 4) if t * d * p <= 96]
    t, d, p = (np.array(x) for x in zip(*shapes))
    links = plan_links(system, t, d, p)
    for i, (tt, dd, pp) in enumerate(shapes):
        ranks = np.arange(tt * dd * pp).reshape(pp, dd, tt)
        assert links["tp_bw"][i] == _slowest_by_listing(ranks.reshape(-1, tt)), (tt, dd, pp)
        assert links["dp_bw"][i] == _slowest_by_listing(ranks.transpose(0, 2, 1).reshape(-1, dd)), (tt, dd, pp)
        hops = np.stack([ranks[:-1].ravel(), ranks[1:].ravel()], axis=1)
        crosses = pp > 1 and bool(((hops[:, 0] // 8) != (hops[:, 1] // 8)).any())
        assert links["pp_crosses_nodes"][i] == crosses, (tt, dd, pp)
    # tensor 6: the second group (ranks 6-11) straddles nodes 0 and 1 with 2 ranks in node 0
    six = plan_links(system, 6, 2, 1)
    assert six["tp_bw"] == 2 * 25e9


def test_tensor_parallel_across_nodes_pays_for_infiniband():
    # 175B on 1,536 GPUs, pipeline 8: tensor 12 (groups of 8 + 4 ranks across two nodes, so 4
    # adapters: 100 GB/s) against tensor 8 (one node, NVLink 300 GB/s). Synchronous collectives
    # (2021): every TP All-Reduce costs 2(t-1)/t·n/B, and with all GPUs busy the layer count per
    # GPU scales the number of them by t (m = B/(d·b), d = 1536/(8t)): ratio by hand =
    # (12/8) · (2·11/12 / 100e9) / (2·7/8 / 300e9) = 4.714 (latencies add < 0.1 %)
    m = problem(gpus=1536, batch=2304, tp_overlap=False).cost_model
    base = {"pipeline_parallel": 8, "microbatch_size": 1, "interleaving": 1, "recompute": "full",
            "sequence_parallel": False, "optimizer_sharding": False, "dp_overlap": False}

    def tp_comm(model, t):
        rows = model.evaluate(model.space.mapping({**base, "tensor_parallel": t, "data_parallel": 192 // t}))
        return {r["part"]: r["seconds"] for r in rows.tables["time_breakdown"]}["tensor-parallel communication"]

    by_hand = (12 / 8) * (2 * 11 / 12 / 100e9) / (2 * 7 / 8 / 300e9)
    assert tp_comm(m, 12) / tp_comm(m, 8) == pytest.approx(by_hand, rel=2e-3)
    # today's asynchronous collectives hide tensor 8's backward All-Reduces behind the GEMMs, not
    # tensor 12's: at least 5x (issue 24)
    default = problem(gpus=1536, batch=2304).cost_model
    assert tp_comm(default, 12) >= 5.0 * tp_comm(default, 8)


def test_model_and_hardware_flops_by_hand():
    # 1T of Narayanan Table 1 (l 128, h 25,600, s 2,048, V 51,200, B 3,072) on 3,072 GPUs, full
    # recomputation. Hardware FLOPs are the paper's Eq. 3, 96·B·s·l·h²·(1 + s/6h + V/16lh) = 5.1391e19;
    # model FLOPs leave out the recomputed forward: 72·B·s·l·h²·(1 + s/6h + V/12lh) = 3.8555e19
    B, s, l, h, V = 3072, 2048, 128, 25600, 51200
    eq3 = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    mfu = 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))
    assert eq3 == pytest.approx(5.1391e19, rel=1e-4) and mfu == pytest.approx(3.8555e19, rel=1e-4)
    # (issue 25: unfused attention as in the paper; a causal flash kernel recomputes half the core)
    m = problem(preset="megatron-1t", gpus=3072, batch=B, tp_overlap=False, attention="unfused").cost_model
    plan = {"tensor_parallel": 8, "pipeline_parallel": 64, "data_parallel": 6, "microbatch_size": 1,
            "interleaving": 1, "recompute": "full", "sequence_parallel": False,
            "optimizer_sharding": False, "dp_overlap": False}
    r = m.evaluate(m.space.mapping(plan)).metrics
    assert r["hardware_tflops_per_gpu"] * 1e12 * r["time"] * 3072 == pytest.approx(eq3, rel=1e-9)
    assert r["model_tflops_per_gpu"] * 1e12 * r["time"] * 3072 == pytest.approx(mfu, rel=1e-9)
    # selective recomputation redoes the attention core only: 4·s²·h per sample and layer (QKᵀ, ·V)
    r = m.evaluate(m.space.mapping({**plan, "recompute": "selective"})).metrics
    assert r["hardware_tflops_per_gpu"] * 1e12 * r["time"] * 3072 == pytest.approx(mfu + B * l * 4 * s * s * h,
                                                                                   rel=1e-9)


def test_free_search_no_longer_prefers_tensor_groups_that_straddle_nodes():
    # issue 24: with every tensor-parallel group priced like the one at rank 0, the free search for
    # Narayanan's 145.6B on 1,536 GPUs (2021 software) chose tensor 6, whose second group (ranks
    # 6-11) straddles two DGX nodes; priced over the nodes it spans, tensor 6 is no longer chosen
    from optmap.plugins.llm import calibration
    from optmap.plugins.llm.published import runs

    run = [r for r in runs() if r.label == "145.6B / 1536"][0]
    model = calibration.model_for(run, host=load_host())
    case = calibration.Case(run, model, {v.name: np.array(v.choices, dtype=object) for v in model.space.variables})
    _, info = calibration.predict(case)
    assert info["plan"]["tensor_parallel"] in (1, 2, 4, 8)  # a divisor of the node: no group straddles
