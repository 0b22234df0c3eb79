"""Contractions, pooling, normalisation and fused attention (shapes are per sample: no batch).

* ``Conv`` (2-D) -> conv2d; ``ConvTranspose`` (2-D) -> conv_transpose2d; the zero bias an
  exporter gives a bias-free convolution is no bias (:func:`_has_bias`). ``Gemm``, and
  ``MatMul`` with a constant weight -> linear (a MatMul followed by the Add of a constant bias is
  one linear with bias, as torch exports nn.Linear on sequences). ``MatMul`` of two activations
  -> matmul (attention scores and context).
* ``MaxPool``/``AveragePool`` (2-D) -> maxpool2d/avgpool2d; ``GlobalAveragePool`` and a
  ``ReduceMean`` over both spatial axes of an image keeping them -> adaptive_avgpool2d to 1x1;
  ``GlobalMaxPool`` -> maxpool2d over the whole map.
* ``BatchNormalization`` of (C, H, W) -> batchnorm2d; ``LayerNormalization`` over the last axis
  with a bias -> layernorm; other norms (BatchNorm1d, InstanceNormalization, GroupNormalization,
  RMSNormalization, ...) -> norm, whose parameters are its scale and bias elements.
* ``Attention`` (opset 23) -> attention.
"""

from __future__ import annotations

import math

import onnx

from .convert import Converter, Handler, Unsupported, attributes, has_input
from .elementwise import reduce
from optmap.workload.general_ops import ATTENTION, CONV_TRANSPOSE, NORM


def _weight(c: Converter, node: onnx.NodeProto, index: int) -> tuple[int, ...]:
    """Shape of the constant input ``index`` (a weight); Unsupported when it is computed from the input."""
    name = node.input[index]
    if c.g.is_activation(name):
        raise Unsupported(f"{node.op_type} (weights computed from the input)")
    return c.g.const_shape(name)


def _image(c: Converter, node: onnx.NodeProto) -> tuple[int, int, int]:
    """Per-sample (C, H, W) of the node's first input; Unsupported for 1-D or 3-D data."""
    shape = c.g.shape(node.input[0])
    if len(shape) != 3:
        raise Unsupported(f"{node.op_type} ({len(shape) - 1}-D)")
    return shape  # type: ignore[return-value]


