"""What a training step costs on one device: its contractions, the memory traffic of
:mod:`optmap.compute.traffic` (element-wise layers, weights, the loss) and cuDNN's layout transforms
(:mod:`optmap.compute.layout`), run by a host that dispatches and a device that executes.

The host and the device run as in :func:`optmap.compute.model.isolated_time`, over the whole
step: the host dispatches the forward's kernels layer by layer (``dispatch_s`` each), starts the
backward (``backward_call_s``), dispatches its kernels in reverse layer order, then the
optimizer's; the device starts a kernel once it is dispatched and its predecessor is done
(:func:`overlap_seconds`). So the device idles where dispatch falls behind (launch gaps: small
layers, small batches) and a step is never shorter than its device time or its host time, and
grows with the batch even where the host time dominates.

``memory_format`` (default ``"contiguous"``, PyTorch's and torchvision's NCHW) adds cuDNN's
NCHW-to-NHWC transforms around every tensor-core convolution (:mod:`optmap.compute.layout`);
``"channels_last"`` is a model converted to NHWC, as the calibration measurements ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from optmap.errors import OptmapError
from optmap.system import Accelerator
from optmap.workload import Layer, Workload, dtype_bytes

from .calibration import calibration_of
from .layout import MEMORY_FORMATS, TRANSFORM_KERNELS, MemoryFormat, transposed_elements
from .model import compute_time
from .optimizer import Optimizer
from .traffic import (LOSS_BYTES, OPTIMIZER_OPS, cast_bytes_per_parameter, has_bias, layer_traffic,
                      mixed_precision, optimizer_launches, update_bytes_per_parameter)

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

    Arrays are indexed like ``names``. ``forward_bytes`` / ``backward_bytes`` are the element-wise
    bytes per sample at the node's full output width (its own merge or bias, the layers it owns,
    the loss at the last node) and ``*_kernels`` their kernels.
    """

    names: tuple[str, ...]
    weighted: np.ndarray
    first: np.ndarray
    in_hw: np.ndarray
    out_hw: np.ndarray
    kernel: np.ndarray
    aligned: np.ndarray
    out_channels: np.ndarray
    bias: np.ndarray  # 1 where the layer has a bias (a second weight tensor), else 0
    transposed: np.ndarray  # cuDNN transposes its NCHW operands (:mod:`optmap.compute.layout`)
    forward_bytes: np.ndarray
    backward_bytes: np.ndarray
    forward_kernels: np.ndarray
    backward_kernels: np.ndarray
    cast_bytes: float  # per parameter, each direction (0 without mixed precision)
    update_bytes: float  # per parameter, the optimizer update
    optimizer_launches: int  # kernels of the foreach optimizer step
    optimizer_ops: int  # framework operations (host dispatches) of the optimizer step
    dtype: str

    @classmethod
    def from_workload(cls, workload: Workload, names=None, *, optimizer: Optimizer = "sgd",
                      memory_format: MemoryFormat = "contiguous") -> "StepModel":
        if memory_format not in MEMORY_FORMATS:
            raise OptmapError(f"memory_format must be one of {', '.join(MEMORY_FORMATS)}, got {memory_format!r}")
        owned = owners(workload)
        names = tuple(owned) if names is None else tuple(names)
        layers = [workload.layer(n) for n in names]
        size, master = workload.bytes_per_element, mixed_precision(workload.dtype)
        traffic = [[layer_traffic(l, size) for l in [layer] + owned.get(n, [])] for n, layer in zip(names, layers)]
        last = np.eye(len(names))[-1]  # the loss: log-softmax and NLL, 2 kernels each way
        forward = np.array([sum(t.forward for t in ts) for ts in traffic], float)
        backward = np.array([sum(t.backward for t in ts) for ts in traffic], float)
        loss = LOSS_BYTES / 2 * workload.layers()[-1].out_elements
        tensors = (sum(1 + has_bias(l) for l in workload.layers() if l.weighted)
                   + 2 * sum(1 for l in workload.layers() if l.op in ("batchnorm2d", "layernorm")))
        geometry = np.array([_spatial(l) if l.weighted else (1, 1, 1) for l in layers], float).reshape(-1, 3)
        firsts = first_layers(workload)
        aligned = np.array([l.in_channels % 8 == 0 for l in layers])
        convolutions = np.array([l.op == "conv2d" for l in layers])
        return cls(
            names=names,
            weighted=np.array([l.weighted for l in layers]),
            first=np.array([n in firsts for n in names]),
            in_hw=geometry[:, 0], out_hw=geometry[:, 1], kernel=geometry[:, 2],
            aligned=aligned,
            out_channels=np.array([l.out_channels for l in layers], float),
            bias=np.array([has_bias(l) for l in layers], float),
            transposed=convolutions & aligned & (memory_format == "contiguous"),
            forward_bytes=forward + loss * last, backward_bytes=backward + loss * last,
            forward_kernels=np.array([sum(t.forward_kernels for t in ts) for ts in traffic], float) + 2 * last,
            backward_kernels=np.array([sum(t.backward_kernels for t in ts) for ts in traffic], float) + 2 * last,
            cast_bytes=cast_bytes_per_parameter(size, master),
            update_bytes=update_bytes_per_parameter(size, optimizer, master),
            optimizer_launches=optimizer_launches(optimizer, tensors),
            optimizer_ops=OPTIMIZER_OPS[optimizer],
            dtype=workload.dtype,
        )

    @property
    def cast_kernels(self) -> np.ndarray:
        """Cast kernels per node and direction: one per weight tensor under mixed precision."""
        return (1.0 + self.bias) if self.cast_bytes else np.zeros_like(self.bias)

    def transform_seconds(self, accelerator: Accelerator, batch, d_in, d_out, weights):
        """(forward, backward) device seconds of cuDNN's NCHW-to-NHWC transforms (:mod:`optmap.compute.layout`)."""
        moved = transposed_elements(batch * d_in * self.in_hw, batch * d_out * self.out_hw, weights)
        size = 2 * dtype_bytes(self.dtype)  # each transform reads and writes its operand
        backward = moved["weight_grad"] + np.where(self.first, 0.0, moved["backward_data"])
        kernels = TRANSFORM_KERNELS * np.where(self.first, 1, 2)
        time = partial(compute_time, accelerator, "memory", dtype=self.dtype)
        forward = time({"bytes": size * moved["forward"], "kernels": TRANSFORM_KERNELS})
        backward = time({"bytes": size * backward, "kernels": kernels})
        return np.where(self.transposed, forward, 0.0), np.where(self.transposed, backward, 0.0)

    def pass_parts(self, accelerator: Accelerator, batch, d_in, d_out) -> dict:
        """Device seconds of every node's shard (batch, d_in, d_out broadcast over the nodes) by the
        work that takes them: ``{family: (forward, backward)}``; the ``update`` family holds the
        optimizer's bytes (its launches belong to the whole step, :meth:`step_seconds`)."""
        shape = {"batch": batch, "cin": d_in, "cout": d_out, "in_hw": self.in_hw, "out_hw": self.out_hw,
                 "kernel": self.kernel, "aligned": self.aligned}
        time = partial(compute_time, accelerator, dtype=self.dtype)
        weights = d_in * d_out * self.kernel
        params = weights + self.bias * d_out
        cast = np.where(self.weighted, time("memory", {"bytes": self.cast_bytes * params, "kernels": self.cast_kernels}), 0.0)
        backward = time("conv2d", shape, passes="weight_grad") + np.where(
            self.first, 0.0, time("conv2d", shape, passes="backward_data"))
        share = batch * d_out / self.out_channels
        return {
            "contractions": (np.where(self.weighted, time("conv2d", shape, passes="forward"), 0.0),
                             np.where(self.weighted, backward, 0.0)),
            "layout transforms": self.transform_seconds(accelerator, batch, d_in, d_out, weights),
            "weight casts": (cast, cast),
            "element-wise": (time("memory", {"bytes": self.forward_bytes * share, "kernels": self.forward_kernels}),
                             time("memory", {"bytes": self.backward_bytes * share, "kernels": self.backward_kernels})),
            "update": (0.0, np.where(self.weighted, time("memory", {"bytes": self.update_bytes * params, "kernels": 0.0}),
                                     0.0)),
        }

    def pass_seconds(self, accelerator: Accelerator, batch, d_in, d_out):
        """(forward, backward, update) device seconds of every node's shard (:meth:`pass_parts`)."""
        return passes_of(self.pass_parts(accelerator, batch, d_in, d_out))

    def device_seconds(self, accelerator: Accelerator, batch, d_in, d_out):
        """Device seconds of every node's shard, all passes and its share of the update."""
        return sum(self.pass_seconds(accelerator, batch, d_in, d_out))

    def kernels(self) -> tuple[np.ndarray, np.ndarray]:
        """Kernels every node dispatches in the forward and in the backward pass."""
        weighted = np.where(self.weighted, 1 + self.cast_kernels, 0)
        forward = weighted + self.forward_kernels
        backward = weighted + np.where(self.weighted & ~self.first, 1, 0) + self.backward_kernels
        return forward, backward

    def step_seconds(self, accelerator: Accelerator, forward, backward, update):
        """Seconds of one step from its nodes' forward, backward and update device seconds
        (arrays ``(..., nodes)``): the host/device recurrence of the module docstring; without a
        calibration, the device time."""
        calibration = calibration_of(accelerator)
        forward, backward, update = np.broadcast_arrays(*(np.asarray(x, float) for x in (forward, backward, update)))
        optimizer = np.sum(update, axis=-1) + self.optimizer_launches * (calibration.kernel_s if calibration else 0.0)
        if calibration is None:
            return np.sum(forward + backward, axis=-1) + optimizer
        n_forward, n_backward = self.kernels()
        device = np.concatenate([forward, backward[..., ::-1], optimizer[..., None]], axis=-1)
        counts = np.concatenate([n_forward, n_backward[::-1], [self.optimizer_ops]]).astype(float)
        # host time before each group's kernels: the first backward kernel waits for the backward call
        extra = np.zeros_like(counts)
        extra[len(n_forward)] = calibration.backward_call_s - calibration.dispatch_s
        return overlap_seconds(device, counts, calibration.dispatch_s, extra)


