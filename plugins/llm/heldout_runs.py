"""The held-out runs' tables, copied as their sources print them (:mod:`.heldout` says how and why).

Each row: model, precision, GPUs, GBS, MBS, sequence, TP, PP, CP, VP, EP, FSDP, tokens/s/GPU and
model TFLOP/s/GPU, under its source's key and system.
"""

from __future__ import annotations

from . import heldout_dgxc, heldout_nemo2
from .heldout import BF16_GRADS, EXPERT_TP_1, FP32_GRADS, MODELS, NORM_ACT, HeldOutRun, recomputing


def _rows(source: str, system: str, table: list[tuple]) -> list[HeldOutRun]:
    return [HeldOutRun(source, *row[:1], system, *row[1:]) for row in table]


# NeMo 24.07, DGX-H100, FP8: model, precision, GPUs, GBS, MBS, seq, TP, PP, CP, VP, EP, FSDP, tokens/s/GPU, TFLOP/s.
# No FSDP column; NeMo 1 trains without it unless a config says ``fsdp: True`` (``megatron_base_model.py``:
# ``cfg.get('fsdp', False)``) and none of NeMo-Launcher 24.07's training configs for these models does: FSDP 0.
# Nemotron-4 340B's config reduces gradients in bf16 (``launcher_scripts/conf/training/nemotron/nemotron_340b.yaml``:
# ``grad_sync_dtype: bf16``); the GPT3-5B, 20B, Llama and Nemotron 8B / 22B configs set no ``grad_sync_dtype``
# and keep NeMo 1's fp32 (``megatron_gpt_model.py``: ``grad_sync_dtype`` default 'fp32'): ``grad_bytes = 4``;
# GPT3-175B's two configs disagree (``175b.yaml`` none, ``175b_fp8.yaml`` bf16) and neither has the table's
# layout (TP 4, VP 6): the planner chooses
NEMO_24_07 = _rows("nemo-24.07", "DGX-H100", [
    ("GPT3-5B", "FP8", 64, 2048, 4, 2048, 1, 1, 1, 1, 1, 0, 23406, 765, "", FP32_GRADS),
    ("GPT3-20B", "FP8", 64, 256, 2, 2048, 2, 1, 1, 1, 1, 0, 5851, 750, "", FP32_GRADS),
    ("GPT3-175B", "FP8", 128, 256, 1, 2048, 4, 8, 1, 6, 1, 0, 716, 771),
    ("GPT3-175B", "FP8", 512, 2048, 2, 2048, 4, 8, 1, 6, 1, 0, 825, 888),
    ("LLAMA2-7B", "FP8", 8, 128, 1, 4096, 1, 1, 1, 1, 1, 0, 16934, 780, "", FP32_GRADS),
    ("LLAMA2-13B", "FP8", 16, 128, 1, 4096, 1, 4, 1, 10, 1, 0, 8715, 760, "", FP32_GRADS),
    ("LLAMA2-70B", "FP8", 64, 128, 1, 4096, 4, 4, 1, 20, 1, 0, 1728, 768, "", FP32_GRADS),
    ("Nemotron-8B", "FP8", 64, 256, 4, 4096, 2, 1, 1, 1, 1, 0, 12507, 643, "", FP32_GRADS),
    ("Nemotron-22B", "FP8", 64, 256, 2, 4096, 2, 4, 1, 10, 1, 0, 4312, 562, "", FP32_GRADS),
    ("Nemotron-340B", "FP8", 128, 32, 1, 4096, 8, 8, 1, 12, 1, 0, 326, 686, "", BF16_GRADS),
    ("LLAMA3-8B", "FP8", 8, 128, 1, 8192, 1, 1, 2, 1, 1, 0, 12273, 711, "", FP32_GRADS),
    ("LLAMA3-70B", "FP8", 64, 128, 1, 8192, 4, 4, 2, 5, 1, 0, 1524, 734, "", FP32_GRADS),
])