def _pads(a: dict, in_hw: tuple[int, ...], out_hw: tuple[int, ...], kernel: tuple[int, ...],
          stride: tuple[int, ...], dilation: tuple[int, ...]) -> tuple[int, ...]:
    """(top, left) when symmetric, else (top, left, bottom, right); SAME auto-padding resolved."""
    auto = a.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        totals = [max((o - 1) * s + (k - 1) * d + 1 - i, 0)
                  for i, o, k, s, d in zip(in_hw, out_hw, kernel, stride, dilation)]
        small = [t // 2 for t in totals]
        big = [t - t // 2 for t in totals]
        pads = (*small, *big) if auto == "SAME_UPPER" else (*big, *small)  # ONNX: extra padding at the end for UPPER
    elif auto == "VALID":
        pads = (0, 0, 0, 0)
    else:
        pads = tuple(a.get("pads", (0, 0, 0, 0)))
    return pads[:2] if pads[:2] == pads[2:] else pads


def _window(c: Converter, node: onnx.NodeProto, kernel: tuple[int, ...]) -> dict[str, object]:
    """kernel, stride, padding (and dilation when not 1) of a 2-D conv or pooling node."""
    a = attributes(node)
    stride = tuple(a.get("strides", (1, 1)))
    dilation = tuple(a.get("dilations", (1, 1)))
    in_hw, out_hw = c.g.shape(node.input[0])[1:], c.g.shape(node.output[0])[1:]
    window = {"kernel": kernel, "stride": stride, "padding": _pads(a, in_hw, out_hw, kernel, stride, dilation)}
    if dilation != (1, 1):
        window["dilation"] = dilation
    return window


# --- contractions ------------------------------------------------------------------------------
def _has_bias(c: Converter, node: onnx.NodeProto) -> bool:
    """Whether a convolution has a trainable bias. An exporter gives a bias-free convolution an
    all-zero bias: ``Expand(CastLike(0, x), Shape(w))`` (torch's dynamo exporter without its
    optimiser) or, once folded, a zero initializer. The bias is not a parameter when

    * it is zero and computed in the graph (from a scalar: there is no tensor to train), or
    * it is a zero initializer and the convolution's one consumer is a BatchNormalization: the
      norm subtracts the per-channel batch mean, so a bias before it cancels and its gradient is
      zero (Ioffe & Szegedy 2015, §3.2: "the effect of b will be canceled by the subsequent mean
      subtraction"). A zero initializer anywhere else may be a trained bias and is kept.
    """
    if not has_input(node, 2):
        return False
    bias = node.input[2]
    if c.g.is_activation(bias):
        raise Unsupported(f"{node.op_type} (bias computed from the input)")
    if not c.g.is_zero_constant(bias):
        return True
    if bias not in c.g.initializers:
        return False
    users = c.g.consumers.get(node.output[0], [])
    return not (len(users) == 1 and users[0].op_type == "BatchNormalization" and node.output[0] not in c.g.outputs)


def conv(c: Converter, node: onnx.NodeProto) -> None:
    _image(c, node)
    weight = _weight(c, node, 1)  # (Cout, Cin/groups, kh, kw)
    groups = int(attributes(node).get("group", 1))
    c.emit("conv2d", [node.input[0]], node.output[0], **_window(c, node, tuple(weight[2:])), groups=groups,
           bias=_has_bias(c, node))


def conv_transpose(c: Converter, node: onnx.NodeProto) -> None:
    _image(c, node)
    weight = _weight(c, node, 1)  # (Cin, Cout/groups, kh, kw)
    bias = _has_bias(c, node)
    a = attributes(node)
    pads = tuple(a.get("pads", (0, 0, 0, 0)))
    c.emit(CONV_TRANSPOSE, [node.input[0]], node.output[0], kernel=tuple(weight[2:]),
           stride=tuple(a.get("strides", (1, 1))), padding=pads[:2] if pads[:2] == pads[2:] else pads,
           groups=int(a.get("group", 1)), bias=bias)


def gemm(c: Converter, node: onnx.NodeProto) -> None:
    a = attributes(node)
    if not c.g.is_activation(node.input[0]) or a.get("transA", 0):
        raise Unsupported("Gemm (the activation is not the first, untransposed operand)")
    _weight(c, node, 1)
    if has_input(node, 2) and c.g.is_activation(node.input[2]):
        raise Unsupported("Gemm (bias computed from the input)")
    c.emit("linear", [node.input[0]], node.output[0], bias=has_input(node, 2))


def _bias_add(c: Converter, out: str, features: int) -> onnx.NodeProto | None:
    """The Add that adds a constant (features,) bias to ``out`` when it is ``out``'s only use."""
    users = c.g.consumers.get(out, [])
    if len(users) != 1 or out in c.g.outputs or users[0].op_type != "Add":
        return None
    add = users[0]
    other = add.input[1] if add.input[0] == out else add.input[0]
    if c.g.is_activation(other):
        return None
    shape = c.g.const_shape(other)
    return add if shape and shape[-1] == features and math.prod(shape) == features else None


def matmul(c: Converter, node: onnx.NodeProto) -> None:
    a, b = node.input[0], node.input[1]
    if c.g.is_activation(a) and c.g.is_activation(b):
        if len(c.g.shape(a)) < 2 or len(c.g.shape(b)) < 2:
            raise Unsupported("MatMul (a vector operand)")
        c.emit("matmul", [a, b], node.output[0], transpose_b=False)
        return
    if not c.g.is_activation(a):
        raise Unsupported("MatMul (constant first operand)")
    weight = c.g.const_shape(b)
    if len(weight) != 2:
        raise Unsupported("MatMul (batched constant weights)")
    add = _bias_add(c, node.output[0], weight[1])
    if add is None:
        c.emit("linear", [a], node.output[0], bias=False)
        return
    c.skip.add(id(add))
    c.emit("linear", [a], add.output[0], bias=True)
    c.alias(node.output[0], add.output[0])  # the product before its bias is the same layer


# --- pooling -----------------------------------------------------------------------------------
def pool(c: Converter, node: onnx.NodeProto) -> None:
    _image(c, node)
    a = attributes(node)
    kind = "maxpool2d" if node.op_type == "MaxPool" else "avgpool2d"
    extra = {"count_include_pad": bool(a["count_include_pad"])} if "count_include_pad" in a else {}
    c.emit(kind, [node.input[0]], node.output[0], **_window(c, node, tuple(a["kernel_shape"])),
           ceil_mode=bool(a.get("ceil_mode", 0)), **extra)


def global_average_pool(c: Converter, node: onnx.NodeProto) -> None:
    _image(c, node)
    c.emit("adaptive_avgpool2d", [node.input[0]], node.output[0], output_size=(1, 1))


def global_max_pool(c: Converter, node: onnx.NodeProto) -> None:
    _, h, w = _image(c, node)
    c.emit("maxpool2d", [node.input[0]], node.output[0], kernel=(h, w), stride=(h, w), padding=(0, 0),
           ceil_mode=False)


def reduce_mean(c: Converter, node: onnx.NodeProto) -> None:
    shape, out = c.g.shape(node.input[0]), c.g.shape(node.output[0])
    if len(shape) == 3 and out == (shape[0], 1, 1):  # the mean over H and W: global average pooling
        c.emit("adaptive_avgpool2d", [node.input[0]], node.output[0], output_size=(1, 1))
        return
    reduce(c, node)


# --- normalisation -----------------------------------------------------------------------------
def _norm(c: Converter, node: onnx.NodeProto, affine: tuple[int, ...]) -> None:
    """A norm the built-in kinds lack; its parameters are its scale and bias inputs' elements."""
    if any(has_input(node, i) and c.g.is_activation(node.input[i]) for i in affine):
        raise Unsupported(f"{node.op_type} (scale or bias computed from the input)")
    params = sum(math.prod(c.g.const_shape(node.input[i])) for i in affine if has_input(node, i))
    c.emit(NORM, [node.input[0]], node.output[0], fn=node.op_type, params=params)


def batch_norm(c: Converter, node: onnx.NodeProto) -> None:
    if len(c.g.shape(node.input[0])) == 3:
        c.emit("batchnorm2d", [node.input[0]], node.output[0])
    else:
        _norm(c, node, (1, 2))  # BatchNorm1d: scale and bias (the running statistics are buffers)


def layer_norm(c: Converter, node: onnx.NodeProto) -> None:
    rank = len(c.g.shape(node.input[0])) + 1
    axis = int(attributes(node).get("axis", -1))
    if axis % rank == rank - 1 and has_input(node, 2):
        c.emit("layernorm", [node.input[0]], node.output[0])
    else:
        _norm(c, node, (1, 2))  # over several axes, or without a bias


def other_norm(c: Converter, node: onnx.NodeProto) -> None:
    _norm(c, node, {"RMSNormalization": (1,), "LpNormalization": (), "MeanVarianceNormalization": ()}.get(
        node.op_type, (1, 2)))


# --- fused attention ---------------------------------------------------------------------------
def attention(c: Converter, node: onnx.NodeProto) -> None:
    """ONNX Attention (opset 23): (heads, S, d) per-sample operands, or (S, heads*d) with head counts."""
    if not all(c.g.is_activation(node.input[i]) for i in range(3)):
        raise Unsupported("Attention (constant Q, K or V)")
    a = attributes(node)
    q, k, v = (c.g.shape(node.input[i]) for i in range(3))
    if len(q) == 3:  # (heads, S, d)
        heads, q_len, head_dim, kv_len, v_head_dim = q[0], q[1], q[2], k[1], v[2]
    else:  # (S, heads * d)
        heads, kv_heads = int(a["q_num_heads"]), int(a["kv_num_heads"])
        q_len, head_dim, kv_len, v_head_dim = q[0], q[1] // heads, k[0], v[1] // kv_heads
    if has_input(node, 4):  # past_key: cached keys in front of the new ones
        past = node.input[4]
        kv_len += (c.g.shape(past) if c.g.is_activation(past) else c.g.const_shape(past))[-2]
    c.emit(ATTENTION, c.activations(node), node.output[0], heads=heads, q_len=q_len, kv_len=kv_len,
           head_dim=head_dim, v_head_dim=v_head_dim, causal=bool(a.get("is_causal", 0)))


# ONNX op type -> its handler (reader.py joins the tables of every handler module)
HANDLERS: dict[str, Handler] = {
    "Conv": conv,
    "ConvTranspose": conv_transpose,
    "Gemm": gemm,
    "MatMul": matmul,
    **dict.fromkeys(("MaxPool", "AveragePool"), pool),
    "GlobalAveragePool": global_average_pool,
    "GlobalMaxPool": global_max_pool,
    "ReduceMean": reduce_mean,
    "BatchNormalization": batch_norm,
    "LayerNormalization": layer_norm,
    **dict.fromkeys(("InstanceNormalization", "GroupNormalization", "RMSNormalization", "LpNormalization",
                     "MeanVarianceNormalization"), other_norm),
    "Attention": attention,
}
