"""Uneven pipeline stages (Megatron-Core's first / last stage layer counts): split, validity, pricing."""

import numpy as np
import pytest

from optmap.plugins.llm import stages, timing
from optmap.problem import build_problem


def llama405b(gpus=1024, **cost):
    """Llama 3.1 405B in bf16 on DGX H100 nodes (the issue's problem shape)."""
    return build_problem({
        "workload": {"model": "transformer", "preset": "llama3.1-405b", "batch": 512, "dtype": "bf16"},
        "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": gpus}]},
        "cost": {"model": "megatron-3d", **cost},
        "search": {"engine": "megatron-3d"}})


def counts(split):
    return tuple(float(x) for x in (split.first_device, split.middle_device, split.last_device))


def test_llama3_405b_split_of_its_paper_and_of_nemo():
    # Llama Team 2024 §3.3.2: with 16 stages "we reduce one Transformer layer each from the first
    # and the last stages": 126 = 7 + 14 × 8 + 7
    assert counts(stages.split(126, 16, 1)) == (7, 8, 7)
    # 8 stages: 126 + embedding + loss = 128 = 8 × 16, so 15 + 6 × 16 + 15
    assert counts(stages.split(126, 8, 1)) == (15, 16, 15)
    # NeMo's 405B recipe, p = 8 with 8 virtual stages (account-for split): chunks 1, 2 × 62, 1
    lay = stages.split(126, 8, 8)
    assert (float(lay.first_chunk), float(lay.middle_chunk), float(lay.last_chunk)) == (1, 2, 1)
    assert counts(lay) == (15, 16, 15)


def test_even_splits_unchanged_and_which_sizes_each_mode_allows():
    assert counts(stages.split(96, 8, 1)) == (12, 12, 12)
    assert not bool(stages.split(126, 8, 1, "never").valid)
    assert not bool(stages.split(126, 5, 1).valid) and bool(stages.split(126, 5, 1, "any").valid)
    # balanced: divisors of 126 and of 128 (by hand), up to 64
    assert stages.sizes(126, 64, "balanced") == (1, 2, 3, 4, 6, 7, 8, 9, 14, 16, 18, 21, 32, 42, 63, 64)
    assert stages.sizes(126, 64, "never") == (1, 2, 3, 6, 7, 9, 14, 18, 21, 42, 63)
    assert stages.sizes(126, 64, "any") == tuple(range(1, 65))
    assert counts(stages.split(126, 64, 1)) == (1, 2, 1)  # 128 / 64 = 2: 1 + 62 × 2 + 1 = 126


def test_every_pipeline_size_up_to_the_layers_is_a_valid_split():
    # brute force over small models: every chunk holds >= 1 layer and the layers add up
    for L in range(2, 40):
        for p in range(1, L + 1):
            lay = stages.split(L, p, 1, "any")
            assert bool(lay.valid)
            middle = float(lay.middle_device) if p > 2 else 0.0
            total = float(lay.first_device) + (p - 2) * middle + float(lay.last_device) if p > 1 \
                else float(lay.first_device)
            assert total == L and float(lay.first_device) >= 1 and float(lay.last_device) >= 1
        assert not bool(stages.split(L, L + 1, 1, "any").valid)


def test_llama405b_takes_pipeline_8_and_prices_its_busiest_stage():
    p = llama405b()
    m = p.cost_model
    plan = {"tensor_parallel": 8, "pipeline_parallel": 8, "data_parallel": 16, "microbatch_size": 1,
            "interleaving": 1, "recompute": "none", "sequence_parallel": True, "optimizer_sharding": True,
            "dp_overlap": True}
    report = m.evaluate(m.space.mapping(plan))
    assert report.plan["layers_first_stage"] == 15 and report.plan["layers_per_stage"] == 16
    # the forward part is the busiest device's layers × one layer's forward, per micro-batch
    lt = timing.layer_compute(m.config, m.device, 1, 8, True)
    # a middle stage (16 layers) is the busiest: the last stage's logits GEMM (2·s·h·V = 4.2 TFLOP
    # per sample forward) is under one layer (2·s·h·(2h + 2·1024 + 3·53248) + 4·s²·h = 6.6 TFLOP)
    forward = next(r["seconds"] for r in report.tables["time_breakdown"] if r["part"] == "forward")
    assert forward / (512 / 16 * float(lt.forward)) == pytest.approx(16.0)
    old = llama405b(uneven_stages="never").cost_model
    assert 8 not in old.space.variables[1].choices  # Megatron-LM's old rule: divisors of 126 only


def test_uneven_split_beats_no_split_for_the_same_gpus():
    # 126 layers: p = 8 (uneven) must be cheaper per iteration than p = 7 (even, 18 layers each) on
    # the same data parallel size: its busiest device holds 16 layers instead of 18
    m = llama405b().cost_model
    base = {"tensor_parallel": 8, "data_parallel": 16, "microbatch_size": 1, "interleaving": 1,
            "recompute": "full", "sequence_parallel": True, "optimizer_sharding": True, "dp_overlap": True}
    t8 = m.evaluate(m.space.mapping({**base, "pipeline_parallel": 8})).metrics["time"]
    t7 = m.evaluate(m.space.mapping({**base, "pipeline_parallel": 7})).metrics["time"]
    assert t8 < t7


def test_chunks_of_embedding_or_loss_alone():
    # Megatron-Bridge runs Llama 3.1 405B (126 layers) with p = 16, v = 8: 128 chunks = 126 + 2, so
    # with the embedding and the loss counted as layers every chunk holds one, the first the
    # embedding alone and the last the loss alone; a first device then holds 0 + 7 layers, a middle one 8
    lay = stages.split(126, 16, 8)
    assert bool(lay.valid)
    assert (float(lay.first_chunk), float(lay.middle_chunk), float(lay.last_chunk)) == (0.0, 1.0, 0.0)
    assert (float(lay.first_device), float(lay.middle_device), float(lay.last_device)) == (7.0, 8.0, 7.0)
