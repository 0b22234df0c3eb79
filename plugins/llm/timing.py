"""Iteration time and memory of Megatron-style 3D-parallel training, for many plans at once.

Every function takes arrays of plans (one entry per plan) and returns arrays, so a whole
population is scored in one numpy pass. Per pipeline stage and micro-batch (``L/p`` layers):

* compute (:func:`layer_compute`): the layer's six GEMMs per tensor-parallel rank (QKV, attention
  scores and context as batched GEMMs over the local heads, projection, MLP in and out) and its
  memory-bound kernels (LayerNorms, bias-dropout-residuals, activation, softmax and attention
  dropout), priced by :mod:`.compute`. Backward = 2 × forward (input and weight gradients).
  Recomputation adds one layer forward (``full``) or the attention core (``selective``: scores,
  softmax, dropout, context; Korthikanti et al. 2022 §5).
* tensor-parallel communication (Narayanan et al. SC'21 §3.2; Korthikanti §4.2.2): two
  All-Reduces of ``[b, s, h]`` per layer forward and two backward; with sequence parallelism each
  becomes a reduce-scatter + all-gather pair of the same volume, and the backward pass all-gathers
  the two LayerNorm outputs again (``sp_gather_redo``). Full recomputation repeats the forward's.
* pipeline (Narayanan §2.2): ``m·t_max + (p-1)/v·t_stage`` with ``m = B/(d·b)`` micro-batches,
  ``t_max`` the slowest stage (the first holds the embedding, the last the logits and loss) and
  ``v`` interleaved stages per device; each micro-batch crosses ``2·v`` stage boundaries per
  device, sent with the scatter/gather optimisation (Narayanan §4.1) across nodes.
* data parallelism: All-Reduce of the gradients (or reduce-scatter + all-gather of the weights
  with the distributed optimizer) over the ``d`` replicas; with ``dp_overlap`` only what outlasts
  the last micro-batch's backward pass is exposed. The tied embedding's gradient is All-Reduced
  between first and last stage. The optimizer step reads and writes ``optimizer_bytes`` per
  local parameter (Adam on fp32 master weights: 34 bytes).

Memory per GPU follows :mod:`.memory`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from optmap import collectives as coll
from optmap.plugins.transformer.config import TransformerConfig

from . import memory
from .compute import Device

ACT_BYTES = 2.0  # 16-bit activations and weights (fp16 / bf16)


@dataclass(frozen=True)
class Plans:
    """Decisions of ``P`` plans as arrays: sizes as floats, recompute as 0/1/2, switches as bools."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    mb: np.ndarray
    vp: np.ndarray
    recompute: np.ndarray
    sp: np.ndarray
    zero: np.ndarray
    overlap: np.ndarray


@dataclass(frozen=True)
class Links:
    """Per plan: bandwidth (B/s) and step latency (s) of its TP group, DP group and stage hop."""

    tp_bw: np.ndarray
    tp_lat: np.ndarray
    dp_bw: np.ndarray
    dp_lat: np.ndarray
    pp_bw: np.ndarray
    pp_lat: np.ndarray
    pp_crosses_nodes: np.ndarray


@dataclass(frozen=True)
class Options:
    """Modelling choices (documented defaults; see the cost model's options)."""

    grad_bytes: float = 4.0  # bytes per gradient element reduced over data parallelism
    sp_gather_redo: bool = True  # sequence parallelism re-gathers LayerNorm outputs in backward
    scatter_gather: bool = True  # Narayanan §4.1 optimisation of cross-node stage transfers
    optimizer_bytes: float = 34.0  # HBM bytes per local parameter of one Adam step
    loss_bytes_per_logit: float = 16.0  # HBM bytes per logit of the vocab-parallel cross-entropy, fwd
    memory_reserve: float = 2.0 * 2**30  # bytes of each GPU kept for the CUDA context and buffers


def padded_vocab(cfg: TransformerConfig, t) -> np.ndarray:
    """Megatron pads the vocabulary to a multiple of 128·t (``--make-vocab-size-divisible-by``)."""
    unit = 128.0 * np.asarray(t, float)
    return np.ceil(cfg.vocab / unit) * unit


