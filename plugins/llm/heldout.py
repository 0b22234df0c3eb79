"""Held-out measured runs of today's LLM training (issue 25, "validation that is not self-fulfilling").

NOTHING in this module is fitted, and nothing may be: no constant of the ``megatron-3d`` model is
chosen to match these runs (the constants are fitted on the 2021-2022 Megatron-LM A100 runs of
:mod:`.published` and on ``shared/measurements`` only). They are the check, predicted by
``examples/validate_llm.py`` and reported in ``docs/reproductions/llm-today.md``.

Every row is copied as published: the model, the system, the precision, the GPU count, the global
batch (GBS), the micro-batch (MBS), the sequence length and the layout (TP, PP, CP, VP, EP and
FSDP where the table has them), and the measured tokens per second per GPU (and the model
TFLOP/s per GPU, kept for reference). The iteration time is derived from them, not published:

    iteration time = GBS × sequence length / (tokens/s/GPU × GPUs)

and the data-parallel size is the rest of the GPUs, GPUs / (TP × PP × CP), as Megatron-Core
counts it (expert parallelism is carved out of the other ranks, not added: Megatron-Core's MoE
parallel folding needs EP × expert-TP to divide TP × DP × CP; the Qwen3-235B H100 runs, TP 2,
DP 16, EP 32, need expert-TP 1 and the folding over TP). A table's
"VP 1" or "n/a" is no interleaving; "FSDP 0" is DDP; FSDP > 0 (a sharding group size) is
Megatron-FSDP; a table without an FSDP column leaves it unstated (not pinned).

Sources (each row names its own):

* ``nemo-24.07``: NVIDIA NeMo Framework performance summary, container NeMo 24.07, DGX-H100, FP8
  (github.com/NVIDIA/NeMo ``docs/source/performance/performance_summary.md`` at commit
  8e3d65dcfe, "24.07 perf numbers", 2024-09-09; the same figures as the NeMo 24.09 user guide's
  performance summary page). No EP column (dense models) and no FSDP column.
* ``bridge-25.11`` and ``bridge-26.02``: Megatron-Bridge performance summary archive, sections
  "25.11 NeMo Container" and "26.02 NeMo Container" (github.com/NVIDIA-NeMo/Megatron-Bridge
  ``docs/performance-summary-archive.md`` at commit 0a25f911b2; docs.nvidia.com/nemo/megatron-bridge
  ``performance-summary-archive``). Precision FP8-CS (per-tensor current scaling: ``fp8``), FP8-MX
  (MXFP8: ``mxfp8``) or BF16; a value in parentheses is the same layout at another precision and
  is its own row here. MoE runs "force-balance the token distribution among experts", dropless.
* ``bridge-26.02.01``, ``bridge-26.04``, ``bridge-26.04.01``, ``bridge-26.06``, ``bridge-26.06.01``
  and ``bridge-26.08``: the same archive and the current page (``docs/performance-summary.md``,
  26.08) at commit 067f987df0 (2026-08-22). Precision "FP8" is per-tensor current scaling as in
  26.02. Every DGX-H100, DGX-B200 and DGX-GB200 row of a model above is here; 26.06 and later
  print no FSDP column. They repeat many layouts of 26.02 on newer software, so the same hardware
  and layout is measured several times (Qwen3-30B-A3B on 16 H100s, PP 2 × VP 12 × EP 8: 5,113
  tokens/s/GPU in 26.02, 9,058 in 26.02.01). 26.04.01 prints every tokens/s as a multiple of 8,
  coarser than its TFLOP/s (the two disagree by up to 2.2 % through the FLOP count); the tokens/s
  are kept, as for every source.

* ``nemo-long-24.03``: NeMo's long-sequence table, LLAMA2-7B FP8 on DGX-H100, container NeMo
  24.03.01, sequences of 4K to 1M tokens with context parallelism (github.com/NVIDIA/NeMo
  ``docs/source/performance/performance_long_sequence.md`` at commit a2c4cc8ee6). It prints TP,
  PP, DP, CP and the model TFLOP/s per GPU, not tokens/s and not the micro-batch or interleaving
  (``None``: the planner chooses them). Its tokens/s are derived through NeMo's own FLOP count
  (:func:`nemo_flops_per_token`, the count NeMo printed until its causal discount of 2025-08), the
  count every ``nemo-24.07`` row obeys within 0.1 % where both figures are published.

Left out, with the reason: the DGX-B200 table of the same page (its TP × PP × DP × CP is a
quarter of its GPU count in every row, so the layout cannot be read); the Llama 3 paper's Table 4 gives TFLOP/s per GPU without the FLOP count
either, on Meta's RoCE cluster rather than DGX; the DeepSeek-V3 tables of 26.02 to 26.08 (they do
not say whether multi-token prediction ran), 25.11's H100 GPT-OSS row (its gradient accumulation
2 contradicts its PP 4: 512 / (16 × 4) = 8), Nemotron 3 (hybrid Mamba layers), Kimi K2 (the Muon optimizer) and DeepSeek-V4, which have no
``transformer`` workload form here; the Bridge 25.09 section states no precision; GB300 / B300 /
NVFP4 rows have no system or recipe here. The Bridge current page's H100 Qwen3-235B row of 25.11
is garbled (a missing GBS); the archive's is used.

Model configurations (workload fields) come from NVIDIA NeMo's model configs
(``nemo/collections/llm/gpt/model/{base,llama,nemotron,qwen3}.py``) and the vocabularies of the
performance scripts' NullTokenizer (``scripts/performance/llm/pretrain_*.py``: GPT-3 51,200,
Llama 2 32,000, Llama 3 128,256, Nemotron 256,000; Qwen3: its config's 151,936), cited per model.
"""

