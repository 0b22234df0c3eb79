"""Mixture-of-experts: the [workload.moe] table, published parameter counts, expert parallelism's
all-to-all and memory by hand, validity, the engine's enumeration and the launch flags."""

import dataclasses
import json

import numpy as np
import pytest

from optmap.cli import main
from optmap.errors import OptmapError
from optmap.plugins.llm import moe, timing
from optmap.plugins.llm.engine import plan_table
from optmap.plugins.llm.model import CATEGORIES, DECISIONS, Megatron3DCostModel
from optmap.plugins.transformer.presets import PRESETS
from optmap.plugins.transformer.workload import transformer
from optmap.problem import build_problem

from test_llm_engine import _allowed, _brute_force


def problem(preset="mixtral-8x7b", gpus=64, batch=256, moe_table=None, **cost):
    workload = {"model": "transformer", "preset": preset, "batch": batch, "dtype": "bf16"}
    if moe_table is not None:
        workload["moe"] = moe_table
    return build_problem({
        "workload": workload,
        "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": gpus}]},
        "cost": {"model": "megatron-3d", **cost},
        "search": {"engine": "megatron-3d", "budget": {"evaluations": 10_000_000}}})


def plan(**given):
    base = {"tensor_parallel": 1, "pipeline_parallel": 4, "data_parallel": 16, "microbatch_size": 1,
            "interleaving": 1, "recompute": "none", "sequence_parallel": False, "optimizer_sharding": False,
            "dp_overlap": False, "context_parallel": 1, "expert_parallel": 8, "fsdp": False, "offload": "none",
            "grad_reduce_in_fp32": True, "expert_tensor_parallel": 1}
    return {**base, **given}


def columns(model, mapping_values):
    values = {k: np.array([CATEGORIES[k].index(mapping_values[k]) if k in CATEGORIES else mapping_values[k]])
              for k in DECISIONS}
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in model.score(model.plan_arrays(values)).items()}


def megatron_args(tmp_path, capsys, preset, gpus, batch, cost="", fixes=()):
    """What ``optmap export RESULT --to megatron`` prints for ``preset`` on ``gpus`` H100s, the
    planner's best plan with ``fixes`` pinned and ``cost`` (TOML lines) in its [cost] table."""
    path, out = tmp_path / "p.toml", tmp_path / "r.json"
    path.write_text(f'[workload]\nmodel = "transformer"\npreset = "{preset}"\nbatch = {batch}\ndtype = "bf16"\n'
                    f'[system]\ntopology = "dgx-h100"\n[[system.groups]]\naccelerator = "h100-sxm"\n'
                    f'count = {gpus}\n[cost]\nmodel = "megatron-3d"\n{cost}')
    assert main(["run", str(path), *[a for f in fixes for a in ("--fix", f)], "--json", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", str(out), "--to", "megatron"]) == 0
    return capsys.readouterr().out


# --- workload ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, total, active, rel", [
    ("mixtral-8x7b", 46.7e9, 12.9e9, 2e-3),  # Mistral AI, "Mixtral of experts" (Jiang et al. 2024): 46.7B / 12.9B
    ("mixtral-8x22b", 141e9, 39e9, 5e-3),  # Mistral AI's Mixtral 8x22B announcement: 141B / 39B active
    ("qwen3-30b-a3b", 30.5e9, 3.3e9, 2e-2),  # Qwen/Qwen3-30B-A3B model card: 30.5B / 3.3B activated
    ("qwen3-235b-a22b", 235e9, 22e9, 1e-2),  # Qwen/Qwen3-235B-A22B model card: 235B / 22B activated
    ("nemotron-4-340b", 340e9, 340e9, 5e-3),  # NVIDIA Nemotron-4 340B technical report: 340B (dense)
    ("gpt3-5b", 5e9, 5e9, 2e-2),  # NeMo's GPT-3 5B recipe
    ("gpt3-20b", 20e9, 20e9, 2e-2),  # NeMo's GPT-3 20B recipe
    ("deepseek-v3", 671e9, 37e9, 2e-2),  # DeepSeek-V3 Technical Report, abstract: 671B / 37B activated
])
def test_parameter_counts_match_the_published_totals(name, total, active, rel):
    cfg = PRESETS[name]
    assert cfg.params == pytest.approx(total, rel=rel)
    assert cfg.active_params == pytest.approx(active, rel=rel)


