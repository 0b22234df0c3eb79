"""Named transformer configurations of the ``transformer`` workload (each size cited beside it).

``PRESETS`` maps a preset name to its :class:`TransformerConfig`; ``preset(name, **overrides)``
returns one with field overrides (e.g. ``seq_len``).
"""

from __future__ import annotations

import dataclasses

from optmap.workload.transformer import TransformerConfig, megatron_gpt


def _tf(name: str, heads: int, d_ff: int) -> TransformerConfig:
    # AccTFM Table 2 (models from Mesh-TensorFlow [24]); d_model, depth, vocab inferred (note §4.2):
    # d_model 1024, 6 + 6 layers, d_k = d_v = 128, 32k (2^15) vocab with separate source/target
    # matrices, target tied to the softmax, no biases, pre-LN with a final norm per stack.
    # Gives 0.243/0.419/0.772/1.476 B; a 32000 vocabulary would round TF64 to 1.47, not 1.48.
    # seq_len is not reported: 256 is an assumption (note §6.1 sketch).
    return TransformerConfig(name=name, kind="encoder-decoder", layers=6, decoder_layers=6,
                             d_model=1024, heads=heads, head_dim=128, d_ff=d_ff, seq_len=256,
                             vocab=32768, bias=False, final_norm=True)


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
                             lm_head=False)


BERT_BASE = _bert("bert-base", 12, 768, 12)
BERT_LARGE = _bert("bert-large", 24, 1024, 16)


def _gpt2(name: str, layers: int, d: int, heads: int) -> TransformerConfig:
    # HF GPT2Model/GPT2LMHeadModel: 50257 vocab, 1024 positions, pre-LN + ln_f, tied head.
    return TransformerConfig(name=name, kind="decoder-only", layers=layers, d_model=d, heads=heads,
                             head_dim=d // heads, d_ff=4 * d, seq_len=1024, vocab=50257,
                             max_positions=1024, final_norm=True)


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

PRESETS: dict[str, TransformerConfig] = {
    c.name: c for c in (TF8, TF16, TF32, TF64, BERT_BASE, BERT_LARGE,
                        GPT2_SMALL, GPT2_MEDIUM, GPT2_LARGE, GPT2_XL,
                        MEGATRON_22B, GPT3_175B, TURING_530B, MEGATRON_1T,
                        LLAMA2_7B, LLAMA2_70B, LLAMA3_8B, LLAMA3_70B)
}


def preset(name: str, **overrides) -> TransformerConfig:
    """A preset by name (e.g. ``"TF8"``, ``"gpt2-xl"``), with field overrides such as seq_len."""
    if name not in PRESETS:
        raise KeyError(f"unknown transformer preset {name!r}; valid: {', '.join(PRESETS)}")
    return dataclasses.replace(PRESETS[name], **overrides) if overrides else PRESETS[name]
