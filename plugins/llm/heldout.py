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
Megatron-FSDP. A table without an FSDP column leaves it to the run's software where that has
none or its recipe turns it off (``nemo-24.07``, ``nemo-long-24.03``, ``megatron-lm-2024``, the
``dgxc`` rows: FSDP 0, each with its citation beside its rows), else unstated (not pinned).

Sources (each row names its own):

* ``nemo-24.07``: NVIDIA NeMo Framework performance summary, container NeMo 24.07, DGX-H100, FP8
  (github.com/NVIDIA/NeMo ``docs/source/performance/performance_summary.md`` at commit
  8e3d65dcfe, "24.07 perf numbers", 2024-09-09; the same figures as the NeMo 24.09 user guide's
  performance summary page). No EP column (dense models) and no FSDP column. NeMo-Launcher 24.01 to
  24.07 ran FlashAttention-2, not cuDNN's fused attention (``launcher_scripts/conf/config.yaml``:
  ``NVTE_FUSED_ATTN: 0``), here and in ``nemo-long-24.03``; the later stacks run cuDNN's
  (NeMo 2's ``scripts/performance/utils.py``: ``NVTE_FUSED_ATTN=1``; Transformer Engine's Hopper default).
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
  (``None``: the planner chooses them). Its tokens/s are derived through NeMo's own FLOP count,
  Megatron-LM's over the full square (:func:`.heldout_runs.megatron_flops_per_token` with
  ``causal=False``: what NeMo printed until its causal discount of 2025-08), the count every
  ``nemo-24.07`` row obeys within 0.1 % where both figures are published.
* ``dgxc-25.03``, ``dgxc-25.04``, ``dgxc-25.05``: NVIDIA's dgxc-benchmarking recipes, measured step
  times of NeMo pre-training on DGX H100 and GB200 (:mod:`.heldout_dgxc` says which rows and why).
* ``nemo-25.02`` and ``nemo-25.04``: the NeMo Framework user guide's performance summary pages of NeMo 2
  (DGX-B200 and GB200 FP8 rows, and one DGX-H100 row; :mod:`.heldout_nemo2` says which and why).
* ``nemo-long-25.04``: the same page's DGX-B200 table, LLAMA3-8B FP8, container NeMo 25.04.rc2,
  8K to 1M tokens (at commit 14d427f575, its first version: GPU counts equal TP × CP × DP; the
  rewrite of 19fadb67b0 prints four times as many GPUs beside the same layout and TFLOP/s). Its
  tokens/s are derived as the H100 table's, through NeMo's ``llama3`` count (the full square).

* ``moe-modelzoo``: NVIDIA's Megatron-MoE-ModelZoo (github.com/yanring/Megatron-MoE-ModelZoo
  ``best_practice/qwen3/readme.md`` at commit e8650517d6, 2026-05), Qwen3-235B-A22B in BF16 on
  256 DGX H100s with Megatron-Core: five layouts with their step time in seconds (the dispatcher
  and the 1F1B all-to-all overlap as the table names them; FSDP "On" is Megatron-FSDP over the
  128 data-parallel ranks) and four long-context layouts (16K to 128K tokens, CP 1 to 8, forced
  balance) with TFLOP/s per GPU only, whose tokens/s are derived through Megatron-LM's own FLOP count
  (:func:`.heldout_runs.megatron_flops_per_token`; the step-time rows obey it within 0.5 %: 245
  TFLOP/s × 19.7 s × 256 GPUs / (2,048 × 4,096 tokens) = 147.3 GFLOP per token, the count 148.0).
  The scripts of the ModelZoo (``runtime_configs``, ``model_configs``) keep Megatron-LM's fp32
  gradients, the distributed optimizer and sequence parallelism, and never set
  ``--tp-comm-overlap`` (each row's ``recipe``: ``tp_comm_overlap = False``); each row's ``recipe`` also
  pins the recomputation its table or command names (``norm_act`` for "norm, act", ``full``, none where
  blank; ``moe`` for the long-context "layernorm moe", its LayerNorm part not priced). And Mixtral-8x22B in BF16 on 128
  H100s (``best_practice/mixtral/run_mixtral_8x22B.sh`` with ``runtime_configs/benchmarking/
  runtime.conf``'s layout: "around 465 TFLOPS" with forced balancing; its FP8 figure is DeepSeek's
  block-wise recipe, which ``megatron-3d`` does not price, and is left out).

* ``megatron-lm-2024``: Megatron-LM's README model table (``images/model_table.png``, added by
  f2e5db402c, "New scaling figures on H100 GPUs", 2024-07-15; Megatron-Core r0.8.0): GPT models of
  1.7B to 462B parameters in BF16 on 48 to 6,144 H100s, data parallel 48, sequence 4,096, vocabulary
  131,072, with TP, PP, the global batch and the per-GPU TFLOP/s (end to end: data loading,
  optimizer and logging included). No micro-batch, interleaving or recomputation is printed: the
  planner chooses them. Tokens/s are derived through Megatron-LM's FLOP count of the time
  (``num_floating_point_operations`` at 8a78edd20c, 2024-07-14, the full s×s attention:
  ``12·l·h²·(6 + s/h) + 6·h·V`` per token for these models; :func:`.heldout_runs.megatron_flops_per_token`).
  The table's parameter counts (1.7B ... 462B) are reproduced with untied output embeddings.

