"""Sliding-window attention (``sliding_window``, ``full_attention_every``; optmap.workload.window) and
the GPT-OSS-120B preset: counts by hand and by brute force, the layer graph, megatron-3d, export."""

import pytest

from optmap.errors import OptmapError
from optmap.plugins.llm import attention
from optmap.plugins.llm.compute import H100_FIT, Device
from optmap.plugins.transformer.presets import PRESETS
from optmap.plugins.transformer.workload import transformer, transformer_graph
from optmap.workload import window

from test_llm_moe import megatron_args

GPT_OSS = PRESETS["gpt-oss-120b"]


@pytest.mark.parametrize("s, w", [(16, 4), (16, 16), (16, 40), (9, 1), (128, 17)])
def test_causal_share_counts_the_band_by_brute_force(s, w):
    # query i attends to key j when j <= i and i - j < w
    pairs = sum(1 for i in range(s) for j in range(s) if j <= i and i - j < w)
    assert window.causal_share(s, w) == pytest.approx(pairs / s**2, rel=1e-12)


def test_which_layers_are_windowed():
    # GPT-OSS: sliding, full, sliding, ... (Hugging Face layer_types; Megatron-Core window_attn_skip_freq 2)
    assert [GPT_OSS.is_windowed_layer(i) for i in range(4)] == [True, False, True, False]
    assert GPT_OSS.windowed_layers == 18
    # 0 windows every layer (Mistral 7B); 6 is Gemma 3's five windowed layers to one full
    every = GPT_OSS.with_(full_attention_every=0)
    assert every.windowed_layers == 36
    assert [window.is_windowed(i, 1024, 6) for i in range(12)] == [True] * 5 + [False] + [True] * 5 + [False]


def test_gpt_oss_counts_match_the_model_card():
    # OpenAI's gpt-oss-120b model card: 116.8B parameters, 5.1B active per token; the card's active
    # count leaves out the 201,088 × 2,880 embedding table (0.58B), which this count keeps
    assert GPT_OSS.params == pytest.approx(116.83e9, rel=1e-3)
    assert GPT_OSS.active_params - 201_088 * 2_880 == pytest.approx(5.13e9, rel=1e-2)


def test_windowed_attention_flops_by_hand():
    s, a, d, kv = 4096, 64 * 64, 2880, 8 * 64
    proj = 2 * s * d * (a + 2 * kv) + 2 * s * a * d
    assert GPT_OSS._block_flops_fwd("self_attn", "dec", windowed=True) == proj + 4 * s * 128 * a  # s × w scores
    assert GPT_OSS._block_flops_fwd("self_attn", "dec") == proj + 4 * s * s * a  # the full layers
    # the layer graph draws the window as a band of keys and values: the same FLOPs, block by block
    cfg = GPT_OSS.with_(layers=2, moe=None, seq_len=512)
    w = transformer_graph(cfg).build(1, "bf16", "training")
    for block in cfg.blocks():
        layers = [l for l in w.layers() if l.name.startswith(block.name + ".") and l.weighted]
        assert sum(l.flops(1).forward for l in layers) == block.flops_fwd
    assert w.layer("dec0.self_attn.k_window").out_shape == (128, kv)


def test_flash_core_prices_the_band():
    dev = Device(989.4e12, 3.35e12, H100_FIT)
    full = attention.core_times(GPT_OSS.with_(sliding_window=0, full_attention_every=0), dev, 1, 1, "flash")
    windowed = attention.core_times(GPT_OSS, dev, 1, 1, "flash")
    # half the layers at half the square (causal), half on the band: (0.5 + causal_share) / 2 of it
    share = (0.5 + window.causal_share(4096, 128)) / 2
    assert attention.flash_share(GPT_OSS) == pytest.approx(share)
    assert float(windowed[0]) == pytest.approx(float(full[0]) * share / 0.5, rel=1e-12)
    # unfused kernels compute the whole square and mask it
    unfused = attention.core_times(GPT_OSS, dev, 1, 1, "unfused")
    assert float(unfused[0]) == pytest.approx(float(attention.core_times(
        GPT_OSS.with_(sliding_window=0, full_attention_every=0), dev, 1, 1, "unfused")[0]))


@pytest.mark.parametrize("given, words", [
    ({"full_attention_every": 2}, "give sliding_window too"),
    ({"sliding_window": 128, "full_attention_every": 1}, "makes every layer full"),
])
def test_bad_window_settings_are_refused(given, words):
    with pytest.raises(OptmapError, match=words):
        transformer(batch=1, kind="decoder-only", layers=2, d_model=64, heads=4, d_ff=128, seq_len=32, vocab=100,
                    **given)


def test_export_writes_megatron_window_flags(tmp_path, capsys):
    text = megatron_args(tmp_path, capsys, "gpt-oss-120b", 64, 64, fixes=["expert_parallel=8"])
    # Megatron-Core: window_size = (keys before the query, after it) = (128 - 1, 0); one full layer in 2
    assert "--window-size 127,0" in text and "--window-attn-skip-freq 2" in text