def megatron_flops_per_token(layers: int, d_model: int, heads: int, kv_heads: int, head_dim: int, d_ff: int,
                             vocab: int, seq_len: int, *, top_k: int = 1, gated: bool = True,
                             causal: bool = True) -> float:
    """Model FLOPs per token as Megatron-LM logs them (``num_floating_point_operations`` in
    ``megatron/training/training.py``) for a model without shared experts: per layer
    ``6·(h·(q + 2k) + q·h)`` for the attention's projections (``q`` = heads × head_dim, ``k`` =
    kv_heads × head_dim), ``6·q·s`` for its core, half the ``s × s`` square (``causal``: since 2025,
    at 9eebd5173c of 2025-05 and bb216765de of 2025-10), ``12·q·s`` before (the full square, at
    8a78edd20c of 2024-07), and ``6·(3 if gated else 2)·h·f·top_k`` for the MLP or the routed
    experts; plus the logits ``6·h·V``. For a GPT (d_ff = 4h, multi-head, full square) this is
    Narayanan et al. Eq. 3 without recomputation, ``12·l·h²·(6 + s/h) + 6·h·V``."""
    q, k = heads * head_dim, kv_heads * head_dim
    attention = 6 * (d_model * (q + 2 * k) + q * d_model) + (6 if causal else 12) * q * seq_len
    mlp = 6 * (3 if gated else 2) * d_model * d_ff * top_k
    return layers * (attention + mlp) + 6 * d_model * vocab


def _long_sequence(k: int, gpus: int, gbs: int, tp: int, pp: int, dp: int, cp: int, tflops: float, *,
                   source: str = "nemo-long-24.03", model: str = "LLAMA2-7B", system: str = "DGX-H100",
                   fsdp: int | None = 0, recipe: tuple = FP32_GRADS) -> HeldOutRun:
    """A row of NeMo's long-sequence tables: sequence in K tokens, GPUs, batch, TP, PP, DP, CP, model TFLOP/s/GPU."""
    seq = k * 1024
    # NeMo's count for its Llama tables (``nemo/utils/flops_formulas.py`` ``llama2`` and ``llama3`` at f0bf77bcf7 of
    # 2025-01 and 19fadb67b0 of 2025-05, l·h²·(12 + 12·g/a + 18·f/h + 12·s/h + 6·V/(l·h)): the full square until
    # 6251117f4c of 2025-08) is Megatron-LM's, gated, without the causal half; NeMo Llama2Config7B, Llama3Config8B
    shape = (32, 4096, 32, 32, 128, 11008, 32000) if model == "LLAMA2-7B" else (32, 4096, 32, 8, 128, 14336, 128256)
    tokens = tflops * 1e12 / megatron_flops_per_token(*shape, seq, causal=False)
    # ``fsdp`` 0 for NeMo 24.03 (NeMo 1), which trains without FSDP unless a config turns it on
    # (``megatron_base_model.py``: ``cfg.get('fsdp', False)``; NeMo-Launcher 24.03's llama2_7b.yaml does not)
    # ``recipe``: fp32 gradients for NeMo 24.03, whose NeMo-Launcher llama2_7b.yaml sets no ``grad_sync_dtype``
    # (NeMo 1's 'fp32' default)
    run = HeldOutRun(source, model, system, "FP8", gpus, gbs, None, seq, tp, pp, cp,
                     1 if pp == 1 else None, 1, fsdp, tokens, tflops, "", recipe)
    assert run.dp == dp, f"{run.label}: TP × PP × CP × DP is not the GPU count"
    return run


# NeMo 24.03.01 long sequences, DGX-H100, FP8, LLAMA2-7B (the "with CP" columns)
NEMO_LONG_24_03 = [_long_sequence(*row) for row in [
    (4, 4, 1024, 1, 1, 4, 1, 768), (8, 8, 512, 1, 2, 4, 1, 730), (16, 16, 256, 2, 1, 8, 1, 660),
    (32, 32, 128, 2, 1, 8, 2, 610), (64, 64, 64, 4, 1, 8, 2, 574), (128, 128, 32, 4, 1, 8, 4, 555),
    (256, 256, 16, 4, 1, 8, 8, 549), (512, 512, 8, 8, 1, 4, 16, 549), (1024, 1024, 4, 8, 1, 4, 32, 536),
]]

