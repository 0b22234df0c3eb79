"""The held-out runs of today's LLM training (optmap.plugins.llm.heldout) and examples/validate_llm.py.

The data are checked three ways: the layouts are consistent (the GPUs and the batch divide as
Megatron-Core requires), the derived iteration times equal hand computations from the published
tables, and each dense row's two published figures (tokens/s/GPU and model TFLOP/s/GPU) agree
through the source's FLOP count, which catches a mistyped figure or a wrong model configuration.
"""

import json
import sys
import tomllib
from pathlib import Path

import pytest

import optmap
from optmap.host import load_host
from optmap.plugins.llm import heldout, heldout_runs, stages

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))

import validate_llm  # noqa: E402


def _run(label: str) -> heldout.HeldOutRun:
    (run,) = [r for r in heldout_runs.runs() if r.label == label]
    return run


def test_every_row_names_known_things_and_a_consistent_layout():
    runs = heldout_runs.runs()
    assert len(runs) >= 40 and len({r.label for r in runs}) == len(runs)
    for r in runs:
        assert r.source in heldout.SOURCES and r.model in heldout.MODELS, r.label
        assert r.system in heldout.SYSTEMS and r.precision in heldout.PRECISIONS, r.label
        assert r.gpus % (r.tp * r.pp * r.cp) == 0, r.label  # data parallel is a whole number
        assert r.gbs % (r.dp * (r.mbs or 1)) == 0, r.label  # every data-parallel rank runs whole micro-batches
        # Megatron-Core carves EP out of the other ranks: ep · etp divides tp · dp · cp (etp >= 1)
        assert (r.tp * r.dp * r.cp) % r.ep == 0, r.label
        assert r.moe or r.ep == 1, r.label  # dense models have no expert parallelism
    groups = {r.group for r in runs}
    assert groups == set(validate_llm.GROUPS)


@pytest.mark.parametrize("label, seconds", [
    # NeMo 24.07 table: 128 × 4,096 tokens / (1,728 tokens/s/GPU × 64 GPUs) = 524,288 / 110,592
    ("LLAMA2-70B FP8 64 H100 (nemo-24.07)", 4.7407),
    # 2,048 × 2,048 / (825 × 512) = 4,194,304 / 422,400
    ("GPT3-175B FP8 512 H100 (nemo-24.07)", 9.9297),
    # Bridge 25.11 H100: 512 × 8,192 / (292 × 1,024) = 4,194,304 / 299,008
    ("LLAMA3.1-405B FP8-CS 1024 H100 (bridge-25.11)", 14.0274),
    # Bridge 26.02 H100: 8,192 × 4,096 / (1,633 × 256) = 33,554,432 / 418,048
    ("Qwen3-235B-A22B FP8 256 H100 (bridge-26.02)", 80.2645),
    # Megatron-LM's model table, 462B: 3,072 × 4,096 tokens × (12 · 112 · 18,432² · (6 + 4,096/18,432) +
    # 6 · 18,432 · 131,072) FLOP / (459.9e12 × 6,144 GPUs)
    ("GPT-462B BF16 6144 H100 (megatron-lm-2024)", 12.7165),
    # NeMo long sequences, derived from TFLOP/s: 4 × 1,048,576 tokens × 1.68891e12 FLOP/token (32 · 4,096² ·
    # (12 + 12 + 18 · 11,008/4,096 + 12 · 1,048,576/4,096 + 6 · 32,000/(32 · 4,096))) / (536e12 × 1,024 GPUs)
    ("LLAMA2-7B FP8 1024 H100 (nemo-long-24.03)", 12.9063),
    # and at 4K: 1,024 × 4,096 × 4.60849e10 / (768e12 × 4)
    ("LLAMA2-7B FP8 4 H100 (nemo-long-24.03)", 62.9213),
    # NeMo 25.04 long sequences on B200, LLAMA3-8B (GQA 8 of 32, d_ff 14,336, vocab 128,256): 4 × 1,048,576 ×
    # 1.69430e12 FLOP/token (32 · 4,096² · (12 + 12 · 8/32 + 18 · 14,336/4,096 + 12 · 1,048,576/4,096 +
    # 6 · 128,256/(32 · 4,096))) / (1,608e12 × 256 GPUs, TP 4 × CP 16 × DP 4)
    ("LLAMA3-8B FP8 256 B200 (nemo-long-25.04)", 17.2633),
    # Bridge 25.11 GB200, the FP8-MX figure in parentheses: 128 × 8,192 / (29,789 × 8) = 1,048,576 / 238,312
    ("LLAMA3-8B FP8-MX 8 GB200 (bridge-25.11)", 4.4000),
    # Bridge 26.02.01 H100 (26.02's layout again): 1,024 × 4,096 / (9,058 × 16) = 4,194,304 / 144,928
    ("Qwen3-30B-A3B FP8 16 H100 (bridge-26.02.01)", 28.9406),
    # Bridge 26.06 GB200 (no FSDP column): 8,192 × 4,096 / (7,376 × 256) = 33,554,432 / 1,888,256
    ("Qwen3-235B-A22B MXFP8 256 GB200 (bridge-26.06)", 17.7701),
    # NeMo 25.04 GB200, GBS 64 and MBS 1 (the page prints the two swapped; its GA 16 = 64 / (1 × DP 4)):
    # 64 × 65,536 / (2,731 × 256) = 4,194,304 / 699,136
    ("Mixtral-8x22B FP8 256 GB200 (nemo-25.04)", 5.9993),
    # NeMo 25.02 H100, the first row of its DGX-H100 table: 2,048 × 2,048 / (866 × 512) = 4,194,304 / 443,392
    ("GPT3-175B FP8 512 H100 (nemo-25.02)", 9.4596),
])
def test_iteration_time_is_the_published_throughput_by_hand(label, seconds):
    assert _run(label).measured_s == pytest.approx(seconds, abs=5e-5)


