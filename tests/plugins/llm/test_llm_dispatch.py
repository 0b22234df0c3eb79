"""The token dispatcher (cost option ``moe_dispatcher``): DeepEP / HybridEP send a token across the
network once per node that holds one of its experts (Megatron-Core MoE guide: the flex dispatcher
"removes redundant tokens during cross-node communication"), checked by hand and by counting."""

import dataclasses
import itertools
from math import comb

import pytest

from optmap.errors import OptmapError
from optmap.plugins.llm import heldout, heldout_runs, moe
from optmap.plugins.transformer.presets import PRESETS

from test_llm_moe import columns, megatron_args, plan, problem

QWEN3_30B = PRESETS["qwen3-30b-a3b"]  # 128 experts, top-8


@pytest.mark.parametrize("ep, members, other_nodes", [(16, 8, 1), (32, 8, 3), (64, 8, 7)])
def test_remote_nodes_is_the_hypergeometric_expectation(ep, members, other_nodes):
    # each other node of the group holds 128 · 8 / ep experts; a token's 8 distinct experts miss it
    # with probability C(128 - held, 8) / C(128, 8)
    held = 128 * members // ep
    want = other_nodes * (1 - comb(128 - held, 8) / comb(128, 8))
    assert float(moe.remote_nodes(QWEN3_30B, ep, members)) == pytest.approx(want, rel=1e-12)


def test_remote_nodes_by_enumeration_on_a_small_model():
    # 8 experts, top-2, EP 4 over 2 nodes of 2 GPUs (4 experts per node): of the C(8, 2) = 28 expert
    # pairs, those with at least one expert on the other node (experts 4..7 seen from node 0)
    cfg = PRESETS["mixtral-8x7b"]  # 8 experts, top-2
    hits = sum(any(e >= 4 for e in pair) for pair in itertools.combinations(range(8), 2))
    assert float(moe.remote_nodes(cfg, 4, 2)) == pytest.approx(hits / 28)  # 22 / 28
    assert float(moe.remote_nodes(cfg, 4, 4)) == 0.0  # the whole group in one node


