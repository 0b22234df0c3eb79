"""Iteration time of Megatron-LM 3D-parallel training, vectorised over plans.

:func:`evaluate` takes plans as numpy arrays that broadcast together (one entry per plan, or
axes such as ``[shapes, recompute, sequence_parallel, sharding, overlap]`` so that every size is
priced once per shape and only the cheap sums run over the switch settings; the engine does
this). Per pipeline stage and micro-batch (``L/p`` layers):

* compute (:func:`layer_compute`): the layer's four weight GEMMs per tensor-parallel rank (QKV,
  projection, MLP in and out), the attention core over the local heads (:mod:`.attention`: fused
  flash attention, or unfused scores, softmax and dropout) and the memory-bound kernels
  (LayerNorms, bias-dropout-residuals, activation), priced by :mod:`.compute`. Backward: the GEMMs' input and
  weight gradients as the compute model prices them (twice the forward for the fitted roofline)
  and twice the element-wise traffic. Recomputation
  adds one layer forward (``full``) or the attention core (``selective``: scores, softmax,
  dropout, context; Korthikanti et al. 2022 §5).
* tensor-parallel communication (Narayanan et al. SC'21 §3.2; Korthikanti §4.2.2): two
  All-Reduces of ``[b, s, h]`` per layer forward; with sequence parallelism each becomes an
  all-gather + reduce-scatter pair of the same volume. Backward, the two column-parallel layers
  (QKV, MLP in) All-Reduce their input gradient (sequence parallelism: reduce-scatter it, and
  re-gather the LayerNorm output, ``sp_gather_redo``), and with sequence parallelism the two
  row-parallel outputs' gradients are all-gathered. ``tp_overlap`` (Megatron-LM's asynchronous
  tensor-parallel communication, on by default since 2022) runs the column-parallel layers'
  collectives beside their weight-gradient (and input-gradient) GEMMs, so only what outlasts
  the GEMM is exposed. ``tp_comm_overlap`` (with sequence parallelism: Transformer Engine's
  userbuffers, Megatron-Core ``--tp-comm-overlap``) also splits the forward's four collectives and
  the row-parallel gradients' all-gathers into chunks pipelined with their GEMMs
  (:mod:`.userbuffers`). Full recomputation repeats the forward's communication.
* pipeline (Narayanan §2.2; :mod:`optmap.schedule`): ``m·t_max + (p-1)/v·t_stage`` with ``m =
  B/(d·b)`` micro-batches, ``t_max`` the slowest stage (the first holds the embedding, the last the
  logits and loss; with uneven stages, :mod:`.stages`, both may hold fewer layers than the middle
  ones, and the busiest of first, middle and last sets the pace) and ``v`` interleaved stages per
  device; each micro-batch crosses ``2·v`` stage boundaries per device, sent with the
  scatter/gather optimisation (Narayanan §4.1) across nodes.
* gradients: without ``grad_accumulation_fusion`` (Megatron-LM before mid-2022) every
  micro-batch's weight gradients are added into the main-gradient buffer by a separate kernel
  (read both, write one); fused, the weight-gradient GEMM accumulates in place.
* data parallelism: All-Reduce of the gradients (or reduce-scatter + all-gather of the weights
  with the distributed optimizer) over the ``d`` replicas; with ``dp_overlap`` only what outlasts
  the last micro-batch's backward pass is exposed. The tied embedding's gradient is All-Reduced
  between first and last stage. The optimizer step reads and writes ``optimizer_bytes`` per
  local parameter (:func:`.memory.optimizer_bytes`). Main gradients take 4 bytes (fp32) or 2 (16-bit) per
  element, as the plan's ``grad_reduce_in_fp32`` says: their memory, reduction and optimizer step.

* issue 25's decisions: context parallelism (:mod:`.context`) prices every per-token term as a
  micro-batch of ``b/cp`` sequences and adds the ring's exposed steps; FSDP (:mod:`.sharding`)
  adds each layer's exposed gathers and reduce-scatter per micro-batch and drops the final
  gradient reduction; offloading (:mod:`.offload`) adds each layer's exposed activation transfers
  and streams the optimizer state over the host link. Gradients are reduced and optimizer state
  sharded over the ``d·cp`` ranks that hold the same weights.

Memory per GPU follows :mod:`.memory`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from optmap import collectives as coll
from optmap import schedule
from optmap.workload.transformer import TransformerConfig

from . import attention as attn
from . import context, memory, moe, offload, precision, recompute, sharding, stages, userbuffers
from .compute import Device
from .footprint import Columns, fullest, largest, summed
from .inputs import Links, Options, Plans
from .flops import hardware_flops, model_flops

ACT_BYTES = 2.0  # 16-bit activations and weights (fp16 / bf16)
PARTS = ("forward_s", "backward_s", "recompute_s", "tp_comm_s", "embedding_logits_s", "pp_comm_s",
         "bubble_s", "grad_accumulation_s", "dp_comm_s", "optimizer_s", "cp_comm_s", "fsdp_comm_s", "offload_s",
         "ep_comm_s")


@dataclass(frozen=True)
class LayerTimes:
    """Seconds of one layer and micro-batch on one TP rank, and the pieces overlap needs."""

    forward: np.ndarray  # the whole layer, forward
    backward: np.ndarray  # the whole layer, backward (input and weight gradients)
    core: np.ndarray  # the attention core, forward (what selective recomputation redoes)
    qkv: np.ndarray  # the QKV GEMM's backward (its GEMMs hide the column-parallel collectives)
    mlp_in: np.ndarray  # the MLP-in GEMM's backward (likewise)
    core_backward: np.ndarray = 0.0  # the attention core, backward (hides the context-parallel ring)
    experts_forward: np.ndarray = 0.0  # a MoE layer's routed-expert MLP, forward (the rest is attention)
    experts_backward: np.ndarray = 0.0  # likewise, backward
    norm_act: np.ndarray = 0.0  # the separate LayerNorms and the experts' activation, forward (:mod:`.recompute`)
    mla_up_proj: np.ndarray = 0.0  # latent attention's up-projections and rotary embedding, forward (likewise)


def padded_vocab(cfg: TransformerConfig, t) -> np.ndarray:
    """Megatron pads the vocabulary to a multiple of 128·t (``--make-vocab-size-divisible-by``)."""
    unit = 128.0 * np.asarray(t, float)
    return np.ceil(cfg.vocab / unit) * unit


def layer_compute(cfg: TransformerConfig, dev: Device, b, t, sp, linear: Device | None = None,
                  ep=1.0, opts: Options = Options(), etp=1.0) -> LayerTimes:
    """Seconds of one layer on one TP rank (see the module docstring); element-wise kernels'
    backward reads and writes twice their forward traffic. ``linear`` prices the four linear
    GEMMs (FP8 recipes, :mod:`.precision`); the attention core (:mod:`.attention`, fused or not,
    ``opts.attention``) and element-wise kernels use ``dev``. A MoE model's layer is the average
    of its dense and MoE layers, whose MLP is :func:`.moe.mlp_times` (``ep``, ``etp``: expert and expert
    tensor parallel sizes)."""
    if cfg.moe is not None and cfg.moe.dense_layers:
        dense = layer_compute(cfg.with_(moe=None), dev, b, t, sp, linear, opts=opts)
        sparse = layer_compute(cfg.with_(moe=dataclasses.replace(cfg.moe, dense_layers=0)), dev, b, t, sp, linear,
                               ep, opts, etp)
        return moe.blend(cfg, dense, sparse)
    lin = linear or dev
    s, h = cfg.seq_len, cfg.d_model
    tok = np.asarray(b, float) * s
    t = np.asarray(t, float)
    qkv, proj = attn.linear_times(cfg, lin, tok, t, sp)
    if cfg.moe is None:
        mlp_in = lin.gemm_times(tok, cfg.mlp_in / t, h)  # column-parallel (gate and up when gated)
        mlp_out = lin.gemm_times(tok, h, cfg.d_ff / t)  # row-parallel
        mlp_hide, act_bytes = mlp_in[1], 2.0 * ACT_BYTES * tok * cfg.mlp_in / t
    else:  # router, token permutation and the local experts (:mod:`.moe`), priced whole
        experts = moe.mlp_times(cfg, dev, lin, b, t, sp, ep, etp, opts.moe_load_imbalance,
                                opts.moe_dispatcher, opts.fp8_scaling)
        mlp_in, mlp_out = (experts.forward, experts.backward), (0.0, 0.0)
        mlp_hide, act_bytes = experts.shared_in, 0.0
    redo = recompute.redo_seconds(cfg, dev, lin, b, t, sp, 0.0 if cfg.moe is None else experts.act)
    core_f, core_b = attn.core_times(cfg, dev, b, t, opts.attention, opts.attention_tflops)
    # element-wise traffic: 2 LayerNorms (read + write, 8 sbh) and 2 bias-dropout-residuals (read 2,
    # write 1, mask 1 byte: 14 sbh) on the [s, b, h] tensor (1/t of it with sequence parallelism);
    # the activation reads and writes the MLP shard (and the gated product when gated)
    rep_bytes = (8.0 + 14.0) * tok * h / np.where(np.asarray(sp, bool), t, 1.0)
    elementwise = dev.memory_time(rep_bytes + act_bytes, kernels=5)
    cast_forward = cast_backward = 0.0
    if linear is not None:  # FP8 recipes cast every linear input and output gradient (:mod:`.precision`)
        cast_f, cast_b, k_f, k_b = precision.cast_bytes(cfg, tok, t, cfg.moe is None, opts.fp8_scaling)
        cast_forward, cast_backward = dev.memory_time(cast_f, kernels=k_f), dev.memory_time(cast_b, kernels=k_b)
    gemms = (qkv, proj, mlp_in, mlp_out)
    forward = sum(g[0] for g in gemms) + core_f + elementwise + cast_forward
    backward = sum(g[1] for g in gemms) + core_b + 2.0 * elementwise + cast_backward
    routed = (0.0, 0.0) if cfg.moe is None else mlp_in
    return LayerTimes(forward, backward, core_f, qkv[1], mlp_hide, core_b, *routed, *redo)


def tp_layer_comm(cfg: TransformerConfig, lt: LayerTimes, b, t, sp, recompute, bw, lat,
                  opts: Options, lin: Device) -> np.ndarray:
    """Exposed tensor-parallel communication seconds of one layer: forward + backward (+ recompute);
    ``lin`` prices the linear GEMMs (chunked with ``tp_comm_overlap``). Each block's input
    collectives carry what its column-parallel linears read (``cfg.attention_input_width`` for the
    attention: ``d_model``, or latent attention's compressed latents), its output ones ``[b, s, h]``."""
    def collectives(width):  # all-reduce, all-gather, reduce-scatter of [b, s, width] in 16 bits
        n = ACT_BYTES * np.asarray(b, float) * cfg.seq_len * width
        return coll.allreduce(n, t, bw, lat), coll.allgather(n, t, bw, lat), coll.reduce_scatter(n, t, bw, lat)

    ar, ag, rs = collectives(cfg.d_model)  # Megatron f / g operators
    ar_in, ag_in, rs_in = collectives(cfg.attention_input_width) if cfg.mla is not None else (ar, ag, rs)
    sp = np.asarray(sp, bool)
    mlp = moe.tensor_parallel_mlp_share(cfg)  # 1 (dense): the MLP has its own f and g operators
    blocks = 1.0 + mlp  # attention, and the MLP where it is tensor-parallel (routed experts are not)
    fwd = np.where(sp, ag_in + rs + mlp * (ag + rs), blocks * ar)
    redo, redo_in = (ag, ag_in) if opts.sp_gather_redo else (0.0, 0.0)
    row_gather = blocks * ag  # row-parallel backward: the output gradient's all-gather before its GEMM
    if opts.tp_comm_overlap:  # with sp, the collectives chunked beside their GEMMs (:mod:`.userbuffers`)
        ub_fwd, ub_bwd = userbuffers.exposed(cfg, lin, np.asarray(b, float) * cfg.seq_len, t, ag, rs)
        whole = (ag_in + rs, ag) if cfg.mla is not None else (0.0, 0.0)  # latent attention: not chunked
        fwd, row_gather = np.where(sp, ub_fwd + whole[0], fwd), np.where(sp, ub_bwd + whole[1], row_gather)
    if opts.tp_overlap:  # each column-parallel layer: AR (sp: RS) beside its weight-gradient GEMM,
        hidden = 0.0  # the re-gather beside its input-gradient GEMM (each half of its backward)
        for gemm, share, (a, r, g) in ((lt.qkv / 2.0, 1.0, (ar_in, rs_in, redo_in)), (lt.mlp_in / 2.0, mlp, (ar, rs, redo))):
            hidden = hidden + share * np.where(sp, np.maximum(0.0, r - gemm) + np.maximum(0.0, g - gemm),
                                               np.maximum(0.0, a - gemm))
        bwd = np.where(sp, row_gather, 0.0) + hidden
    else:
        bwd = np.where(sp, blocks * ag + rs_in + redo_in + mlp * (rs + redo), ar_in + mlp * ar)
    again = np.where(np.asarray(recompute) == memory.FULL, fwd, 0.0)
    return np.where(t > 1, fwd + bwd + again, 0.0)


def evaluate(cfg: TransformerConfig, batch: int, plans: Plans, links: Links, dev: Device,
             memory_capacity: float, opts: Options = Options(), linear: Device | None = None,
             breakdown: bool = True) -> dict[str, np.ndarray]:
    """Iteration time with its parts and memory per GPU with its parts, per plan (SI units);
    ``linear`` prices the layers' linear GEMMs when they run in FP8 (:func:`layer_compute`);
    ``breakdown`` false leaves out the time and memory parts (``forward_s`` ..., ``memory_weights`` ...),
    which a search of millions of plans never reads, and derives throughput and TFLOP/s when read
    (:class:`.footprint.Columns`): the time, the memory total and feasibility stay."""
    t, p, d, b, v = plans.tp, plans.pp, plans.dp, plans.mb, plans.vp
    rc, sp = plans.recompute, np.asarray(plans.sp, bool)
    cp = np.asarray(plans.cp, float)
    L, s, h = cfg.layers, cfg.seq_len, cfg.d_model
    m = batch / (d * b)  # micro-batches per pipeline per iteration
    shards = d * cp  # ranks holding the same weights: gradients reduced, optimizer sharded over them
    fsdp = np.asarray(plans.fsdp, bool) & (shards > 1)
    grad_bytes = plans.grad_bytes  # per main-gradient element: fp32 or 16-bit (decision grad_reduce_in_fp32)
    off_act, off_opt = offload.activations_offloaded(plans.offload), offload.optimizer_offloaded(plans.offload)
    layout = stages.split(L, p, v, opts.uneven_stages)
    if cfg.mtp_layers:  # DeepSeek-V3's multi-token prediction modules: one more layer each on the last stage
        one = np.asarray(p) == 1  # (the only stage: the first too)
        layout = dataclasses.replace(layout, last_device=layout.last_device + cfg.mtp_layers,
                                     first_device=layout.first_device + np.where(one, cfg.mtp_layers, 0.0))
    vocab = padded_vocab(cfg, t)
    bt = context.tokens_per_rank(b, cp)  # a context-parallel rank works on s/cp tokens per sequence

    ep, etp = plans.ep, plans.etp
    lt = layer_compute(cfg, dev, bt, t, sp, linear, ep, opts, etp)
    f_layer, b_layer = lt.forward, lt.backward
    # recomputed in the backward: the layer, the attention core, the separate LayerNorms and the experts'
    # activation, or the MoE layer's experts (its all-to-alls: below) and / or latent attention's up-projections
    rec_layer = np.select([rc == memory.FULL, rc == memory.SELECTIVE, rc == memory.NORM_ACT],
                          [f_layer, lt.core, lt.norm_act], np.where(np.isin(rc, memory.REDO_MOE), lt.experts_forward, 0.0)
                          + np.where(np.isin(rc, memory.REDO_UP_PROJ), lt.mla_up_proj, 0.0))
    tp_layer = tp_layer_comm(cfg, lt, bt, t, sp, rc, links.tp_bw, links.tp_lat, opts, linear or dev)
    # the average layer's token dispatch and combine, each pass (MoE layers only, :mod:`.moe`)
    exchange = 0.0 if cfg.moe is None else moe.moe_fraction(cfg) * moe.dispatch_combine(
        cfg, bt, t, sp, ep, links, etp, opts.moe_load_imbalance, opts.moe_dispatcher)
    ep_layer = moe.exchange_passes(rc) * exchange
    if cfg.moe is not None and opts.moe_a2a_overlap:  # beside another micro-batch's compute (:mod:`.moe`)
        mlp = (lt.experts_forward, lt.experts_backward)  # one all-to-all: half a pass
        ep_layer = moe.overlapped(ep_layer, exchange / 2.0, (f_layer - mlp[0], b_layer - mlp[1]), mlp, p, v, m,
                                  opts.moe_comm_share)
    ring_f, ring_b = context.ring_exposed(cfg, b, t, cp, lt.core, lt.core_backward, links.cp_bw, links.cp_lat)
    core_again = (rc == memory.FULL) | (rc == memory.SELECTIVE)
    cp_layer = ring_f + ring_b + np.where(core_again, ring_f, 0.0)  # recomputing the core repeats its ring
    dense_layer, expert_layer = moe.param_split(cfg)  # routed experts split over ep·etp ranks, the rest over t
    layer_params = dense_layer / t  # one layer's tensor-parallel shard (FSDP gathers it over dp·cp)
    edp = moe.expert_data_parallel(t, shards, ep, etp)  # experts' replicas fold over tensor × data × context
    layer_experts = (expert_layer / (ep * etp), edp, links.edp_bw, links.edp_lat)  # FSDP gathers them over edp
    gather_f, gather_b = sharding.layer_exposed(layer_params, grad_bytes, shards, links.dp_bw, links.dp_lat,
                                                f_layer, b_layer + rec_layer, opts.fsdp_reshard, layer_experts)
    fsdp_layer = np.where(fsdp, gather_f + gather_b, 0.0)
    routed = 0.0 if cfg.moe is None else moe.moe_fraction(cfg) * moe.routed_activations(
        cfg, bt, t, sp, opts.moe_load_imbalance, opts.gemm_input_bytes, opts.fused_swiglu)
    discarded = recompute.discarded(cfg, bt, t, sp, opts.moe_load_imbalance, opts.gemm_input_bytes, opts.fused_swiglu)
    act_layer = memory.layer_activations(cfg, bt, t, sp, rc, opts.gemm_input_bytes, opts.attention,
                                         opts.fused_swiglu, routed, discarded)
    offload_layer = np.where(off_act, offload.activation_exposed(act_layer, opts.host_bandwidth, f_layer,
                                                                 b_layer + rec_layer), 0.0)

    # first stage: embedding lookup and its TP reduction; last stage: logits GEMM and the loss
    tok = bt * s
    emb_f = dev.memory_time(ACT_BYTES * tok * h, kernels=1)
    emb_comm = np.where(t > 1, coll.allreduce(ACT_BYTES * tok * h, t, links.tp_bw, links.tp_lat), 0.0)
    logits_f, logits_b = dev.gemm_times(tok, vocab / t, h)
    head = logits_f + logits_b + 3.0 * dev.memory_time(opts.loss_bytes_per_logit * tok * vocab / t, kernels=3)
    head_comm = np.where(t > 1, 3 * coll.allreduce(4.0 * tok, t, links.tp_bw, links.tp_lat), 0.0)  # CE max/sum/target

    # stage boundary transfers: [b, s, h] (already 1/t with sequence parallelism)
    xfer = ACT_BYTES * tok * h
    sg = opts.scatter_gather & links.pp_crosses_nodes & (t > 1) & ~sp
    hop = np.where(sg, coll.point_to_point(xfer / t, links.pp_bw, links.pp_lat)
                   + coll.allgather(xfer, t, links.tp_bw, links.tp_lat),
                   coll.point_to_point(xfer / np.where(sp, t, 1.0), links.pp_bw, links.pp_lat))
    p2p = np.where(p > 1, 2.0 * v * hop, 0.0)

    # parameters of the first stage (its layers + embeddings), a middle one and the last; the most
    # of any stage sizes the gradients, optimizer step and memory (the last keeps an embedding copy)
    emb_params = vocab * h + cfg.max_positions * h
    middle = p > 2
    stage_layers = np.maximum(np.maximum(layout.first_device, layout.last_device),
                              np.where(middle, layout.middle_device, 0.0))
    stage_dense = np.maximum(np.maximum(layout.first_device, layout.last_device) * dense_layer + emb_params,
                             np.where(middle, layout.middle_device * dense_layer, 0.0)) / t
    stage_experts = stage_layers * expert_layer / (ep * etp)
    stage_params = stage_dense + stage_experts
    grads = grad_bytes * stage_dense
    # unfused accumulation: main_grad += grad per micro-batch (read both, write main_grad)
    accumulate = 0.0 if opts.grad_accumulation_fusion else dev.memory_time((2.0 * grad_bytes + ACT_BYTES)
                                                                           * stage_params, kernels=1)

    first_extra = 3.0 * emb_f + 2.0 * emb_comm  # lookup forward, gradient scatter-add backward
    # the last stage: the logits and loss, and per multi-token prediction module (DeepSeek-V3 §2.2; its
    # layer counted above) the projection of [h; embedding] (2h -> h) and the shared head once more
    mtp_proj = sum(dev.gemm_times(tok, h / t, 2.0 * h)) if cfg.mtp_layers else 0.0
    last_extra = (1.0 + cfg.mtp_layers) * (head + 2.0 * head_comm) + cfg.mtp_layers * mtp_proj
    # the slowest device sets the pace (:mod:`.stages`): the first (layers + embedding), a middle
    # one or the last (layers + logits and loss); with p = 1 one device runs everything
    per_layer = f_layer + b_layer + rec_layer + tp_layer + cp_layer + fsdp_layer + offload_layer + ep_layer
    busy_first = layout.first_device * per_layer + first_extra
    busy_last = layout.last_device * per_layer + last_extra
    busy_middle = np.where(middle, layout.middle_device * per_layer, 0.0)
    last_slowest = (busy_last >= busy_first) & (busy_last >= busy_middle)
    first_slowest = ~last_slowest & (busy_first >= busy_middle)
    per_stage = np.where(last_slowest, layout.last_device,
                         np.where(first_slowest, layout.first_device, layout.middle_device))
    extra = np.where(p > 1, np.where(last_slowest, last_extra, np.where(first_slowest, first_extra, 0.0)),
                     first_extra + last_extra)

    stage = per_stage * per_layer + p2p + accumulate
    bubble = schedule.uniform_bubble_time(p, stage, v)  # Narayanan §2.2.2: (p - 1) t / v

    zero = np.asarray(plans.zero, bool) & (shards > 1)
    # the dense parameters' gradients over data × context (FSDP reduces them layer by layer instead)
    dense_live = (shards > 1) & ~fsdp
    reduce, gather = (np.where(dense_live, x, 0.0) for x in sharding.gradient_sync(
        grads, ACT_BYTES * stage_dense, shards, zero, links.dp_bw, links.dp_lat))
    expert_zero = (np.asarray(plans.zero, bool) | fsdp) & (edp > 1)
    if cfg.moe is not None:  # expert gradients reduce over the expert-data-parallel group (:mod:`.moe`; FSDP: per layer)
        expert_reduce, expert_gather = (np.where((edp > 1) & ~fsdp, x, 0.0) for x in sharding.gradient_sync(
            grad_bytes * stage_experts, ACT_BYTES * stage_experts, edp, expert_zero, links.edp_bw, links.edp_lat))
        reduce, gather = reduce + expert_reduce, gather + expert_gather
    window = per_stage * b_layer  # the last micro-batch's backward pass, during which buckets reduce
    overlap, outlasts = np.asarray(plans.overlap, bool), np.maximum(0.0, reduce - window)  # exposed when overlapped
    emb_sync = np.where(p > 1, coll.allreduce(grad_bytes * vocab * h / t, 2, links.pp_bw, links.pp_lat), 0.0)
    sharded = zero | fsdp
    local = stage_dense / np.where(sharded, shards, 1.0) + stage_experts / np.where(expert_zero, edp, 1.0)
    optimizer = dev.memory_time(memory.optimizer_bytes(grad_bytes) * local, kernels=4)
    optimizer = np.where(off_opt, offload.optimizer_time(optimizer, local, opts.host_bandwidth), optimizer)

    if breakdown:
        parts = {
            "forward_s": m * per_stage * f_layer,
            "backward_s": m * per_stage * b_layer,
            "recompute_s": m * per_stage * rec_layer,
            "tp_comm_s": m * per_stage * tp_layer,
            "embedding_logits_s": m * extra,  # the slowest stage's embedding or logits + loss (both if p = 1)
            "pp_comm_s": m * p2p,
            "bubble_s": bubble,
            "grad_accumulation_s": m * accumulate,
            "dp_comm_s": np.where(overlap, outlasts, reduce) + gather + emb_sync,
            "optimizer_s": optimizer,
            "cp_comm_s": m * per_stage * cp_layer,
            "fsdp_comm_s": m * per_stage * fsdp_layer,
            "offload_s": m * per_stage * offload_layer,
            "ep_comm_s": m * per_stage * ep_layer,  # MoE token dispatch and combine (:mod:`.moe`)
        }
        time = summed(parts.values())
    else:  # a search reads the total only: the per-micro-batch parts summed before the m micro-batches, and
        parts = {}  # the data-parallel overlap, the last axis, met last (the same sum, fewer passes over all plans)
        rest = summed((m * (stage + extra), bubble, gather, emb_sync, optimizer))
        time = np.where(overlap, rest + outlasts, rest + reduce)

    # memory per GPU: each stage holds its own parameters and activations (the first: the embedding and
    # the most micro-batches in flight, Korthikanti §4.2.3; the last: the logits); the fullest stage sizes it
    split = np.where(sp, t, 1.0)

    def held(layers, micro_batches):  # layer activations a device keeps; offloaded: two layers' worth
        return act_layer * np.where(off_act, np.minimum(offload.RESIDENT_LAYERS, layers * micro_batches),
                                    layers * micro_batches)

    embedding_masks = s * bt * h * schedule.in_flight(p, m) / split if cfg.dropout > 0 else 0.0  # :mod:`.memory`
    # one layer rebuilt at a time: the whole layer's activations (full), or a MoE layer's routed part (moe)
    working = np.where(np.isin(rc, memory.REDO_MOE), routed, 0.0) + np.where(rc == memory.FULL, memory.layer_activations(
        cfg, bt, t, sp, memory.NONE, opts.gemm_input_bytes, opts.attention, opts.fused_swiglu, routed), 0.0)
    logits = (1.0 + cfg.mtp_layers) * 6.0 * s * bt * vocab / t  # and each prediction module's
    first_in_flight = memory.in_flight_micro_batches(p, v, m)
    first_act = held(layout.first_device, first_in_flight) + embedding_masks
    # (layers, dense parameters, activations) of the first, a middle (the second: one micro-batch fewer in
    # flight than the first) and the last stage; one stage holds the embedding and the logits both
    by_stage = [(layout.first_device, (layout.first_device * dense_layer + emb_params) / t,
               np.where(p > 1, first_act, first_act + logits)),
              (layout.middle_device, layout.middle_device * dense_layer / t,
               held(layout.middle_device, memory.in_flight_micro_batches(p, v, m, 1))),
              (layout.last_device, (layout.last_device * dense_layer + emb_params) / t,
               held(layout.last_device, 1.0) + logits)]
    present = [True, middle, p > 1]  # the first stage always; a middle one with p > 2; the last with p > 1
    resident = offload.resident_state(layer_params, shards, sharded)  # what an offloading stage keeps, any stage

    offloads = breakdown or np.any(plans.offload)  # host bytes: none unless some plan offloads

    def footprint(layers, dense, activations):  # one stage's bytes per GPU, by part
        experts = layers * expert_layer / (ep * etp)
        weights, gradients, state, copy = sharding.static_bytes(dense, layer_params, fsdp, zero, shards,
                                                                opts.fsdp_reshard, grad_bytes)
        if cfg.moe is not None:  # the stage's share of the experts, sharded over edp (:mod:`.moe`, :mod:`.sharding`)
            weights, gradients, state, copy = (a + e for a, e in zip((weights, gradients, state, copy), sharding.static_bytes(
                experts, layer_experts[0], fsdp & (edp > 1), expert_zero, edp, opts.fsdp_reshard, grad_bytes)))
        host = offload.host_bytes(np.where(off_opt, state, 0.0), off_act, act_layer,
                                  layout.first_device * first_in_flight) if offloads else 0.0
        state = np.where(off_opt, resident, state)
        copy = np.where(off_opt, 0.0, copy)  # the offloaded step runs on the host
        # FP8 recipes keep low-precision copies of the linear weights of the stage's layers (:mod:`.precision`)
        copies = opts.weight_copy_bytes * (layers * dense_layer / t + experts)
        activations = activations + working
        # the fp32 gradient copy exists only at the optimizer step, when no activations are held (:mod:`.memory`)
        total = summed((weights, copies, gradients, state, np.maximum(activations, copy)))
        return {"weights": weights, "copies": copies, "gradients": gradients, "state": state,
                "activations": activations, "copy": copy, "total": total, "host": host}

    stage_parts = [footprint(*stage) for stage in by_stage]
    if offloads:  # the fullest stage's parts (host bytes: of the stage that offloads most)
        peak = fullest(stage_parts, present, None if breakdown else ("total", "activations", "host"))
    else:  # a search without offloading needs the largest total only
        peak = {"total": largest(stage_parts, present), "host": 0.0}
    gpus = t * p * d * cp
    memory_parts = {"memory_weights": peak["weights"], "memory_weight_copies": peak["copies"],
                    "memory_gradients": peak["gradients"], "memory_optimizer": peak["state"],
                    "memory_activations": peak["activations"], "memory_step_copy": peak["copy"],
                    "memory_host": peak["host"]} if breakdown else {}
    out = Columns({"time": time, **parts, "gpus": gpus, **memory_parts, "memory": peak["total"],
                   "feasible": (peak["total"] <= memory_capacity - opts.memory_reserve)
                   & (peak["host"] <= opts.host_memory)}, lazy=not breakdown)
    out.derive("throughput", lambda: batch * s / time)  # tokens per second
    out.derive("model_tflops_per_gpu", lambda: model_flops(cfg, batch) / (time * gpus) / 1e12)
    out.derive("hardware_tflops_per_gpu", lambda: hardware_flops(cfg, batch, rc, opts.attention) / (time * gpus) / 1e12)
    return out
