"""`WorkloadBuilder`: builds a workload layer by layer with PyTorch's shape inference."""

from __future__ import annotations

import math

from optmap.errors import OptmapError, did_you_mean
from optmap.workload.graph import Workload
from optmap.workload.layer import Layer, Shape
from optmap.workload.ops import ACTIVATIONS, OpKind, register_op


def _pair(value: int | tuple[int, int], what: str, where: str, minimum: int) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in pair):
        raise OptmapError(f"{where}: {what} must be an integer >= {minimum} or a pair of them, got {value!r}")
    return pair  # type: ignore[return-value]


def _pool_out(n: int, k: int, s: int, p: int, ceil_mode: bool, where: str) -> int:
    """PyTorch's pooling output length (including its ceil_mode rule)."""
    span = n + 2 * p - k
    if span < 0:
        raise OptmapError(f"{where}: kernel {k} is larger than the padded input {n + 2 * p}")
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= n + p else out  # the last window must start inside the input


class WorkloadBuilder:
    """Builds a Workload layer by layer with shape inference; each method returns the new layer's name."""

    def __init__(self, name: str, input_shape: Shape, input_name: str = "input") -> None:
        self.name = name
        self._layers: dict[str, Layer] = {}
        self._producers: dict[str, tuple[str, ...]] = {}
        self._counts: dict[str, int] = {}
        self.input(tuple(input_shape), input_name)

    def input(self, shape: Shape, name: str) -> str:
        """Another network input (e.g. the target tokens of an encoder-decoder model)."""
        shape = tuple(shape)
        if not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
            raise OptmapError(f"workload '{self.name}': input shape must be positive integers, got {shape!r}")
        return self._add(Layer(self._name(name, "input"), "input", (), shape), ())

    def shape(self, x: str) -> Shape:
        """Output shape (per sample) of layer ``x``."""
        if x not in self._layers:
            raise OptmapError(f"workload '{self.name}': no layer '{x}'{did_you_mean(str(x), self._layers)}")
        return self._layers[x].out_shape

    def _name(self, name: str | None, stem: str) -> str:
        if name is None:
            self._counts[stem] = self._counts.get(stem, 0) + 1
            name = f"{stem}_{self._counts[stem]}"
        if name in self._layers:
            raise OptmapError(f"workload '{self.name}': layer name '{name}' is used twice")
        return name

    def _add(self, layer: Layer, inputs: tuple[str, ...]) -> str:
        if len(set(inputs)) != len(inputs):
            raise OptmapError(f"layer '{layer.name}': the same tensor is passed twice; insert a layer between")
        self._layers[layer.name] = layer
        if inputs:
            self._producers[layer.name] = tuple(inputs)
        return layer.name

    def _unary(self, op: str, x: str, out: Shape, name: str | None, stem: str | None = None, **attrs) -> str:
        name = self._name(name, stem or op)
        return self._add(Layer(name, op, (self.shape(x),), out, attrs), (x,))

    def _image(self, op: str, x: str, name: str | None) -> tuple[int, int, int]:
        shape = self.shape(x)
        if len(shape) != 3:
            raise OptmapError(f"{op} '{name or op}': input '{x}' has shape {shape}, expected (C, H, W)")
        return shape  # type: ignore[return-value]

    # --- any registered op kind ----------------------------------------------------------------
    def op(self, kind: str | OpKind, inputs: str | tuple[str, ...] | list[str], out_shape: Shape,
           name: str | None = None, **attrs: object) -> str:
        """A layer of any registered op kind (or of ``kind`` itself, registered on the way).

        The caller states the output shape; the kind computes the work from the shapes and
        ``attrs`` (e.g. ``b.op("lstm", x, (128, 1024), timesteps=128, hidden=1024)``).
        """
        if isinstance(kind, OpKind):
            kind = register_op(kind).name
        inputs = (inputs,) if isinstance(inputs, str) else tuple(inputs)
        out_shape = tuple(out_shape)
        if not out_shape or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in out_shape):
            raise OptmapError(f"{kind} '{name or kind}': out_shape must be positive integers, got {out_shape!r}")
        layer_name = self._name(name, kind)
        return self._add(Layer(layer_name, kind, tuple(self.shape(x) for x in inputs), out_shape, attrs), inputs)

    # --- weighted -----------------------------------------------------------------------------
    def conv2d(self, x: str, out_channels: int, kernel: int | tuple[int, int], stride: int | tuple[int, int] = 1,
               padding: int | tuple[int, int] = 0, groups: int = 1, bias: bool = True, name: str | None = None) -> str:
        """2-D convolution (PyTorch nn.Conv2d semantics, dilation 1)."""
        where = f"conv2d '{name or 'conv2d'}'"
        c, h, w = self._image("conv2d", x, name)
        k, s = _pair(kernel, "kernel", where, 1), _pair(stride, "stride", where, 1)
        p = _pair(padding, "padding", where, 0)
        if not isinstance(out_channels, int) or out_channels < 1:
            raise OptmapError(f"{where}: out_channels must be a positive integer, got {out_channels!r}")
        if not isinstance(groups, int) or groups < 1 or c % groups or out_channels % groups:
            raise OptmapError(f"{where}: groups={groups} must divide in_channels={c} and out_channels={out_channels}")
        ho, wo = (_pool_out(n, kk, ss, pp, False, where) for n, kk, ss, pp in zip((h, w), k, s, p))
        return self._unary("conv2d", x, (out_channels, ho, wo), name, kernel=k, stride=s, padding=p,
                           groups=groups, bias=bool(bias))

    def linear(self, x: str, out_features: int, bias: bool = True, name: str | None = None) -> str:
        """Fully connected layer on the last dimension (nn.Linear)."""
        if not isinstance(out_features, int) or out_features < 1:
            raise OptmapError(f"linear '{name or 'linear'}': out_features must be a positive integer, "
                              f"got {out_features!r}")
        shape = self.shape(x)
        if len(shape) == 3:
            raise OptmapError(f"linear '{name or 'linear'}': input '{x}' has image shape {shape}; flatten it first")
        return self._unary("linear", x, shape[:-1] + (out_features,), name, bias=bool(bias))

    def matmul(self, a: str, b: str, transpose_b: bool = False, name: str | None = None) -> str:
        """Product of two activations (..., M, K) @ (..., K, N), e.g. attention scores; batch dims must match."""
        where = f"matmul '{name or 'matmul'}'"
        sa, sb = self.shape(a), self.shape(b)
        if transpose_b and len(sb) >= 2:
            sb = sb[:-2] + (sb[-1], sb[-2])
        if len(sa) < 2 or len(sb) < 2 or sa[:-2] != sb[:-2] or sa[-1] != sb[-2]:
            raise OptmapError(f"{where}: shapes {self.shape(a)} and {self.shape(b)} do not multiply"
                              f"{' (b transposed)' if transpose_b else ''}")
        name = self._name(name, "matmul")
        layer = Layer(name, "matmul", (self.shape(a), self.shape(b)), sa[:-1] + (sb[-1],),
                      {"transpose_b": bool(transpose_b)})
        return self._add(layer, (a, b))

    # --- pooling ------------------------------------------------------------------------------
    def _pool(self, op: str, x: str, kernel, stride, padding, ceil_mode: bool, name: str | None) -> str:
        where = f"{op} '{name or op}'"
        c, h, w = self._image(op, x, name)
        k = _pair(kernel, "kernel", where, 1)
        s = k if stride is None else _pair(stride, "stride", where, 1)
        p = _pair(padding, "padding", where, 0)
        if any(pp > kk // 2 for pp, kk in zip(p, k)):
            raise OptmapError(f"{where}: padding {p} must be at most half the kernel {k}")
        ho, wo = (_pool_out(n, kk, ss, pp, ceil_mode, where) for n, kk, ss, pp in zip((h, w), k, s, p))
        return self._unary(op, x, (c, ho, wo), name, kernel=k, stride=s, padding=p, ceil_mode=bool(ceil_mode))

    def maxpool2d(self, x: str, kernel: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
                  padding: int | tuple[int, int] = 0, ceil_mode: bool = False, name: str | None = None) -> str:
        """Max pooling (nn.MaxPool2d; stride defaults to the kernel)."""
        return self._pool("maxpool2d", x, kernel, stride, padding, ceil_mode, name)

    def avgpool2d(self, x: str, kernel: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
                  padding: int | tuple[int, int] = 0, ceil_mode: bool = False, name: str | None = None) -> str:
        """Average pooling (nn.AvgPool2d; stride defaults to the kernel)."""
        return self._pool("avgpool2d", x, kernel, stride, padding, ceil_mode, name)

    def adaptive_avgpool2d(self, x: str, output_size: int | tuple[int, int], name: str | None = None) -> str:
        """Adaptive average pooling to ``output_size`` (nn.AdaptiveAvgPool2d)."""
        c, _, _ = self._image("adaptive_avgpool2d", x, name)
        out = _pair(output_size, "output_size", f"adaptive_avgpool2d '{name or 'adaptive_avgpool2d'}'", 1)
        return self._unary("adaptive_avgpool2d", x, (c,) + out, name, output_size=out)

    # --- element-wise and shape ops -----------------------------------------------------------
    def batchnorm2d(self, x: str, name: str | None = None) -> str:
        """Batch normalisation over the channels of a (C, H, W) tensor, with affine parameters."""
        return self._unary("batchnorm2d", x, self._image("batchnorm2d", x, name), name)

    def layernorm(self, x: str, name: str | None = None) -> str:
        """Layer normalisation over the last dimension, with affine parameters."""
        return self._unary("layernorm", x, self.shape(x), name)

    def activation(self, x: str, kind: str = "relu", name: str | None = None) -> str:
        """Element-wise activation function ``kind`` (relu, gelu, softmax, ...)."""
        if kind not in ACTIVATIONS:
            hint = did_you_mean(str(kind), ACTIVATIONS)
            raise OptmapError(f"activation '{name or kind}': unknown kind '{kind}'{hint}")
        return self._unary("activation", x, self.shape(x), name, stem=kind, kind=kind)

    def dropout(self, x: str, p: float = 0.5, name: str | None = None) -> str:
        """Dropout with drop probability ``p``."""
        if not 0.0 <= p < 1.0:
            raise OptmapError(f"dropout '{name or 'dropout'}': p must be in [0, 1), got {p!r}")
        return self._unary("dropout", x, self.shape(x), name, p=float(p))

    def flatten(self, x: str, name: str | None = None) -> str:
        """Flatten a sample to a vector (torch.flatten(x, 1))."""
        return self._unary("flatten", x, (math.prod(self.shape(x)),), name)

    def add(self, *xs: str, name: str | None = None) -> str:
        """Element-wise sum of two or more tensors of the same shape (e.g. a residual merge)."""
        shapes = [self.shape(x) for x in xs]
        if len(xs) < 2 or len(set(shapes)) != 1:
            raise OptmapError(f"add '{name or 'add'}': needs two or more inputs of one shape, got {shapes}")
        name = self._name(name, "add")
        return self._add(Layer(name, "add", tuple(shapes), shapes[0]), xs)

    def concat(self, *xs: str, axis: int = 0, name: str | None = None) -> str:
        """Concatenation along per-sample ``axis`` (0 = channels of (C, H, W))."""
        where = f"concat '{name or 'concat'}'"
        shapes = [self.shape(x) for x in xs]
        rank = len(shapes[0]) if shapes else 0
        if len(xs) < 2 or any(len(s) != rank for s in shapes) or not -rank <= axis < rank:
            raise OptmapError(f"{where}: needs two or more inputs of one rank and a valid axis, "
                              f"got {shapes}, axis={axis}")
        axis %= rank
        if len({s[:axis] + s[axis + 1:] for s in shapes}) != 1:
            raise OptmapError(f"{where}: shapes {shapes} differ outside axis {axis}")
        out = shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1:]
        name = self._name(name, "concat")
        return self._add(Layer(name, "concat", tuple(shapes), out, {"axis": axis}), xs)

    def build(self, batch: int, dtype: str = "fp32", phase: str = "training") -> Workload:
        """The finished Workload (a copy of the layers built so far)."""
        return Workload(self.name, dict(self._layers), dict(self._producers), batch, dtype, phase)
