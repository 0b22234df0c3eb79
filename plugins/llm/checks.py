"""What ``megatron-3d`` refuses before it builds a search space: a workload it cannot plan, and
``[cost]`` options out of range (each one line, :class:`optmap.errors.OptmapError`, exit code 2)."""

from __future__ import annotations

from optmap.errors import OptmapError
from optmap.workload import Workload
from optmap.workload.transformer import TransformerConfig, sizes_of

from . import attention as attn, memory, precision, stages
from .offload import OFFLOAD


def planned(workload: Workload) -> tuple[TransformerConfig, precision.Recipe]:
    """The transformer's sizes and its precision recipe; refuses a layer graph, an encoder-decoder, an
    inference phase and a dtype that is not a mixed-precision training recipe (:mod:`.precision`)."""
    cfg = sizes_of(workload, "the megatron-3d cost model plans a transformer")
    if cfg.kind not in ("decoder-only", "encoder"):
        raise OptmapError(f"megatron-3d plans a stack of identical layers (decoder-only or encoder), "
                          f"not '{cfg.kind}'; use a GPT- or Llama-style preset")
    if workload.phase != "training":
        raise OptmapError("megatron-3d plans training; set [workload] phase = \"training\"")
    rec = precision.recipe(workload.dtype)
    if rec is None:
        raise OptmapError(f"megatron-3d models mixed-precision training (16-bit weights and activations, fp32 "
                          f"master weights and Adam state); [workload] dtype = \"{workload.dtype}\" is not "
                          f"16-bit: use \"bf16\" or \"fp16\", or \"fp8\" / \"mxfp8\" for 8-bit linear layers")
    return cfg, rec


def options(*, max_microbatch, max_interleaving, recompute, attention, attention_tflops, offload,
            max_context_parallel, uneven_stages, memory_reserve_gib, gemm_efficiency, memory_efficiency,
            fp8_gemm_efficiency) -> None:
    """Refuses a ``[cost]`` option of :class:`.model.Megatron3DCostModel` outside its range."""
    for name, value in (("max_microbatch", max_microbatch), ("max_interleaving", max_interleaving)):
        if value < 1:
            raise OptmapError(f"[cost] {name} must be >= 1, got {value}")
    if not recompute or any(r not in memory.RECOMPUTE for r in recompute):
        raise OptmapError(f"[cost] recompute must list some of {list(memory.RECOMPUTE)}, got {list(recompute)}")
    if attention not in attn.ATTENTION:
        raise OptmapError(f"[cost] attention must be one of {list(attn.ATTENTION)}, got {attention!r}")
    if attention_tflops is not None and attention != "flash":
        raise OptmapError("[cost] attention_tflops prices a fused attention kernel; set attention = \"flash\" "
                          "or leave attention_tflops out")
    if not offload or any(o not in OFFLOAD for o in offload):
        raise OptmapError(f"[cost] offload must list some of {list(OFFLOAD)}, got {list(offload)}")
    if max_context_parallel is not None and max_context_parallel < 1:
        raise OptmapError(f"[cost] max_context_parallel must be >= 1, got {max_context_parallel}")
    if uneven_stages not in stages.UNEVEN_STAGES:
        raise OptmapError(f"[cost] uneven_stages must be one of {list(stages.UNEVEN_STAGES)}, got {uneven_stages!r}")
    if memory_reserve_gib < 0:
        raise OptmapError(f"[cost] memory_reserve_gib must be >= 0, got {memory_reserve_gib}")
    for name, value in (("gemm_efficiency", gemm_efficiency), ("memory_efficiency", memory_efficiency),
                        ("fp8_gemm_efficiency", fp8_gemm_efficiency)):
        if value is not None and not 0.0 < value <= 1.0:
            raise OptmapError(f"[cost] {name} must be in (0, 1], got {value}")