from __future__ import annotations

from dataclasses import dataclass

_BRIDGE_AUGUST_2026 = "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/067f987df03b8355b03192d88d70f1709fedf51a"
SOURCES = {
    "nemo-24.07": ("NVIDIA NeMo performance summary, NeMo 24.07 container, DGX-H100 FP8 pre-training",
                   "https://github.com/NVIDIA/NeMo/blob/8e3d65dcfe3504689bfc5b6e67d502780aacad41/docs/source/"
                   "performance/performance_summary.md"),
    "nemo-long-24.03": ("NVIDIA NeMo long-sequence performance, NeMo 24.03.01 container, DGX-H100 FP8 LLAMA2-7B "
                        "with context parallelism", "https://github.com/NVIDIA/NeMo/blob/"
                        "a2c4cc8ee64eb98d83684fc616dd0225c25bdfa1/docs/source/performance/performance_long_sequence.md"),
    "bridge-25.11": ("Megatron-Bridge performance summary archive, 25.11 NeMo container, pre-training",
                     "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/0a25f911b2ed6c6905a539504fdb8e5b40e3438b/"
                     "docs/performance-summary-archive.md"),
    "bridge-26.02": ("Megatron-Bridge performance summary archive, 26.02 NeMo container, pre-training",
                     "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/0a25f911b2ed6c6905a539504fdb8e5b40e3438b/"
                     "docs/performance-summary-archive.md"),
    **{f"bridge-{c}": (f"Megatron-Bridge performance summary{' archive' if c != '26.08' else ''}, {c} NeMo container, "
                       f"pre-training", f"{_BRIDGE_AUGUST_2026}/docs/performance-summary"
                       f"{'-archive' if c != '26.08' else ''}.md")
       for c in ("26.02.01", "26.04", "26.04.01", "26.06", "26.06.01", "26.08")},
}

# the published system names → (optmap topology, accelerator)
SYSTEMS = {"DGX-H100": ("dgx-h100", "h100-sxm"), "DGX-B200": ("dgx-b200", "b200"),
           "DGX-GB200": ("gb200-nvl72", "gb200")}
# the published precisions → megatron-3d recipes (plugins/llm/precision.py)
PRECISIONS = {"FP8": "fp8", "FP8-CS": "fp8", "FP8-MX": "mxfp8", "MXFP8": "mxfp8", "BF16": "bf16"}

_GPT3 = {"preset": "gpt3-175b"}  # NeMo GPTConfig*: biases, learned positions, tied output; vocab 51,200
_NEMOTRON = {"kind": "decoder-only", "vocab": 256000, "seq_len": 4096, "gated_mlp": False, "bias": False,
             "tied_output": False}  # NeMo NemotronConfig: squared-ReLU MLP, no biases, untied output
_QWEN3 = {"kind": "decoder-only", "vocab": 151936, "head_dim": 128, "gated_mlp": True, "bias": False,
          "tied_output": False}  # NeMo Qwen3Config (kv_channels 128, vocab 151,936); HF Qwen3-*-A*B configs

