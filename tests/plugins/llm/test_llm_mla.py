"""Multi-head latent attention (DeepSeek-V2/V3): the workload's counts and the planner's pricing, by hand."""

import json

import numpy as np
import pytest

from optmap.cli import main
from optmap.errors import OptmapError
from optmap.plugins.llm import memory, precision, timing
from optmap.plugins.llm.attention import linear_times
from optmap.plugins.llm.compute import H100_FIT, Device
from optmap.plugins.transformer.presets import PRESETS
from optmap.plugins.transformer.workload import transformer, transformer_graph

D, HEADS, NOPE, ROPE, V, Q_LORA, KV_LORA = 7168, 128, 128, 64, 128, 1536, 512  # DeepSeek-V3's config_671B.json
LINEARS = [(D, Q_LORA), (Q_LORA, HEADS * (NOPE + ROPE)), (D, KV_LORA + ROPE), (KV_LORA, HEADS * (NOPE + V)),
           (HEADS * V, D)]  # q_down, q_up, kv_down (with the shared rotary key), kv_up (keys and values), out


def test_deepseek_v3_attention_counts_by_hand():
    # DeepSeek-V2 §2.1: W_DQ, W_UQ (with the rotary queries), W_DKV and W_KR, W_UK and W_UV, W_O; two
    # latent RMSNorms and the block's input RMSNorm (1 weight per channel)
    cfg = PRESETS["deepseek-v3"]
    weights = sum(a * b for a, b in LINEARS)
    assert cfg._block_params("self_attn") == weights + Q_LORA + KV_LORA + D == 187_105_280 + 2_048 + 7_168
    # forward FLOPs on one sequence: 2 per multiply-accumulate of every linear, the scores over
    # 128 + 64 dimensions per head and the values over 128
    s = cfg.seq_len
    assert cfg._block_flops_fwd("self_attn", "dec") == 2 * s * weights + 2 * s * s * HEADS * (NOPE + ROPE + V)
    assert cfg.qkv_widths == (HEADS * 192, HEADS * 192, HEADS * 128) and cfg.attention_input_width == 1536 + 512 + 64


def test_latent_attention_layer_graph_has_the_configs_flops():
    # the layer graph other planners read: its linears and the two attention products add up to the
    # config's attention FLOPs (the shared rotary key is copied to the heads, no FLOPs)
    cfg = PRESETS["deepseek-v3"].with_(layers=2, moe=None, seq_len=256)
    w = transformer_graph(cfg).build(1, "bf16", "training")
    attention = [l for l in w.layers() if l.name.startswith("dec0.self_attn") and l.weighted]
    assert sum(l.flops(1).forward for l in attention) == cfg._block_flops_fwd("self_attn", "dec")
    assert next(l for l in w.layers() if l.name == "dec0.self_attn.k_rope_expand").flops(1).forward == 0


def test_mla_table_from_scratch_and_errors():
    w = transformer(batch=1, kind="decoder-only", layers=2, d_model=64, heads=4, head_dim=16, d_ff=128, seq_len=32,
                    vocab=100, mla={"kv_lora_rank": 8, "rope_head_dim": 4})
    assert w.config.mla.q_lora_rank == 0 and w.config.v_head_dim == 16 and w.config.q_head_dim == 20
    names = [name for name, *_ in w.config.attention_linears()]
    assert names == ["q", "kv_down", "kv_up", "out"]  # no query latent: queries straight from h
    for table, words in (({"kv_lora_rank": 8, "rank": 1}, "unknown key 'rank'"),
                         ({"rope_head_dim": 4}, "give kv_lora_rank"),
                         ({"kv_lora_rank": -1}, "non-negative integer")):
        with pytest.raises(OptmapError, match=words):
            transformer(batch=1, kind="decoder-only", layers=2, d_model=64, heads=4, d_ff=128, seq_len=32, vocab=100,
                        mla=table)
    with pytest.raises(OptmapError, match="decoder-only stacks without kv_heads"):
        transformer(batch=1, kind="decoder-only", layers=2, d_model=64, heads=4, kv_heads=2, d_ff=128, seq_len=32,
                    vocab=100, mla={"kv_lora_rank": 8})