def test_mixtral_counts_by_hand():
    # Mixtral 8x7B per layer: attention 4096·(4096 + 2·1024) + 4096·4096 = 41,943,040; router 4096·8;
    # 8 experts of 3·4096·14336 = 176,160,768 each; two RMSNorms 2·4096. Embedding and head 2·32000·4096,
    # final norm 4096. Active: 2 of the 8 experts.
    layer = 41_943_040 + 32_768 + 8 * 176_160_768 + 8_192
    total = 32 * layer + 2 * 32_000 * 4096 + 4096
    assert PRESETS["mixtral-8x7b"].params == total == 46_702_792_704
    assert PRESETS["mixtral-8x7b"].active_params == total - 32 * 6 * 176_160_768


def test_moe_flops_are_the_router_and_top_k_experts():
    # top-k experts of width f cost the FLOPs of one gated MLP of width k·f (the same GEMMs stacked),
    # plus the router's 2·s·d·experts per layer; shared experts add a dense MLP of their summed width
    cfg = PRESETS["mixtral-8x7b"]
    dense_equivalent = cfg.with_(moe=None, d_ff=2 * 14336)
    assert cfg.flops_fwd() == pytest.approx(dense_equivalent.flops_fwd() + 32 * 2.0 * 4096 * 4096 * 8, rel=1e-12)
    shared = transformer(batch=1, preset="mixtral-8x7b", moe={"shared_experts": 2, "shared_d_ff": 1000}).config
    assert shared.flops_fwd() - cfg.flops_fwd() == pytest.approx(32 * 2.0 * 4096 * 4096 * 3 * 2000, rel=1e-12)


def test_dense_layers_keep_the_dense_mlp():
    # two leading dense layers of d_ff 14,336: each holds one gated MLP instead of 8 experts and a router
    cfg = transformer(batch=1, preset="mixtral-8x7b", moe={"dense_layers": 2}).config
    assert cfg.moe_layers == 30
    assert PRESETS["mixtral-8x7b"].params - cfg.params == 2 * (7 * 176_160_768 + 32_768)


def test_moe_table_from_scratch_and_errors():
    w = transformer(batch=1, kind="decoder-only", layers=4, d_model=64, heads=4, d_ff=128, seq_len=32, vocab=100,
                    gated_mlp=True, moe={"experts": 4, "top_k": 2, "d_ff": 32})
    assert w.config.moe.experts == 4 and w.config.moe_layers == 4
    for table, words in (({"experts": 4, "top_k": 2, "d_ff": 32, "expert": 1}, "unknown key 'expert'"),
                         ({"experts": 4, "d_ff": 32}, "give top_k"),
                         ({"experts": 4, "top_k": 8, "d_ff": 32}, "top_k = 8 exceeds experts = 4"),
                         ({"experts": 4, "top_k": 2, "d_ff": 32, "shared_experts": 1}, "must both be 0"),
                         ({"experts": 4, "top_k": 2, "d_ff": -1}, "non-negative integer")):
        with pytest.raises(OptmapError, match=words):
            transformer(batch=1, kind="decoder-only", layers=4, d_model=64, heads=4, d_ff=128, seq_len=32, vocab=100,
                        moe=table)