# workload fields per published model name (the ``transformer`` workload's keys; ``moe`` is the
# [workload.moe] table of issue 25)
MODELS: dict[str, dict] = {
    "GPT3-5B": {**_GPT3, "layers": 24, "d_model": 4096, "heads": 32, "d_ff": 16384},  # GPTConfig5B
    "GPT3-20B": {**_GPT3, "layers": 44, "d_model": 6144, "heads": 48, "d_ff": 24576},  # GPTConfig20B
    "GPT3-175B": dict(_GPT3),  # GPTConfig175B: 96 layers, 12,288, 96 heads, 49,152
    "LLAMA2-7B": {"preset": "llama2-7b"},
    "LLAMA2-13B": {"preset": "llama2-7b", "layers": 40, "d_model": 5120, "heads": 40, "kv_heads": 40,
                   "d_ff": 13824},  # Llama2Config13B
    "LLAMA2-70B": {"preset": "llama2-70b"},
    "Nemotron-8B": {**_NEMOTRON, "layers": 32, "d_model": 4096, "heads": 32, "d_ff": 16384},  # Nemotron3Config8B
    "Nemotron-22B": {**_NEMOTRON, "layers": 40, "d_model": 6144, "heads": 48, "d_ff": 24576},  # Nemotron3Config22B
    "Nemotron-340B": {**_NEMOTRON, "layers": 96, "d_model": 18432, "heads": 96, "kv_heads": 8,
                      "d_ff": 73728},  # Nemotron4Config340B
    "LLAMA3-8B": {"preset": "llama3-8b"},
    "LLAMA3-70B": {"preset": "llama3-70b"},
    "LLAMA3.1-405B": {"preset": "llama3.1-405b"},
    "Qwen3-30B-A3B": {**_QWEN3, "layers": 48, "d_model": 2048, "heads": 32, "kv_heads": 4, "d_ff": 6144,
                      "moe": {"experts": 128, "top_k": 8, "d_ff": 768, "shared_experts": 0, "shared_d_ff": 0,
                              "dense_layers": 0}},  # Qwen3Config30B_A3B
    "DeepSeekV3 (w/o MTP)": {"preset": "deepseek-v3", "moe": {}},  # the preset's 256 experts; MLA; 61 layers
    "DeepSeekV3 (w/ MTP)": {"preset": "deepseek-v3", "moe": {}, "mtp_layers": 1},  # one prediction module
    "GPT-OSS-120B": {"preset": "gpt-oss-120b", "moe": {}},  # sliding window 128 on every other layer
    "Qwen3-235B-A22B": {**_QWEN3, "layers": 94, "d_model": 4096, "heads": 64, "kv_heads": 4, "d_ff": 12288,
                        "moe": {"experts": 128, "top_k": 8, "d_ff": 1536, "shared_experts": 0, "shared_d_ff": 0,
                                "dense_layers": 0}},  # Qwen3Config235B_A22B
}


@dataclass(frozen=True)
class HeldOutRun:
    """One published, measured pre-training run (fields as the source's table prints them)."""

    source: str  # a key of SOURCES
    model: str  # a key of MODELS
    system: str  # a key of SYSTEMS
    precision: str  # a key of PRECISIONS
    gpus: int
    gbs: int
    mbs: int | None  # None: not published (the planner chooses)
    seq_len: int
    tp: int
    pp: int
    cp: int
    vp: int | None  # 1: no interleaving ("n/a" in the table); None: not published (the planner chooses)
    ep: int
    fsdp: int | None  # None: the table has no FSDP column; 0: DDP; > 0: the sharding group size
    tokens_per_gpu: float  # measured tokens/s/GPU (``nemo-long-24.03``: derived, :func:`nemo_flops_per_token`)
    model_tflops: float | None  # measured model TFLOP/s/GPU (reference only)

    @property
    def label(self) -> str:
        return f"{self.model} {self.precision} {self.gpus} {self.system.removeprefix('DGX-')} ({self.source})"

    @property
    def dp(self) -> int:
        """Data-parallel size: the GPUs that tensor × pipeline × context parallelism leave."""
        return self.gpus // (self.tp * self.pp * self.cp)

    @property
    def measured_s(self) -> float:
        """Iteration time: GBS × sequence / (tokens/s/GPU × GPUs) (derived, see the module docstring)."""
        return self.gbs * self.seq_len / (self.tokens_per_gpu * self.gpus)

    @property
    def dtype(self) -> str:
        return PRECISIONS[self.precision]

    @property
    def moe(self) -> bool:
        return "moe" in MODELS[self.model]

    @property
    def group(self) -> str:
        """The summary group of the issue's bars: H100 dense, H100 MoE, or Blackwell."""
        if self.system != "DGX-H100":
            return "B200 / GB200"
        return "H100 MoE" if self.moe else "H100 dense"


