"""Megatron block shards priced by the shared compute model (:mod:`optmap.compute`).

Used instead of the efficiency curve of :class:`~.tensor_parallel.ComputeModel` when the
accelerator that sets the pace carries a measured calibration (``[cost] compute = "auto"``).
Each block's shard on one of the N devices, for b samples per micro-batch (rows = b·S tokens),
runs these operations (Megatron-LM, Shoeybi et al. 2019, §3: heads and d_ff columns are split,
rows are not):

============== ====================================== =========== ===================
block          operation                              k           n
============== ====================================== =========== ===================
self_attn      QKV projection (column-parallel)       d_model     (inner + 2·kv_inner)/N
               flash attention, heads/N, causal in a decoder stack
               output projection (row-parallel)       inner/N     d_model
cross_attn     Q projection                           d_model     inner/N
               K, V projection of the encoder memory  d_model     2·kv_inner/N  (m = b·S_src)
               flash attention, heads/N, keys S_src
               output projection                      inner/N     d_model
ffn            fc1 (gate and up in one GEMM if gated) d_model     mlp_in/N
               fc2                                    d_ff/N      d_model
============== ====================================== =========== ===================

(m = rows unless noted; inner = heads·head_dim, kv_inner = kv_heads·head_dim under grouped-query
attention.) The forward runs each GEMM's forward pass and the attention forward; the backward
each GEMM's input- and weight-gradient passes and the attention backward, priced by the model's
own passes (the config's ``bwd_factor`` is the curve's). With ``elementwise`` the block also runs
its element-wise layers of the workload IR (``<block>.norm``, ``.residual``, ``.act``, ``.gate``),
priced by :func:`optmap.compute.traffic.layer_traffic` as memory-bound kernels: norms and residual
adds on the whole [rows, d_model] activation on every device, the activation and the SwiGLU gate
on the device's d_ff/N columns; softmax is inside flash attention. The serial output head is the
vocabulary-parallel GEMM m = B·S, k = d_model, n = vocab/N, and (training, ``elementwise``) its
fp32 cross-entropy, :data:`optmap.compute.traffic.LOSS_BYTES` per logit shard, half forward, half
backward. Times are device time in a busy stream (:func:`optmap.compute.compute_time`: the host
dispatches ahead of the device).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from optmap.compute import compute_time
from optmap.compute.traffic import LOSS_BYTES, Traffic, layer_traffic
from optmap.workload.transformer import Block, TransformerConfig
from optmap.system import Accelerator
from optmap.workload import Workload

BACKWARD = ("backward_data", "weight_grad")  # a weight GEMM's backward: input and weight gradients
LOSS_KERNELS = 2  # per direction: log-softmax and NLL (forward), their gradients (backward)

# The element-wise layers of a block in the transformer IR and whether Megatron splits them over
# the N devices (inside the column-parallel → row-parallel pair) or runs them whole on each.
ELEMENTWISE_SPLIT = {"norm": False, "residual": False, "act": True, "gate": True}

Operation = tuple[str, dict]  # (op of optmap.compute, shape)


def block_operations(cfg: TransformerConfig, kind: str, stack: str, n_devices: int, samples) -> list[Operation]:
    """The GEMMs and attention of one block's shard for ``samples`` per micro-batch (module table)."""
    d, s, n = cfg.d_model, cfg.seq_len, n_devices
    rows = samples * s
    if kind == "ffn":
        return [("gemm", {"m": rows, "k": d, "n": cfg.mlp_in / n}), ("gemm", {"m": rows, "k": cfg.d_ff / n, "n": d})]
    attention = {"batch": samples, "heads": cfg.heads / n, "seq": s, "head_dim": cfg.head_dim}
    if kind == "self_attn":
        projections = [("gemm", {"m": rows, "k": d, "n": (cfg.inner + 2 * cfg.kv_inner) / n})]
        attention["causal"] = stack == "dec"  # decoder self-attention is masked; flash skips masked tiles
    else:
        projections = [("gemm", {"m": rows, "k": d, "n": cfg.inner / n}),
                       ("gemm", {"m": samples * cfg.src_len, "k": d, "n": 2 * cfg.kv_inner / n})]
        attention["seq_kv"] = cfg.src_len
    return projections + [("attention", attention), ("gemm", {"m": rows, "k": cfg.inner / n, "n": d})]