Left out, with the reason: the Llama 3 paper's Table 4 gives TFLOP/s per GPU without the FLOP count
behind it, on Meta's RoCE cluster rather than DGX; the DeepSeek-V3 tables of 26.02 to 26.08 (they do
not say whether multi-token prediction ran), 25.11's H100 GPT-OSS row (its gradient accumulation
2 contradicts its PP 4: 512 / (16 × 4) = 8), Nemotron 3 (hybrid Mamba layers), Kimi K2 (the Muon optimizer) and DeepSeek-V4, which have no
``transformer`` workload form here; the Bridge 25.09 section states no precision (priced outside the summary, below); GB300 / B300 /
NVFP4 rows have no system or recipe here. The Bridge current page's H100 Qwen3-235B row of 25.11
is garbled (a missing GBS); the archive's is used.

Outside the summary (:func:`.heldout_runs.outside`), each priced under one stated assumption the
source leaves open: the Bridge 25.09 section's DGX-H100 rows (``bridge-25.09``; no precision stated:
FP8 with current scaling assumed, as 25.11's identical tables state FP8-CS; recipe of
``scripts/performance/run_script.py`` at cac49dcd7, 2025-09-27, "qwen3 2509": DeepSeek-V3 on H100
with DeepEP, the all-to-all overlap and the layout ``Et|(tt|)*30mL`` with its MTP module; the Qwen3
models with token dropping at capacity factor 1 padded to capacity, the all-to-all dispatcher's
balanced share), and the ModelZoo's three GB200 NVL72 rows of Qwen3-235B-A22B (its readme's GB200
table; ``NNODES`` trays of 4 GPUs; HybridEP; priced on the topology's 64-GPU NVLink domains, where
the runs' Slurm ``SEGMENT`` gave 8, 64 and 32).

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
    "nemo-long-25.04": ("NVIDIA NeMo long-sequence performance, NeMo 25.04.rc2 container, DGX-B200 FP8 LLAMA3-8B "
                        "with context parallelism", "https://github.com/NVIDIA/NeMo/blob/"
                        "14d427f575/docs/source/performance/performance_long_sequence.md"),
    **{f"dgxc-{r}": (f"NVIDIA dgxc-benchmarking {r} release, NeMo pre-training step times on DGX H100"
                     f"{' and GB200' if r == '25.05' else ''} (NeMo {c})",
                     f"https://github.com/NVIDIA/dgxc-benchmarking/tree/{h}")
       for r, c, h in (("25.03", "24.12", "1b9bb6b3cfea881fc4997ac111e695e52ae901aa"),
                       ("25.04", "25.02.01; 24.12 for GPT3-175B and Grok1-314B", "0efdb235ac32cc815084bd84ac8c1d1b722fa13e"),
                       ("25.05", "25.04.00 and 25.04.01", "c5c765f2684f983e787eaada4073b63c8287caf6"))},
    **{f"dgxc-{r}": (f"NVIDIA dgxc-benchmarking {r} release, the step time of its README's example run on DGX H100 "
                     f"(NeMo {c})", f"https://github.com/NVIDIA/dgxc-benchmarking/blob/{h}/{path}")
       for r, c, h, path in (("25.08", "25.07.01", "d4b7ec02876ae30e456c75bf509900f216480cb4",
                              "deepseek_v3/pretrain/README.md"),
                             ("25.12", "25.11.01, Megatron-Bridge", "db1b14c466609306d1ff740a5139eb778aaf940f",
                              "qwen3/pretrain/README.md"))},
    **{f"nemo-{c}": (f"NVIDIA NeMo Framework user guide, performance summary, NeMo {c} container, pre-training FP8 "
                     f"on {systems}", f"https://docs.nvidia.com/nemo-framework/user-guide/latest/performance/{page}")
       for c, systems, page in (("25.02", "DGX-B200 (and DGX-H100's first row)", "performance_summary.html"),
                                ("25.04", "DGX-GB200", "archive/25.04-performance-summary.html"))},
    "bridge-25.09": ("Megatron-Bridge performance summary archive, 25.09 NeMo container, pre-training (no precision "
                     "stated; outside the summary)", f"{_BRIDGE_AUGUST_2026}/docs/performance-summary-archive.md"),
    "moe-modelzoo": ("NVIDIA Megatron-MoE-ModelZoo best practices, Qwen3-235B-A22B and Mixtral-8x22B on DGX H100, BF16 "
                     "(and Qwen3-235B-A22B on GB200 NVL72, outside the summary)",
                     "https://github.com/yanring/Megatron-MoE-ModelZoo/tree/e8650517d60d71ab73fc6b3b0388cac4ba435181/"
                     "best_practice"),
    "megatron-lm-2024": ("Megatron-LM README model table, Megatron-Core r0.8.0, GPT weak scaling on DGX H100, BF16",
                         "https://github.com/NVIDIA/Megatron-LM/blob/f2e5db402c/images/model_table.png"),
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
# Megatron-LM's GPT weak-scaling models (README "Model table"): vocabulary 131,072, d_ff = 4h, GELU; the
# table's sizes (1.7B ... 462B) need untied output embeddings; biases and learned positions as
# Megatron-LM's defaults (--position-embedding-type learned_absolute)
_MLM_GPT = {"kind": "decoder-only", "vocab": 131072, "gated_mlp": False, "bias": True, "tied_output": False,
            "max_positions": 4096}
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
    "LLAMA3-405B": {"preset": "llama3.1-405b"},  # NeMo 2's tables' name for it (pretrain_llama31_405b.py)
    "LLAMA3.1-8B": {"preset": "llama3-8b"},  # Llama 3.1 changes the RoPE scaling and the context, not the shapes
    "LLAMA3.1-70B": {"preset": "llama3-70b"},
    "Nemotron4-15B": {**_NEMOTRON, "layers": 32, "d_model": 6144, "heads": 48, "kv_heads": 8,
                      "d_ff": 24576},  # Nemotron4Config15B
    "Nemotron-15B": {**_NEMOTRON, "layers": 32, "d_model": 6144, "heads": 48, "kv_heads": 8,
                     "d_ff": 24576},  # NeMo 2's tables' name for Nemotron-4 15B (pretrain_nemotron4_15b.py)
    "Qwen3-30B-A3B": {**_QWEN3, "layers": 48, "d_model": 2048, "heads": 32, "kv_heads": 4, "d_ff": 6144,
                      "moe": {"experts": 128, "top_k": 8, "d_ff": 768, "shared_experts": 0, "shared_d_ff": 0,
                              "dense_layers": 0}},  # Qwen3Config30B_A3B
    "DeepSeekV3 (w/o MTP)": {"preset": "deepseek-v3", "moe": {}},  # the preset's 256 experts; MLA; 61 layers
    "DeepSeekV3 (w/ MTP)": {"preset": "deepseek-v3", "moe": {}, "mtp_layers": 1},  # one prediction module
    **{f"GPT-{size}": {**_MLM_GPT, "layers": layers, "d_model": h, "heads": heads, "d_ff": 4 * h}
       for size, heads, h, layers in (("1.7B", 16, 2048, 24), ("7.1B", 32, 4096, 30), ("16B", 48, 6144, 32),
                                      ("32B", 56, 7168, 48), ("70B", 64, 8192, 84), ("119B", 80, 10240, 92),
                                      ("177B", 96, 12288, 96), ("314B", 128, 16384, 96), ("462B", 144, 18432, 112))},
    "Mixtral-8x22B": {"preset": "mixtral-8x22b", "moe": {}},  # 56 layers, 8 experts of 16,384, top 2
    "Mixtral-8x7B": {"preset": "mixtral-8x7b", "moe": {}},  # 32 layers, 8 experts of 14,336, top 2
    "GPT-OSS-120B": {"preset": "gpt-oss-120b", "moe": {}},  # sliding window 128 on every other layer
    # NeMo's grok1_314b (MixtralConfig8x7B widened; scripts/performance/llm/pretrain_grok1_314b.py at 26ca175cd2;
    # dgxc-benchmarking grok1_314b.yaml): SwiGLU-width experts, RMSNorm, untied, the Llama 3 tokenizer
    "Grok1-314B": {"kind": "decoder-only", "layers": 64, "d_model": 6144, "heads": 48, "kv_heads": 8, "head_dim": 128,
                   "d_ff": 32768, "vocab": 128256, "gated_mlp": True, "bias": False, "tied_output": False,
                   "moe": {"experts": 8, "top_k": 2, "d_ff": 32768, "shared_experts": 0, "shared_d_ff": 0,
                           "dense_layers": 0}},
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
    fsdp: int | None  # 0: DDP; > 0: the sharding group size; None: neither the table nor the run's software says
    tokens_per_gpu: float  # measured tokens/s/GPU (derived from TFLOP/s where a source prints no tokens/s)
    model_tflops: float | None  # measured model TFLOP/s/GPU (reference only)
    variant: str = ""  # what tells apart rows of one model, precision and GPU count in one source
    recipe: tuple = ()  # (cost option, value) pairs the row's own recipe states (:func:`recipe_options`)

    @property
    def label(self) -> str:
        name = f"{self.model} {self.precision} {self.gpus} {self.system.removeprefix('DGX-')}"
        return f"{name}{' ' + self.variant if self.variant else ''} ({self.source})"

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


