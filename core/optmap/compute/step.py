"""What a training step costs besides its contractions, from the workload IR and memory traffic.

Element-wise layers (norms, activations, pooling, residual adds, dropout) are memory-bound: each
costs its kernels' launch time plus the bytes its PyTorch kernels read and write at the copy
ceiling. Per sample, with E the output and I the input elements of the layer, b bytes each:

================ ================================== ==================================
layer            forward (kernels)                  backward (kernels)
================ ================================== ==================================
batch/layer norm read x twice, write y: 3Eb (2)     read dy, x twice, write dx: 5Eb (2)
activation       read x, write y: 2Eb (1)           read dy, y, write dx: 3Eb (1)
add (n inputs)   (n + 1)Eb (1)                      gradient sum at the fork: (n + 1)Eb (1)
max pooling      Ib + Eb + 8E int64 indices (1)     zero dx, read dy and indices: 2Ib + Eb + 8E (2)
average pooling  Ib + Eb (1)                        Eb + Ib (1)
dropout          2Eb + E mask bytes (1)             2Eb + E (1)
concat           2Eb (1)                            0 (the gradients are views)
================ ================================== ==================================

Weights under mixed precision (16-bit compute, fp32 master weights, as ``torch.autocast``): each
forward casts them (read 4 B, write b), each backward casts the gradient back (read b, write
4 B), and the optimizer step updates them in fp32: ``sgd`` reads the weight and its gradient
and writes the weight (12 B per parameter), ``momentum`` also reads and writes the momentum
buffer (20 B), ``adam`` two moments (28 B). The loss (softmax cross-entropy over the last
layer's outputs, in fp32 under autocast) adds 4 B x 4 passes per output, forward and backward.

The host dispatches every kernel (``dispatch_s`` each) and starts the backward once
(``backward_call_s``); a step takes the longer of its device time and its host time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from optmap.errors import OptmapError
from optmap.system import Accelerator
from optmap.workload import Layer, Workload, dtype_bytes

from .calibration import calibration_of
from .model import compute_time
from .optimizer import Optimizer

MASTER_BYTES = 4  # fp32 master weights and gradients
OPTIMIZER_BYTES = {"sgd": 12, "momentum": 20, "adam": 28}  # fp32 bytes per parameter per update
LOSS_BYTES = 4 * 4  # fp32 logits: log-softmax and NLL, forward and backward, per output element
INDEX_BYTES = 8  # max pooling keeps an int64 index per output
MASK_BYTES = 1  # dropout keeps a bool mask per element


@dataclass(frozen=True)
class Traffic:
    """Bytes per sample and kernel counts of one layer's forward and backward passes."""

    forward: float = 0.0
    backward: float = 0.0
    forward_kernels: int = 0
    backward_kernels: int = 0

    @property
    def total(self) -> float:
        return self.forward + self.backward

    @property
    def kernels(self) -> int:
        return self.forward_kernels + self.backward_kernels


def layer_traffic(layer: Layer, element_bytes: float) -> Traffic:
    """Memory traffic of a non-contraction layer (module docstring table); 0 for data moves."""
    b, out, inp = element_bytes, layer.out_elements, layer.in_elements
    op = layer.op
    if op in ("batchnorm2d", "layernorm"):
        return Traffic(3 * out * b, 5 * out * b, 2, 2)
    if op == "activation":
        return Traffic(2 * out * b, 3 * out * b, 1, 1)
    if op == "add":
        n = len(layer.in_shapes) + 1
        return Traffic(n * out * b, n * out * b, 1, 1)
    if op == "maxpool2d":
        return Traffic(inp * b + out * (b + INDEX_BYTES), 2 * inp * b + out * (b + INDEX_BYTES), 1, 2)
    if op in ("avgpool2d", "adaptive_avgpool2d"):
        return Traffic((inp + out) * b, (inp + out) * b, 1, 1)
    if op == "dropout":
        return Traffic(out * (2 * b + MASK_BYTES), out * (2 * b + MASK_BYTES), 1, 1)
    if op == "concat":
        return Traffic(2 * out * b, 0.0, 1, 0)
    return Traffic()  # input, flatten: views


def weight_bytes_per_parameter(element_bytes: float, optimizer: Optimizer, master_weights: bool) -> float:
    """Bytes moved per weight per training step: casts (mixed precision) plus the optimizer update."""
    if optimizer not in OPTIMIZER_BYTES:
        raise OptmapError(f"optimizer must be one of {', '.join(OPTIMIZER_BYTES)}, got {optimizer!r}")
    casts = 2 * (MASTER_BYTES + element_bytes) if master_weights else 0.0
    update = OPTIMIZER_BYTES[optimizer] * (1.0 if master_weights else element_bytes / MASTER_BYTES)
    return casts + update


def weight_kernels(master_weights: bool) -> int:
    """Kernels per weighted layer and step: the two casts (mixed precision) and the update."""
    return 3 if master_weights else 1


def mixed_precision(dtype: str) -> bool:
    """16-bit (and narrower) training keeps fp32 master weights, as torch.autocast does."""
    return dtype_bytes(dtype) < MASTER_BYTES


def _kept(layer: Layer) -> bool:
    """A contraction or a merge: the nodes of the series-parallel block view (:mod:`optmap.workload.views`)."""
    return layer.weighted or layer.kind.merge


def owners(workload: Workload) -> dict[str, list[Layer]]:
    """Each contraction or merge layer → the element-wise layers that work on its output.

    An element-wise layer belongs to the nearest contraction or merge layer upstream of it (a node
    of the block view that layer-wise partitioners plan); layers fed by the network input alone
    belong to no one. :func:`training_step` reports its per-layer times by these owners.
    """
    owned: dict[str, list[Layer]] = {l.name: [] for l in workload.layers() if _kept(l)}
    for layer in workload.layers():
        if _kept(layer) or layer.op == "input":
            continue
        name = layer.name
        while not _kept(workload.layer(name)):
            producers = workload.inputs_of(name)
            if not producers:
                break
            name = producers[0]
        if name in owned:
            owned[name].append(layer)
    return owned