def _elementwise(workload: Workload, cfg: TransformerConfig) -> tuple[tuple[tuple[Traffic, bool], ...], ...]:
    """Per block (chain order): the traffic per sample of its element-wise layers and whether each is split."""
    layers = {layer.name: layer for layer in workload.layers()}
    size = workload.bytes_per_element
    return tuple(
        tuple((layer_traffic(layers[f"{name}.{op}"], size), split)
              for op, split in ELEMENTWISE_SPLIT.items() if f"{name}.{op}" in layers)
        for name in cfg.arrays().names
    )


@dataclass(frozen=True)
class MeasuredCompute:
    """Block and head times of a Megatron shard on ``accelerator`` through :mod:`optmap.compute`."""

    accelerator: Accelerator
    dtype: str
    elementwise: tuple[tuple[tuple[Traffic, bool], ...], ...] | None = None  # per block; None: GEMMs only

    @classmethod
    def from_workload(cls, workload: Workload, cfg: TransformerConfig, accelerator: Accelerator,
                      elementwise: bool = True) -> "MeasuredCompute":
        return cls(accelerator, workload.dtype, _elementwise(workload, cfg) if elementwise else None)

    def _time(self, op: str, shape: dict, passes) -> np.ndarray:
        return np.asarray(compute_time(self.accelerator, op, shape, dtype=self.dtype, passes=passes), float)

    def _operations(self, operations: list[Operation], backward: bool) -> np.ndarray:
        return sum((self._time(op, shape, ("backward_data",) if op == "attention" else BACKWARD) if backward
                    else self._time(op, shape, "forward") for op, shape in operations), np.zeros(()))

    def _memory(self, layers: tuple[tuple[Traffic, bool], ...], samples, n_devices: int, backward: bool):
        nbytes = sum((t.backward if backward else t.forward) / (n_devices if split else 1) for t, split in layers)
        kernels = sum(t.backward_kernels if backward else t.forward_kernels for t, _ in layers)
        return self._time("memory", {"bytes": nbytes * samples, "kernels": kernels}, "forward")

    def _block(self, cfg: TransformerConfig, block: Block, samples: np.ndarray, n_devices: int, backward: bool):
        time = self._operations(block_operations(cfg, block.kind, block.stack, n_devices, samples), backward)
        if self.elementwise is not None:
            time = time + self._memory(self.elementwise[block.index], samples, n_devices, backward)
        return np.broadcast_to(time, samples.shape)

    def blocks(self, cfg: TransformerConfig, samples: np.ndarray, n_devices: int) -> tuple[np.ndarray, np.ndarray]:
        """Forward and backward seconds per micro-batch of every block, [L, P] (``samples`` [1, P])."""
        samples = np.asarray(samples, float).reshape(-1)
        fwd, bwd = (np.array([self._block(cfg, block, samples, n_devices, backward) for block in cfg.blocks()])
                    for backward in (False, True))
        return fwd, bwd

    def head(self, cfg: TransformerConfig, batch: int, n_devices: int, backward: bool) -> tuple[float, float]:
        """Forward and backward seconds of the serial vocabulary-parallel output head and its loss."""
        if not cfg.lm_head:
            return 0.0, 0.0
        rows = batch * cfg.seq_len
        gemm = [("gemm", {"m": rows, "k": cfg.d_model, "n": cfg.vocab / n_devices})]
        loss = {"bytes": LOSS_BYTES / 2 * rows * cfg.vocab / n_devices, "kernels": LOSS_KERNELS}
        trains = self.elementwise is not None and backward  # a loss only when training
        loss_s = self._time("memory", loss, "forward") if trains else 0.0
        fwd = float(self._operations(gemm, False) + loss_s)
        return fwd, float(self._operations(gemm, True) + loss_s) if backward else 0.0