# NeMo 25.04.rc2 long sequences, DGX-B200, FP8, LLAMA3-8B: the table as first published (14d427f575, 2025-04-28),
# whose GPU counts are TP × CP × DP; its rewrite (19fadb67b0) prints the H100 table's GPU counts (8K on 8 GPUs)
# beside the same TP, PP, DP and CP, four times their product, and the same TFLOP/s
NEMO_LONG_25_04 = [_long_sequence(*row, source="nemo-long-25.04", model="LLAMA3-8B", system="DGX-B200", fsdp=None,
                                  recipe=()) for row in [  # its page names no recipe: FSDP and gradients unstated
    (8, 2, 512, 1, 1, 2, 1, 1671), (16, 4, 256, 1, 1, 4, 1, 1717), (32, 8, 128, 1, 1, 4, 2, 1624),
    (64, 16, 64, 1, 1, 4, 4, 1600), (128, 32, 32, 2, 1, 4, 4, 1588), (256, 64, 16, 4, 1, 4, 4, 1590),
    (512, 128, 8, 4, 1, 4, 8, 1619), (1024, 256, 4, 4, 1, 4, 16, 1608),
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


_ZOO = "moe-modelzoo"
# its model_configs and scripts never set --tp-comm-overlap (Megatron-LM's default: off) nor
# --grad-reduce-in-bf16 (Megatron-LM's bf16 default: fp32 gradients); every model_configs/benchmarking
# file sets --expert-tensor-parallel-size 1 (and the Qwen3 table's ETP column says 1)
_NO_TP_OVERLAP = (("tp_comm_overlap", False),) + FP32_GRADS + EXPERT_TP_1
_DEEPEP = _NO_TP_OVERLAP + (("moe_dispatcher", "deepep"),)
_ALLTOALL = _NO_TP_OVERLAP + (("moe_dispatcher", "alltoall"),)


def _zoo(variant: str, step_s: float, tp: int, pp: int, vp: int, ep: int, mbs: int, fsdp: int,
         recipe: tuple = _DEEPEP) -> HeldOutRun:
    """A Qwen3-235B-A22B BF16 row of the ModelZoo's H100 table (256 GPUs, GBS 2,048, sequence 4,096),
    its published step time as tokens/s."""
    return HeldOutRun(_ZOO, "Qwen3-235B-A22B", "DGX-H100", "BF16", 256, 2048, mbs, 4096, tp, pp, 1, vp, ep, fsdp,
                      2048 * 4096 / (step_s * 256), None, variant, recipe)


def _qwen3_235b_tokens(seq: int, tflops: float) -> float:
    """Tokens/s/GPU of a ModelZoo Qwen3-235B-A22B row that prints TFLOP/s only, through Megatron-LM's count."""
    cfg = MODELS["Qwen3-235B-A22B"]
    return tflops * 1e12 / megatron_flops_per_token(
        cfg["layers"], cfg["d_model"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["moe"]["d_ff"],
        cfg["vocab"], seq, top_k=cfg["moe"]["top_k"])


def _zoo_long(k: int, cp: int, tflops: float) -> HeldOutRun:
    """A long-context row (forced balance): 256 GPUs, GBS 256, TP 4, PP 8, VP 4, EP 8, DeepEP, TFLOP/s."""
    seq = k * 1024
    return HeldOutRun(_ZOO, "Qwen3-235B-A22B", "DGX-H100", "BF16", 256, 256, 1, seq, 4, 8, cp, 4, 8, 0,
                      _qwen3_235b_tokens(seq, tflops), tflops, f"{k}K", _DEEPEP + recomputing("moe"))


# Megatron-MoE-ModelZoo, Qwen3-235B-A22B on 256 DGX H100s, BF16 (best_practice/qwen3/readme.md; its
# recompute column: "norm, act" is --recompute-modules layernorm moe_act, "full" full, blank none; the
# long-context command's "layernorm moe" is priced as moe, which keeps the pre-MLP LayerNorm's output)
MOE_MODELZOO = [
    _zoo("EP32", 19.7, 2, 8, 4, 32, 1, 0, _DEEPEP + recomputing(*NORM_ACT)),
    _zoo("EP32 overlap", 17.6, 2, 8, 4, 32, 1, 0, _DEEPEP + (("moe_a2a_overlap", True),) + recomputing(*NORM_ACT)),
    _zoo("EP8 FSDP", 17.6, 2, 1, 1, 8, 4, 128, _DEEPEP + recomputing("full")),
    _zoo("EP8 PP32", 24.2, 2, 32, 3, 8, 1, 0, _ALLTOALL + recomputing(*NORM_ACT)),  # the all-to-all dispatcher
    _zoo("TP4 EP8", 29.0, 4, 8, 4, 8, 1, 0, _DEEPEP + recomputing("none")),
] + [_zoo_long(*row) for row in [(16, 1, 295), (32, 2, 335), (64, 4, 368), (128, 8, 389)]] + [
    # best_practice/mixtral/run_mixtral_8x22B.sh: 16 nodes, runtime.conf's TP 2, PP 8, VP 7, EP 8, MBS 1,
    # GBS 256, the all-to-all dispatcher, "dropless training with forced balancing ... around 465 TFLOPS"
    HeldOutRun(_ZOO, "Mixtral-8x22B", "DGX-H100", "BF16", 128, 256, 1, 4096, 2, 8, 1, 7, 8, 0,
               465e12 / megatron_flops_per_token(56, 6144, 48, 8, 128, 16384, 32768, 4096, top_k=2), 465,
               recipe=_ALLTOALL),
]


def _mlm(size: str, tp: int, pp: int, gpus: int, gbs: int, tflops: float) -> HeldOutRun:
    """A row of Megatron-LM's model table (BF16, sequence 4,096; no micro-batch or interleaving printed:
    ``None``, the planner's), its model from :data:`.heldout.MODELS`, its tokens/s through Megatron-LM's
    count of 2024 (the full square); FSDP 0: Megatron-Core r0.8.0 has none (no FSDP argument in
    ``megatron/training/arguments.py`` before core_r0.10.0); fp32 gradients: its ``--bf16`` sets
    ``accumulate_allreduce_grads_in_fp32`` (``arguments.py`` at core_r0.8.0, no ``--grad-reduce-in-bf16``)."""
    cfg = MODELS[f"GPT-{size}"]
    h, heads = cfg["d_model"], cfg["heads"]
    per_token = megatron_flops_per_token(cfg["layers"], h, heads, heads, h // heads, cfg["d_ff"], cfg["vocab"], 4096,
                                         gated=False, causal=False)
    return HeldOutRun("megatron-lm-2024", f"GPT-{size}", "DGX-H100", "BF16", gpus, gbs, None, 4096, tp, pp, 1,
                      1 if pp == 1 else None, 1, 0, tflops * 1e12 / per_token, tflops, "", FP32_GRADS)


# Megatron-LM README model table (Megatron-Core r0.8.0, DGX H100, BF16, data parallel 48; the models'
# attention heads, hidden sizes and layers are heldout.MODELS')
MEGATRON_LM_2024 = [_mlm(*row) for row in [
    ("1.7B", 1, 1, 48, 192, 408.8), ("7.1B", 2, 1, 96, 192, 465.9), ("16B", 4, 1, 192, 192, 489.1),
    ("32B", 8, 1, 384, 192, 459.6), ("70B", 8, 2, 768, 384, 419.7), ("119B", 8, 4, 1536, 768, 420.5),
    ("177B", 8, 6, 2304, 1152, 432.8), ("314B", 8, 8, 3072, 1536, 474.4), ("462B", 8, 16, 6144, 3072, 459.9),
]]


_NO_OVERLAP = (("moe_a2a_overlap", False),)  # 25.09's Qwen3 recipes: no expert all-to-all overlap
# Megatron-Bridge 25.09, DGX-H100 (no precision printed; "FP8-CS" is the assumption, see outside())
BRIDGE_25_09 = _rows("bridge-25.09", "DGX-H100", [
    ("LLAMA3-8B", "FP8-CS", 8, 128, 1, 8192, 1, 1, 1, 1, 1, 8, 14079, 725),
    ("LLAMA3-70B", "FP8-CS", 64, 128, 1, 8192, 4, 8, 1, 5, 1, 0, 1619, 727),
    ("LLAMA3.1-405B", "FP8-CS", 1024, 512, 1, 8192, 8, 8, 2, 8, 1, 0, 302, 763),
    ("DeepSeekV3 (w/ MTP)", "FP8-CS", 1024, 8192, 1, 4096, 2, 8, 1, 4, 64, 0, 1297, 338, "",
     (("moe_dispatcher", "deepep"), ("moe_a2a_overlap", True))),
    ("Qwen3-30B-A3B", "FP8-CS", 16, 512, 2, 4096, 1, 2, 1, 24, 8, 0, 10494, 241, "", _NO_OVERLAP),
    ("Qwen3-235B-A22B", "FP8-CS", 256, 2048, 1, 4096, 2, 8, 1, 4, 32, 0, 1204, 178, "", _NO_OVERLAP),
])


def _zoo_gb200(precision: str, seq: int, trays: int, tp: int, pp: int, vp: int, cp: int, ep: int, mbs: int,
               gbs: int, tflops: float, recipe: tuple) -> HeldOutRun:
    """A Qwen3-235B-A22B row of the ModelZoo's GB200 table (trays of 4 GPUs, HybridEP), TFLOP/s."""
    return HeldOutRun(_ZOO, "Qwen3-235B-A22B", "DGX-GB200", precision, 4 * trays, gbs, mbs, seq, tp, pp, cp, vp, ep, 0,
                      _qwen3_235b_tokens(seq, tflops), tflops, f"{seq // 1024}K",
                      _NO_TP_OVERLAP + (("moe_dispatcher", "hybridep"),) + recipe)


# best_practice/qwen3/readme.md, GB200, each with what its pricing assumes (its commands: A2A_OVERLAP,
# SEGMENT trays per NVLink domain, the MXFP8 4K run's "activation offloading required")
MODELZOO_GB200 = [
    (_zoo_gb200("BF16", 4096, 64, 1, 8, 1, 1, 8, 1, 8192, 750, ()),
     "its Slurm segment of 2 trays (8-GPU NVLink domains) priced as the topology's 64; CUDA graphs not priced"),
    (_zoo_gb200("MXFP8", 4096, 64, 1, 4, 6, 1, 64, 3, 3072, 919,
                (("moe_a2a_overlap", True), ("offload", ("none", "activations")))),
     "its offloading of two modules' activations priced as the planner's offloading of all of them"),
    (_zoo_gb200("MXFP8", 131072, 32, 4, 4, 12, 4, 32, 1, 1024, 1150, ()),
     "its Slurm segment of 8 trays (32-GPU NVLink domains) priced as the topology's 64"),
]

_FP8_ASSUMED = "no precision printed: FP8 with current scaling assumed (25.11's same tables say FP8-CS)"


def outside() -> list[tuple[HeldOutRun, str]]:
    """Runs priced outside the summary, each with the one assumption its source leaves open."""
    return [(run, _FP8_ASSUMED) for run in BRIDGE_25_09] + MODELZOO_GB200


def runs() -> list[HeldOutRun]:
    """Every held-out run, in the order of the sources."""
    return (NEMO_24_07 + NEMO_LONG_24_03 + NEMO_LONG_25_04 + MEGATRON_LM_2024 + BRIDGE_25_11 + BRIDGE_26_02
            + BRIDGE_2026 + MOE_MODELZOO + heldout_dgxc.runs() + heldout_nemo2.runs())