# Cost options a run's recipe fixes beyond its table, only where the recipe says so unambiguously (the
# Megatron-Bridge rules also hold the dgxc 25.12 run, which ran Bridge's scripts/performance at 15927667ed,
# 2025-12-17: its Qwen3-235B-A22B H100 config sets each of them, test_llm_heldout_examples):
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
#   (4a64507559, 2026-02-23, which brought EP 16). The other MoE rows ran Megatron-Core's alltoall default:
#   their recipes name none, or name DeepEP where the 26.02 release notes say the container lacks it;
# * the expert all-to-all overlap (``moe_a2a_overlap=True``) where every recipe commit read that has
#   the layout sets it: Qwen3-235B-A22B on H100 (all three), Qwen3-30B-A3B on H100 with EP 8 and
#   Qwen3-235B-A22B on 64 B200s (c3e43e6aa, the only commit with those layouts);
# * no tensor-parallel communication overlap for Qwen3-235B-A22B on H100 (``tp_comm_overlap = False``): its
#   H100 config passes ``CommOverlapConfig(tp_comm_overlap=False)`` at c3e43e6aa, 15927667ed and 21d102f5e,
#   where every other Qwen3 config passes True;
# * expert tensor parallelism 1 for every MoE row: the Qwen3, GPT-OSS and DeepSeek-V3 base configs
#   set ``expert_tensor_parallel_size=1`` (``scripts/performance/configs/*/*_workload_base_configs.py``
#   at c3e43e6aa and 21d102f5e, which every preset of those models inherits; ``etp: 1`` in the YAML
#   configs of cac49dcd7, 2025-09);
# * GPT-OSS-120B in BF16 recomputes its LayerNorms and experts' activation (``recompute = "norm_act"``,
#   :mod:`.recompute`): every H100, B200 and GB200 BF16 config sets ``recompute_modules=["layernorm",
#   "moe_act"]`` (``gpt_oss_workload_base_configs.py`` from c3e43e6aa to 5f98743d5), which acts from
#   c9dd05869 (2025-12-10, "selective granularity recompute": ``overrides.py`` sets the granularity
#   beside the modules; before it they were ignored), so in the 26.02 rows on, not in 25.11's;
# * DeepSeek-V3 recomputes its latent attention's up-projections (``recompute = "mla_up_proj"``) in the
#   25.11 rows whose layout is the config that names ``recompute_modules=["mla_up_proj"]`` at both commits
#   read (c3e43e6aa, 21d102f5e; ``deepseek_llm_pretrain.py`` sets the selective granularity itself):
#   DGX B200 (PP 16, EP 8) and GB200 in BF16 (PP 4 × VP 4, EP 64). GB200's FP8 layout is neither config.


