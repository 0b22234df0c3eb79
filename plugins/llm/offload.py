"""Offloading to host memory (decision ``offload``): optimizer state and / or activations.

Modelled as Calculon does (Isaev et al. SC'23; ``calculon/llm/llm.py``: ``_get_fw_offload_size``,
``_get_bw_offload_size``, the ``*_offload_overhead`` and the tier-1 memory of
``_get_mem_cap_reqs``), over the host link of each GPU (topology parameter ``host_bandwidth``,
bytes/s each way, :mod:`.cluster`):

* ``optimizer``: the fp32 master weights and Adam moments live in host memory; the optimizer step
  streams them through the GPU and back, so it takes the longer of its HBM traffic and the state
  crossing the host link (each way at once); the GPU keeps one layer's state as the buffer.
* ``activations``: each layer's stored activations (those the recompute setting keeps) are written
  to the host during its forward and read back during its backward, overlapped with that layer's
  compute; only what outlasts it is exposed. The GPU keeps two layers' worth (the one moving
  and the one computing) instead of every in-flight micro-batch's.
* ``both``: the two.

What a GPU offloads must fit in its share of the host's memory (topology parameter
``host_memory``, bytes per GPU, :mod:`.cluster`; Calculon's tier-2 memory): its whole optimizer
state (the GPU's one layer is a staging buffer) and the activations beyond its resident layers
(:func:`host_bytes`); a plan that overflows is infeasible.
"""

from __future__ import annotations

import numpy as np

from . import memory

OFFLOAD = ("none", "optimizer", "activations", "both")
NONE, OPTIMIZER, ACTIVATIONS, BOTH = range(4)
RESIDENT_LAYERS = 2.0  # activations kept on the GPU while offloading: one moving, one computing


def optimizer_offloaded(offload) -> np.ndarray:
    return np.isin(np.asarray(offload), (OPTIMIZER, BOTH))


def activations_offloaded(offload) -> np.ndarray:
    return np.isin(np.asarray(offload), (ACTIVATIONS, BOTH))


def activation_exposed(layer_bytes, host_bw, forward, backward) -> np.ndarray:
    """Exposed seconds of one layer and micro-batch: out beside its forward, back beside its backward."""
    move = np.asarray(layer_bytes, float) / host_bw
    return np.maximum(0.0, move - forward) + np.maximum(0.0, move - backward)


def optimizer_time(hbm_step, params, host_bw) -> np.ndarray:
    """The offloaded step: its HBM traffic or the optimizer state of ``params`` local parameters through
    the host link, whichever is longer."""
    return np.maximum(hbm_step, memory.STATE_BYTES * np.asarray(params, float) / host_bw)


def resident_state(layer_params, shards, sharded) -> np.ndarray:
    """Optimizer state left on the GPU: one layer's (of its shard with sharding)."""
    return memory.STATE_BYTES * layer_params / np.where(sharded, shards, 1.0)


def host_bytes(offloaded_state, offloaded_activations, layer_bytes, layer_micro_batches) -> np.ndarray:
    """Host memory one GPU fills: the optimizer state it offloads (all of it) and its activations beyond the
    :data:`RESIDENT_LAYERS` it keeps (``layer_micro_batches`` of ``layer_bytes`` stored at once)."""
    spilled = np.maximum(0.0, np.asarray(layer_micro_batches, float) - RESIDENT_LAYERS) * layer_bytes
    return offloaded_state + np.where(offloaded_activations, spilled, 0.0)
