"""Transformer configs (shared workload): exact parameter counts, blocks, FLOPs and message sizes."""

import pytest

from optmap.workload.transformer import TransformerConfig
from optmap.plugins.transformer.presets import PAPER_PARAMS_B, PRESETS, TF8, TF64, preset

# Exact counts of the Hugging Face checkpoints, `sum(p.numel() for p in model.parameters())` of
# BertModel (incl. pooler, no MLM head) and GPT2Model/GPT2LMHeadModel (lm_head tied to wte):
# bert-base-uncased 109,482,240; bert-large-uncased 335,141,888; gpt2 124,439,808;
# gpt2-medium 354,823,168; gpt2-large 774,030,080; gpt2-xl 1,557,611,200.
HF_COUNTS = {
    "bert-base": 109_482_240,
    "bert-large": 335_141_888,
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
}


@pytest.mark.parametrize("name,count", sorted(HF_COUNTS.items()))
def test_hf_parameter_counts_exact(name, count):
    assert PRESETS[name].params == count


@pytest.mark.parametrize("name", ["TF8", "TF16", "TF32", "TF64"])
def test_tf_parameter_counts_match_paper_table2(name):
    # AccTFM Table 2 gives 0.24 / 0.42 / 0.77 / 1.48 billion parameters.
    assert round(PRESETS[name].params / 1e9, 2) == PAPER_PARAMS_B[name]


def test_tf_exact_counts_and_vocab_inference():
    assert [PRESETS[n].params for n in ("TF8", "TF16", "TF32", "TF64")] == [
        243_335_168, 419_495_936, 771_817_472, 1_476_460_544]
    # a 32000 vocabulary would round TF64 to 1.47 B: the 2^15 vocabulary is the consistent reading
    assert round(TF64.with_(vocab=32000).params / 1e9, 2) == 1.47


def test_breakdown_components():
    b = PRESETS["bert-base"].param_breakdown()
    assert b["pooler"] == 768 * 768 + 768
    assert b["token_embeddings"] == 30522 * 768 and b["type_embeddings"] == 2 * 768
    assert PRESETS["gpt2"].param_breakdown()["output_head"] == 0  # tied
    assert PRESETS["gpt2"].with_(tied_output=False).params == 124_439_808 + 768 * 50257 + 50257
    t = TF8.param_breakdown()
    assert t["token_embeddings"] == 2 * 32768 * 1024  # source + target (target tied to the softmax)


def test_block_chain_structure():
    blocks = TF8.blocks()
    assert len(blocks) == TF8.n_blocks == 6 * 2 + 6 * 3  # 30 Megatron blocks (note §5 D1)
    kinds = [b.kind for b in blocks]
    assert kinds[:2] == ["self_attn", "ffn"] and kinds[12:15] == ["self_attn", "cross_attn", "ffn"]
    # the FFN and cross-attention blocks reuse their layer's self-attention mask (note D10)
    assert blocks[13].mask_source == 12 and blocks[14].mask_source == 12 and blocks[12].computes_mask
    assert sum(b.computes_mask for b in blocks) == 12
    assert len(PRESETS["gpt2"].blocks()) == 24 and len(PRESETS["bert-large"].blocks()) == 48


def test_flops_and_messages_per_sample():
    c = TF8
    s, d, a = c.seq_len, c.d_model, c.inner
    enc_attn, enc_ffn = c.blocks()[0], c.blocks()[1]
    assert enc_ffn.flops_fwd == 2 * 2 * s * d * c.d_ff
    assert enc_attn.flops_fwd == 2 * s * d * 4 * a + 4 * s * s * a
    assert all(b.flops_bwd == 2 * b.flops_fwd for b in c.blocks())
    assert enc_attn.msg_fwd == enc_attn.msg_bwd == s * d  # [b, S, d_model] per sample
    cross = c.blocks()[13]
    assert cross.msg_fwd == s * d and cross.msg_bwd == 2 * s * d  # + d(encoder output), Megatron f
    assert c.with_(cross_kv_grad=False).blocks()[13].msg_bwd == s * d


def test_block_flops_are_twice_weight_params_per_token_plus_attention():
    g = PRESETS["gpt2"]
    per_token = sum(b.flops_fwd for b in g.blocks()) / g.seq_len
    weights = g.layers * (4 * 768 * 768 + 2 * 768 * 3072)  # weight matrices only
    assert per_token == 2 * weights + g.layers * 4 * g.seq_len * 768
    assert g.head_flops_fwd() == 2 * 1024 * 768 * 50257
    assert PRESETS["bert-base"].head_flops_fwd() == 0.0  # BertModel: no LM head


def test_preset_overrides_and_errors():
    assert preset("TF8", seq_len=128).seq_len == 128 and TF8.seq_len == 256
    with pytest.raises(KeyError):
        preset("TF9")
    with pytest.raises(ValueError):
        TransformerConfig("x", "encoder-decoder", 2, 64, 2, 32, 256, 16, 100)