def passes_of(parts: dict) -> tuple:
    """(forward, backward, update) device seconds from :meth:`StepModel.pass_parts`."""
    work = [pair for name, pair in parts.items() if name != "update"]
    return sum(f for f, _ in work), sum(b for _, b in work), parts["update"][1]


def overlap_seconds(device: np.ndarray, kernels: np.ndarray, dispatch_s: float, extra: np.ndarray) -> np.ndarray:
    """End of a stream of kernel groups run in order (last axis): group j has ``kernels[j]``
    kernels of equal device time summing to ``device[..., j]``, each dispatched ``dispatch_s``
    after the previous one (``extra[j]`` more before its first); a kernel starts once dispatched
    and its predecessor is done (:func:`optmap.compute.model.isolated_seconds`, in closed form).

    Within a group of n kernels of time a/n starting with the host at R and the device free at E,
    the last ends at ``max(E + a, R + d + a, R + n·d + a/n)``; unrolled over groups, the stream
    ends at ``max_j(b_j + A - A_j)`` with ``b_j`` the group's own two host-bound terms and ``A_j``
    the device time up to and including group j (``A`` all of it).
    """
    n = np.maximum(kernels, 1.0)
    before = np.cumsum(kernels * dispatch_s + extra) - kernels * dispatch_s  # host time before group j
    first = before + dispatch_s  # its first kernel is dispatched
    b = np.maximum(first + device, first + (n - 1) * dispatch_s + device / n)
    b = np.where(kernels > 0, b, -np.inf)
    done = np.cumsum(device, axis=-1)
    total = done[..., -1]
    return np.maximum(total, np.max(b + total[..., None] - done, axis=-1))


