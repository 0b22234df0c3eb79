"""Named transformer configurations of the ``transformer`` workload (each size cited beside it).

``PRESETS`` maps a preset name to its :class:`TransformerConfig`; ``preset(name, **overrides)``
returns one with field overrides (e.g. ``seq_len``).
"""

from __future__ import annotations

import dataclasses

from optmap.workload.mla import MLAConfig
from optmap.workload.moe import MoEConfig
from optmap.workload.transformer import TransformerConfig, megatron_gpt


def _tf(name: str, heads: int, d_ff: int) -> TransformerConfig:
    # AccTFM Table 2 (models from Mesh-TensorFlow [24]); d_model, depth, vocab inferred (note §4.2):
    # d_model 1024, 6 + 6 layers, d_k = d_v = 128, 32k (2^15) vocab with separate source/target
    # matrices, target tied to the softmax, no biases, pre-LN with a final norm per stack.
    # Gives 0.243/0.419/0.772/1.476 B; a 32000 vocabulary would round TF64 to 1.47, not 1.48.
    # seq_len is not reported: 256 is an assumption (note §6.1 sketch).
    return TransformerConfig(name=name, kind="encoder-decoder", layers=6, decoder_layers=6,
                             d_model=1024, heads=heads, head_dim=128, d_ff=d_ff, seq_len=256,
                             vocab=32768, bias=False, final_norm=True, dropout=0.1)  # Vaswani et al. P_drop


TF8 = _tf("TF8", 8, 4096)
TF16 = _tf("TF16", 16, 8192)
TF32 = _tf("TF32", 32, 16384)
TF64 = _tf("TF64", 64, 32768)

# AccTFM Table 2: parameters in billions (the figures the TF presets reproduce, tested).
PAPER_PARAMS_B = {"TF8": 0.24, "TF16": 0.42, "TF32": 0.77, "TF64": 1.48}


def _bert(name: str, layers: int, d: int, heads: int) -> TransformerConfig:
    # HF BertModel (bert-*-uncased): 30522 vocab, 512 positions, 2 token types, post-LN, pooler.
    return TransformerConfig(name=name, kind="encoder", layers=layers, d_model=d, heads=heads,
                             head_dim=d // heads, d_ff=4 * d, seq_len=512, vocab=30522,
                             max_positions=512, type_vocab=2, embedding_norm=True, pooler=True,
                             lm_head=False, dropout=0.1)


BERT_BASE = _bert("bert-base", 12, 768, 12)
BERT_LARGE = _bert("bert-large", 24, 1024, 16)


def _gpt2(name: str, layers: int, d: int, heads: int) -> TransformerConfig:
    # HF GPT2Model/GPT2LMHeadModel: 50257 vocab, 1024 positions, pre-LN + ln_f, tied head.
    return TransformerConfig(name=name, kind="decoder-only", layers=layers, d_model=d, heads=heads,
                             head_dim=d // heads, d_ff=4 * d, seq_len=1024, vocab=50257,
                             max_positions=1024, final_norm=True, dropout=0.1)


GPT2_SMALL = _gpt2("gpt2", 12, 768, 12)
GPT2_MEDIUM = _gpt2("gpt2-medium", 24, 1024, 16)
GPT2_LARGE = _gpt2("gpt2-large", 36, 1280, 20)
GPT2_XL = _gpt2("gpt2-xl", 48, 1600, 25)

MEGATRON_22B = megatron_gpt("megatron-22b", 48, 6144, 64)  # Korthikanti et al. 2022 Table 3
GPT3_175B = megatron_gpt("gpt3-175b", 96, 12288, 96)  # Brown et al. 2020 Table 2.1; Korthikanti Table 3
TURING_530B = megatron_gpt("turing-530b", 105, 20480, 128)  # Smith et al. 2022 (MT-NLG); Narayanan Table 1
MEGATRON_1T = megatron_gpt("megatron-1t", 128, 25600, 160)  # Narayanan et al. SC'21 Table 1


def _llama(name: str, layers: int, d: int, heads: int, kv_heads: int, d_ff: int, vocab: int,
           seq_len: int) -> TransformerConfig:
    # Llama architecture (Touvron et al. 2023; Hugging Face LlamaConfig): RMSNorm (one weight per
    # channel), no biases, rotary positions (no parameters), SwiGLU MLP, untied output head.
    return TransformerConfig(name=name, kind="decoder-only", layers=layers, d_model=d, heads=heads,
                             head_dim=d // heads, d_ff=d_ff, seq_len=seq_len, vocab=vocab, bias=False,
                             norm_params=1, final_norm=True, tied_output=False, kv_heads=kv_heads,
                             gated_mlp=True)