def _rows(source: str, system: str, table: list[tuple]) -> list[HeldOutRun]:
    return [HeldOutRun(source, *row[:1], system, *row[1:]) for row in table]


# NeMo 24.07, DGX-H100, FP8: model, precision, GPUs, GBS, MBS, seq, TP, PP, CP, VP, EP, FSDP, tokens/s/GPU, TFLOP/s
NEMO_24_07 = _rows("nemo-24.07", "DGX-H100", [
    ("GPT3-5B", "FP8", 64, 2048, 4, 2048, 1, 1, 1, 1, 1, None, 23406, 765),
    ("GPT3-20B", "FP8", 64, 256, 2, 2048, 2, 1, 1, 1, 1, None, 5851, 750),
    ("GPT3-175B", "FP8", 128, 256, 1, 2048, 4, 8, 1, 6, 1, None, 716, 771),
    ("GPT3-175B", "FP8", 512, 2048, 2, 2048, 4, 8, 1, 6, 1, None, 825, 888),
    ("LLAMA2-7B", "FP8", 8, 128, 1, 4096, 1, 1, 1, 1, 1, None, 16934, 780),
    ("LLAMA2-13B", "FP8", 16, 128, 1, 4096, 1, 4, 1, 10, 1, None, 8715, 760),
    ("LLAMA2-70B", "FP8", 64, 128, 1, 4096, 4, 4, 1, 20, 1, None, 1728, 768),
    ("Nemotron-8B", "FP8", 64, 256, 4, 4096, 2, 1, 1, 1, 1, None, 12507, 643),
    ("Nemotron-22B", "FP8", 64, 256, 2, 4096, 2, 4, 1, 10, 1, None, 4312, 562),
    ("Nemotron-340B", "FP8", 128, 32, 1, 4096, 8, 8, 1, 12, 1, None, 326, 686),
    ("LLAMA3-8B", "FP8", 8, 128, 1, 8192, 1, 1, 2, 1, 1, None, 12273, 711),
    ("LLAMA3-70B", "FP8", 64, 128, 1, 8192, 4, 4, 2, 5, 1, None, 1524, 734),
])


def nemo_flops_per_token(layers: int, d_model: int, heads: int, kv_heads: int, d_ff: int, vocab: int,
                         seq_len: int) -> float:
    """Model FLOPs per token as NeMo counted them for its Llama performance tables (NeMo
    ``nemo/utils/flops_formulas.py`` ``llama2``, at f0bf77bcf7 of 2025-01; the full s × s attention,
    before 6251117f4c of 2025-08 halved it): l·h²·(12 + 12·g/a + 18·f/h + 12·s/h + 6·V/(l·h))."""
    return layers * d_model**2 * (12 + 12 * kv_heads / heads + 18 * d_ff / d_model + 12 * seq_len / d_model
                                  + 6 * vocab / (layers * d_model))


def _long_sequence(k: int, gpus: int, gbs: int, tp: int, pp: int, dp: int, cp: int, tflops: float) -> HeldOutRun:
    """A ``nemo-long-24.03`` row: sequence in K tokens, GPUs, batch, TP, PP, DP, CP, model TFLOP/s/GPU."""
    seq = k * 1024
    tokens = tflops * 1e12 / nemo_flops_per_token(32, 4096, 32, 32, 11008, 32000, seq)  # NeMo Llama2Config7B
    run = HeldOutRun("nemo-long-24.03", "LLAMA2-7B", "DGX-H100", "FP8", gpus, gbs, None, seq, tp, pp, cp,
                     1 if pp == 1 else None, 1, None, tokens, tflops)
    assert run.dp == dp, f"{run.label}: TP × PP × CP × DP is not the GPU count"
    return run


# NeMo 24.03.01 long sequences, DGX-H100, FP8, LLAMA2-7B (the "with CP" columns)
NEMO_LONG_24_03 = [_long_sequence(*row) for row in [
    (4, 4, 1024, 1, 1, 4, 1, 768), (8, 8, 512, 1, 2, 4, 1, 730), (16, 16, 256, 2, 1, 8, 1, 660),
    (32, 32, 128, 2, 1, 8, 2, 610), (64, 64, 64, 4, 1, 8, 2, 574), (128, 128, 32, 4, 1, 8, 4, 555),
    (256, 256, 16, 4, 1, 8, 8, 549), (512, 512, 8, 8, 1, 4, 16, 549), (1024, 1024, 4, 8, 1, 4, 32, 536),
]]

