"""What a training step moves besides its contractions: the memory traffic of each layer and weight.

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
conv bias        ``output.add_(bias)``: 2Eb (1)      ``grad_output.sum``: Eb (1)
linear bias      0 (the GEMM's epilogue)            the gradient summed over rows: Eb (1)
================ ================================== ==================================

The bias rows are PyTorch's: cuDNN convolutions do not handle the bias, ATen adds it after the
convolution and sums its gradient outside the backend (``aten/src/ATen/native/cudnn/ConvShared.cpp``,
note "Convolution design"; ``convolution_backward`` in ``Convolution.cpp``); a linear layer's
``addmm`` fuses the bias into the cuBLASLt epilogue, and autograd reduces its broadcast gradient.

The data-movement rows are an imported graph's kinds (:mod:`optmap.workload.general_ops`): in
PyTorch a reshape and a slice (``.split``, ``.chunk``, indexing) are views, while a transpose
feeding a contraction is made contiguous and an expand / tile / pad writes a new tensor.

A batch norm in training runs its statistics and its normalisation kernels and, as
``torch.nn.BatchNorm2d.forward`` does, ``num_batches_tracked.add_(1)``: a third, tiny kernel.

Weights under mixed precision (16-bit compute, fp32 master weights, as ``torch.autocast``): each
forward casts them (read 4 B, write b; one kernel per tensor, weight and bias), each backward
casts the gradient back (read b, write 4 B), and the optimizer step updates them in fp32:
``sgd`` reads the weight and its gradient and writes the weight (12 B per parameter),
``momentum`` also reads and writes the momentum buffer (20 B), ``adam`` two moments (28 B).
The loss (softmax cross-entropy over the last layer's outputs, in fp32 under autocast) adds
4 B x 4 passes per output, forward and backward.

The optimizer step is PyTorch's default ``foreach`` implementation on CUDA (``torch.optim``
documentation, "Algorithms": foreach is the default on CUDA; it groups the parameters into
lists and runs each update operation once for all of them through ``multi_tensor_apply``), so
it costs :data:`OPTIMIZER_OPS` framework operations per step, not one kernel per layer; each
launch processes at most :data:`FOREACH_TENSORS` tensors (``MultiTensorApply.cuh``'s limit for
two tensor lists), so a network of many layers takes a few launches per operation.
"""

from __future__ import annotations

from dataclasses import dataclass

from optmap.errors import OptmapError
from optmap.workload import Layer, dtype_bytes

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
    """Memory traffic of a layer besides its contraction (module docstring table); 0 for views."""
    b, out, inp = element_bytes, layer.out_elements, layer.in_elements
    op = layer.op
    if op in ("conv2d", "linear"):
        if not has_bias(layer):
            return Traffic()
        return Traffic(2 * out * b, out * b, 1, 1) if op == "conv2d" else Traffic(0.0, out * b, 0, 1)
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


def has_bias(layer: Layer) -> bool:
    """A convolution or linear layer with a bias (the builders' default, as torch.nn's)."""
    return layer.op in ("conv2d", "linear") and bool(layer.attr("bias", True))


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
