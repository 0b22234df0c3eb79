"""Operation kinds: the open vocabulary of the workload IR.

Every :class:`~optmap.workload.Layer` names an operation kind, and the kind says how much work
the layer is: parameters, multiply-accumulates and FLOPs per pass. The built-in kinds below cover
CNNs and transformers; a plugin adds a kind (an LSTM with timesteps, a fused attention, a whole
transformer block) by subclassing :class:`OpKind` and registering an instance through the hook
``optmap_register_ops`` (or :func:`register_op`), with no change to the core.

FLOP conventions shared by every kind (the workload IR's contract with the cost models):
- a tensor contraction's forward is 2 x MACs per sample, and its backward_data and weight_grad
  are each equal to the forward (the two transposed products have the same MAC count); bias
  additions are neglected;
- element-wise, norm and pooling kinds count one FLOP per output element (pooling: kernel
  elements per output element) forward and the same backward; kinds with parameters also count
  one FLOP per output element for their weight gradient;
- data movement (input, flatten, concat) counts 0 FLOPs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optmap.errors import OptmapError, did_you_mean

ACTIVATIONS = frozenset({
    "relu", "relu6", "leaky_relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "hardswish",
    "clamp",  # torch.clamp / hardtanh: x bounded by constants (relu6 is the clamp to [0, 6])
})


@dataclass(frozen=True)
class LayerFlops:
    """FLOPs of one layer (or a sum of layers) for a whole batch, split by pass."""

    forward: int = 0
    backward_data: int = 0
    weight_grad: int = 0

    @property
    def total(self) -> int:
        """Forward + backward_data + weight_grad."""
        return self.forward + self.backward_data + self.weight_grad

    def __add__(self, other: LayerFlops) -> LayerFlops:
        return LayerFlops(self.forward + other.forward, self.backward_data + other.backward_data,
                          self.weight_grad + other.weight_grad)


class OpKind:
    """How much work one kind of operation is. Subclass it for a new kind; override what differs.

    The defaults describe a parameter-free element-wise operation: one FLOP per output element
    forward and backward. ``weighted`` marks tensor contractions (the layers a partitioning
    formulation splits); ``merge`` marks kinds that join parallel branches; ``data_movement``
    kinds cost no FLOPs. ``channels_first`` says a rank-3 per-sample shape is (C, H, W); otherwise
    the last dimension holds the features. Every method takes the :class:`~optmap.workload.Layer`
    being priced (its shapes and ``attrs``).
    """

    name: str = ""
    weighted: bool = False
    merge: bool = False
    data_movement: bool = False
    channels_first: bool = True

    def weight_elements(self, layer) -> int:
        """Elements of the contraction weights (0 for kinds without them)."""
        return 0

    def kernel_elements(self, layer) -> int:
        """Window size kh*kw of a convolution or pooling (attribute ``kernel``); 1 otherwise."""
        kernel = layer.attr("kernel")
        return math.prod(kernel) if kernel is not None else 1

    def params(self, layer) -> int:
        """Trainable parameters, as PyTorch counts them."""
        return 0

    def macs(self, layer) -> int:
        """Multiply-accumulates of one sample's forward pass."""
        return 0

    def forward_per_sample(self, layer) -> int:
        """Forward FLOPs of one sample for a non-contraction kind (default: one per output element)."""
        return 0 if self.data_movement else layer.out_elements

    def flops(self, layer, batch: int) -> LayerFlops:
        """FLOPs for ``batch`` samples by the module's conventions."""
        if self.weighted:
            forward = 2 * self.macs(layer) * batch
            return LayerFlops(forward, forward, forward)
        forward = self.forward_per_sample(layer) * batch
        return LayerFlops(forward, forward, forward if self.params(layer) else 0)

    def __repr__(self) -> str:
        return f"<op {self.name}>"


_REGISTRY: dict[str, OpKind] = {}


