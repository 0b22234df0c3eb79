"""What a training step costs besides its contractions, from the workload IR and memory traffic.

Element-wise layers (norms, activations, pooling, residual adds, dropout) are memory-bound: each
costs its kernels' launch time plus the bytes its PyTorch kernels read and write at the copy
ceiling. Per sample, with E the output and I the input elements of the layer, b bytes each:

================ ================================== ==================================
layer            forward (kernels)                  backward (kernels)
================ ================================== ==================================
batch norm       read x twice, write y: 3Eb (3)     read dy, x twice, write dx: 5Eb (2)
layer norm       read x twice, write y: 3Eb (2)     read dy, x twice, write dx: 5Eb (2)
activation       read x, write y: 2Eb (1)           read dy, y, write dx: 3Eb (1)
add (n inputs)   (n + 1)Eb (1)                      gradient sum at the fork: (n + 1)Eb (1)
max pooling      Ib + Eb + 8E int64 indices (1)     zero dx, read dy and indices: 2Ib + Eb + 8E (2)
average pooling  Ib + Eb (1)                        Eb + Ib (1)
dropout          2Eb + E mask bytes (1)             2Eb + E (1)
concat           2Eb (1)                            0 (the gradients are views)
transpose, copy  read x, write y: 2Eb (1)           the gradient moved back: 2Eb (1)
slice            0 (a view)                         dy into the input's gradient: 2Eb (1)
reshape          0 (a view)                         0
================ ================================== ==================================

The data-movement rows are an imported graph's kinds (:mod:`optmap.workload.general_ops`): in
PyTorch a reshape and a slice (``.split``, ``.chunk``, indexing) are views, while a transpose
feeding a contraction is made contiguous and an expand / tile / pad writes a new tensor.

A batch norm in training runs its statistics and its normalisation kernels and, as
``torch.nn.BatchNorm2d.forward`` does, ``num_batches_tracked.add_(1)``: a third, tiny kernel.

Weights under mixed precision (16-bit compute, fp32 master weights, as ``torch.autocast``): each
forward casts them (read 4 B, write b), each backward casts the gradient back (read b, write
4 B), and the optimizer step updates them in fp32: ``sgd`` reads the weight and its gradient
and writes the weight (12 B per parameter), ``momentum`` also reads and writes the momentum
buffer (20 B), ``adam`` two moments (28 B). The loss (softmax cross-entropy over the last
layer's outputs, in fp32 under autocast) adds 4 B x 4 passes per output, forward and backward.

The optimizer step is PyTorch's default ``foreach`` implementation on CUDA (``torch.optim``
documentation, "Algorithms": foreach is the default on CUDA; it groups the parameters into
lists and runs each update operation once for all of them through ``multi_tensor_apply``), so
it costs :data:`OPTIMIZER_OPS` framework operations per step, not one kernel per layer; each
launch processes at most :data:`FOREACH_TENSORS` tensors (``MultiTensorApply.cuh``'s limit for
two tensor lists), so a network of many layers takes a few launches per operation.

The host and the device run as in :func:`optmap.compute.model.isolated_time`, over the whole
step: the host dispatches the forward's kernels layer by layer (``dispatch_s`` each), starts the
backward (``backward_call_s``), dispatches its kernels in reverse layer order, then the
optimizer's; the device starts a kernel once it is dispatched and its predecessor is done
(:func:`overlap_seconds`). So the device idles where dispatch falls behind (launch gaps: small
layers, small batches) and a step is never shorter than its device time or its host time, and
grows with the batch even where the host time dominates.
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
# foreach operations of one torch.optim step (PyTorch's _multi_tensor_sgd / _multi_tensor_adam without
# weight decay): sgd one _foreach_add_; momentum _foreach_mul_ + _foreach_add_ (buffer) + _foreach_add_
# (weights); adam the two moments' lerp_ / mul_ + addcmul_, the bias corrections and sqrt, addcdiv_
OPTIMIZER_OPS = {"sgd": 1, "momentum": 3, "adam": 6}
FOREACH_TENSORS = 110  # tensors per multi_tensor_apply launch for two lists (PyTorch MultiTensorApply.cuh)
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
    if op == "batchnorm2d":  # statistics, normalisation and the num_batches_tracked counter
        return Traffic(3 * out * b, 5 * out * b, 3, 2)
    if op == "layernorm":
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
    if op in ("transpose", "copy"):
        return Traffic(2 * out * b, 2 * out * b, 1, 1)
    if op == "slice":
        return Traffic(0.0, 2 * out * b, 0, 1)
    return Traffic()  # input, flatten, reshape: views


def cast_bytes_per_parameter(element_bytes: float, master_weights: bool) -> float:
    """Bytes of one mixed-precision cast per weight (read fp32, write 16-bit, or back); 0 without."""
    return MASTER_BYTES + element_bytes if master_weights else 0.0


def update_bytes_per_parameter(element_bytes: float, optimizer: Optimizer, master_weights: bool) -> float:
    """Bytes the optimizer update moves per weight (in fp32 under mixed precision)."""
    if optimizer not in OPTIMIZER_BYTES:
        raise OptmapError(f"optimizer must be one of {', '.join(OPTIMIZER_BYTES)}, got {optimizer!r}")
    return OPTIMIZER_BYTES[optimizer] * (1.0 if master_weights else element_bytes / MASTER_BYTES)


def weight_bytes_per_parameter(element_bytes: float, optimizer: Optimizer, master_weights: bool) -> float:
    """Bytes moved per weight per training step: casts (mixed precision) plus the optimizer update."""
    return (2 * cast_bytes_per_parameter(element_bytes, master_weights)
            + update_bytes_per_parameter(element_bytes, optimizer, master_weights))


def optimizer_launches(optimizer: Optimizer, tensors: int) -> int:
    """Kernel launches of one foreach optimizer step over ``tensors`` weight tensors (module docstring)."""
    return OPTIMIZER_OPS[optimizer] * max(1, -(-tensors // FOREACH_TENSORS))


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

    Arrays are indexed like ``names``. ``forward_bytes`` / ``backward_bytes`` are the element-wise
    bytes per sample at the node's full output width (its own merge, the layers it owns, the loss
    at the last node) and ``*_kernels`` their kernels.
    """

    names: tuple[str, ...]
    weighted: np.ndarray
    first: np.ndarray
    in_hw: np.ndarray
    out_hw: np.ndarray
    kernel: np.ndarray
    aligned: np.ndarray
    out_channels: np.ndarray
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
    def from_workload(cls, workload: Workload, names=None, *, optimizer: Optimizer = "sgd") -> "StepModel":
        owned = owners(workload)
        names = tuple(owned) if names is None else tuple(names)
        layers = [workload.layer(n) for n in names]
        size, master = workload.bytes_per_element, mixed_precision(workload.dtype)
        traffic = [[layer_traffic(l, size) for l in ([layer] if layer.kind.merge else []) + owned.get(n, [])]
                   for n, layer in zip(names, layers)]
        last = np.eye(len(names))[-1]  # the loss: log-softmax and NLL, 2 kernels each way
        forward = np.array([sum(t.forward for t in ts) for ts in traffic], float)
        backward = np.array([sum(t.backward for t in ts) for ts in traffic], float)
        loss = LOSS_BYTES / 2 * workload.layers()[-1].out_elements
        tensors = (sum(1 for l in workload.layers() if l.weighted)
                   + 2 * sum(1 for l in workload.layers() if l.op in ("batchnorm2d", "layernorm")))
        geometry = np.array([_spatial(l) if l.weighted else (1, 1, 1) for l in layers], float).reshape(-1, 3)
        firsts = first_layers(workload)
        return cls(
            names=names,
            weighted=np.array([l.weighted for l in layers]),
            first=np.array([n in firsts for n in names]),
            in_hw=geometry[:, 0], out_hw=geometry[:, 1], kernel=geometry[:, 2],
            aligned=np.array([l.in_channels % 8 == 0 for l in layers]),
            out_channels=np.array([l.out_channels for l in layers], float),
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
    def cast_kernels(self) -> int:
        """Cast kernels per weighted layer and direction: one under mixed precision."""
        return 1 if self.cast_bytes else 0

    def pass_seconds(self, accelerator: Accelerator, batch, d_in, d_out):
        """(forward, backward, update) device seconds of every node's shard (batch, d_in, d_out
        broadcast over the nodes); the update's launches belong to the whole step (:meth:`step_seconds`)."""
        shape = {"batch": batch, "cin": d_in, "cout": d_out, "in_hw": self.in_hw, "out_hw": self.out_hw,
                 "kernel": self.kernel, "aligned": self.aligned}
        time = partial(compute_time, accelerator, dtype=self.dtype)
        params = d_in * d_out * self.kernel
        cast = time("memory", {"bytes": self.cast_bytes * params, "kernels": self.cast_kernels})
        share = batch * d_out / self.out_channels
        forward = (np.where(self.weighted, time("conv2d", shape, passes="forward") + cast, 0.0)
                   + time("memory", {"bytes": self.forward_bytes * share, "kernels": self.forward_kernels}))
        backward = (np.where(self.weighted, time("conv2d", shape, passes="weight_grad") + cast
                             + np.where(self.first, 0.0, time("conv2d", shape, passes="backward_data")), 0.0)
                    + time("memory", {"bytes": self.backward_bytes * share, "kernels": self.backward_kernels}))
        update = np.where(self.weighted, time("memory", {"bytes": self.update_bytes * params, "kernels": 0.0}), 0.0)
        return forward, backward, update

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


def training_step(accelerator: Accelerator, workload: Workload, *, optimizer: Optimizer = "sgd") -> dict:
    """Predicted time of one training step of ``workload`` on one ``accelerator`` (module docstring).

    Returns ``time`` (the host/device recurrence) in seconds, ``device`` (the busy time of the
    device), ``host`` (the dispatch time of the host) and ``layers``: the device seconds of every
    contraction or merge layer with the element-wise layers it owns and its weights.
    """
    calibration = calibration_of(accelerator)
    if calibration is None:
        raise OptmapError(f"accelerator '{accelerator.name}' has no measured calibration; "
                          "a training step needs one (run `optmap calibrate`)")
    model = StepModel.from_workload(workload, optimizer=optimizer)
    layers = [workload.layer(n) for n in model.names]
    d_in = np.array([l.in_channels for l in layers], float)
    forward, backward, update = model.pass_seconds(accelerator, float(workload.batch), d_in, model.out_channels)
    seconds = forward + backward + update
    device = float(np.sum(seconds)) + model.optimizer_launches * calibration.kernel_s
    n_forward, n_backward = model.kernels()
    host = (float(np.sum(n_forward + n_backward)) + model.optimizer_ops) * calibration.dispatch_s \
        + calibration.backward_call_s - calibration.dispatch_s
    return {"time": float(model.step_seconds(accelerator, forward, backward, update)), "device": device,
            "host": host, "layers": dict(zip(model.names, map(float, seconds)))}