def _spatial(layer: Layer) -> tuple[int, int, int]:
    """(in positions, out positions, kernel elements) of a contraction; a linear layer's tokens
    are its positions (a 1x1 convolution over them)."""
    if layer.op == "conv2d":
        return layer.in_spatial, layer.out_spatial, layer.kernel_elements
    return layer.out_spatial, layer.out_spatial, 1


@dataclass(frozen=True)
class StepModel:
    """Per node (a contraction or merge layer) what one training step runs on its shard.

    Arrays are indexed like ``names``. ``extra_bytes`` are the element-wise bytes per sample at
    the node's full output width (its own merge, the layers it owns, the loss at the last node).
    """

    names: tuple[str, ...]
    weighted: np.ndarray
    first: np.ndarray
    in_hw: np.ndarray
    out_hw: np.ndarray
    kernel: np.ndarray
    aligned: np.ndarray
    out_channels: np.ndarray
    extra_bytes: np.ndarray
    extra_kernels: np.ndarray
    parameter_bytes: float
    parameter_kernels: int
    dtype: str

    @classmethod
    def from_workload(cls, workload: Workload, names=None, *, optimizer: Optimizer = "sgd") -> "StepModel":
        owned = owners(workload)
        names = tuple(owned) if names is None else tuple(names)
        layers = [workload.layer(n) for n in names]
        size, master = workload.bytes_per_element, mixed_precision(workload.dtype)
        traffic = [[layer_traffic(l, size) for l in ([layer] if layer.kind.merge else []) + owned.get(n, [])]
                   for n, layer in zip(names, layers)]
        extra = np.array([sum(t.total for t in ts) for ts in traffic], float)
        extra[-1] += LOSS_BYTES * workload.layers()[-1].out_elements
        geometry = np.array([_spatial(l) if l.weighted else (1, 1, 1) for l in layers], float).reshape(-1, 3)
        firsts = first_layers(workload)
        return cls(
            names=names,
            weighted=np.array([l.weighted for l in layers]),
            first=np.array([n in firsts for n in names]),
            in_hw=geometry[:, 0], out_hw=geometry[:, 1], kernel=geometry[:, 2],
            aligned=np.array([l.in_channels % 8 == 0 for l in layers]),
            out_channels=np.array([l.out_channels for l in layers], float),
            extra_bytes=extra,
            extra_kernels=np.array([sum(t.kernels for t in ts) for ts in traffic], float) + np.eye(len(names))[-1] * 4,
            parameter_bytes=weight_bytes_per_parameter(size, optimizer, master),
            parameter_kernels=weight_kernels(master),
            dtype=workload.dtype,
        )

    def device_seconds(self, accelerator: Accelerator, batch, d_in, d_out):
        """Device seconds of every node's shard (batch, d_in, d_out broadcast over the nodes)."""
        shape = {"batch": batch, "cin": d_in, "cout": d_out, "in_hw": self.in_hw, "out_hw": self.out_hw,
                 "kernel": self.kernel, "aligned": self.aligned}
        time = partial(compute_time, accelerator, dtype=self.dtype)
        contraction = (time("conv2d", shape, passes="forward") + time("conv2d", shape, passes="weight_grad")
                       + np.where(self.first, 0.0, time("conv2d", shape, passes="backward_data")))
        weights = time("memory", {"bytes": self.parameter_bytes * d_in * d_out * self.kernel,
                                  "kernels": self.parameter_kernels})
        elementwise = time("memory", {"bytes": self.extra_bytes * batch * d_out / self.out_channels,
                                      "kernels": self.extra_kernels})
        return np.where(self.weighted, contraction + weights, 0.0) + elementwise

    def host_seconds(self, accelerator: Accelerator) -> float:
        """Host seconds to dispatch one step's kernels (the same on every device of a split)."""
        calibration = calibration_of(accelerator)
        if calibration is None:
            return 0.0
        contraction = np.where(self.first, 2, 3) + self.parameter_kernels
        kernels = float(np.sum(np.where(self.weighted, contraction, 0) + self.extra_kernels))
        return kernels * calibration.dispatch_s + calibration.backward_call_s


def first_layers(workload: Workload) -> set[str]:
    """Contractions fed by a network input: their input needs no gradient (no backward_data)."""
    inputs = {l.name for l in workload.layers() if l.op == "input"}
    return {l.name for l in workload.weighted_layers() if set(workload.inputs_of(l.name)) <= inputs}


def training_step(accelerator: Accelerator, workload: Workload, *, optimizer: Optimizer = "sgd") -> dict:
    """Predicted time of one training step of ``workload`` on one ``accelerator`` (module docstring).

    Returns ``time`` = max(``device``, ``host``) in seconds and ``layers``: the device seconds of
    every contraction or merge layer with the element-wise layers it owns and its weights.
    """
    if calibration_of(accelerator) is None:
        raise OptmapError(f"accelerator '{accelerator.name}' has no measured calibration; "
                          "a training step needs one (run `optmap calibrate`)")
    model = StepModel.from_workload(workload, optimizer=optimizer)
    layers = [workload.layer(n) for n in model.names]
    d_in = np.array([l.in_channels for l in layers], float)
    seconds = model.device_seconds(accelerator, float(workload.batch), d_in, model.out_channels)
    device, host = float(np.sum(seconds)), model.host_seconds(accelerator)
    return {"time": max(device, host), "device": device, "host": host,
            "layers": dict(zip(model.names, map(float, seconds)))}