def test_bad_moe_table_in_a_problem_file_exits_2(tmp_path, capsys):
    path = tmp_path / "p.toml"
    path.write_text('[workload]\nmodel = "transformer"\npreset = "mixtral-8x7b"\nbatch = 8\ndtype = "bf16"\n'
                    '[workload.moe]\nexperts = 8\ntop_k = 9\n[system]\ntopology = "dgx-h100"\n[[system.groups]]\n'
                    'accelerator = "h100-sxm"\ncount = 8\n[cost]\nmodel = "megatron-3d"\n')
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "top_k = 9 exceeds experts = 8" in err and len(err.splitlines()) == 1


# --- expert parallelism ------------------------------------------------------------------------
def test_expert_parallel_choices_and_validity():
    m = problem().cost_model
    assert {v.name: v.choices for v in m.space.variables}["expert_parallel"] == (1, 2, 4, 8)
    dense = build_problem({"workload": {"model": "transformer", "preset": "gpt3-5b", "batch": 8, "dtype": "bf16"},
                           "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": 8}]},
                           "cost": {"model": "megatron-3d"}}).cost_model
    assert {v.name: v.choices for v in dense.space.variables}["expert_parallel"] == (1,)
    # ep·etp must divide t·d (Megatron-Core folds expert ranks into each stage's t·d GPUs)
    report = m.evaluate(m.space.mapping(plan(tensor_parallel=1, pipeline_parallel=16, data_parallel=4)))
    assert not report.feasible and "must divide tensor × data × context = 4" in report.reason
    # tensor parallelism without sequence parallelism: Megatron-Core's moe_layer.py refuses it
    report = m.evaluate(m.space.mapping(plan(tensor_parallel=2, data_parallel=8)))
    assert not report.feasible and "needs sequence_parallel" in report.reason
    with pytest.raises(OptmapError, match="must divide the experts' d_ff"):
        problem(expert_tensor_parallel=3)


def test_all_to_all_seconds_by_hand():
    # Qwen3-235B-A22B on 2,048 H100s, t = 1, b = 1, s = 4,096, top-8, h = 4,096: each GPU sends
    # n = 2 B · 4096 · 8 · 4096 = 268,435,456 B per all-to-all. ep = 16 with etp = 1 puts an EP group
    # on 16 consecutive ranks: two DGX nodes of 8, so 7/16 of n crosses NVLink (450 GB/s) and 8/16 the
    # GPU's 400 Gb/s adapter (50 GB/s) at once: max(7/16·n/450e9, 8/16·n/50e9) = 2.68435 ms, plus
    # 15 steps of the 2 µs InfiniBand latency = 2.71435 ms. A layer sends 2 per direction, forward and
    # backward: 4 × 2.71435 = 10.8574 ms per layer and micro-batch.
    m = problem("qwen3-235b-a22b", gpus=2048, batch=2048, moe_dispatcher="alltoall").cost_model
    p = plan(pipeline_parallel=2, data_parallel=1024, expert_parallel=16)
    n = 2.0 * 4096 * 8 * 4096
    a2a = max(7 / 16 * n / 450e9, 8 / 16 * n / 50e9) + 15 * 2e-6
    assert a2a == pytest.approx(2.71435e-3, rel=1e-5)
    cols = columns(m, p)
    # 94 layers on 2 stages (47 each), 2 micro-batches per pipeline (2048 / 1024 / 1)
    assert cols["ep_comm_s"] == pytest.approx(2 * 47 * 4 * a2a, rel=1e-9)
    # ep = 8 stays in one node: 7/8·n over NVLink, 7 steps of 1 µs
    inside = 7 / 8 * n / 450e9 + 7 * 1e-6
    assert columns(m, {**p, "expert_parallel": 8})["ep_comm_s"] == pytest.approx(2 * 47 * 4 * inside, rel=1e-9)


