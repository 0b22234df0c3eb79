"""A ``megatron-3d`` plan as launch arguments: Megatron-Core command-line flags or a DeepSpeed config.

``optmap export RESULT.json --to megatron`` prints the flags of Megatron-LM's
``pretrain_gpt.py`` (``megatron/training/arguments.py``) for the plan's parallel layout, batch,
recomputation, precision and model shape; ``--to deepspeed`` writes the DeepSpeed config JSON
(DeepSpeed's configuration reference: ``train_batch_size``, ``zero_optimization``,
``tensor_parallel.autotp_size``, ...) and names, one note each, what DeepSpeed's config cannot
express (pipeline stages are built in the model code with ``PipelineModule``; Megatron's
sequence parallelism, selective recomputation, interleaving and FP8 have no config key).
Mixture-of-experts models add Megatron-Core's MoE flags (``--num-experts``, ``--moe-router-topk``,
``--moe-ffn-hidden-size``, ``--expert-model-parallel-size``, ``--expert-tensor-parallel-size``,
``--moe-shared-expert-intermediate-size``, ``--moe-layer-freq``, ``--moe-router-num-groups``,
``--moe-router-group-topk``; its MoE README) with the
dispatcher (alltoall, or flex with its DeepEP / HybridEP backend) and grouped GEMM the cost model prices; for DeepSpeed the expert parallel
size is the ``ep_size`` of ``deepspeed.moe.layer.MoE``, built in the model code.

Issue 25's decisions (flags read from Megatron-LM's ``megatron/training/arguments.py`` and the
config dataclasses it builds flags from, ``ModelParallelConfig``, ``DistributedDataParallelConfig``,
``OptimizerConfig``): ``context_parallel`` is ``--context-parallel-size`` (ring attention,
``--cp-comm-type p2p``, the default); ``fsdp`` is Megatron-FSDP, ``--use-megatron-fsdp
--data-parallel-sharding-strategy optim_grads_params`` (ZeRO-3; it needs ``--ckpt-format
fsdp_dtensor``; torch FSDP2, ``--use-torch-fsdp2``, refuses pipeline parallelism); optimizer offloading
is ``--optimizer-cpu-offload`` (Megatron runs the step on the host: the model streams the state
instead, :mod:`.offload`); activation offloading is ``--cpu-offloading-num-layers`` (at most
``layers - 1``, and Megatron-Core refuses it with pipeline parallelism: then a note). DeepSpeed:
``fsdp`` is ZeRO stage 3, optimizer offloading ``zero_optimization.offload_optimizer``, activation
offloading with full recomputation ``activation_checkpointing.cpu_checkpointing``; context
parallelism has no DeepSpeed equivalent (DeepSpeed-Ulysses is an all-to-all over heads). The main
gradients' type of the plan (decision ``grad_reduce_in_fp32``) is written where it is not the
framework's default: ``--grad-reduce-in-bf16`` (bf16 gradients), ``--accumulate-allreduce-grads-in-fp32``
(fp32 gradients with ``--fp16``), DeepSpeed's ``data_types.grad_accum_dtype = "bf16"``.
"""

from __future__ import annotations

import json

from . import memory, stages
from . import recompute as recomputation
from .offload import OFFLOAD

TARGETS = ("megatron", "deepspeed")


def _layout(model, p: int, v: int, per: str = "chunk") -> tuple[int, int, int]:
    """Layers of the first, a middle and the last model chunk (``per = "device"``: pipeline stage)."""
    lay = stages.split(model.config.layers, p, v, model.options.uneven_stages)
    return tuple(int(round(float(getattr(lay, f"{part}_{per}")))) for part in ("first", "middle", "last"))


