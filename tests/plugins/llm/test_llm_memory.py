"""Memory per GPU against Korthikanti et al. 2022 (formulas by hand, Figure 1 and Figure 7 values)."""

import dataclasses

import numpy as np
import pytest

from optmap.plugins.llm import memory
from optmap.plugins.transformer.presets import GPT3_175B, LLAMA2_70B, MEGATRON_1T, MEGATRON_22B, TURING_530B

GIB = 2**30


def test_layer_formulas_by_hand():
    # Korthikanti Eqs. 2-6 for a GPT layer: s·b·h·(34 + 5as/h) etc., here s=2048, b=2, h=6144, a=64
    cfg, b, t = MEGATRON_22B, 2, 4
    s, h, a = 2048, 6144, 64
    sbh = s * b * h
    expect = {
        (False, "none"): sbh * (10 + 24 / t + 5 * a * s / (h * t)),
        (True, "none"): sbh / t * (34 + 5 * a * s / h),
        (False, "selective"): sbh * (10 + 24 / t),
        (True, "selective"): 34 * sbh / t,
        (False, "full"): 2 * sbh,
        (True, "full"): 2 * sbh / t,
    }
    for (sp, rc), value in expect.items():
        got = memory.layer_activations(cfg, b, t, sp, memory.RECOMPUTE.index(rc))
        assert float(got) == pytest.approx(value, rel=1e-12), (sp, rc)
    # no parallelism at all: s·b·h·(34 + 5as/h) (Korthikanti Eq. 1)
    assert float(memory.layer_activations(cfg, b, 1, False, 0)) == pytest.approx(sbh * (34 + 5 * a * s / h))


@pytest.mark.parametrize("cfg,p,v,none_gib,seqsel_gib", [
    # Korthikanti Figure 1 (activations per GPU, GiB), tensor 8, micro-batch 1 (22B: 4), batch = GPUs
    (MEGATRON_22B, 1, 1, 59.25, 9.5625),
    (GPT3_175B, 8, 3, 66.84375, 12.3515625),
    (TURING_530B, 35, 3, 114.0234375, 23.076171875),
    (MEGATRON_1T, 64, 1, 131.25, 26.5625),
])
def test_figure1_activation_memory(cfg, p, v, none_gib, seqsel_gib):
    b = 4 if cfg is MEGATRON_22B else 1
    m = 1 if cfg is MEGATRON_22B else 8 * p  # micro-batches (batch = GPU count, data parallel 1)
    layers = memory.in_flight_layers(cfg.layers, p, v, m)
    none = memory.layer_activations(cfg, b, 8, False, memory.NONE) * layers / GIB
    seqsel = memory.layer_activations(cfg, b, 8, True, memory.SELECTIVE) * layers / GIB
    assert float(none) == pytest.approx(none_gib, rel=1e-9)
    assert float(seqsel) == pytest.approx(seqsel_gib, rel=1e-9)


def test_figure7_full_recompute_share():
    # Korthikanti Figure 7: full recomputation keeps 7.64 % (22B) and 8.71 % (175B) of "none"; the
    # formula gives 2/26.33 = 7.60 % and 2/23 = 8.70 % (the figure is read to 0.1 %)
    for cfg, share in ((MEGATRON_22B, 7.64), (GPT3_175B, 8.71)):
        full = memory.layer_activations(cfg, 1, 8, False, memory.FULL)
        none = memory.layer_activations(cfg, 1, 8, False, memory.NONE)
        assert 100 * float(full / none) == pytest.approx(share, abs=0.05)


def test_in_flight_layers():
    # 1F1B: p micro-batches of L/p layers (fewer micro-batches: fewer); interleaved: L(1 + (p-1)/(pv))
    assert float(memory.in_flight_layers(96, 8, 1, 64)) == 96
    assert float(memory.in_flight_layers(96, 8, 1, 2)) == 24
    assert float(memory.in_flight_layers(96, 8, 3, 64)) == pytest.approx(96 * (1 + 7 / 24))


def test_gqa_and_gated_widths():
    # Llama-2-70B: Q 8192 + K,V 1024 each + projection input 8192; SwiGLU gate+up 2·28672, SiLU and
    # product 28672 each; all 16-bit: 2·s·b·(...) bytes
    s = LLAMA2_70B.seq_len
    rep, shard, scores = memory.layer_terms(LLAMA2_70B, 1)
    assert float(shard) == 2 * s * (2 * 8192 + 2 * 1024) + 2 * s * (2 * 28672 + 28672) + 2 * s * 28672
    # Llama trains without dropout: no masks, and of the unfused scores only the softmax output (2 bytes)
    assert float(scores) == 2 * 64 * s * s and float(rep) == 8 * s * 8192
    with_dropout = memory.layer_terms(dataclasses.replace(LLAMA2_70B, dropout=0.1), 1)  # Korthikanti's 5 and 10
    assert float(with_dropout[2]) == 5 * 64 * s * s and float(with_dropout[0]) == 10 * s * 8192


def test_optimizer_bytes():
    # Megatron distributed-optimizer table: 18 bytes/parameter, 6 + 12/d sharded
    weights, grads, state, copy = memory.static_bytes(np.array([1.0, 1.0, 1.0]), [False, True, True], [8, 8, 1])
    assert np.allclose(weights + grads + state, [18, 7.5, 18])
    assert np.allclose(weights, 2) and np.allclose(grads, 4) and np.allclose(state, [12, 1.5, 12])
    assert np.allclose(copy, 0)  # fp32 gradients are stepped on in place
    # fp16 gradients: 20 bytes/parameter, 4 + 16/d sharded (the same table), 4 (4/d) of them the fp32
    # copy made at the optimizer step
    weights, grads, state, copy = memory.static_bytes(np.array([1.0, 1.0]), [False, True], [8, 8], grad_bytes=2.0)
    assert np.allclose(weights + grads + state + copy, [20, 6]) and np.allclose(copy, [4, 0.5])


def test_dropout_is_a_workload_option_and_only_a_nonzero_one_stores_masks():
    """``[workload] dropout``: 0 unless a GPT-era preset sets 0.1; Megatron-LM's GPT of the A100 runs
    keeps Korthikanti's two 1-byte masks (10 s·h replicated), a Llama-style model written field by
    field has none (8 s·h) unless it asks for them; a probability of 1 is refused in one line."""
    from optmap.errors import OptmapError
    from optmap.host import load_host
    host = load_host()
    fields = {"kind": "decoder-only", "layers": 2, "d_model": 1024, "heads": 8, "d_ff": 4096, "seq_len": 512,
              "vocab": 1000, "batch": 1, "dtype": "bf16"}
    plain = host.build("workload", "transformer", options=fields).config
    masked = host.build("workload", "transformer", options={**fields, "dropout": 0.1}).config
    assert GPT3_175B.dropout == 0.1 and plain.dropout == 0.0 and masked.dropout == 0.1
    assert float(memory.layer_terms(plain, 1)[0]) == 8 * 512 * 1024
    assert float(memory.layer_terms(masked, 1)[0]) == 10 * 512 * 1024
    with pytest.raises(OptmapError, match="dropout"):
        host.build("workload", "transformer", options={**fields, "dropout": 1.0})