def first_layers(workload: Workload) -> set[str]:
    """Contractions fed by a network input: their input needs no gradient (no backward_data)."""
    inputs = {l.name for l in workload.layers() if l.op == "input"}
    return {l.name for l in workload.weighted_layers() if set(workload.inputs_of(l.name)) <= inputs}


def training_step(accelerator: Accelerator, workload: Workload, *, optimizer: Optimizer = "sgd",
                  memory_format: MemoryFormat = "contiguous") -> dict:
    """Predicted time of one training step of ``workload`` on one ``accelerator`` (module docstring).

    Returns ``time`` (the host/device recurrence) in seconds, ``device`` (the busy time of the
    device), ``host`` (the dispatch time of the host), ``layers``: the device seconds of every
    contraction or merge layer with the element-wise layers it owns and its weights, and
    ``families``: the device seconds by kind of work (:meth:`StepModel.pass_parts`, the
    optimizer's launches in ``update``).
    """
    calibration = calibration_of(accelerator)
    if calibration is None:
        raise OptmapError(f"accelerator '{accelerator.name}' has no measured calibration; "
                          "a training step needs one (run `optmap calibrate`)")
    model = StepModel.from_workload(workload, optimizer=optimizer, memory_format=memory_format)
    layers = [workload.layer(n) for n in model.names]
    d_in = np.array([l.in_channels for l in layers], float)
    parts = model.pass_parts(accelerator, float(workload.batch), d_in, model.out_channels)
    families = {name: float(np.sum(f) + np.sum(b)) for name, (f, b) in parts.items()}
    families["update"] += model.optimizer_launches * calibration.kernel_s
    forward, backward, update = passes_of(parts)
    seconds = forward + backward + update
    device = float(np.sum(seconds)) + model.optimizer_launches * calibration.kernel_s
    n_forward, n_backward = model.kernels()
    host = (float(np.sum(n_forward + n_backward)) + model.optimizer_ops) * calibration.dispatch_s \
        + calibration.backward_call_s - calibration.dispatch_s
    return {"time": float(model.step_seconds(accelerator, forward, backward, update)), "device": device,
            "host": host, "layers": dict(zip(model.names, map(float, seconds))), "families": families}