def test_data_parallel_size_is_what_tp_pp_cp_leave():
    run = _run("LLAMA3-70B FP8 64 H100 (nemo-24.07)")  # 64 GPUs, TP 4, PP 4, CP 2 → DP 2
    assert run.dp == 2
    run = _run("Qwen3-235B-A22B FP8-CS 256 H100 (bridge-25.11)")  # 256 / (TP 2 · PP 8 · CP 1) = 16
    assert run.dp == 16 and run.ep == 32  # EP 32 (expert TP 1) spans tp · dp · cp = 32 ranks


@pytest.mark.parametrize("run", [r for r in heldout_runs.runs() if not r.moe and r.model_tflops], ids=lambda r: r.label)
def test_published_tokens_and_tflops_agree_through_the_source_flop_count(run):
    """Model FLOPs per token = published TFLOP/s ÷ tokens/s. NeMo 24.07 counts 3 × the forward
    with the full s × s attention (Narayanan et al. Eq. 3 without recomputation, GQA and gated MLP
    included); Megatron-Bridge counts causal attention, half of the two s × s GEMMs. Every dense
    row agrees within 0.2 %: the model configuration and both figures are copied right (and
    ``nemo-long-24.03``'s tokens/s, derived by :func:`.heldout_runs.megatron_flops_per_token` over
    the full square, agree with this count of the model's own configuration: the formula is transcribed right). Except
    26.04.01, whose tokens/s are all multiples of 8 (1,664, 4,224, 328, ...): printed coarser than
    its TFLOP/s, they disagree by up to 2.2 % (heldout.py keeps the tokens/s, as for every source); and
    NeMo 2's pages (``nemo-25.02``, ``nemo-25.04``) for Llama 3.1 405B, whose TFLOP/s carry 1.0 % more FLOPs
    per token than the model's configuration counts (2.65e12; dgxc-benchmarking 25.05's llama3.1 README
    prints the same excess, "2.17E+16" per 8,192-token sequence), while their other rows agree within 0.2 %."""
    cfg = load_host().build("workload", "transformer", options={
        **heldout.MODELS[run.model], "seq_len": run.seq_len, "batch": run.gbs, "dtype": "bf16"}).config
    forward = cfg.flops_fwd()  # per sequence: layers, attention core and logits
    if run.source.startswith("bridge-"):  # NeMo and Megatron-LM (2024) count the full square
        forward -= cfg.layers * 2.0 * cfg.seq_len**2 * cfg.inner  # causal: half of QKᵀ and ·V (4 s² inner)
    per_token = 3.0 * forward / run.seq_len
    coarse = run.source == "bridge-26.04.01"
    assert not coarse or run.tokens_per_gpu % 8 == 0
    nemo2_405b = run.source in ("nemo-25.02", "nemo-25.04") and run.model == "LLAMA3-405B"
    rel = 2.5e-2 if coarse else 1.2e-2 if nemo2_405b else 2e-3
    assert run.model_tflops * 1e12 / run.tokens_per_gpu == pytest.approx(per_token, rel=rel)


