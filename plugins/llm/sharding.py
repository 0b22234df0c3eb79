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
"""

from __future__ import annotations

import numpy as np
from optmap import collectives as coll

from . import memory

WEIGHT_BYTES = 2.0  # 16-bit weights gathered
GATHERED_LAYERS = 2.0  # the computing layer and the prefetched one


def layer_exposed(layer_params, grad_bytes: float, shards, bw, lat, forward, backward) -> tuple:
    """(forward, backward) exposed seconds of one layer's gathers and reduce-scatter, per micro-batch."""
    gather = coll.allgather(WEIGHT_BYTES * layer_params, shards, bw, lat)
    scatter = coll.reduce_scatter(grad_bytes * layer_params, shards, bw, lat)
    return np.maximum(0.0, gather - forward), np.maximum(0.0, gather + scatter - backward)


def static_bytes(stage_params, layer_params, fsdp, zero, shards) -> tuple:
    """(weights, gradients, optimizer state) bytes per GPU: :func:`memory.static_bytes` (ZeRO-1
    with ``zero``), and with ``fsdp`` all three over the shards plus two gathered layers."""
    weights, gradients, state = memory.static_bytes(stage_params, zero | fsdp, shards)
    split = np.where(fsdp, shards, 1.0)
    gathered = np.where(fsdp, GATHERED_LAYERS * WEIGHT_BYTES * layer_params, 0.0)
    return weights / split + gathered, gradients / split, state
