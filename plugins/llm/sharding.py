"""Fully sharded data parallelism (decision ``fsdp``): ZeRO-3 as Megatron-FSDP and torch FSDP2 run it.

Parameters, gradients and optimizer state are split over the ``dp·cp`` ranks that hold the same
weights (Rajbhandari et al. SC'20, ZeRO stage 3, §5; Megatron-FSDP ``optim_grads_params``;
FSDP2 ``fully_shard``). Per micro-batch and layer:

* forward: the layer's 16-bit weights (its tensor-parallel shard) are all-gathered, prefetched
  while the previous layer computes (FSDP2's forward prefetch), so only what outlasts the layer's
  forward is exposed;
* backward: they are gathered again (resharded after forward) and the layer's gradients are
  reduce-scattered, beside the next layer's backward (FSDP2's backward prefetch): again only what
  outlasts the layer's backward is exposed.

No gradient all-reduce is left at the end of the iteration, and the optimizer steps ``1/(dp·cp)``
of the parameters. Memory: weights, gradients and optimizer state all divided by ``dp·cp``
(``(2 + 4 + 12)/d = 18/d`` bytes per parameter with fp32 gradients), plus two layers' gathered
16-bit weights in flight (the one computing and the one prefetched).

Routed experts are sharded the same way over their expert-data-parallel group (``t·dp·cp/(ep·etp)``
ranks; Megatron-FSDP's expert mesh), not over ``dp·cp``: their weights, gradients and state are
divided by it, and each layer's local experts are gathered and reduce-scattered over it.

Option ``fsdp_reshard_after_forward`` (FSDP2's ``reshard_after_forward``, default true as above):
false keeps each layer's gathered weights from its forward to its backward (Llama Team 2024 §3.3.2:
"we do not reshard after forward computation to avoid an extra all-gather communication during
backward passes"; Megatron-LM's ``--torch-fsdp2-no-reshard-after-forward``, "FSDP ZeRO-2"): no
backward gather, but with micro-batches in flight the stage's whole 16-bit weights stay gathered.
"""

from __future__ import annotations

import numpy as np
from optmap import collectives as coll

from . import memory

WEIGHT_BYTES = 2.0  # 16-bit weights gathered
GATHERED_LAYERS = 2.0  # the computing layer and the prefetched one


def layer_exposed(layer_params, grad_bytes: float, shards, bw, lat, forward, backward,
                  reshard: bool = True, experts: tuple = (0.0, 1.0, 1.0, 0.0)) -> tuple:
    """(forward, backward) exposed seconds of one layer's gathers and reduce-scatter, per micro-batch
    (``reshard`` false: no backward gather). ``experts``: one layer's local routed-expert parameters,
    the expert-data-parallel size and that group's bandwidth and latency; Megatron-FSDP shards the
    experts over it (``mcore_fsdp_adapter.py``: the expert data-parallel mesh), so they are
    gathered and reduce-scattered there beside the rest of the layer."""
    expert_params, edp, expert_bw, expert_lat = experts
    has_experts = np.asarray(expert_params) > 0  # a dense model sends nothing (not even latency) over edp
    gather = coll.allgather(WEIGHT_BYTES * layer_params, shards, bw, lat) \
        + np.where(has_experts, coll.allgather(WEIGHT_BYTES * expert_params, edp, expert_bw, expert_lat), 0.0)
    scatter = coll.reduce_scatter(grad_bytes * layer_params, shards, bw, lat) \
        + np.where(has_experts, coll.reduce_scatter(grad_bytes * expert_params, edp, expert_bw, expert_lat), 0.0)
    again = gather if reshard else 0.0
    return np.maximum(0.0, gather - forward), np.maximum(0.0, again + scatter - backward)


def static_bytes(stage_params, layer_params, fsdp, zero, shards, reshard: bool = True,
                 grad_bytes: float = memory.GRAD_BYTES) -> tuple:
    """(weights, gradients, optimizer state, step-time gradient copy) bytes per GPU:
    :func:`memory.static_bytes` (ZeRO-1 with ``zero``), and with ``fsdp`` all over the shards plus two
    gathered layers (``reshard`` false: the whole stage gathered)."""
    weights, gradients, state, copy = memory.static_bytes(stage_params, zero | fsdp, shards, grad_bytes)
    split = np.where(fsdp, shards, 1.0)
    held = GATHERED_LAYERS * layer_params if reshard else np.maximum(stage_params, GATHERED_LAYERS * layer_params)
    gathered = np.where(fsdp, WEIGHT_BYTES * held, 0.0)
    return weights / split + gathered, gradients / split, state, copy


def gradient_sync(grad_bytes, weight_bytes, group, sharded, bw, lat) -> tuple:
    """(reduce, gather) seconds of synchronising a replica group's gradients at the end of the
    iteration: an all-reduce of ``grad_bytes``, or with the distributed optimizer (``sharded``,
    ZeRO-1) a reduce-scatter of them and an all-gather of the updated ``weight_bytes``."""
    reduce = np.where(sharded, coll.reduce_scatter(grad_bytes, group, bw, lat),
                      coll.allreduce(grad_bytes, group, bw, lat))
    gather = np.where(sharded, coll.allgather(weight_bytes, group, bw, lat), 0.0)
    return reduce, gather