def layer_compute(cfg: TransformerConfig, dev: Device, b, t, sp) -> tuple[np.ndarray, np.ndarray]:
    """Forward seconds of one layer on one TP rank: (all of it, the attention core alone)."""
    s, h, a, dh = cfg.seq_len, cfg.d_model, cfg.heads, cfg.head_dim
    tok = np.asarray(b, float) * s
    t = np.asarray(t, float)
    gemms = (dev.gemm_time(tok, (cfg.inner + 2 * cfg.kv_inner) / t, h)  # QKV (column-parallel)
             + dev.gemm_time(tok, h, cfg.inner / t)  # projection (row-parallel)
             + dev.gemm_time(tok, cfg.mlp_in / t, h)  # MLP in (gate and up when gated)
             + dev.gemm_time(tok, h, cfg.d_ff / t))  # MLP out
    heads = np.asarray(b, float) * a / t
    core_gemm = dev.gemm_time(s, s, dh, batch=heads) + dev.gemm_time(s, dh, s, batch=heads)  # QKᵀ, ·V
    rep_div = np.where(np.asarray(sp, bool), t, 1.0)
    # element-wise traffic: 2 LayerNorms (read + write, 8 sbh) and 2 bias-dropout-residuals (read 2,
    # write 1, mask 1 byte: 14 sbh) on the replicated [s, b, h]; activation read + write on the shard
    rep_bytes = (8.0 + 14.0) * tok * h / rep_div
    act_bytes = 2.0 * ACT_BYTES * tok * cfg.mlp_in / t
    core_bytes = 9.0 * heads * s * s  # scale-mask-softmax (read + write, 4) and attention dropout (5)
    core = core_gemm + dev.memory_time(core_bytes, kernels=2)
    return gemms + core + dev.memory_time(rep_bytes + act_bytes, kernels=5), core


def tp_layer_comm(cfg: TransformerConfig, b, t, sp, recompute, bw, lat, opts: Options) -> np.ndarray:
    """Tensor-parallel communication seconds of one layer, forward + backward (+ recompute)."""
    n = ACT_BYTES * np.asarray(b, float) * cfg.seq_len * cfg.d_model  # [b, s, h] in 16 bits
    ar = coll.allreduce(n, t, bw, lat)  # Megatron f / g operators
    ag = coll.allgather(n, t, bw, lat)
    rs = coll.reduce_scatter(n, t, bw, lat)
    sp = np.asarray(sp, bool)
    fwd = np.where(sp, 2 * (ag + rs), 2 * ar)
    bwd = np.where(sp, 2 * (ag + rs) + (2 * ag if opts.sp_gather_redo else 0.0), 2 * ar)
    redo = np.where(np.asarray(recompute) == memory.FULL, fwd, 0.0)
    return fwd + bwd + redo