def register_op(kind: OpKind) -> OpKind:
    """Add ``kind`` to the vocabulary (registering the same object again is a no-op)."""
    if not isinstance(kind, OpKind):
        raise OptmapError(f"an op kind must be an optmap.workload.OpKind instance, got {type(kind).__name__}")
    if not isinstance(kind.name, str) or not kind.name.isidentifier():
        raise OptmapError(f"op kind {type(kind).__name__} needs a name that is an identifier, got {kind.name!r}")
    known = _REGISTRY.get(kind.name)
    if known is not None and known is not kind and type(known) is not type(kind):
        raise OptmapError(f"op kind '{kind.name}' is registered twice ({type(known).__name__} and "
                          f"{type(kind).__name__}); rename one of them")
    _REGISTRY.setdefault(kind.name, kind)
    return _REGISTRY[kind.name]


def op_kind(name: str) -> OpKind:
    """The registered kind called ``name``, or a one-line error with a suggestion."""
    kind = _REGISTRY.get(name)
    if kind is None:
        raise OptmapError(f"unknown op '{name}'{did_you_mean(str(name), _REGISTRY)}")
    return kind


def op_names() -> tuple[str, ...]:
    """Every registered op kind."""
    return tuple(sorted(_REGISTRY))


# --- built-in kinds ---------------------------------------------------------------------------

def _adaptive_window(n_in: int, n_out: int) -> tuple[int, int]:
    """(sum, max) of PyTorch adaptive-pool window lengths along one axis."""
    lengths = [-(-(i + 1) * n_in // n_out) - (i * n_in // n_out) for i in range(n_out)]
    return sum(lengths), max(lengths)


class Input(OpKind):
    name, data_movement = "input", True


class Flatten(OpKind):
    name, data_movement = "flatten", True


class Concat(OpKind):
    name, data_movement, merge = "concat", True, True


class Add(OpKind):
    name, merge = "add", True

    def forward_per_sample(self, layer) -> int:
        return (len(layer.in_shapes) - 1) * layer.out_elements  # one addition per extra operand


class Conv2d(OpKind):
    name, weighted = "conv2d", True

    def weight_elements(self, layer) -> int:
        return layer.in_channels // layer.attr("groups", 1) * layer.out_channels * layer.kernel_elements

    def params(self, layer) -> int:
        return self.weight_elements(layer) + (layer.out_channels if layer.attr("bias", True) else 0)

    def macs(self, layer) -> int:
        return self.weight_elements(layer) * layer.out_spatial  # Cout*Ho*Wo*(Cin/g)*kh*kw


class Linear(Conv2d):
    name = "linear"

    def weight_elements(self, layer) -> int:
        return layer.in_channels * layer.out_channels


class MatMul(OpKind):
    """A product of two activations (attention scores): no weights, backward_data twice the forward."""

    name, weighted, channels_first = "matmul", True, False

    def macs(self, layer) -> int:
        return layer.out_elements * layer.in_channels  # (..., M, N) outputs, K products each

    def flops(self, layer, batch: int) -> LayerFlops:
        forward = 2 * self.macs(layer) * batch
        return LayerFlops(forward, 2 * forward, 0)  # gradients w.r.t. both operands, no weights


class Pool(OpKind):
    def forward_per_sample(self, layer) -> int:
        return layer.kernel_elements * layer.out_elements


class MaxPool2d(Pool):
    name = "maxpool2d"


class AvgPool2d(Pool):
    name = "avgpool2d"


class AdaptiveAvgPool2d(Pool):
    name = "adaptive_avgpool2d"

    def forward_per_sample(self, layer) -> int:
        (c, h, w), (_, oh, ow) = layer.in_shapes[0], layer.out_shape
        return c * _adaptive_window(h, oh)[0] * _adaptive_window(w, ow)[0]

    def kernel_elements(self, layer) -> int:
        (_, h, w), (_, oh, ow) = layer.in_shapes[0], layer.out_shape
        return _adaptive_window(h, oh)[1] * _adaptive_window(w, ow)[1]  # the largest window


class Norm(OpKind):
    def params(self, layer) -> int:
        return 2 * layer.in_channels  # gamma and beta (running statistics are buffers)


class BatchNorm2d(Norm):
    name = "batchnorm2d"


class LayerNorm(Norm):
    name = "layernorm"


class Activation(OpKind):
    name = "activation"


class Dropout(OpKind):
    name = "dropout"


BUILTIN_OPS = tuple(kind() for kind in (
    Input, Conv2d, Linear, MatMul, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, BatchNorm2d, LayerNorm,
    Activation, Add, Concat, Flatten, Dropout,
))
for _kind in BUILTIN_OPS:
    register_op(_kind)