def test_all_to_all_matches_the_pairwise_formula_inside_a_node():
    # one level (every member in the node): Thakur et al.'s pairwise exchange, (p-1)α + (p-1)/p·n/B
    n, ep, bw, lat = 1e8, 8, 450e9, 1e-6
    assert float(moe.all_to_all(n, ep, ep, bw, 50e9, lat)) == pytest.approx(7 * lat + 7 / 8 * n / bw)
    assert float(moe.all_to_all(n, 1, 1, bw, 50e9, lat)) == 0.0


def test_expert_memory_per_gpu_by_hand():
    # Mixtral 8x7B, t = 1, p = 4 (8 layers a stage), d = 16, ep = 8: each GPU holds 8/8 = 1 expert of
    # each of its 8 layers, 8 · 176,160,768 = 1,409,286,144 expert weights; the first stage's other
    # weights are 8 layers · (41,943,040 + 32,768 + 8,192) + the 32,000 · 4,096 embedding =
    # 466,944,000. 16-bit weights: 2 B each; fp32 gradients 4 B; Adam 12 B, expert state sharded
    # over the expert-data-parallel group t·d/ep = 2 with the distributed optimizer.
    m = problem().cost_model
    experts, other = 8 * 176_160_768, 8 * (41_943_040 + 32_768 + 8_192) + 32_000 * 4096
    assert other == 466_944_000
    cols = columns(m, plan())
    assert cols["memory_weights"] == pytest.approx(2.0 * (experts + other), rel=1e-12)
    assert cols["memory_gradients"] == pytest.approx(4.0 * (experts + other), rel=1e-12)
    sharded = columns(m, plan(optimizer_sharding=True))
    assert sharded["memory_optimizer"] == pytest.approx(12.0 * (experts / 2 + other / 16), rel=1e-12)
    # ep = 1: every GPU holds all 8 experts of its layers
    assert columns(m, plan(expert_parallel=1))["memory_weights"] == pytest.approx(2.0 * (8 * experts + other))


def test_moe_recomputation_drops_the_routed_activations_and_reruns_the_experts():
    """``recompute = "moe"`` (Megatron-Core ``--recompute-modules moe``): each MoE layer keeps only its
    input and runs again in the backward, its router, experts and both all-to-alls."""
    m = problem().cost_model
    none, again = columns(m, plan()), columns(m, plan(recompute="moe"))
    # Mixtral, t = 1, b = 1, s = 4,096: a layer's routed part is the router's fp32 probabilities over
    # 8 experts (4 B · 4,096 · 8) and per copy (2 per token) its permuted input (2 B · 4,096), the MLP-in
    # output (gate and up, 2 B · 2 · 14,336) and the MLP-out input (2 B · 14,336): 4,096 · 2 · 94,208
    routed = 4 * 4096 * 8 + 4096 * 2 * (2 * 4096 + 2 * 2 * 14336 + 2 * 14336)
    in_flight = 4 * 8  # the first stage's 8 layers for its 4 micro-batches in flight (1F1B, p = 4)
    assert none["memory_activations"] - again["memory_activations"] == pytest.approx((in_flight - 1) * routed)
    # time: the experts' forward again (recompute_s), the two forward all-to-alls again (1.5 × the
    # exchange), the attention untouched
    assert again["recompute_s"] > 0 and none["recompute_s"] == 0
    assert again["ep_comm_s"] == pytest.approx(1.5 * none["ep_comm_s"], rel=1e-9)
    assert again["forward_s"] == none["forward_s"] and again["backward_s"] == none["backward_s"]
    # with the all-to-all overlap the recomputation's two all-to-alls stay exposed: half the exchange more
    # (a plan Megatron-Core refuses, test_overlap_plans_follow_megatron_cores_rules, priced all the same)
    on = problem(moe_a2a_overlap=True).cost_model
    assert columns(on, plan(recompute="moe"))["ep_comm_s"] - columns(on, plan())["ep_comm_s"] == pytest.approx(
        0.5 * none["ep_comm_s"], rel=1e-9)
    # hardware FLOPs: the experts' forward once more, 2 · (2 · 176,160,768 + 32,768) per token and layer
    extra = 256 * 4096 * 32 * 2 * (2 * 176_160_768 + 32_768)
    hw = (again["hardware_tflops_per_gpu"] * again["time"] - none["hardware_tflops_per_gpu"] * none["time"]) * 1e12 * 64
    assert hw == pytest.approx(extra, rel=1e-9)
    # a dense model has no MoE layer to recompute: not a choice
    assert "moe" in next(v for v in m.space.variables if v.name == "recompute").choices
    dense = problem("llama3-8b", gpus=8, batch=8).cost_model
    assert "moe" not in next(v for v in dense.space.variables if v.name == "recompute").choices