# Megatron-Bridge 25.11 (tables per system; the parenthesised FP8-MX figures are rows of their own)
BRIDGE_25_11 = _rows("bridge-25.11", "DGX-H100", [
    ("LLAMA3-8B", "FP8-CS", 8, 128, 1, 8192, 1, 1, 1, 1, 1, 8, 14451, 744),
    ("LLAMA3-70B", "FP8-CS", 64, 128, 1, 8192, 4, 8, 1, 5, 1, 0, 1602, 719),
    ("LLAMA3.1-405B", "FP8-CS", 1024, 512, 1, 8192, 8, 8, 2, 8, 1, 0, 292, 737),
    ("Qwen3-30B-A3B", "FP8-CS", 16, 512, 2, 4096, 1, 2, 1, 24, 8, 0, 5275, 121),
    ("Qwen3-235B-A22B", "FP8-CS", 256, 2048, 1, 4096, 2, 8, 1, 4, 32, 0, 1575, 233),
]) + _rows("bridge-25.11", "DGX-B200", [
    ("LLAMA3-8B", "FP8-CS", 8, 128, 2, 8192, 1, 1, 1, 1, 1, 0, 30624, 1576),
    ("LLAMA3-8B", "FP8-MX", 8, 128, 2, 8192, 1, 1, 1, 1, 1, 0, 29521, 1519),
    ("LLAMA3.1-405B", "FP8-CS", 128, 64, 1, 8192, 4, 8, 2, 8, 1, 0, 661, 1667),
    ("LLAMA3.1-405B", "FP8-MX", 128, 64, 1, 8192, 4, 8, 2, 8, 1, 0, 624, 1576),
    ("Qwen3-30B-A3B", "FP8-MX", 8, 512, 1, 4096, 1, 1, 1, 1, 8, 0, 9299, 214),
    ("Qwen3-235B-A22B", "FP8-MX", 64, 1024, 1, 4096, 1, 8, 1, 2, 8, 0, 3269, 484),
    ("DeepSeekV3 (w/ MTP)", "FP8-MX", 256, 2048, 1, 4096, 1, 16, 1, 1, 8, 0, 2139, 557),
    ("GPT-OSS-120B", "BF16", 64, 512, 4, 4096, 1, 1, 1, 1, 8, 0, 8213, 223),
]) + _rows("bridge-25.11", "DGX-GB200", [
    ("LLAMA3-8B", "FP8-CS", 8, 128, 2, 8192, 1, 1, 1, 1, 1, 0, 31508, 1622),
    ("LLAMA3-8B", "FP8-MX", 8, 128, 2, 8192, 1, 1, 1, 1, 1, 0, 29789, 1533),
    ("LLAMA3-70B", "FP8-CS", 64, 256, 2, 8192, 1, 1, 1, 1, 1, 64, 4312, 1937),
    ("LLAMA3.1-405B", "FP8-CS", 256, 1536, 1, 8192, 4, 16, 1, 4, 1, 0, 813, 2053),
    ("Qwen3-30B-A3B", "FP8-MX", 8, 512, 4, 4096, 1, 1, 1, 1, 8, 0, 23766, 547),
    ("Qwen3-235B-A22B", "BF16", 256, 8192, 1, 4096, 1, 8, 1, 3, 32, 0, 4916, 728),
    ("DeepSeekV3 (w/o MTP)", "BF16", 256, 4096, 1, 4096, 1, 4, 1, 4, 64, 0, 3139, 782),
    ("DeepSeekV3 (w/o MTP)", "FP8-MX", 256, 4096, 1, 4096, 1, 8, 1, 4, 32, 0, 4018, 1003),
    ("GPT-OSS-120B", "BF16", 64, 1280, 1, 8192, 1, 1, 1, 1, 64, 0, 15876, 488),
])