def test_planner_prices_the_latent_linears_by_hand():
    # tensor parallel 8 with sequence parallelism, 4,096 tokens: the duplicated down-projections run on
    # each rank's 512 tokens, the up-projections over 1/8 of the heads on all 4,096, the output projection
    # over 1/8 of its input
    cfg, dev, tok, t = PRESETS["deepseek-v3"], Device(989.4e12, 3350e9, H100_FIT), 4096.0, 8.0
    inputs, output = linear_times(cfg, dev, tok, t, True)
    down = dev.gemm_time(tok / t, Q_LORA, D) + dev.gemm_time(tok / t, KV_LORA + ROPE, D)
    up = dev.gemm_time(tok, HEADS * (NOPE + ROPE) / t, Q_LORA) + dev.gemm_time(tok, HEADS * (NOPE + V) / t, KV_LORA)
    assert float(inputs[0]) == pytest.approx(float(down + up)) and float(inputs[1]) == pytest.approx(2 * float(down + up))
    assert float(output[0]) == pytest.approx(float(dev.gemm_time(tok, D, HEADS * V / t)))
    # activations: the compressed latents (1 byte with FP8) beside the LayerNorm terms, queries and keys
    # over 192 dimensions per head and values over 128 (2 bytes), the projection input (1 byte)
    rep, shard, _ = memory.layer_terms(cfg.with_(moe=None), 1, gemm_input_bytes=1.0, attention="flash")
    s = cfg.seq_len
    assert float(rep) == (4 + 2) * s * D + s * (Q_LORA + KV_LORA)  # no dropout masks (DeepSeek-V3: none)
    mlp = memory.mlp_bytes(cfg, cfg.d_ff, s, 1.0)
    assert float(shard) == 2 * s * HEADS * (192 + 192 + 128) + s * HEADS * V + mlp
    # FP8 casts: the normalised input's transpose, both latents and the projection input; backward every
    # linear's output gradient (duplicated ones on the rank's tokens, 1/t)
    forward, backward, *_ = precision.cast_bytes(cfg, 1.0, t, dense_mlp=False)
    assert forward == pytest.approx(2 * D + 4 * (Q_LORA + KV_LORA) + 4 * HEADS * V / t)
    assert backward == pytest.approx(4 * ((Q_LORA + KV_LORA + ROPE) / t + HEADS * (192 + 256) / t + D))


def test_tensor_parallel_gathers_the_latents_not_the_hidden_state():
    # sequence parallel, no overlap options: forward the attention gathers its [b, s, 1536 + 512 + 64]
    # latents and reduce-scatters [b, s, 7168]; the dense MLP all-gathers and reduce-scatters [b, s, 7168]
    from optmap import collectives as coll
    cfg = PRESETS["deepseek-v3"].with_(moe=None)
    opts = timing.Options(tp_overlap=False, tp_comm_overlap=False, sp_gather_redo=False)
    lt = timing.LayerTimes(1.0, 1.0, 1.0, 1.0, 1.0)
    got = timing.tp_layer_comm(cfg, lt, 1.0, 8.0, True, memory.NONE, 100e9, 0.0, opts, None)
    n = 2 * cfg.seq_len
    latent, hidden = n * (1536 + 512 + 64), n * D
    ring = lambda x: float(coll.allgather(x, 8, 100e9, 0.0))  # noqa: E731  (= reduce-scatter)
    # forward AG(latent) + RS(h) + MLP AG + RS; backward 2 AG(h) of the row-parallel gradients + RS(latent) + RS(h)
    assert float(got) == pytest.approx(ring(latent) + 3 * ring(hidden) + 2 * ring(hidden) + ring(latent) + ring(hidden))