def _remote_by_enumeration(experts, top_k, groups, group_top_k, ep, members):
    """Mean number of other nodes a token on node 0 reaches, over every choice of ``group_top_k``
    groups and of ``top_k`` experts among theirs (each equally likely: balanced routing)."""
    width, per_node = experts // groups, experts * members // ep
    total = count = 0
    for chosen in itertools.combinations(range(groups), group_top_k):
        pool = [e for grp in chosen for e in range(grp * width, (grp + 1) * width)]
        for picked in itertools.combinations(pool, top_k):
            total += len({e // per_node for e in picked} - {0})
            count += 1
    return total / count


@pytest.mark.parametrize("experts, top_k, groups, group_top_k, ep, members", [
    (16, 3, 8, 2, 8, 2),  # a node holds two whole groups
    (16, 3, 2, 1, 8, 2),  # a group spans two nodes
    (16, 4, 4, 2, 16, 4),  # a node holds exactly one group (node-limited routing)
    (16, 3, 1, 1, 8, 2),  # one group: plain top-k
])
def test_group_limited_remote_nodes_by_enumeration(experts, top_k, groups, group_top_k, ep, members):
    from optmap.workload.moe import MoEConfig
    cfg = dataclasses.replace(QWEN3_30B, moe=MoEConfig(experts, top_k, 64, groups=groups, group_top_k=group_top_k))
    want = _remote_by_enumeration(experts, top_k, groups, group_top_k, ep, members)
    assert float(moe.remote_nodes(cfg, ep, members)) == pytest.approx(want, rel=1e-12)


def test_deepseek_v3_node_limited_routing_by_hand():
    # DeepSeek-V3: 256 experts, top-8 from 4 of 8 groups (§2.1.2, "at most M = 4 nodes"). EP 64 over
    # 8 DGX nodes puts one group (32 experts) on each node: another node is reached only when its
    # group is chosen (C(7,3)/C(8,4) = 1/2), and then misses the 8 experts drawn from the 4 groups'
    # 128 with C(96, 8)/C(128, 8)
    deepseek = PRESETS["deepseek-v3"]
    want = 7 * 0.5 * (1 - comb(96, 8) / comb(128, 8))
    got = float(moe.remote_nodes(deepseek, 64, 8))
    assert got == pytest.approx(want, rel=1e-12) and got < 4  # at most 4 nodes, the token's own among them
    plain = dataclasses.replace(deepseek, moe=dataclasses.replace(deepseek.moe, groups=1, group_top_k=1))
    assert float(moe.remote_nodes(plain, 64, 8)) == pytest.approx(7 * (1 - comb(224, 8) / comb(256, 8)), rel=1e-12)
    assert got < float(moe.remote_nodes(plain, 64, 8))  # 3.2 nodes where unlimited routing reaches 4.6


def test_group_limited_routing_in_a_problem_file_and_its_flags(tmp_path, capsys):
    from optmap.plugins.transformer.workload import transformer
    base = dict(batch=1, kind="decoder-only", layers=4, d_model=64, heads=4, d_ff=128, seq_len=32, vocab=100)
    w = transformer(**base, moe={"experts": 16, "top_k": 4, "d_ff": 32, "groups": 4, "group_top_k": 2})
    assert (w.config.moe.groups, w.config.moe.group_top_k) == (4, 2)
    for table, words in (({"groups": 3}, "groups = 3 must divide experts = 16"),
                         ({"groups": 4, "group_top_k": 5}, "group_top_k = 5 must be 1 to min"),
                         ({"groups": 8, "group_top_k": 1}, "holding the top_k = 4 experts")):  # 2 experts < 4
        with pytest.raises(OptmapError, match=words):
            transformer(**base, moe={"experts": 16, "top_k": 4, "d_ff": 32, **table})
    text = megatron_args(tmp_path, capsys, "deepseek-v3", 256, 1024, 'moe_dispatcher = "deepep"\nuneven_stages = "any"\n',
                         ["expert_parallel=64"])
    assert "--moe-router-num-groups 8" in text and "--moe-router-group-topk 4" in text


def test_deduplicated_all_to_all_by_hand():
    # Qwen3-30B-A3B, one GPU's 4,096 tokens of 2,048 × 2 B = 16,777,216 B, top-8: 134,217,728 B of
    # copies; EP 16 over two DGX H100 nodes: the other node is needed by 1 - C(64,8)/C(128,8) of the
    # tokens, each sent once through the 400 Gb/s adapter (50 GB/s); NVLink (450 GB/s) carries the
    # 7/8 of the copies the node keeps or forwards; 15 steps of 2 µs
    tokens, copies = 16_777_216.0, 134_217_728.0
    nodes = 1 - comb(64, 8) / comb(128, 8)
    outside, inside = tokens * nodes / 50e9, 7 / 8 * copies / 450e9
    want = 15 * 2e-6 + max(outside, inside)
    got = moe.deduplicated_all_to_all(tokens, copies, 16, 8, 450e9, 50e9, 2e-6, nodes)
    assert float(got) == pytest.approx(want, rel=1e-12)
    # the all-to-all dispatcher sends the 8/16 of the copies bound for the other node through the adapter
    plain = moe.all_to_all(copies, 16, 8, 450e9, 50e9, 2e-6)
    assert float(plain) == pytest.approx(15 * 2e-6 + 8 / 16 * copies / 50e9, rel=1e-12)
    steps = 15 * 2e-6  # four copies of each token crossed the adapter; now about one
    assert (float(plain) - steps) / (float(got) - steps) == pytest.approx(4 / nodes, rel=1e-12)


def test_inside_a_node_every_dispatcher_prices_the_same_exchange():
    base, flex = (problem("qwen3-30b-a3b", gpus=16, batch=64, moe_dispatcher=d).cost_model
                  for d in ("alltoall", "hybridep"))
    inside = plan(pipeline_parallel=2, data_parallel=8, expert_parallel=8)  # EP 8: one DGX node
    a, b = columns(base, inside), columns(flex, inside)
    assert b["ep_comm_s"] == pytest.approx(a["ep_comm_s"], rel=1e-12)
    # without the alltoall dispatcher's sort and un-sort by local expert (16 experts per rank): each
    # a read and write of the 4,096 · 8 copies of 2,048 × 2 B, twice over in the backward, per MoE layer
    # and micro-batch (8 micro-batches of 64 sequences over 8 replicas; 24 layers per stage) at the fitted memory rate
    from optmap.plugins.llm.compute import H100_FIT
    sort = 2 * (2 * 2 * 4096 * 8 * 2048) / (3350e9 * H100_FIT.memory) + 2 * H100_FIT.launch
    assert a["forward_s"] - b["forward_s"] == pytest.approx(8 * 24 * sort, rel=1e-9)
    across = plan(pipeline_parallel=1, data_parallel=16, expert_parallel=16)  # EP 16: two nodes
    a, b = columns(base, across), columns(flex, across)
    assert b["ep_comm_s"] < a["ep_comm_s"] / 2 and b["time"] < a["time"]


def test_the_default_dispatcher_is_the_flex_one_for_the_system():
    # Megatron-Core's MoE guide lists the flex dispatcher among its general performance flags; its
    # dispatcher table names DeepEP for cross-node EP and HybridEP for multi-node NVLink (GB200 NVL72)
    assert problem("qwen3-30b-a3b", gpus=16, batch=64).cost_model.options.moe_dispatcher == "deepep"
    assert moe.dispatcher_for("auto", "gb200-nvl72") == "hybridep"
    assert moe.dispatcher_for("auto", "dgx-b200") == "deepep"
    named = problem("qwen3-30b-a3b", gpus=16, batch=64, moe_dispatcher="alltoall").cost_model
    assert named.options.moe_dispatcher == "alltoall"


def test_unknown_dispatcher_is_refused():
    with pytest.raises(OptmapError, match="moe_dispatcher"):
        problem("qwen3-30b-a3b", gpus=16, batch=64, moe_dispatcher="nccl")


def test_export_names_the_flex_dispatcher(tmp_path, capsys):
    fixes = [f"{k}={v}" for k, v in plan(pipeline_parallel=1, data_parallel=16, expert_parallel=16).items()]
    text = megatron_args(tmp_path, capsys, "qwen3-30b-a3b", 16, 64, 'moe_dispatcher = "hybridep"\n', fixes)
    # Megatron-Core: --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep
    assert "--moe-token-dispatcher-type flex" in text and "--moe-flex-dispatcher-backend hybridep" in text
    assert "--moe-token-dispatcher-type alltoall" not in text


def test_recipe_options_are_what_the_recipes_say():
    runs = {r.label: r for r in heldout_runs.runs()}
    # Megatron-Bridge's performance recipes keep bf16 gradients; NeMo 24.07's rows keep the default
    assert heldout.recipe_options(runs["LLAMA3-70B FP8 64 H100 (bridge-26.02)"]) == {"grad_bytes": 2,
                                                                                    "fp8_scaling": "current"}
    assert heldout.recipe_options(runs["LLAMA3-70B MXFP8 64 GB200 (bridge-26.02)"]) == {"grad_bytes": 2}
    # NeMo 1 keeps fp32 gradients unless a config sets grad_sync_dtype (llama2_70b.yaml at 24.07 does not)
    assert heldout.recipe_options(runs["LLAMA2-70B FP8 64 H100 (nemo-24.07)"]) == {"grad_bytes": 4}
    # HybridEP where the recipe names it: Qwen3-30B-A3B with EP 16 on H100 and micro-batch 4 on B200,
    # the Qwen3 and DeepSeek-V3 runs on GB200; not the all-to-all era's H100 EP 8 or B200 micro-batch 1
    hybrid = {r.label for r in runs.values() if heldout.recipe_options(r).get("moe_dispatcher") == "hybridep"}
    assert "Qwen3-30B-A3B FP8 16 H100 (bridge-26.04)" in hybrid
    assert "Qwen3-30B-A3B MXFP8 8 B200 (bridge-26.04)" in hybrid and "Qwen3-235B-A22B BF16 256 GB200 (bridge-25.11)" in hybrid
    assert not {"Qwen3-30B-A3B FP8 16 H100 (bridge-26.02.01)", "Qwen3-30B-A3B MXFP8 8 B200 (bridge-26.02)",
                "GPT-OSS-120B BF16 64 GB200 (bridge-26.04)", "Qwen3-235B-A22B FP8 256 H100 (bridge-26.04)"} & hybrid