# Megatron-Bridge 26.02 (tables per model; DGX-H100, DGX-B200 and DGX-GB200 rows)
BRIDGE_26_02 = _rows("bridge-26.02", "DGX-H100", [
    ("LLAMA3-70B", "FP8", 64, 256, 1, 8192, 4, 8, 1, 5, 1, 0, 1621, 728),
    ("LLAMA3.1-405B", "FP8", 1024, 1536, 1, 8192, 8, 8, 2, 8, 1, 0, 311, 784),
    ("Qwen3-30B-A3B", "FP8", 16, 1024, 1, 4096, 1, 2, 1, 12, 8, 0, 5113, 118),
    ("Qwen3-235B-A22B", "FP8", 256, 8192, 1, 4096, 2, 8, 1, 4, 32, 0, 1633, 242),
    ("GPT-OSS-120B", "BF16", 64, 1280, 1, 4096, 1, 4, 1, 1, 8, 0, 5993, 163),
]) + _rows("bridge-26.02", "DGX-B200", [
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 1, 4096, 1, 1, 1, 1, 8, 0, 9691, 223),
    ("GPT-OSS-120B", "BF16", 64, 1280, 4, 4096, 1, 1, 1, 1, 64, 0, 8047, 219),
    ("Qwen3-235B-A22B", "MXFP8", 256, 8192, 1, 4096, 1, 8, 1, 1, 8, 0, 3805, 563),
]) + _rows("bridge-26.02", "DGX-GB200", [
    ("LLAMA3-70B", "MXFP8", 64, 256, 1, 8192, 2, 4, 1, 5, 1, 0, 3613, 1623),
    ("LLAMA3-70B", "FP8", 64, 256, 2, 8192, 1, 1, 1, 1, 1, 64, 4040, 1815),
    ("LLAMA3.1-405B", "MXFP8", 256, 1536, 1, 8192, 4, 16, 1, 8, 1, 0, 786, 1983),
    ("LLAMA3.1-405B", "FP8", 256, 1536, 1, 8192, 4, 16, 1, 4, 1, 0, 793, 2004),
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, 0, 26084, 600),
    ("Qwen3-235B-A22B", "MXFP8", 256, 8192, 1, 4096, 1, 8, 1, 1, 32, 0, 5448, 806),
    ("GPT-OSS-120B", "BF16", 64, 1280, 4, 4096, 1, 1, 1, 1, 64, 0, 15784, 428),
])