def test_export_writes_the_latent_attention_flags(tmp_path, capsys):
    path = tmp_path / "d.toml"
    path.write_text('[workload]\nmodel = "transformer"\npreset = "deepseek-v3"\nbatch = 512\ndtype = "bf16"\n'
                    '[system]\ntopology = "dgx-h100"\n[[system.groups]]\naccelerator = "h100-sxm"\ncount = 256\n'
                    '[cost]\nmodel = "megatron-3d"\n')
    out = tmp_path / "r.json"
    assert main(["run", str(path), "--json", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", str(out), "--to", "megatron"]) == 0
    flags = [line.rstrip(" \\") for line in capsys.readouterr().out.splitlines()]
    for want in ("--multi-latent-attention", "--q-lora-rank 1536", "--kv-lora-rank 512", "--qk-head-dim 128",
                 "--qk-pos-emb-head-dim 64", "--v-head-dim 128", "--num-experts 256", "--moe-router-topk 8"):
        assert want in flags, want
    assert not any(f.startswith("--group-query-attention") for f in flags)
    assert "--num-layers 61" in flags


def test_deepseek_published_layout_takes_the_explicit_split(tmp_path, capsys):
    # Megatron-Bridge's DeepSeek-V3 on 256 GB200s: pipeline 4 × interleaving 4 over 61 layers. No
    # balanced split holds it, so the pins admit uneven_stages = "layout" (plugins/llm/choices.py), which
    # prices it and exports the layout; Megatron-LM's old rule (never) refuses it with the rule
    path = tmp_path / "d.toml"
    path.write_text('[workload]\nmodel = "transformer"\npreset = "deepseek-v3"\nbatch = 4096\ndtype = "bf16"\n'
                    '[system]\ntopology = "gb200-nvl72"\n[[system.groups]]\naccelerator = "gb200"\ncount = 256\n'
                    '[cost]\nmodel = "megatron-3d"\n')
    pins = ["--fix", "tensor_parallel=1", "--fix", "pipeline_parallel=4", "--fix", "interleaving=4",
            "--fix", "expert_parallel=64", "--fix", "data_parallel=64", "--fix", "microbatch_size=1",
            "--fix", "context_parallel=1"]
    assert main(["run", str(path), *pins, "--set", "cost.uneven_stages=never"]) == 2
    assert "'pipeline_parallel': 4 is not one of [1, 61]" in capsys.readouterr().err  # 61 is prime
    out = tmp_path / "r.json"
    assert main(["run", str(path), *pins, "--json", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", str(out), "--to", "megatron"]) == 0
    flags = [line.rstrip(" \\") for line in capsys.readouterr().out.splitlines()]
    assert "--pipeline-model-parallel-layout 'Ettt|" + "tttt|" * 14 + "ttL'" in flags
    assert not any(f.startswith("--num-layers-per-virtual-pipeline-stage") for f in flags)


def test_multi_token_prediction_module_by_hand():
    # DeepSeek-V3 §2.2 / Fig. 3: a module projects [RMSNorm(h); RMSNorm(embedding)] (2 × 7,168 -> 7,168),
    # runs one transformer layer (MLA and a MoE MLP, as the last layer) and the shared head (no new
    # weights), with its own RMSNorm before it: 2·7168² + 3·7168 weights beside the layer's
    base, mtp = PRESETS["deepseek-v3"], PRESETS["deepseek-v3"].with_(mtp_layers=1)
    assert mtp.params - base.params == 2 * D * D + 3 * D + base.moe_layer_params
    s = base.seq_len
    layer = base._block_flops_fwd("self_attn", "dec") + base._block_flops_fwd("ffn", "dec", True)
    assert mtp.flops_fwd() - base.flops_fwd() == 2 * s * 2 * D * D + layer + 2 * s * D * base.vocab
    # its layer graph has the same FLOPs (4 layers, 256 tokens)
    small = mtp.with_(layers=4, seq_len=256)
    graph = transformer_graph(small).build(1, "bf16", "training")
    assert sum(l.flops(1).forward for l in graph.layers() if l.weighted) == small.flops_fwd()


def test_multi_token_prediction_runs_on_the_last_stage(tmp_path, capsys):
    # pipeline 16 (DeepSeek-V3 on 256 B200s, Megatron-Bridge 25.11 "w/ MTP"): the module is one more
    # layer and one more head on the last stage; the layout puts "m" before the loss
    path = tmp_path / "d.toml"
    path.write_text('[workload]\nmodel = "transformer"\npreset = "deepseek-v3"\nmtp_layers = 1\nbatch = 2048\n'
                    'dtype = "mxfp8"\n[system]\ntopology = "dgx-b200"\n[[system.groups]]\naccelerator = "b200"\n'
                    'count = 256\n[cost]\nmodel = "megatron-3d"\nuneven_stages = "layout"\n')
    pins = [a for k, v in {"tensor_parallel": 1, "pipeline_parallel": 16, "interleaving": 1, "expert_parallel": 8,
                           "data_parallel": 16, "microbatch_size": 1, "context_parallel": 1}.items()
            for a in ("--fix", f"{k}={v}")]
    out = tmp_path / "r.json"
    assert main(["run", str(path), *pins, "--json", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", str(out), "--to", "megatron"]) == 0
    flags = [line.rstrip(" \\") for line in capsys.readouterr().out.splitlines()]
    assert "--mtp-num-layers 1" in flags
    # 63 slots over 16 chunks: 15 of 4, the last 3 (2 layers, the module, the loss)
    assert "--pipeline-model-parallel-layout 'Ettt|" + "tttt|" * 14 + "ttmL'" in flags
    assert json.loads(out.read_text())["mapping"]["pipeline_parallel"] == 16


def test_multi_token_prediction_prices_one_more_layer_and_head():
    # one stage (pipeline 1) of a 4-layer latent-attention MoE model: the module's layer makes the forward
    # (L + 1) / L of the model's without it, and the head part grows by a second head and the projection
    from optmap.plugins.llm.model import CATEGORIES, DECISIONS
    from optmap.problem import build_problem

    def columns(mtp):
        m = build_problem({
            "workload": {"model": "transformer", "kind": "decoder-only", "layers": 4, "d_model": 512, "heads": 8,
                         "head_dim": 64, "d_ff": 1024, "seq_len": 1024, "vocab": 8000, "gated_mlp": True,
                         "batch": 8, "dtype": "bf16", "mtp_layers": mtp, "mla": {"kv_lora_rank": 128},
                         "moe": {"experts": 8, "top_k": 2, "d_ff": 256}},
            "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": 1}]},
            "cost": {"model": "megatron-3d"}, "search": {"engine": "megatron-3d"}}).cost_model
        plan = {"tensor_parallel": 1, "pipeline_parallel": 1, "data_parallel": 1, "microbatch_size": 1,
                "interleaving": 1, "recompute": "none", "sequence_parallel": False, "optimizer_sharding": False,
                "dp_overlap": False, "context_parallel": 1, "expert_parallel": 1, "fsdp": False, "offload": "none",
            "grad_reduce_in_fp32": True, "expert_tensor_parallel": 1}
        values = {k: np.array([CATEGORIES[k].index(plan[k]) if k in CATEGORIES else plan[k]]) for k in DECISIONS}
        return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in m.score(m.plan_arrays(values)).items()}
    without, with_ = columns(0), columns(1)
    assert with_["forward_s"] / without["forward_s"] == pytest.approx(5 / 4)
    assert 2 * without["embedding_logits_s"] < with_["embedding_logits_s"] < 3 * without["embedding_logits_s"]