def evaluate(cfg: TransformerConfig, batch: int, plans: Plans, links: Links, dev: Device,
             memory_capacity: float, opts: Options = Options()) -> dict[str, np.ndarray]:
    """Iteration time with its parts and memory per GPU with its parts, per plan (SI units)."""
    t, p, d, b, v = plans.tp, plans.pp, plans.dp, plans.mb, plans.vp
    rc, sp = plans.recompute, plans.sp
    L, s, h = cfg.layers, cfg.seq_len, cfg.d_model
    m = batch / (d * b)  # micro-batches per pipeline per iteration
    per_stage = L / p
    vocab = padded_vocab(cfg, t)

    f_layer, core = layer_compute(cfg, dev, b, t, sp)
    rec_layer = np.where(rc == memory.FULL, f_layer, np.where(rc == memory.SELECTIVE, core, 0.0))
    tp_layer = np.where(t > 1, tp_layer_comm(cfg, b, t, sp, rc, links.tp_bw, links.tp_lat, opts), 0.0)

    # first stage: embedding lookup and its TP reduction; last stage: logits GEMM and the loss
    tok = b * s
    emb_f = dev.memory_time(ACT_BYTES * tok * h, kernels=1)
    emb_comm = np.where(t > 1, coll.allreduce(ACT_BYTES * tok * h, t, links.tp_bw, links.tp_lat), 0.0)
    head_f = dev.gemm_time(tok, vocab / t, h) + dev.memory_time(opts.loss_bytes_per_logit * tok * vocab / t, kernels=3)
    head_comm = np.where(t > 1, 3 * coll.allreduce(4.0 * tok, t, links.tp_bw, links.tp_lat), 0.0)  # CE max/sum/target

    # stage boundary transfers: [b, s, h] (already 1/t with sequence parallelism)
    xfer = ACT_BYTES * tok * h
    split = np.where(sp, t, 1.0)
    sg = opts.scatter_gather & links.pp_crosses_nodes & (t > 1) & ~np.asarray(sp, bool)
    hop = np.where(sg, coll.point_to_point(xfer / t, links.pp_bw, links.pp_lat)
                   + coll.allgather(xfer, t, links.tp_bw, links.tp_lat),
                   coll.point_to_point(xfer / split, links.pp_bw, links.pp_lat))
    p2p = np.where(p > 1, 2.0 * v * hop, 0.0)

    fwd_stage = per_stage * f_layer
    stage = per_stage * (3.0 * f_layer + rec_layer + tp_layer) + p2p  # fwd + 2×fwd bwd + recompute
    first_extra = 3.0 * emb_f + 2.0 * emb_comm
    last_extra = 3.0 * head_f + 2.0 * head_comm
    extra = np.where(p > 1, np.maximum(first_extra, last_extra), first_extra + last_extra)
    bubble = (p - 1.0) / v * stage

    # parameters held by the first stage (layers + embeddings), the most of any stage
    emb_params = vocab * h + cfg.max_positions * h
    stage_params = (per_stage * cfg.layer_params + emb_params) / t
    grads = opts.grad_bytes * stage_params
    zero = np.asarray(plans.zero, bool) & (d > 1)
    reduce = np.where(zero, coll.reduce_scatter(grads, d, links.dp_bw, links.dp_lat),
                      coll.allreduce(grads, d, links.dp_bw, links.dp_lat))
    gather = np.where(zero, coll.allgather(ACT_BYTES * stage_params, d, links.dp_bw, links.dp_lat), 0.0)
    window = 2.0 * fwd_stage  # the last micro-batch's backward pass, during which buckets reduce
    exposed = np.where(np.asarray(plans.overlap, bool), np.maximum(0.0, reduce - window), reduce)
    dp_comm = np.where(d > 1, exposed + gather, 0.0)
    emb_sync = np.where(p > 1, coll.allreduce(opts.grad_bytes * vocab * h / t, 2, links.pp_bw, links.pp_lat), 0.0)
    optimizer = dev.memory_time(opts.optimizer_bytes * stage_params / np.where(zero, d, 1.0), kernels=4)

    parts = {
        "forward_s": m * fwd_stage,
        "backward_s": m * 2.0 * fwd_stage,
        "recompute_s": m * per_stage * rec_layer,
        "tp_comm_s": m * per_stage * tp_layer,
        "embedding_logits_s": m * extra,  # the slowest stage's embedding or logits + loss (both if p = 1)
        "pp_comm_s": m * p2p,
        "bubble_s": bubble,
        "dp_comm_s": dp_comm + emb_sync,
        "optimizer_s": optimizer,
    }
    time = sum(parts.values())

    # memory per GPU: the first stage (embedding, most activations) or the last (logits)
    act_layer = memory.layer_activations(cfg, b, t, sp, rc)
    first_act = act_layer * memory.in_flight_layers(L, p, v, m) + s * b * h * np.minimum(m, p) / split
    working = np.where(rc == memory.FULL, memory.layer_activations(cfg, b, t, sp, memory.NONE), 0.0)
    logits = 6.0 * s * b * vocab / t
    last_act = act_layer * per_stage + logits
    per_param = memory.optimizer_bytes_per_param(zero, d)
    static = stage_params * per_param
    activations = np.where(p > 1, np.maximum(first_act, last_act), first_act + logits) + working
    total = static + activations
    feasible = total <= memory_capacity - opts.memory_reserve
    flops = model_flops(cfg, batch)
    gpus = t * p * d
    return {
        "time": time, **parts,
        "throughput": batch * s / time,  # tokens per second
        "tflops_per_gpu": flops / (time * gpus) / 1e12,
        "gpus": gpus,
        "memory_weights_gib": stage_params * memory.optimizer_bytes_per_param(zero, d) / 2**30,
        "memory_activations_gib": activations / 2**30,
        "memory_gib": total / 2**30,
        "feasible": feasible,
    }


def model_flops(cfg: TransformerConfig, batch: int) -> float:
    """Model FLOPs of one iteration without recomputation: 3 × forward (Korthikanti §6 'MFU')."""
    return 3.0 * batch * cfg.flops_fwd()