# Megatron-Bridge 26.02.01 to 26.08 (archive and current page at 067f987df0, 2026-08-22; tables per model)
BRIDGE_2026 = _rows("bridge-26.02.01", "DGX-H100", [
    ("LLAMA3-70B", "FP8", 64, 256, 1, 8192, 4, 8, 1, 5, 1, 0, 1639, 736),
    ("Qwen3-30B-A3B", "FP8", 16, 1024, 1, 4096, 1, 2, 1, 12, 8, 0, 9058, 208),
    ("Qwen3-235B-A22B", "FP8", 256, 8192, 1, 4096, 2, 8, 1, 4, 32, 0, 1611, 238),
    ("GPT-OSS-120B", "BF16", 64, 1280, 1, 4096, 1, 4, 1, 1, 8, 0, 5984, 163),
]) + _rows("bridge-26.02.01", "DGX-B200", [
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, 0, 26695, 614),
    ("GPT-OSS-120B", "BF16", 64, 1280, 4, 4096, 1, 1, 1, 1, 8, 0, 13722, 373),
]) + _rows("bridge-26.02.01", "DGX-GB200", [
    ("LLAMA3-70B", "MXFP8", 64, 256, 1, 8192, 2, 4, 1, 5, 1, 0, 3837, 1724),
    ("LLAMA3-70B", "FP8", 64, 256, 2, 8192, 1, 1, 1, 1, 1, 64, 4357, 1956),
    ("LLAMA3.1-405B", "MXFP8", 256, 1536, 1, 8192, 4, 16, 1, 8, 1, 0, 775, 1957),
    ("LLAMA3.1-405B", "FP8", 256, 1536, 1, 8192, 4, 16, 1, 4, 1, 0, 818, 2063),
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, 0, 26373, 607),
    ("Qwen3-235B-A22B", "MXFP8", 256, 8192, 1, 4096, 1, 8, 1, 1, 32, 0, 5530, 819),
    ("GPT-OSS-120B", "BF16", 64, 1280, 4, 4096, 1, 1, 1, 1, 64, 0, 15754, 428),
]) + _rows("bridge-26.04", "DGX-H100", [
    ("LLAMA3-70B", "FP8", 64, 256, 1, 8192, 4, 8, 1, 5, 1, 0, 1633, 734),
    ("Qwen3-30B-A3B", "FP8", 16, 1024, 1, 4096, 1, 1, 1, 1, 16, 0, 8901, 205),
    ("Qwen3-235B-A22B", "FP8", 256, 8192, 1, 4096, 2, 8, 1, 4, 32, 0, 1686, 250),
    ("GPT-OSS-120B", "BF16", 64, 1280, 1, 4096, 1, 4, 1, 1, 8, 0, 5810, 158),
]) + _rows("bridge-26.04", "DGX-B200", [
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, 0, 26859, 618),
    ("GPT-OSS-120B", "BF16", 64, 1280, 4, 4096, 1, 1, 1, 1, 8, 0, 13045, 355),
]) + _rows("bridge-26.04", "DGX-GB200", [
    ("LLAMA3-70B", "MXFP8", 64, 256, 1, 8192, 2, 4, 1, 5, 1, 0, 3828, 1721),
    ("LLAMA3-70B", "FP8", 64, 256, 2, 8192, 1, 1, 1, 1, 1, 64, 4143, 1861),
    ("LLAMA3.1-405B", "MXFP8", 256, 1536, 1, 8192, 4, 16, 1, 8, 1, 0, 793, 2002),
    ("LLAMA3.1-405B", "FP8", 256, 1536, 1, 8192, 4, 16, 1, 4, 1, 0, 842, 2126),
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, 0, 26032, 599),
    ("Qwen3-235B-A22B", "MXFP8", 256, 8192, 1, 4096, 1, 8, 1, 3, 32, 0, 5672, 840),
    ("GPT-OSS-120B", "BF16", 64, 1280, 4, 4096, 1, 1, 1, 1, 64, 0, 15938, 433),
]) + _rows("bridge-26.04.01", "DGX-H100", [
    ("LLAMA3-70B", "FP8", 64, 256, 1, 8192, 4, 8, 1, 5, 1, 0, 1664, 731),
    ("LLAMA3.1-405B", "FP8", 1024, 1536, 1, 8192, 8, 8, 2, 8, 1, 0, 328, 827),
    ("Qwen3-30B-A3B", "FP8", 16, 1024, 1, 4096, 1, 1, 1, 1, 16, 0, 8960, 206),
    ("Qwen3-235B-A22B", "FP8", 256, 8192, 1, 4096, 2, 8, 1, 4, 32, 0, 1712, 253),
    ("GPT-OSS-120B", "BF16", 64, 1280, 1, 4096, 1, 4, 1, 1, 8, 0, 5824, 158),
]) + _rows("bridge-26.04.01", "DGX-B200", [
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, 0, 27136, 619),
    ("Qwen3-235B-A22B", "MXFP8", 256, 8192, 1, 4096, 1, 8, 1, 1, 8, 0, 3776, 560),
    ("GPT-OSS-120B", "BF16", 64, 1280, 4, 4096, 1, 1, 1, 1, 8, 0, 13568, 369),
]) + _rows("bridge-26.04.01", "DGX-GB200", [
    ("LLAMA3-70B", "FP8", 64, 256, 2, 8192, 1, 1, 1, 1, 1, 64, 4224, 1892),
    ("LLAMA3-70B", "MXFP8", 64, 256, 1, 8192, 2, 4, 1, 5, 1, 0, 3712, 1664),
    ("LLAMA3.1-405B", "FP8", 256, 1536, 1, 8192, 4, 16, 1, 4, 1, 0, 864, 2144),
    ("LLAMA3.1-405B", "MXFP8", 256, 1536, 1, 8192, 4, 16, 1, 8, 1, 0, 800, 1994),
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, 0, 26112, 599),
    ("Qwen3-235B-A22B", "MXFP8", 256, 8192, 1, 4096, 1, 8, 1, 3, 32, 0, 5680, 840),
    ("GPT-OSS-120B", "BF16", 64, 1280, 4, 4096, 1, 1, 1, 1, 64, 0, 16640, 452),
]) + _rows("bridge-26.06", "DGX-H100", [
    ("LLAMA3.1-405B", "FP8", 1024, 1536, 1, 8192, 8, 8, 2, 8, 1, None, 326, 822),
    ("Qwen3-30B-A3B", "FP8", 16, 1024, 1, 4096, 1, 1, 1, 1, 16, None, 8826, 203),
]) + _rows("bridge-26.06", "DGX-GB200", [
    ("LLAMA3.1-405B", "FP8", 256, 1536, 1, 8192, 4, 16, 1, 4, 1, None, 843, 2129),
    ("LLAMA3.1-405B", "MXFP8", 256, 1536, 1, 8192, 4, 16, 1, 8, 1, None, 783, 1976),
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, None, 40706, 936),
    ("Qwen3-235B-A22B", "MXFP8", 256, 8192, 1, 4096, 1, 8, 1, 3, 32, None, 7376, 1092),
    ("GPT-OSS-120B", "MXFP8", 64, 1280, 4, 4096, 1, 1, 1, 1, 64, None, 28947, 943),
]) + _rows("bridge-26.06.01", "DGX-GB200", [
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, None, 40960, 937),
    ("Qwen3-235B-A22B", "MXFP8", 256, 8192, 1, 4096, 1, 8, 1, 3, 32, None, 7360, 1089),
    ("GPT-OSS-120B", "MXFP8", 64, 1280, 4, 4096, 1, 1, 1, 1, 64, None, 18304, 597),  # cuDNN regression (footnote)
]) + _rows("bridge-26.08", "DGX-GB200", [
    ("Qwen3-30B-A3B", "MXFP8", 8, 512, 4, 4096, 1, 1, 1, 1, 8, None, 39936, 923),
    ("Qwen3-235B-A22B", "MXFP8", 256, 8192, 1, 4096, 1, 8, 1, 3, 32, None, 7280, 1077),
    ("GPT-OSS-120B", "MXFP8", 64, 1280, 4, 4096, 1, 1, 1, 1, 64, None, 28672, 934),
])