# the main gradients' type a run's software states (``[cost] grad_bytes``): bf16, or Megatron-LM's fp32
BF16_GRADS, FP32_GRADS = (("grad_bytes", 2),), (("grad_bytes", 4),)
# the expert tensor parallelism a MoE run's software states (``[cost] expert_tensor_parallel``); where it
# states none, Megatron-Core's default is the tensor-parallel size (``ModelParallelConfig.__post_init__``)
EXPERT_TP_1 = (("expert_tensor_parallel", 1),)
NORM_ACT = ("norm_act",)  # ``[cost] recompute``: ``--recompute-modules layernorm moe_act`` only
ON_BRIDGE = ("dgxc-25.12",)  # other sources whose runs used Megatron-Bridge's performance recipes


def recomputing(*settings: str) -> tuple:
    """A row's recipe pin of the recomputation its source names (``[cost] recompute``: the settings allowed)."""
    return (("recompute", settings),)


def _hybridep(run: HeldOutRun) -> bool:
    if run.system == "DGX-GB200":
        return run.model in ("Qwen3-30B-A3B", "Qwen3-235B-A22B", "DeepSeekV3 (w/o MTP)")
    return run.model == "Qwen3-30B-A3B" and ((run.system, run.mbs) == ("DGX-B200", 4) or run.ep == 16)