# Hugging Face configs of meta-llama/Llama-2-{7b,70b}-hf and Meta-Llama-3-{8B,70B}.
LLAMA2_7B = _llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096)
LLAMA2_70B = _llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096)
LLAMA3_8B = _llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192)
LLAMA3_70B = _llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192)
# Hugging Face config of meta-llama/Llama-3.1-405B (num_hidden_layers 126, hidden_size 16384, 128
# attention heads, 8 key/value heads, intermediate_size 53248, vocab_size 128256); 8,192-token
# pre-training sequence (Llama Team 2024, "The Llama 3 Herd of Models", §3.4.1).
LLAMA31_405B = _llama("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 8192)



def _nemo_gpt3(name: str, layers: int, d: int, heads: int) -> TransformerConfig:
    # NeMo's GPT-3 recipes (NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/gpt3/*.yaml):
    # GPT-2 BPE tokenizer (50,257 tokens, padded by the planner to 128·t), learned positions over
    # 2,048 tokens, biases, LayerNorm, ffn_hidden_size = 4·hidden_size, tied output, GELU.
    return TransformerConfig(name=name, kind="decoder-only", layers=layers, d_model=d, heads=heads,
                             head_dim=d // heads, d_ff=4 * d, seq_len=2048, vocab=50257, max_positions=2048,
                             final_norm=True, dropout=0.1)  # gpt3/*.yaml hidden_dropout, attention_dropout 0.1


GPT3_5B = _nemo_gpt3("gpt3-5b", 24, 4096, 32)  # gpt3/5b.yaml: num_layers 24, hidden 4096, 32 heads
GPT3_20B = _nemo_gpt3("gpt3-20b", 44, 6144, 48)  # gpt3/20b.yaml: num_layers 44, hidden 6144, 48 heads

# Hugging Face config of nvidia/Nemotron-4-340B-Base (NemotronForCausalLM): 96 layers, hidden 18432,
# 96 heads of 192, 8 key/value heads, intermediate_size 73728 with squared ReLU ("relu2": not
# gated), vocab 256000, untied, no biases, LayerNorm (weight and bias), 4,096 positions (RoPE).
NEMOTRON4_340B = TransformerConfig(name="nemotron-4-340b", kind="decoder-only", layers=96, d_model=18432, heads=96,
                                   head_dim=192, d_ff=73728, seq_len=4096, vocab=256000, bias=False, final_norm=True,
                                   tied_output=False, kv_heads=8)


def _moe(name: str, layers: int, d: int, heads: int, head_dim: int, kv_heads: int, d_ff: int, vocab: int,
         moe: MoEConfig) -> TransformerConfig:
    # Mixtral / Qwen3-MoE architecture (HF MixtralConfig, Qwen3MoeConfig): Llama-style layers
    # (RMSNorm, no biases, RoPE, untied output) whose SwiGLU MLP is a mixture of experts. Qwen3's
    # per-head q/k RMSNorms (2·128 weights per layer) are left out (0.0001 % of the parameters).
    # seq_len 4,096 is a planning default, not a published training length: override it.
    return TransformerConfig(name=name, kind="decoder-only", layers=layers, d_model=d, heads=heads,
                             head_dim=head_dim, d_ff=d_ff, seq_len=4096, vocab=vocab, bias=False, norm_params=1,
                             final_norm=True, tied_output=False, kv_heads=kv_heads, gated_mlp=True, moe=moe)


# mistralai/Mixtral-8x7B-v0.1 config: 32 layers, hidden 4096, 32 heads, 8 kv heads, intermediate
# 14336, num_local_experts 8, num_experts_per_tok 2, vocab 32000 (46.7B total, 12.9B active).
MIXTRAL_8X7B = _moe("mixtral-8x7b", 32, 4096, 32, 128, 8, 14336, 32000, MoEConfig(8, 2, 14336))
# mistralai/Mixtral-8x22B-Instruct-v0.1 config: 56 layers, hidden 6144, 48 heads, 8 kv heads,
# intermediate 16384, 8 experts, top-2, vocab 32768 (141B total, 39B active).
MIXTRAL_8X22B = _moe("mixtral-8x22b", 56, 6144, 48, 128, 8, 16384, 32768, MoEConfig(8, 2, 16384))
# Qwen/Qwen3-30B-A3B config: 48 layers, hidden 2048, 32 heads of 128, 4 kv heads, intermediate
# 6144 (dense width, unused: every layer is MoE), moe_intermediate_size 768, 128 experts, top-8,
# vocab 151936, untied (30.5B total, 3.3B active).
QWEN3_30B_A3B = _moe("qwen3-30b-a3b", 48, 2048, 32, 128, 4, 6144, 151936, MoEConfig(128, 8, 768))
# Qwen/Qwen3-235B-A22B config: 94 layers, hidden 4096, 64 heads of 128, 4 kv heads, intermediate
# 12288 (unused), moe_intermediate_size 1536, 128 experts, top-8, vocab 151936 (235B / 22B active).
QWEN3_235B_A22B = _moe("qwen3-235b-a22b", 94, 4096, 64, 128, 4, 12288, 151936, MoEConfig(128, 8, 1536))

# deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json: 61 layers, dim 7168, 128 heads,
# q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128
# (multi-head latent attention), inter_dim 18432 for the first n_dense_layers 3, then 256 routed
# experts of moe_inter_dim 2048 with 8 activated and 1 shared, routed within n_limited_groups 4 of
# n_expert_groups 8 (node-limited routing, §2.1.2), vocab 129280, untied, RMSNorm. The
# multi-token-prediction module (DeepSeek-V3 §2.2, 14B of the published 685B) is not part of it:
# 671B total, 37B activated (DeepSeek-V3 Technical Report, abstract).
DEEPSEEK_V3 = TransformerConfig(name="deepseek-v3", kind="decoder-only", layers=61, d_model=7168, heads=128,
                                head_dim=128, d_ff=18432, seq_len=4096, vocab=129280, bias=False, norm_params=1,
                                final_norm=True, tied_output=False, gated_mlp=True,
                                moe=MoEConfig(256, 8, 2048, shared_experts=1, shared_d_ff=2048, dense_layers=3,
                                              groups=8, group_top_k=4),
                                mla=MLAConfig(kv_lora_rank=512, q_lora_rank=1536, rope_head_dim=64, v_head_dim=128))

# openai/gpt-oss-120b config: 36 layers, hidden 2880, 64 heads of 64, 8 kv heads, attention and
# expert biases, 128 experts of intermediate 2880 (gated), 4 per token, vocab 201088, untied,
# RMSNorm; sliding_window 128 on every other layer, the first windowed ("layer_types": sliding,
# full, ...; Megatron-Core window_attn_skip_freq 2). Its per-head attention sinks (one logit each,
# 2,304 in all) are left out. 116.8B total, 5.1B active not counting the 0.58B embedding table
# (OpenAI, gpt-oss-120b model card, 2025).
GPT_OSS_120B = TransformerConfig(name="gpt-oss-120b", kind="decoder-only", layers=36, d_model=2880, heads=64,
                                 head_dim=64, d_ff=2880, seq_len=4096, vocab=201088, bias=True, norm_params=1,
                                 final_norm=True, tied_output=False, kv_heads=8, gated_mlp=True,
                                 moe=MoEConfig(128, 4, 2880), sliding_window=128, full_attention_every=2)

PRESETS: dict[str, TransformerConfig] = {
    c.name: c for c in (TF8, TF16, TF32, TF64, BERT_BASE, BERT_LARGE,
                        GPT2_SMALL, GPT2_MEDIUM, GPT2_LARGE, GPT2_XL,
                        MEGATRON_22B, GPT3_175B, TURING_530B, MEGATRON_1T,
                        LLAMA2_7B, LLAMA2_70B, LLAMA3_8B, LLAMA3_70B, LLAMA31_405B,
                        GPT3_5B, GPT3_20B, NEMOTRON4_340B,
                        MIXTRAL_8X7B, MIXTRAL_8X22B, QWEN3_30B_A3B, QWEN3_235B_A22B, DEEPSEEK_V3,
                        GPT_OSS_120B)
}

# Presets refused with a reason (one line): architectures this model does not represent honestly.


def preset(name: str, **overrides) -> TransformerConfig:
    """A preset by name (e.g. ``"TF8"``, ``"gpt2-xl"``), with field overrides such as seq_len."""
    if name not in PRESETS:
        raise KeyError(f"unknown transformer preset {name!r}; valid: {', '.join(PRESETS)}")
    return dataclasses.replace(PRESETS[name], **overrides) if overrides else PRESETS[name]