def test_runs_outside_the_summary_are_their_tables_with_one_assumption_each():
    """Bridge 25.09's H100 rows (no precision printed) and the ModelZoo's GB200 rows: consistent
    layouts, out of the summary, their times by hand, the recipes of their scripts."""
    outside = heldout_runs.outside()
    labels = {r.label for r in heldout_runs.runs()}
    assert len(outside) == 9 and all(why for _, why in outside)
    for r, _ in outside:
        assert r.label not in labels and r.source in heldout.SOURCES and r.model in heldout.MODELS, r.label
        assert r.gpus % (r.tp * r.pp * r.cp) == 0 and r.gbs % (r.dp * r.mbs) == 0, r.label
        assert (r.tp * r.dp * r.cp) % r.ep == 0, r.label
    runs = {r.label: r for r, _ in outside}
    deepseek = runs["DeepSeekV3 (w/ MTP) FP8-CS 1024 H100 (bridge-25.09)"]
    assert deepseek.measured_s == pytest.approx(8192 * 4096 / (1297 * 1024))  # 25.2645 s
    # run_script.py at cac49dcd7: DeepEP and the overlap for DeepSeek-V3 on H100; the Qwen3 models
    # with the all-to-all dispatcher (token drop at capacity 1) and no overlap
    assert heldout.recipe_options(deepseek) == {"grad_bytes": 2, "fp8_scaling": "current", "moe_dispatcher": "deepep",
                                                "moe_a2a_overlap": True, "expert_tensor_parallel": 1}  # etp: 1
    qwen = runs["Qwen3-235B-A22B FP8-CS 256 H100 (bridge-25.09)"]
    assert heldout.recipe_options(qwen)["moe_dispatcher"] == "alltoall"
    assert heldout.recipe_options(qwen)["moe_a2a_overlap"] is False
    # the ModelZoo's GB200 table: 64 trays of 4 GPUs; 750 TFLOP/s at Megatron-LM's 148.0 GFLOP per token
    # (test_megatron_flop_count_reproduces_the_modelzoo_step_time_rows) = 8,192 × 4,096 × 148.0e9 / (750e12 × 256)
    bf16 = runs["Qwen3-235B-A22B BF16 256 GB200 4K (moe-modelzoo)"]
    assert bf16.gpus == 256 and bf16.measured_s == pytest.approx(8192 * 4096 * 148.0e9 / (750e12 * 256), rel=2e-3)
    dense = [r for r in runs.values() if not r.moe]
    assert len(dense) == 3
    for run in dense:  # the table's two figures agree through Megatron-Bridge's count, as for 25.11's rows
        test_published_tokens_and_tflops_agree_through_the_source_flop_count(run)


def test_the_script_prices_a_what_if_on_runs_outside_the_summary_alone(tmp_path):
    out = tmp_path / "what-if.md"
    assert validate_llm.main(["--match", "DeepSeekV3 (w/ MTP) FP8-CS 1024 H100", "--cost", "moe_a2a_overlap=false",
                              "--out", str(out)]) == 0
    row = [line for line in out.read_text().splitlines() if line.startswith("| DeepSeekV3 (w/ MTP) FP8-CS 1024")]
    assert len(row) == 1 and "no precision printed" in row[0]


