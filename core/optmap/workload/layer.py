"""`Layer`: one operation with its per-sample shapes and attributes; dtypes and phases.

Shapes are per sample, without the batch dimension: ``(C, H, W)`` for images, ``(F,)`` or
``(T, F)`` for feature vectors and sequences. Rank-3 tensors are channels-first ``(C, H, W)``
unless the op kind says otherwise (``matmul`` operands are features-last ``(..., M, K)``). How
much work a layer is comes from its op kind (:mod:`optmap.workload.ops`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from optmap.errors import OptmapError, did_you_mean
from optmap.workload.ops import LayerFlops, OpKind, op_kind

# Bytes per element of each number format; open: plugins add formats with register_dtype.
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
# The passes each phase runs; open: plugins add phases with register_phase.
PHASE_PASSES: dict[str, tuple[str, ...]] = {
    "training": ("forward", "backward_data", "weight_grad"),
    "inference": ("forward",),
}
PASSES = ("forward", "backward_data", "weight_grad")

Shape = tuple[int, ...]


def dtype_bytes(name: str) -> int:
    """Bytes per element of the dtype ``name`` (e.g. ``"bf16"`` -> 2)."""
    try:
        return DTYPE_BYTES[name]
    except (KeyError, TypeError):
        raise OptmapError(f"unknown dtype '{name}'{did_you_mean(str(name), DTYPE_BYTES)}") from None


def register_dtype(name: str, nbytes: float) -> None:
    """Add a number format (``register_dtype("fp4", 0.5)``); re-registering the same size is a no-op."""
    if not isinstance(name, str) or not name.strip():
        raise OptmapError(f"a dtype name must be a non-empty string, got {name!r}")
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or not 0 < nbytes <= 64:
        raise OptmapError(f"dtype '{name}': bytes per element must be a number in (0, 64], got {nbytes!r}")
    if DTYPE_BYTES.get(name, nbytes) != nbytes:
        raise OptmapError(f"dtype '{name}' is already registered with {DTYPE_BYTES[name]} bytes per element")
    DTYPE_BYTES[name] = nbytes


def register_phase(name: str, passes: tuple[str, ...]) -> None:
    """Add a phase and the passes it runs (a subset of forward, backward_data, weight_grad)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise OptmapError(f"a phase name must be an identifier, got {name!r}")
    unknown = [p for p in passes if p not in PASSES]
    if not passes or unknown:
        raise OptmapError(f"phase '{name}': passes must be some of {', '.join(PASSES)}, got {passes!r}")
    if PHASE_PASSES.get(name, tuple(passes)) != tuple(passes):
        raise OptmapError(f"phase '{name}' is already registered with passes {PHASE_PASSES[name]}")
    PHASE_PASSES[name] = tuple(passes)


def check_phase(phase: str, where: str) -> None:
    """An OptmapError naming ``where`` unless ``phase`` is registered."""
    if phase not in PHASE_PASSES:
        raise OptmapError(f"{where}: unknown phase '{phase}'{did_you_mean(str(phase), PHASE_PASSES)}")


@dataclass(frozen=True)
class Layer:
    """One operator with its per-sample input/output shapes and attributes.

    ``attrs`` may be given as a mapping; it is stored as a key-sorted tuple of pairs so layers
    stay hashable. Built-in keys: kernel, stride, padding (pairs), groups, bias, ceil_mode,
    output_size, kind (activation), axis (concat), p (dropout), transpose_b (matmul); op kinds
    from plugins define their own (timesteps, hidden, bidirectional, ...).
    """

    name: str
    op: str
    in_shapes: tuple[Shape, ...]
    out_shape: Shape
    attrs: tuple[tuple[str, object], ...] | Mapping[str, object] = field(default=())

    def __post_init__(self) -> None:
        try:
            op_kind(self.op)
        except OptmapError as exc:
            raise OptmapError(f"layer '{self.name}': {exc}") from None
        attrs = self.attrs.items() if isinstance(self.attrs, Mapping) else self.attrs
        object.__setattr__(self, "attrs", tuple(sorted((str(k), v) for k, v in attrs)))
        object.__setattr__(self, "in_shapes", tuple(tuple(int(d) for d in s) for s in self.in_shapes))
        object.__setattr__(self, "out_shape", tuple(int(d) for d in self.out_shape))

    @property
    def kind(self) -> OpKind:
        """The op kind that says how much work this layer is."""
        return op_kind(self.op)

    def attr(self, name: str, default: object = None) -> object:
        """The attribute ``name``, or ``default`` when the layer does not have it."""
        return dict(self.attrs).get(name, default)

    # --- shapes -------------------------------------------------------------------------------
    @property
    def weighted(self) -> bool:
        """True for tensor contractions (conv2d, linear, matmul, ...); norm layers have params but are not weighted."""
        return self.kind.weighted

    @property
    def _in_shape(self) -> Shape:
        return self.in_shapes[0] if self.in_shapes else self.out_shape

    def _channels_first(self, shape: Shape) -> bool:
        return len(shape) == 3 and self.kind.channels_first

    def _channels(self, shape: Shape) -> int:
        return shape[0] if self._channels_first(shape) else shape[-1]

    def _spatial(self, shape: Shape) -> int:
        return math.prod(shape[1:]) if self._channels_first(shape) else math.prod(shape[:-1])

    @property
    def in_channels(self) -> int:
        """D_i: channels (C of (C,H,W)) or features (last dim) of the first input."""
        return self._channels(self._in_shape)

    @property
    def out_channels(self) -> int:
        """D_o: channels or features of the output."""
        return self._channels(self.out_shape)

    @property
    def in_spatial(self) -> int:
        """Hin*Win for images; the product of the non-feature dims (1 for a vector) otherwise."""
        return self._spatial(self._in_shape)

    @property
    def out_spatial(self) -> int:
        """Hout*Wout for images; the product of the non-feature dims (1 for a vector) otherwise."""
        return self._spatial(self.out_shape)

    @property
    def in_elements(self) -> int:
        """Elements of the first input, per sample."""
        return math.prod(self._in_shape)

    @property
    def out_elements(self) -> int:
        """Elements of the output, per sample."""
        return math.prod(self.out_shape)

    @property
    def kernel_elements(self) -> int:
        """kh*kw for conv and pooling (the largest window for adaptive pooling); 1 otherwise."""
        return self.kind.kernel_elements(self)

    # --- work ---------------------------------------------------------------------------------
    @property
    def weight_elements(self) -> int:
        """Contraction weights: Cin/groups*Cout*kh*kw (conv), Din*Dout (linear); 0 otherwise (no bias)."""
        return self.kind.weight_elements(self)

    @property
    def params(self) -> int:
        """Trainable parameters (weights, bias, norm affine), as PyTorch counts them."""
        return self.kind.params(self)

    @property
    def macs(self) -> int:
        """Multiply-accumulates of one sample's forward pass (0 for non-contractions)."""
        return self.kind.macs(self)

    def flops(self, batch: int) -> LayerFlops:
        """FLOPs of this layer for ``batch`` samples, by the conventions of :mod:`optmap.workload.ops`."""
        return self.kind.flops(self, batch)