def test_imbalance_slows_the_busiest_rank():
    # the all-to-all's bandwidth term grows 1.5x, its latency does not: 16 micro-batches (256/16) × 8
    # layers × 4 all-to-alls × 7 steps of 1 µs (ep = 8 inside a node) = 3.584 ms of latency
    m, heavy = problem().cost_model, problem(moe_load_imbalance=1.5).cost_model
    balanced, busy = columns(m, plan()), columns(heavy, plan())
    latency = 16 * 8 * 4 * 7e-6
    assert busy["ep_comm_s"] - latency == pytest.approx(1.5 * (balanced["ep_comm_s"] - latency), rel=1e-9)
    assert busy["forward_s"] > balanced["forward_s"] and busy["memory_activations"] > balanced["memory_activations"]
    with pytest.raises(OptmapError, match="moe_load_imbalance.*greater than or equal to 1"):
        problem(moe_load_imbalance=0.5)


def test_each_local_expert_is_its_own_gemm():
    # Transformer Engine's GroupedLinear loops cuBLAS over the local experts, so every expert GEMM has its
    # launch: Mixtral's 8 experts on one rank (ep 1), bf16. Kernel launches, forward: the router GEMM, 8 × 2
    # expert GEMMs, softmax/top-k (2), permute/un-permute (2), sort/un-sort by local expert (2: the
    # alltoall dispatcher's permutation 2), the activation (1) = 24; backward: the router's 2, 8 × 2 × 2
    # expert input and weight gradients, twice the 7 element-wise = 48
    from optmap.plugins.llm.compute import H100_FIT, Device
    cfg = PRESETS["mixtral-8x7b"]
    timed = Device(989.4e12, 3350e9, H100_FIT)
    free = Device(989.4e12, 3350e9, dataclasses.replace(H100_FIT, launch=0.0))
    a, b = (moe.mlp_times(cfg, d, d, 1.0, 1.0, False, 1.0, 1.0, 1.0) for d in (timed, free))
    assert float(a.forward - b.forward) == pytest.approx(24 * H100_FIT.launch)
    assert float(a.backward - b.backward) == pytest.approx(48 * H100_FIT.launch)
    # the flex dispatchers' kernels deliver the copies grouped by expert: no sort
    flex = moe.mlp_times(cfg, timed, timed, 1.0, 1.0, False, 1.0, 1.0, 1.0, "deepep")
    flex_free = moe.mlp_times(cfg, free, free, 1.0, 1.0, False, 1.0, 1.0, 1.0, "deepep")
    assert float(flex.forward - flex_free.forward) == pytest.approx(22 * H100_FIT.launch)


def test_model_flops_count_active_parameters():
    # MFU's numerator is 3 × the forward FLOPs, which follow the active weights. Mixtral per token and
    # layer, forward: 2 × (41,943,040 attention weights + 32,768 router weights + 2 experts of
    # 176,160,768) + the attention core 2·2·s·heads·head_dim = 4·4096·4096; the head 2·4096·32000.
    m = problem().cost_model
    cols = columns(m, plan())
    flops = cols["model_tflops_per_gpu"] * 1e12 * cols["time"] * 64
    per_token = 32 * (2 * (41_943_040 + 32_768 + 2 * 176_160_768) + 4 * 4096 * 4096) + 2 * 4096 * 32000
    assert flops == pytest.approx(3 * 256 * 4096 * per_token, rel=1e-9)