def test_the_script_on_two_runs(tmp_path):
    out, js = tmp_path / "page.md", tmp_path / "rows.json"
    labels = ["LLAMA2-7B FP8 8 H100 (nemo-24.07)", "Qwen3-30B-A3B FP8-CS 16 H100 (bridge-25.11)"]
    problems = tmp_path / "problems"
    assert validate_llm.main(["--match", labels[0], "--match", labels[1], "--out", str(out), "--json", str(js),
                              "--problems", str(problems), "--plot", str(tmp_path / "fig.png")]) == 0
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the figure, drawn
    data = json.loads(js.read_text())
    dense, moe = data["rows"]
    assert dense["label"] == labels[0] and moe["label"] == labels[1]
    assert dense["measured_s"] == pytest.approx(128 * 4096 / (16934 * 8))  # 3.870 s
    assert dense["predicted_s"] > 0
    assert dense["status"] == "predicted" or dense["status"].startswith("infeasible in the model: ")
    assert dense["error_percent"] == pytest.approx(100 * (dense["predicted_s"] / dense["measured_s"] - 1))
    assert dense["plan"]["tensor_parallel"] == 1 and dense["plan"]["data_parallel"] == 8  # the pins held
    assert sum(dense["breakdown"].values()) == pytest.approx(dense["predicted_s"], rel=1e-6)
    # the MoE run: predicted once the model has MoE and expert parallelism, else the planner's own error
    assert moe["predicted_s"] is not None or moe["status"].startswith("not yet modelled: ")
    if moe["predicted_s"] is None:
        assert "moe" in moe["status"] or "expert_parallel" in moe["status"]
    h100 = {g["group"]: g for g in data["summary"]}["H100 dense"]
    assert h100["runs"] == 1 and h100["mean_abs_error_percent"] == pytest.approx(abs(dense["error_percent"]))
    # without the recipes' options: NeMo 24.07 states none (the same prediction); the Bridge 25.11 run
    # loses its bf16 gradients and all-to-all overlap, so its prediction moves
    plain = {g["group"]: g for g in data["summary_without_recipe_options"]}
    assert plain["H100 dense"]["mean_abs_error_percent"] == pytest.approx(h100["mean_abs_error_percent"])
    assert moe["recipe"] == {"grad_bytes": 2, "fp8_scaling": "current", "moe_dispatcher": "alltoall",
                             "moe_a2a_overlap": True, "expert_tensor_parallel": 1}
    assert plain["H100 MoE"]["mean_abs_error_percent"] != pytest.approx(abs(moe["error_percent"]))
    # each problem file is the run's problem with its whole published layout pinned
    files = sorted(problems.glob("*.toml"))
    assert [f.name for f in files] == ["llama2-7b-fp8-8-h100-nemo-24.07.toml",
                                       "qwen3-30b-a3b-fp8-cs-16-h100-bridge-25.11.toml"]
    for run, path in zip((_run(labels[0]), _run(labels[1])), files):
        table = tomllib.loads(path.read_text())
        table.pop("description")
        assert table == validate_llm.spec(run, validate_llm.layout(run))
    assert tomllib.loads(files[0].read_text())["fix"] == {
        "tensor_parallel": 1, "pipeline_parallel": 1, "context_parallel": 1, "expert_parallel": 1,
        "data_parallel": 8, "microbatch_size": 1, "interleaving": 1,  # NeMo 24.07: TP 1, PP 1, CP 1, VP 1 on 8 GPUs
        "fsdp": False}  # NeMo 1 without a config's fsdp: True
    text = out.read_text()
    assert labels[0] in text and "{{" not in text and "Nothing on this page was fitted" in text


def test_a_recipes_allowed_settings_are_a_toml_array_in_the_problem_file():
    """GPT-OSS 26.02's recipe allows the recompute setting norm_act only: written as ["norm_act"]."""
    table = tomllib.loads(validate_llm.problem_toml(_run("GPT-OSS-120B BF16 64 H100 (bridge-26.02)")))
    assert table["cost"]["recompute"] == ["norm_act"]


