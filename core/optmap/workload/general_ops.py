"""General op kinds of the workload IR: what imported graphs and sequence models need beyond CNNs.

Shared by every plugin (the ONNX importer, GNMT's attention, transformer variants), so they live
in the core. Each follows the IR's FLOP conventions (:mod:`optmap.workload.ops`): element-wise
and norm kinds count one FLOP per output element forward and backward (and for their weight
gradient when they have parameters); data movement counts none. Kinds whose parameters are
constants of a graph (a PReLU slope, a norm's scale and bias, an embedding table) hold their
count in the layer's ``params`` attribute; ``fn`` may name the source operation (an ONNX op).
"""

from __future__ import annotations

from optmap.workload.ops import LayerFlops, OpKind, register_op


class ConvTranspose2d(OpKind):
    """A 2-D transposed convolution (ONNX ConvTranspose): every input element is multiplied into
    Cout/groups x kh x kw outputs. Attributes kernel, stride, padding, groups, bias."""

    name, weighted = "conv_transpose2d", True

    def weight_elements(self, layer) -> int:
        return layer.in_channels * (layer.out_channels // layer.attr("groups", 1)) * layer.kernel_elements

    def params(self, layer) -> int:
        return self.weight_elements(layer) + (layer.out_channels if layer.attr("bias", True) else 0)

    def macs(self, layer) -> int:
        return self.weight_elements(layer) * layer.in_spatial  # Cin*Hin*Win*(Cout/g)*kh*kw


class _Counted(OpKind):
    """A kind whose parameter count is the layer's ``params`` attribute."""

    def params(self, layer) -> int:
        return int(layer.attr("params", 0))


class ElementWise(_Counted):
    """An element-wise function of one activation (and constants): Mul by a scale, Exp, Erf, PRelu, ..."""

    name = "elementwise"


class Binary(OpKind):
    """An element-wise function of two or more activations (Mul, Sub, Div, Where, ...): joins branches."""

    name, merge = "binary", True

    def forward_per_sample(self, layer) -> int:
        return (len(layer.in_shapes) - 1) * layer.out_elements  # one operation per extra operand, as add


class Reduce(OpKind):
    """A reduction over some axes (ReduceSum, ReduceMax, ArgMax, ...): one FLOP per input element."""

    name = "reduce"

    def forward_per_sample(self, layer) -> int:
        return layer.in_elements


class Norm(_Counted):
    """A normalisation the built-in kinds lack (InstanceNormalization, GroupNormalization, RMS, ...)."""

    name = "norm"


class Embedding(_Counted):
    """A table lookup (Gather of rows of a constant by activation indices): no arithmetic forward;
    the weight gradient scatter-adds one value per output element."""

    name = "embedding"

    def flops(self, layer, batch: int) -> LayerFlops:
        return LayerFlops(0, 0, layer.out_elements * batch)


class Attention(OpKind):
    """Fused scaled dot-product attention (ONNX ``Attention``): softmax(Q Kᵀ) V over ``heads`` heads.

    Attributes heads, q_len, kv_len, head_dim (of Q and K), v_head_dim and causal. Like two
    matmul layers and a softmax: the products' forward is 2 x MACs, their backward twice that
    (gradients to both operands, no weights); the softmax is one FLOP per score forward and
    backward. A causal mask does not halve the count (kernels compute the full score matrix).
    """

    name, merge, channels_first = "attention", True, False

    def macs(self, layer) -> int:
        h, q, kv = layer.attr("heads"), layer.attr("q_len"), layer.attr("kv_len")
        return h * q * kv * (layer.attr("head_dim") + layer.attr("v_head_dim"))  # Q·Kᵀ, then ·V

    def flops(self, layer, batch: int) -> LayerFlops:
        products = 2 * self.macs(layer) * batch
        scores = layer.attr("heads") * layer.attr("q_len") * layer.attr("kv_len") * batch
        return LayerFlops(products + scores, 2 * products + scores, 0)


class _Move(OpKind):
    data_movement = True


class Reshape(_Move):
    """A new shape for the same elements (Reshape, Squeeze, Unsqueeze, DepthToSpace, ...)."""

    name = "reshape"


class Transpose(_Move):
    """A permutation of the axes."""

    name = "transpose"


class Slice(_Move):
    """A part of a tensor (Slice, one output of Split, Gather with constant indices)."""

    name = "slice"


class Copy(_Counted):
    """Elements copied into a larger tensor (Expand, Tile, Pad, Concat with constants)."""

    data_movement = True

    name = "copy"


CONV_TRANSPOSE, ELEMENTWISE, BINARY, REDUCE, NORM, EMBEDDING, ATTENTION = (
    ConvTranspose2d(), ElementWise(), Binary(), Reduce(), Norm(), Embedding(), Attention())
RESHAPE, TRANSPOSE, SLICE, COPY = Reshape(), Transpose(), Slice(), Copy()
KINDS = (CONV_TRANSPOSE, ELEMENTWISE, BINARY, REDUCE, NORM, EMBEDDING, ATTENTION, RESHAPE, TRANSPOSE, SLICE, COPY)
for _kind in KINDS:
    register_op(_kind)