# Cost options a run's recipe fixes beyond its table, only where the recipe says so unambiguously:
# * every Megatron-Bridge performance recipe reduces and keeps its gradients in bf16
#   (``cfg.ddp.grad_reduce_in_fp32 = False`` in each model's ``scripts/performance/configs/*/
#   *_llm_pretrain.py``, at c3e43e6aa of 2025-12 and 21d102f5e of 2026-05), where Megatron-LM's
#   default for bf16 is fp32: ``grad_bytes = 2``; and their FP8 is per-tensor current scaling
#   (``fp8_cs``: ``bf16_with_fp8_current_scaling_mixed`` in ``scripts/performance/utils/precision.py``;
#   the configs of these layouts are the ``*_FP8_CS_*`` ones): ``fp8_scaling = "current"``;
# * the HybridEP flex dispatcher (``moe_flex_dispatcher_backend="hybridep"``) wherever the recipe
#   names it for the run's model, system and layout at both recipe commits read (c3e43e6aa,
#   21d102f5e): Qwen3-30B-A3B, Qwen3-235B-A22B and DeepSeek-V3 on GB200 (their GB200 configs);
#   Qwen3-30B-A3B on DGX B200 at micro-batch 4 (0ec1df783, 2026-02-27, "Fix Qwen3 30B A3B B200 perf
#   config to use hybridep+flex dispatcher", which brought micro-batch 4) and on H100 with EP 16
#   (4a64507559, 2026-02-23, which brought EP 16). The other MoE rows keep the alltoall default:
#   their recipes name none, or name DeepEP where the 26.02 release notes say the container lacks it;
# * the expert all-to-all overlap (``moe_a2a_overlap=True``) where every recipe commit read that has
#   the layout sets it: Qwen3-235B-A22B on H100 (all three), Qwen3-30B-A3B on H100 with EP 8 and
#   Qwen3-235B-A22B on 64 B200s (c3e43e6aa, the only commit with those layouts).


def _hybridep(run: HeldOutRun) -> bool:
    if run.system == "DGX-GB200":
        return run.model in ("Qwen3-30B-A3B", "Qwen3-235B-A22B", "DeepSeekV3 (w/o MTP)")
    return run.model == "Qwen3-30B-A3B" and ((run.system, run.mbs) == ("DGX-B200", 4) or run.ep == 16)


def _a2a_overlap(run: HeldOutRun) -> bool:
    if run.system == "DGX-H100":
        return run.model == "Qwen3-235B-A22B" or (run.model == "Qwen3-30B-A3B" and run.ep == 8)
    return (run.model, run.system, run.gpus) == ("Qwen3-235B-A22B", "DGX-B200", 64)


def recipe_options(run: HeldOutRun) -> dict:
    """The ``[cost]`` options ``run``'s recipe fixes (see above); empty for NeMo 24.07."""
    bridge = run.source.startswith("bridge-")
    options = {"grad_bytes": 2} if bridge else {}
    if bridge and run.dtype == "fp8":
        options["fp8_scaling"] = "current"
    if _hybridep(run):
        options["moe_dispatcher"] = "hybridep"
    if _a2a_overlap(run):
        options["moe_a2a_overlap"] = True
    return options


def runs() -> list[HeldOutRun]:
    """Every held-out run, in the order of the sources."""
    return NEMO_24_07 + NEMO_LONG_24_03 + BRIDGE_25_11 + BRIDGE_26_02 + BRIDGE_2026