def test_no_matching_run_is_one_line_and_exit_2(capsys, tmp_path):
    assert validate_llm.main(["--match", "no-such-model", "--out", str(tmp_path / "x.md")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no held-out run matches") and err.count("\n") == 1


def test_long_sequence_rows_leave_micro_batch_and_interleaving_to_the_planner():
    """NeMo's long-sequence table prints no micro-batch and no interleaving: neither is pinned, and
    the 8K row's PP 2 may interleave (its [fix] pins TP 1, PP 2, CP 1, DP 4 and NeMo 1's no-FSDP only)."""
    run = _run("LLAMA2-7B FP8 8 H100 (nemo-long-24.03)")
    assert (run.mbs, run.vp, run.pp, run.dp) == (None, None, 2, 4)
    assert validate_llm.layout(run) == {"tensor_parallel": 1, "pipeline_parallel": 2, "context_parallel": 1,
                                        "expert_parallel": 1, "data_parallel": 4, "fsdp": False}
    assert _run("LLAMA2-7B FP8 16 H100 (nemo-long-24.03)").vp == 1  # PP 1: nothing to interleave


def test_modelzoo_rows_are_their_published_step_times_and_recipes():
    """Megatron-MoE-ModelZoo prints step times: 2,048 × 4,096 tokens / (19.7 s × 256 GPUs) =
    1,663.4 tokens/s/GPU. Its dispatcher, overlap and recomputation are the row's own recipe, and its
    fp32 gradients (no --grad-reduce-in-bf16 in its scripts); the Megatron-Bridge rules (bf16
    gradients, HybridEP, overlap) do not reach it."""
    run = _run("Qwen3-235B-A22B BF16 256 H100 EP32 (moe-modelzoo)")
    assert run.measured_s == pytest.approx(19.7) and run.tokens_per_gpu == pytest.approx(1663.35, abs=0.01)
    # no --tp-comm-overlap nor --grad-reduce-in-bf16 anywhere; --expert-tensor-parallel-size 1 in every
    # model config; its table's recompute column "norm, act": --recompute-modules layernorm moe_act
    off = {"tp_comm_overlap": False, "grad_bytes": 4, "expert_tensor_parallel": 1}
    norm_act = {"recompute": ("norm_act",)}
    assert heldout.recipe_options(run) == {**off, "moe_dispatcher": "deepep", **norm_act}
    overlap = _run("Qwen3-235B-A22B BF16 256 H100 EP32 overlap (moe-modelzoo)")
    assert heldout.recipe_options(overlap) == {**off, "moe_dispatcher": "deepep", "moe_a2a_overlap": True, **norm_act}
    # "A2A" in its table: Megatron-Core's alltoall dispatcher, named (the planner's default is the flex one)
    assert heldout.recipe_options(_run("Qwen3-235B-A22B BF16 256 H100 EP8 PP32 (moe-modelzoo)")) == {
        **off, "moe_dispatcher": "alltoall", **norm_act}
    # "full" beside Megatron-FSDP, a blank for TP 4 × EP 8, "layernorm moe" in the long-context command
    for label, setting in (("EP8 FSDP", "full"), ("TP4 EP8", "none"), ("128K", "moe")):
        assert heldout.recipe_options(_run(f"Qwen3-235B-A22B BF16 256 H100 {label} (moe-modelzoo)"))["recompute"] == (
            setting,)


def test_gpt_oss_bf16_recomputes_its_norms_and_activation_once_bridge_applies_the_modules():
    """Megatron-Bridge's GPT-OSS BF16 configs name recompute_modules layernorm, moe_act at every commit
    read; the granularity that makes them act came on 2025-12-10 (c9dd05869): 26.02 on, not 25.11."""
    assert heldout.recipe_options(_run("GPT-OSS-120B BF16 64 H100 (bridge-26.02)"))["recompute"] == ("norm_act",)
    assert heldout.recipe_options(_run("GPT-OSS-120B BF16 64 GB200 (bridge-26.04.01)"))["recompute"] == ("norm_act",)
    assert "recompute" not in heldout.recipe_options(_run("GPT-OSS-120B BF16 64 B200 (bridge-25.11)"))
    assert "recompute" not in heldout.recipe_options(_run("GPT-OSS-120B MXFP8 64 GB200 (bridge-26.06)"))


def test_deepseek_rows_recompute_what_their_scripts_name():
    """dgxc 25.05's launch.sh: RM='mla_up_proj' on H100, 'core_attn' (selective) on GB200; Megatron-Bridge's
    B200 and GB200 BF16 configs name mla_up_proj at both commits read, its GB200 FP8 layout neither."""
    recompute = lambda label: heldout.recipe_options(_run(label)).get("recompute")  # noqa: E731
    assert recompute("DeepSeekV3 (w/ MTP) BF16 1024 H100 (dgxc-25.05)") == ("mla_up_proj",)
    assert recompute("DeepSeekV3 (w/ MTP) BF16 128 GB200 (dgxc-25.05)") == ("selective",)
    assert recompute("DeepSeekV3 (w/ MTP) FP8-MX 256 B200 (bridge-25.11)") == ("mla_up_proj",)
    assert recompute("DeepSeekV3 (w/o MTP) BF16 256 GB200 (bridge-25.11)") == ("mla_up_proj",)
    assert recompute("DeepSeekV3 (w/o MTP) FP8-MX 256 GB200 (bridge-25.11)") is None


def test_megatron_flop_count_reproduces_the_modelzoo_step_time_rows():
    """The long-context rows give TFLOP/s only; their tokens/s come from Megatron-LM's FLOP count.
    The step-time rows print both, so they check the transcription: 245 TFLOP/s × 19.7 s × 256 GPUs /
    (2,048 × 4,096) = 147.3 GFLOP per token, and 200 × 24.2, 276 × 17.6, 167 × 29.0 the same to
    within the tables' rounding; the count gives 94 · (6 · (4,096 · 9,216 + 8,192 · 4,096) + 6 · 8,192
    · 4,096 + 18 · 4,096 · 1,536 · 8) + 6 · 4,096 · 151,936 = 148.03 GFLOP."""
    count = heldout_runs.megatron_flops_per_token(94, 4096, 64, 4, 128, 1536, 151936, 4096, top_k=8)
    assert count == pytest.approx(148.035e9, rel=1e-4)
    for tflops, step in ((245, 19.7), (200, 24.2), (276, 17.6), (167, 29.0)):
        assert tflops * 1e12 * step * 256 / (2048 * 4096) == pytest.approx(count, rel=0.012)
    long = _run("Qwen3-235B-A22B BF16 256 H100 128K (moe-modelzoo)")  # 389 TFLOP/s at 131,072 tokens
    per_token = heldout_runs.megatron_flops_per_token(94, 4096, 64, 4, 128, 1536, 151936, 131072, top_k=8)
    assert long.measured_s == pytest.approx(256 * 131072 * per_token / (389e12 * 256))
    assert (long.cp, long.dp, long.tp, long.pp) == (8, 1, 4, 8)


def test_the_published_megatron_fsdp_layout_with_experts_fits():
    """ModelZoo's Qwen3-235B-A22B with TP 2, EP 8, PP 1, DP 128, micro-batch 4 and Megatron-FSDP ran
    (17.6 s). Its 227B routed-expert parameters are 28B per EP rank: they fit only sharded over the
    32-way expert data parallelism as Megatron-FSDP shards them (plugins/llm/sharding.py)."""
    row = validate_llm.predict(_run("Qwen3-235B-A22B BF16 256 H100 EP8 FSDP (moe-modelzoo)"))
    assert row["feasible"] and row["plan"]["fsdp"] and row["memory_gib"] < 78


def test_llama_405b_bf16_on_512_h100s_fits_without_recomputation_with_bf16_gradients():
    """dgxc 25.05 ran Llama 3.1 405B in BF16 on 512 H100s (TP 8, PP 8, VP 8, CP 2, DP 4, micro-batch 1)
    without recomputation (NeMo's CSV: recompute_layers 0), its gradients in bf16 (NeMo's
    llama31_405b.py pretrain_performance_optimizations: grad_reduce_in_fp32 = False). By hand, a middle
    stage (16 layers of 3,187,703,808 parameters over TP 8 = 6,375,407,616 per GPU): weights and
    gradients 2 bytes each, Adam state 12 bytes over DP × CP = 8, and 8.625 micro-batches in flight
    ((p·v + p - 1 - 2)/v) of 16 layers of 266,600,448 bytes (4,096 local tokens: 8 h bytes of LayerNorm
    inputs and outputs over TP, then 2·(q + k + v) + 2·q + 2·2·d_ff + 2·d_ff bytes = 1,593,835,520 over TP,
    and the fp32 log-sum-exp): 71,855,603,712 bytes = 66.9 GiB, under 78. With fp32 gradients it
    would need 78.8 GiB and recompute."""
    row = validate_llm.predict(_run("LLAMA3.1-405B BF16 512 H100 (dgxc-25.05)"))
    params = 16 * 3_187_703_808 // 8
    activations = 8.625 * 16 * (8 * 4096 * 16384 / 8 + 1_593_835_520 / 8 + 4 * 128 * 4096 / 8)
    assert row["plan"]["recompute"] == "none" and row["feasible"]
    assert row["memory_gib"] * 2**30 == pytest.approx(2 * params + 2 * params + 12 * params / 8 + activations)


def test_without_the_recipe_the_planner_chooses_bf16_gradients_for_llama_405b():
    """The issue's problem file as written (no recipe options): gradient precision is the planner's
    decision (grad_reduce_in_fp32), so it finds what NeMo's recipe chose, 16-bit gradients and no
    recomputation (66.9 GiB by hand above), where fp32 gradients need 78.8 GiB and recomputation."""
    run = _run("LLAMA3.1-405B BF16 512 H100 (dgxc-25.05)")
    row = validate_llm.predict(run, recipe=False)
    assert row["plan"]["grad_reduce_in_fp32"] is False and row["plan"]["recompute"] == "none"
    fp32 = validate_llm.predict(run, recipe=False, extra={"grad_bytes": 4})
    assert fp32["plan"]["recompute"] != "none" and fp32["predicted_s"] > row["predicted_s"]


def test_megatron_lm_table_models_have_its_parameter_counts():
    """The README's model sizes (two significant digits: within 3.5 %; "1.7B" counts 1.754B), from the
    workload built with untied output embeddings (the sizes need them: tied, 177B would be 175.6B)."""
    host = load_host()
    for size in ("1.7B", "7.1B", "16B", "32B", "70B", "119B", "177B", "314B", "462B"):
        cfg = host.build("workload", "transformer", options={**heldout.MODELS[f"GPT-{size}"], "seq_len": 4096,
                                                             "batch": 8, "dtype": "bf16"}).config
        assert cfg.params == pytest.approx(float(size[:-1]) * 1e9, rel=0.035), size


def test_new_models_have_their_published_parameter_counts():
    """Grok-1: 314B parameters (xAI's model card; NeMo's config with the Llama 3 tokenizer, 128,256
    rows, where Grok's own has 131,072: within 1 %); Nemotron-4 15B: 3.2B embedding and 12.5B
    non-embedding parameters (Parmar et al. 2024, §2)."""
    host = load_host()

    def params(name):
        return host.build("workload", "transformer", options={**heldout.MODELS[name], "seq_len": 4096,
                                                             "batch": 8, "dtype": "bf16"}).config.params
    assert params("Grok1-314B") == pytest.approx(314e9, rel=0.01)
    assert params("Nemotron4-15B") == pytest.approx(15.7e9, rel=0.01)


def test_dgxc_rows_are_their_printed_step_times_and_recipes():
    """dgxc-benchmarking prints the step time itself; tokens/s/GPU = GBS × sequence / (step × GPUs)
    recovers it. Grok-1 on 512 H100s (grok1/README.md, 25.05): GBS 2 × 512, 8,192 tokens, 13.433 s;
    its recipe (NeMo's pretrain_grok1_314b.py): bf16 gradients, the all-to-all dispatcher; launch.sh: ET=1."""
    grok = _run("Grok1-314B FP8 512 H100 (dgxc-25.05)")
    assert grok.tokens_per_gpu == pytest.approx(1024 * 8192 / (13.433 * 512)) and grok.measured_s == pytest.approx(13.433)
    assert (grok.dp, grok.ep, grok.group) == (8, 8, "H100 MoE")  # 512 / (TP 4 · PP 8 · CP 2)
    assert heldout.recipe_options(grok) == {"grad_bytes": 2, "moe_dispatcher": "alltoall", "expert_tensor_parallel": 1}
    # GB200: expert tensor parallelism 4 (launch.sh ET=4); Llama 3.1 8B in either precision: bf16 gradients
    # (NeMo's llama3_8b.py pretrain_performance_optimizations); DeepSeek-V3: no performance mode, fp32
    assert heldout.recipe_options(_run("Grok1-314B BF16 128 GB200 (dgxc-25.05)"))["expert_tensor_parallel"] == 4
    assert heldout.recipe_options(_run("LLAMA3.1-8B BF16 8 H100 (dgxc-25.04)")) == {"grad_bytes": 2}
    assert heldout.recipe_options(_run("LLAMA3.1-8B FP8 8 H100 (dgxc-25.04)")) == {"grad_bytes": 2}
    assert heldout.recipe_options(_run("DeepSeekV3 (w/ MTP) BF16 512 H100 (dgxc-25.05)"))["grad_bytes"] == 4
    # DeepSeek-V3 ran NeMo's pretrain_recipe() default, use_mtp=True (one prediction module), over
    # stages of 64/PP - 1 layers first and 64/PP - 2 last (pretrain_deepseek_v3.py): 3, 4 × 14, 2 for PP 16
    deepseek = _run("DeepSeekV3 (w/ MTP) BF16 1024 H100 (dgxc-25.05)")
    assert heldout.MODELS[deepseek.model]["mtp_layers"] == 1 and deepseek.pp == 16
    priced = optmap.build_problem(validate_llm.spec(deepseek, validate_llm.layout(deepseek))).cost_model
    split = stages.split(61, deepseek.pp, 1, priced.options.uneven_stages)  # the pinned PP 16 admits "layout"
    assert (split.first_device, split.middle_device, split.last_device) == (64 // 16 - 1, 64 // 16, 64 // 16 - 2)
    # no FSDP: use_mcore_fsdp 0 in NeMo's model_configs_*.csv for every pre-training row read
    assert {r.fsdp for r in heldout_runs.runs() if r.source.startswith("dgxc-")} == {0}
    # the strong-scaling table: one batch of 512 over 128 and 512 GB200s
    strong = _run("Nemotron-340B FP8 512 GB200 GBS 512 (dgxc-25.05)")
    assert (strong.gbs, strong.measured_s) == (512, pytest.approx(5.668))


def test_by_dispatcher_splits_the_moe_runs_by_their_recipes_dispatcher_and_overlap():
    """The page's dispatcher table: mean signed and mean |error| per dispatcher the recipe names
    (auto where none), overlap apart; dense runs left out. Rows made by hand."""
    def row(model, group, error, **recipe):
        return {"model": model, "group": group, "error_percent": error, "recipe": recipe}

    rows = [row("Qwen3-30B-A3B", "H100 MoE", -10.0, moe_dispatcher="alltoall"),
            row("Qwen3-30B-A3B", "H100 MoE", -30.0, moe_dispatcher="alltoall"),
            row("Qwen3-30B-A3B", "H100 MoE", 20.0, moe_dispatcher="alltoall", moe_a2a_overlap=True),
            row("GPT-OSS-120B", "B200 / GB200", 5.0, moe_dispatcher="hybridep"),
            row("Grok1-314B", "H100 MoE", -4.0),  # no dispatcher named: auto
            row("LLAMA3-70B", "H100 dense", -50.0, moe_dispatcher="alltoall")]  # dense: left out
    lines = validate_llm.by_dispatcher(rows).splitlines()
    assert lines[2:] == ["| `alltoall` | -20.0 % / 20.0 % (2) |  |",
                         "| `alltoall` with the overlap | +20.0 % / 20.0 % (1) |  |",
                         "| `auto` | -4.0 % / 4.0 % (1) |  |",
                         "| `hybridep` |  | +5.0 % / 5.0 % (1) |"]