def megatron(model, plan: dict) -> tuple[str, list[str]]:
    """Megatron-Core flags of ``plan`` (one flag and its value per line) and what does not map."""
    cfg, L = model.config, model.config.layers
    t, p, d = plan["tensor_parallel"], plan["pipeline_parallel"], plan["data_parallel"]
    b, v = plan["microbatch_size"], plan["interleaving"]
    first, middle, last = _layout(model, p, v)
    cp, fsdp, offload = plan["context_parallel"], plan["fsdp"], plan["offload"]
    shards = d * cp  # the ranks holding the same weights
    notes: list[str] = []
    args: list[tuple[str, object]] = [("--tensor-model-parallel-size", t), ("--pipeline-model-parallel-size", p),
                                      ("--context-parallel-size", cp),
                                      ("--expert-model-parallel-size", plan["expert_parallel"])]
    even = first == middle == last
    layout = stages.layout_string(L, p, v, cfg.mtp_layers) if model.options.uneven_stages == "layout" else None
    if layout is not None:  # the spread split, written out chunk by chunk (:func:`.stages.layout_string`)
        args.append(("--pipeline-model-parallel-layout", f"'{layout}'"))
    elif v > 1 and even:
        args.append(("--num-layers-per-virtual-pipeline-stage", L // (p * v)))
    elif v > 1:  # the account-for split: embedding and loss each take one layer's place (:mod:`.stages`)
        args += [("--num-virtual-stages-per-pipeline-rank", v), ("--account-for-embedding-in-pipeline-split", None),
                 ("--account-for-loss-in-pipeline-split", None)]
    elif not even:
        args += [("--decoder-first-pipeline-num-layers", first), ("--decoder-last-pipeline-num-layers", last)]
    args += [("--micro-batch-size", b), ("--global-batch-size", model.batch)]
    if plan["sequence_parallel"] and t > 1:
        args.append(("--sequence-parallel", None))
        if model.options.tp_comm_overlap:  # the collectives chunked beside their GEMMs (:func:`.timing.chunked`)
            args.append(("--tp-comm-overlap", None))
    if plan["recompute"] == "selective":
        args.append(("--recompute-granularity", "selective"))
    elif plan["recompute"] in recomputation.MODULES:  # the MoE layers, or fine-grained modules (:mod:`.recompute`)
        args += [("--recompute-granularity", "selective"),
                 ("--recompute-modules", recomputation.MODULES[plan["recompute"]])]
    elif plan["recompute"] == "full":  # every layer's input kept, the layer recomputed (Korthikanti §5)
        args += [("--recompute-granularity", "full"), ("--recompute-method", "uniform"), ("--recompute-num-layers", 1)]
    if cp > 1:
        args.append(("--cp-comm-type", "p2p"))  # ring attention (:mod:`.context`)
    if fsdp and shards > 1:  # ZeRO-3 (:mod:`.sharding`)
        args += [("--use-megatron-fsdp", None), ("--data-parallel-sharding-strategy", "optim_grads_params"),
                 ("--ckpt-format", "fsdp_dtensor")]
        if not model.options.fsdp_reshard:
            notes.append("fsdp_reshard_after_forward = false: Megatron-LM's --torch-fsdp2-no-reshard-after-forward "
                         "is for torch FSDP2, which refuses pipeline parallelism; Megatron-FSDP has no such flag")
    elif plan["optimizer_sharding"] and shards > 1:
        args.append(("--use-distributed-optimizer", None))
    if plan["dp_overlap"] and shards > 1 and not fsdp:
        args.append(("--overlap-grad-reduce", None))
    if offload in ("optimizer", "both"):
        args.append(("--optimizer-cpu-offload", None))
        notes.append("offload = optimizer: Megatron's --optimizer-cpu-offload steps the optimizer on the host; "
                     "the plan was priced with the state streamed through the GPU over the host link")
    if offload in ("activations", "both"):
        if p == 1:
            args.append(("--cpu-offloading-num-layers", L - 1))
            notes.append(f"offload = activations: Megatron-Core offloads at most layers - 1 = {L - 1} layers")
        else:
            notes.append(f"offload = activations: Megatron-Core's --cpu-offloading-num-layers refuses pipeline "
                         f"parallelism (pipeline_parallel = {p}); no flag written")
    if not model.options.grad_accumulation_fusion:
        args.append(("--no-gradient-accumulation-fusion", None))
    rec = model.recipe.name
    args.append(("--fp16", None) if rec == "fp16" else ("--bf16", None))
    args += _gradient_flags(rec, plan["grad_reduce_in_fp32"])
    if rec == "fp8":
        args += [("--fp8-format", "hybrid"),  # per-tensor scaling: delayed (amax history) or current
                 ("--fp8-recipe", "tensorwise" if model.options.fp8_scaling == "current" else "delayed")]
    elif rec == "mxfp8":
        args += [("--fp8-format", "e4m3"), ("--fp8-recipe", "mxfp8")]
    if model.fp8_param_gather:  # the FP8 weights are the parameters (cost option fp8_param_gather)
        args.append(("--fp8-param-gather", None))
    args += [("--num-layers", L), ("--hidden-size", cfg.d_model), ("--ffn-hidden-size", cfg.d_ff),
             ("--num-attention-heads", cfg.heads), ("--kv-channels", cfg.head_dim), ("--seq-length", cfg.seq_len)]
    if cfg.kv_heads is not None and cfg.kv_heads != cfg.heads:
        args += [("--group-query-attention", None), ("--num-query-groups", cfg.kv_heads)]
    if cfg.sliding_window:  # Megatron-Core's window_size (keys before the query, after it) and full-layer period
        args.append(("--window-size", f"{cfg.sliding_window - 1},0"))
        if cfg.full_attention_every:
            args.append(("--window-attn-skip-freq", cfg.full_attention_every))
    if cfg.mtp_layers:  # DeepSeek-V3's multi-token prediction modules (Megatron-Core MTP)
        args.append(("--mtp-num-layers", cfg.mtp_layers))
    if cfg.mla is not None:  # Megatron-LM's latent-attention arguments (--q-lora-rank absent: no query latent)
        args += [("--multi-latent-attention", None), ("--kv-lora-rank", cfg.mla.kv_lora_rank),
                 ("--qk-head-dim", cfg.head_dim), ("--qk-pos-emb-head-dim", cfg.mla.rope_head_dim),
                 ("--v-head-dim", cfg.v_head_dim)] + ([("--q-lora-rank", cfg.mla.q_lora_rank)] if cfg.mla.q_lora_rank else [])
    if cfg.gated_mlp:
        args.append(("--swiglu", None))
    if not cfg.tied_output:
        args.append(("--untie-embeddings-and-output-weights", None))
    if not cfg.bias:
        args.append(("--disable-bias-linear", None))
    # Megatron-LM's default dropout is 0.1; the plan's memory counts masks only for a nonzero one
    args += [("--hidden-dropout", cfg.dropout), ("--attention-dropout", cfg.dropout)]
    args += _moe_flags(model, plan)
    lines = [flag if value is None else f"{flag} {value}" for flag, value in args]
    return " \\\n".join(lines) + "\n", notes


def _gradient_flags(rec: str, fp32: bool) -> list[tuple[str, object]]:
    """The main gradients' type of the plan (``grad_reduce_in_fp32``): Megatron-LM keeps them in fp32 with
    ``--bf16`` unless ``--grad-reduce-in-bf16``, and in the parameters' fp16 with ``--fp16`` unless
    ``--accumulate-allreduce-grads-in-fp32`` (``megatron/training/arguments.py``)."""
    if rec == "fp16":
        return [("--accumulate-allreduce-grads-in-fp32", None)] if fp32 else []
    return [] if fp32 else [("--grad-reduce-in-bf16", None)]


def _moe_flags(model, plan: dict) -> list[tuple[str, object]]:
    """Megatron-Core's MoE flags of the model, the plan's expert tensor parallelism and the cost options
    the plan was priced with."""
    moe = model.config.moe
    if moe is None:
        return []
    flags: list[tuple[str, object]] = [
        ("--num-experts", moe.experts), ("--moe-router-topk", moe.top_k), ("--moe-ffn-hidden-size", moe.d_ff),
        ("--expert-tensor-parallel-size", int(plan["expert_tensor_parallel"])),
        ("--moe-grouped-gemm", None)]
    dispatcher = model.options.moe_dispatcher
    flags += ([("--moe-token-dispatcher-type", "alltoall")] if dispatcher == "alltoall" else
              [("--moe-token-dispatcher-type", "flex"), ("--moe-flex-dispatcher-backend", dispatcher)])
    if model.options.moe_a2a_overlap:  # the priced overlap (:func:`.moe.overlapped`); Megatron needs both
        flags += [("--overlap-moe-expert-parallel-comm", None), ("--delay-wgrad-compute", None)]
    if moe.shared_experts:  # their summed width (Megatron-Core's TransformerConfig)
        flags.append(("--moe-shared-expert-intermediate-size", moe.shared_width))
    if moe.groups > 1:  # group-limited routing (Megatron-Core group_limited_topk)
        flags += [("--moe-router-num-groups", moe.groups), ("--moe-router-group-topk", moe.group_top_k)]
    if moe.dense_layers:  # 0 = dense MLP, 1 = MoE, per layer
        flags.append(("--moe-layer-freq", f"'([0]*{moe.dense_layers}+[1]*{model.config.moe_layers})'"))
    return flags


def deepspeed(model, plan: dict) -> tuple[str, list[str]]:
    """DeepSpeed config JSON of ``plan`` and one note per decision its config cannot express."""
    t, p, d = plan["tensor_parallel"], plan["pipeline_parallel"], plan["data_parallel"]
    b, v = plan["microbatch_size"], plan["interleaving"]
    rec = model.recipe.name
    config: dict = {"train_batch_size": model.batch, "train_micro_batch_size_per_gpu": b,
                    "gradient_accumulation_steps": model.batch // (d * b)}
    config["fp16" if rec == "fp16" else "bf16"] = {"enabled": True}
    if rec != "fp16" and not plan["grad_reduce_in_fp32"]:  # BF16_Optimizer accumulates in fp32 by default
        config["data_types"] = {"grad_accum_dtype": "bf16"}
    cp, fsdp, offload = plan["context_parallel"], plan["fsdp"], plan["offload"]
    stage = 3 if fsdp and d * cp > 1 else 1 if plan["optimizer_sharding"] and d * cp > 1 else 0
    config["zero_optimization"] = {"stage": stage, "overlap_comm": bool(plan["dp_overlap"] and d * cp > 1)}
    if offload in ("optimizer", "both"):
        config["zero_optimization"]["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if offload in ("activations", "both") and plan["recompute"] == "full":
        config["activation_checkpointing"] = {"partition_activations": False, "cpu_checkpointing": True}
    if t > 1:
        config["tensor_parallel"] = {"autotp_size": t}  # DeepSpeed AutoTP training
    notes = []
    if cp > 1:
        notes.append(f"context_parallel = {cp}: DeepSpeed has no ring-attention context parallelism "
                     f"(DeepSpeed-Ulysses' sequence_parallel_size is an all-to-all over heads, a different scheme)")
    if offload in ("activations", "both") and plan["recompute"] != "full":
        notes.append("offload = activations: DeepSpeed offloads activation checkpoints only "
                     "(activation_checkpointing.cpu_checkpointing, with recompute = full)")
    if p > 1:
        first, middle, last = _layout(model, p, v, "device")
        split = "" if first == middle == last else (f" with {first} layers on the first stage, {middle} on each "
                                                    f"middle one and {last} on the last")
        notes.append(f"pipeline_parallel = {p}: not a config key; build the model as "
                     f"deepspeed.pipe.PipelineModule(num_stages={p}){split}")
    if v > 1:
        notes.append(f"interleaving = {v}: DeepSpeed's pipeline engine has no interleaved schedule")
    if plan["sequence_parallel"] and t > 1:
        notes.append("sequence_parallel: Megatron's sequence parallelism has no DeepSpeed config key "
                     "(DeepSpeed-Ulysses is a different scheme)")
    if plan["recompute"] == "selective":
        notes.append("recompute = selective: DeepSpeed checkpoints whole layers (deepspeed.checkpointing), "
                     "not the attention core alone")
    elif plan["recompute"] == "full":
        notes.append("recompute = full: wrap each layer in deepspeed.checkpointing.checkpoint in the model code")
    elif plan["recompute"] == "moe":
        notes.append("recompute = moe: wrap each MoE layer in deepspeed.checkpointing.checkpoint in the model code")
    elif plan["recompute"] == "norm_act":
        notes.append("recompute = norm_act: DeepSpeed has no output-discarding checkpoint of the LayerNorms and "
                     "the experts' activation; checkpoint them in the model code")
    elif plan["recompute"] in ("mla_up_proj", "mla_up_proj_moe"):
        them = "them" if plan["recompute"] == "mla_up_proj" else "them and each MoE layer"
        notes.append(f"recompute = {plan['recompute']}: DeepSpeed has no output-discarding checkpoint of the latent "
                     f"attention's up-projections; checkpoint {them} in the model code")
    if model.recipe.low_precision:
        notes.append(f"dtype = {rec}: no DeepSpeed config key; use Transformer Engine layers in the model "
                     f"(the config trains in bf16)")
    notes += _moe_notes(model, plan)
    return json.dumps(config, indent=2) + "\n", notes


def _moe_notes(model, plan: dict) -> list[str]:
    """What DeepSpeed's MoE layer takes of a MoE plan, and what it cannot express."""
    moe = model.config.moe
    if moe is None:
        return []
    ep = plan["expert_parallel"]
    notes = [f"expert_parallel = {ep}: not a config key; build each MoE MLP as deepspeed.moe.layer.MoE("
             f"hidden_size={model.config.d_model}, num_experts={moe.experts}, ep_size={ep}, k={moe.top_k})"]
    if moe.top_k > 2:
        notes.append(f"top_k = {moe.top_k}: DeepSpeed's MoE gate supports k = 1 or 2 only")
    if plan["expert_tensor_parallel"] > 1:
        notes.append(f"expert_tensor_parallel = {int(plan['expert_tensor_parallel'])}: not mapped to "
                     f"DeepSpeed's MoE layer")
    if moe.groups > 1:
        notes.append(f"groups = {moe.groups}, group_top_k = {moe.group_top_k}: DeepSpeed's MoE gate has no "
                     f"group-limited routing")
    if moe.shared_experts:
        notes.append(f"shared_experts = {moe.shared_experts}: not a DeepSpeed MoE argument; add the shared "
                     f"MLP beside the MoE layer in the model code")
    return notes


def export(model, plan: dict, target: str) -> tuple[str, list[str]]:
    """(text, notes) of ``plan`` for ``target`` (one of :data:`TARGETS`); a decision the plan lacks (one
    saved before it existed) takes its default in the model's space, as pricing the plan would."""
    defaults = {v.name: v.default for v in model.space.variables if v.default is not None}
    plan = {**defaults, **plan, "recompute": plan["recompute"] if isinstance(plan["recompute"], str)
            else memory.RECOMPUTE[int(plan["recompute"])]}
    if not isinstance(plan["offload"], str):
        plan["offload"] = OFFLOAD[int(plan["offload"])]
    return (megatron if target == "megatron" else deepspeed)(model, plan)
