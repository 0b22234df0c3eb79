"""NeMo 2's performance summary pages as held-out rows (optmap.plugins.llm.heldout_nemo2)."""

from optmap.plugins.llm import heldout, heldout_runs


def test_nemo2_rows_keep_their_pages_layouts_and_their_scripts_recipes():
    """NeMo 25.02 (B200) and 25.04 (GB200) performance pages: each row's GA column equals GBS / (MBS × DP),
    which also settles Mixtral-8x22B's swapped GBS / MBS (GA 16 = 64 / (1 × 4)); bf16 gradients (the
    scripts' FP8 path), FP8 delayed scaling in 25.02 and current scaling in 25.04 (its page says so);
    Mixtral on the all-to-all dispatcher; Llama 3 70B's "FSDP 1" on GB200 is Megatron-FSDP over its 64
    data-parallel ranks with 16-bit parameters gathered (v2.3.0's set_primary_perf_configs)."""
    ga = {("nemo-25.02", "GPT3-175B", "DGX-B200"): 32, ("nemo-25.02", "LLAMA3-70B", "DGX-B200"): 32,
          ("nemo-25.02", "LLAMA3-405B", "DGX-B200"): 32, ("nemo-25.02", "Nemotron-340B", "DGX-B200"): 8,
          ("nemo-25.02", "Mixtral-8x22B", "DGX-B200"): 16, ("nemo-25.02", "GPT3-175B", "DGX-H100"): 64,
          ("nemo-25.04", "GPT3-175B", "DGX-GB200"): 16, ("nemo-25.04", "LLAMA3-70B", "DGX-GB200"): 2,
          ("nemo-25.04", "Mixtral-8x7B", "DGX-GB200"): 2, ("nemo-25.04", "Mixtral-8x22B", "DGX-GB200"): 16}
    rows = {(r.source, r.model, r.system): r for r in heldout_runs.runs() if r.source in ("nemo-25.02", "nemo-25.04")}
    assert len(rows) == 17
    for key, accumulation in ga.items():
        run = rows[key]
        assert run.gbs == accumulation * run.mbs * run.dp
    assert heldout.recipe_options(rows["nemo-25.02", "LLAMA3-8B", "DGX-B200"]) == {"grad_bytes": 2}
    assert heldout.recipe_options(rows["nemo-25.04", "LLAMA3-8B", "DGX-GB200"]) == {"grad_bytes": 2,
                                                                                    "fp8_scaling": "current"}
    assert heldout.recipe_options(rows["nemo-25.02", "Mixtral-8x22B", "DGX-B200"]) == {
        "grad_bytes": 2, "moe_dispatcher": "alltoall", "expert_tensor_parallel": 1}
    fsdp = rows["nemo-25.04", "LLAMA3-70B", "DGX-GB200"]
    assert (fsdp.fsdp, fsdp.dp) == (64, 64) and heldout.recipe_options(fsdp)["fp8_param_gather"] is False