def _a2a_overlap(run: HeldOutRun) -> bool:
    if run.system == "DGX-H100":
        return run.model == "Qwen3-235B-A22B" or (run.model == "Qwen3-30B-A3B" and run.ep == 8)
    return (run.model, run.system, run.gpus) == ("Qwen3-235B-A22B", "DGX-B200", 64)


def recipe_options(run: HeldOutRun) -> dict:
    """The ``[cost]`` options ``run``'s recipe fixes: the Megatron-Bridge rules above, and the row's own
    ``recipe`` (the ModelZoo's dispatcher and overlap); empty for NeMo's tables."""
    bridge = run.source.startswith("bridge-") or run.source in ON_BRIDGE
    options = dict(BF16_GRADS) if bridge else {}
    if bridge and run.dtype == "fp8":
        options["fp8_scaling"] = "current"
    if bridge and run.moe:
        options["moe_dispatcher"] = "hybridep" if _hybridep(run) else "alltoall"
        options.update(EXPERT_TP_1)
    if bridge and _a2a_overlap(run):
        options["moe_a2a_overlap"] = True
    if bridge and (run.model, run.system) == ("Qwen3-235B-A22B", "DGX-H100"):
        options["tp_comm_overlap"] = False
    if bridge and run.model == "GPT-OSS-120B" and run.dtype == "bf16" and run.source != "bridge-25.11":
        options["recompute"] = NORM_ACT
    if run.source == "bridge-25.11" and run.model.startswith("DeepSeekV3") and (
            run.system == "DGX-B200" or (run.system, run.dtype) == ("DGX-GB200", "bf16")):
        options["recompute"] = ("mla_up_proj",)
    return {**options, **dict(run.recipe)}