def test_engine_enumeration_equals_filtered_grid_with_experts():
    m = problem("qwen3-30b-a3b", gpus=16, batch=16, max_microbatch=2, max_interleaving=2).cost_model
    values, cols = plan_table(m, _allowed(m.space))
    brute = _brute_force(m)
    assert len(values["tensor_parallel"]) == len(brute) > 0
    assert set(np.unique(values["expert_parallel"])) == {1.0, 2.0, 4.0, 8.0, 16.0}
    by_plan = {tuple(float(values[k][i]) for k in DECISIONS): cols["time"][i] for i in range(len(brute))}
    times = m.evaluate_batch(brute)["time"]
    want = m.values(brute)
    for i in range(len(brute)):
        key = tuple(float(want[k][i]) for k in DECISIONS)
        assert by_plan[key] == pytest.approx(times[i])


def test_export_moe_flags_and_deepspeed_notes(tmp_path, capsys):
    out = tmp_path / "r.json"
    fixes = [a for k, v in plan(optimizer_sharding="true", recompute="full").items() for a in ("--fix", f"{k}={v}")]
    path = tmp_path / "m.toml"
    path.write_text('[workload]\nmodel = "transformer"\npreset = "mixtral-8x7b"\nbatch = 256\ndtype = "bf16"\n'
                    '[workload.moe]\ndense_layers = 1\nshared_experts = 2\nshared_d_ff = 1024\n'
                    '[system]\ntopology = "dgx-h100"\n[[system.groups]]\naccelerator = "h100-sxm"\ncount = 64\n'
                    '[cost]\nmodel = "megatron-3d"\n')
    assert main(["run", str(path), *fixes, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["mapping"]["expert_parallel"] == 8
    capsys.readouterr()
    assert main(["export", str(out), "--to", "megatron"]) == 0
    flags = [line.rstrip(" \\") for line in capsys.readouterr().out.splitlines()]
    # Megatron-Core's MoE flags (megatron/training/arguments.py; its MoE README): the shared experts'
    # summed width 2 × 1024, one leading dense layer then 31 MoE layers
    for want in ("--expert-model-parallel-size 8", "--num-experts 8", "--moe-router-topk 2",
                 "--moe-ffn-hidden-size 14336", "--expert-tensor-parallel-size 1",
                 "--moe-shared-expert-intermediate-size 2048", "--moe-layer-freq '([0]*1+[1]*31)'",
                 "--moe-token-dispatcher-type flex", "--moe-flex-dispatcher-backend deepep",
                 "--moe-grouped-gemm"):  # the default dispatcher on DGX H100: DeepEP
        assert want in flags, want
    assert "--overlap-moe-expert-parallel-comm" not in flags  # not priced, not written
    # Megatron-Core refuses the overlap with full recomputation or an uninterleaved pipeline
    # (transformer_config.py): the plan above is refused in one line, an interleaved one without
    # recomputation is exported with both flags
    assert main(["run", str(path), *fixes, "--set", "cost.moe_a2a_overlap=true", "--json", str(out)]) == 2
    assert "no full or moe recomputation (Megatron-Core)" in capsys.readouterr().err
    overlap_fixes = [a for k, v in plan(optimizer_sharding="true", interleaving=2).items()
                     for a in ("--fix", f"{k}={v}")]
    assert main(["run", str(path), *overlap_fixes, "--set", "cost.moe_a2a_overlap=true", "--json", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", str(out), "--to", "megatron"]) == 0
    overlap = [line.rstrip(" \\") for line in capsys.readouterr().out.splitlines()]
    assert "--overlap-moe-expert-parallel-comm" in overlap and "--delay-wgrad-compute" in overlap
    moe_fixes = [a for k, v in plan(recompute="moe").items() for a in ("--fix", f"{k}={v}")]
    assert main(["run", str(path), *moe_fixes, "--json", str(tmp_path / "rm.json")]) == 0
    capsys.readouterr()
    assert main(["export", str(tmp_path / "rm.json"), "--to", "megatron"]) == 0
    recompute = [line.rstrip(" \\") for line in capsys.readouterr().out.splitlines()]
    assert "--recompute-granularity selective" in recompute and "--recompute-modules moe" in recompute
    assert main(["export", str(out), "--to", "deepspeed", "--out", str(tmp_path / "ds.json")]) == 0
    err = capsys.readouterr().err
    assert "deepspeed.moe.layer.MoE(hidden_size=4096, num_experts=8, ep_size=8, k=2)" in err
    assert "shared_experts = 2" in err


@pytest.mark.parametrize("etp", [1, 2, 4])
def test_expert_groups_placed_as_megatron_core_ranks_them(etp):
    # brute force over Megatron-Core's expert rank layout (parallel_state: order tp-cp-ep-dp-pp with
    # tp = etp): ranks [stage, expert-data replica, expert shard, etp shard] fill 8-GPU nodes in order;
    # an EP group's all-to-all is limited by its node with the fewest members (ep when inside a node)
    from optmap.plugins.hardware.accelerators import A100
    from optmap.plugins.llm.cluster import dgx_h100, expert_links
    from optmap.system import GroupSpec

    system = dgx_h100([GroupSpec(A100, 128)])  # the links are the topology's; the GPU kind does not matter
    for t, d, p, ep in ((1, 16, 2, 8), (1, 32, 2, 16), (2, 16, 2, 16), (4, 4, 4, 4), (1, 8, 4, 2), (8, 4, 2, 32)):
        if (t * d) % (ep * etp):
            continue
        edp = t * d // (ep * etp)
        ranks = np.arange(t * d * p).reshape(p, edp, ep, etp)
        groups = ranks.transpose(0, 1, 3, 2).reshape(-1, ep)
        spanning = [np.unique(g // 8, return_counts=True)[1].min() for g in groups if len(np.unique(g // 8)) > 1]
        want = min(spanning) if spanning else ep
        links = expert_links(system, t, d, p, ep, etp)
        assert float(links["ep_members"]) == want, (t, d, p, ep)
        assert float(links["ep_inter_bw"]) == (50e9 if spanning else np.inf)
        data = ranks.transpose(0, 2, 3, 1).reshape(-1, edp)  # expert-data-parallel groups
        counts = [np.unique(g // 8, return_counts=True)[1].min() for g in data if len(np.unique(g // 8)) > 1]
        want_bw = np.inf if edp == 1 else (min(450e9, min(counts) * 50e9) if counts else 450e9)
        assert float(links["edp_bw"]) == want_bw, (t, d, p, ep)


def test_parts_add_up_and_an_all_dense_moe_table_prices_as_the_dense_model():
    m = problem().cost_model
    cols = columns(m, plan(recompute="selective", dp_overlap=True))
    assert sum(cols[k] for k in timing.PARTS) == pytest.approx(cols["time"], rel=1e-12)
    # every layer dense (dense_layers = layers): no expert, router or all-to-all is left, so the plan
    # costs what the same model without a [workload.moe] table costs
    all_dense = problem(moe_table={"dense_layers": 32}).cost_model
    workload = transformer(batch=256, preset="mixtral-8x7b", dtype="bf16")
    plain = Megatron3DCostModel(dataclasses.replace(workload, config=workload.config.with_(moe=None)),
                                all_dense.system)
    one = plan(expert_parallel=1, recompute="selective")
    got, want = columns(all_dense, one), columns(plain, one)
    for key in ("time", "memory", *timing.PARTS):
        assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15), key
