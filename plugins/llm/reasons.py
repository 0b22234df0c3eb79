"""Why a ``megatron-3d`` plan is invalid or does not fit: one sentence (the cost model's report reason)."""

from __future__ import annotations

from . import moe, stages

GIB = 2.0**30


def why_not(model, plan: dict, memory_gib: float, host_gib: float = 0.0) -> str:
    """The first rule of :mod:`.model`'s docstring ``plan`` breaks, or its memory overflow; "" if none."""
    t, p, d = plan["tensor_parallel"], plan["pipeline_parallel"], plan["data_parallel"]
    b, v, cp = plan["microbatch_size"], plan["interleaving"], plan["context_parallel"]
    n, batch, cfg, opts = model.n, model.batch, model.config, model.options
    if (t * p * d * cp != n) if model.use_all_gpus else (t * p * d * cp > n):
        rel = "differs from" if model.use_all_gpus else "exceeds"
        return f"tensor × pipeline × context × data = {t * p * d * cp} GPUs {rel} the system's {n}"
    if cp > 1 and (cfg.seq_len % (2 * cp) or opts.attention != "flash"):
        return (f"context_parallel {cp} needs seq_len {cfg.seq_len} divisible by 2 × {cp} and fused "
                f"attention ([cost] attention = \"flash\"), as Megatron-Core's ring attention does")
    if batch % (d * b):
        return f"batch {batch} is not divisible by data_parallel × microbatch_size = {d * b}"
    if v > 1 and (p == 1 or (batch // (d * b)) % p):
        return f"interleaving {v} needs pipeline_parallel > 1 and micro-batches divisible by pipeline_parallel"
    if not bool(stages.split(cfg.layers, p, v, opts.uneven_stages).valid):
        return (f"pipeline {p} × interleaving {v} = {p * v} model chunks cannot split {cfg.layers} "
                f"layers with uneven_stages = \"{opts.uneven_stages}\" (balanced: a divisor of the "
                f"layers or of layers + 2; any: also any pipeline size up to the layers without interleaving; "
                f"layout: any split up to layers + 2 chunks, Megatron-Core's --pipeline-model-parallel-layout)")
    experts = moe.reason(cfg, {**plan, "data_parallel": d * cp}, model.etp_pinned, opts.moe_a2a_overlap)
    if experts:
        return experts
    limit = (model.capacity - opts.memory_reserve) / GIB
    if memory_gib > limit:
        offloads = model.space.variables[model.space.index("offload")].choices
        hint = "" if len(offloads) > 1 else (" (offloading was not searched: [cost] offload = "
                                             "[\"none\", \"optimizer\", \"activations\", \"both\"] allows it)")
        return f"needs {memory_gib:.1f} GiB per GPU, {limit:.1f} GiB available{hint}"
    if host_gib > opts.host_memory / GIB:
        return (f"offloads {host_gib:.1f} GiB per GPU to host memory, {opts.host_memory / GIB:.1f} GiB available "
                f"(topology option host_memory_gib)")
    return ""
