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


def test_explicit_layout_spreads_the_slots_by_hand():
    # DeepSeek-V3's 61 layers + embedding + loss = 63 slots. Pipeline 4 × interleaving 4 = 16 chunks of
    # 63 // 16 = 3 slots, the first 63 mod 16 = 15 chunks one more. Device 0 holds chunks 0, 4, 8, 12
    # (4 slots each, one the embedding: 15 layers), device 1 chunks 1, 5, 9, 13 (16 layers), device 3
    # chunks 3, 7, 11, 15 (4 + 4 + 4 + 3, one the loss: 14): 15 + 16 + 16 + 14 = 61
    assert counts(stages.split(61, 4, 4, "layout")) == (15, 16, 14)
    assert not bool(stages.split(61, 4, 4).valid) and bool(stages.split(61, 4, 4, "layout").valid)
    assert stages.layout_string(61, 4, 4) == "Ettt|" + "tttt|" * 14 + "ttL"
    # pipeline 8 × interleaving 4: 32 chunks of 1 slot, 31 of them 2: 7, 8, 6 layers
    assert counts(stages.split(61, 8, 4, "layout")) == (7, 8, 6)
    assert stages.layout_string(61, 8, 4) == "Et|" + "tt|" * 30 + "L"
    # where chunks divide the layers (+ 2) the layout is the even or account-for split, written as flags
    assert counts(stages.split(61, 3, 1, "layout")) == counts(stages.split(61, 3, 1)) == (20, 21, 20)
    assert stages.layout_string(61, 3, 1) is None and stages.layout_string(61, 1, 1) is None


def test_explicit_layout_conserves_the_layers_brute_force():
    # every p, v with p·v <= L + 2: enumerate the chunks one by one (slot counts as the docstring says)
    # and compare the first, the busiest middle and the last device with the vectorised split
    for L in range(2, 30):
        for p in range(2, L + 3):
            for v in range(1, (L + 2) // p + 1):
                C = p * v
                base, rem = divmod(L + 2, C)
                slots = [base + (c < rem) for c in range(C)]
                device = [sum(slots[d + j * p] for j in range(v)) for d in range(p)]
                device[0] -= 1  # the embedding
                device[-1] -= 1  # the loss
                lay = stages.split(L, p, v, "layout")
                assert bool(lay.valid)
                if L % C and (L + 2) % C:
                    middle = max(device[1:-1]) if p > 2 else float(lay.middle_device)
                    assert (float(lay.first_device), float(lay.last_device)) == (device[0], device[-1])
                    assert float(lay.middle_device) == middle and sum(device) == L
