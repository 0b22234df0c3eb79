"""What each ONNX op becomes in the workload IR (shapes are per sample: the batch is removed).

Contractions: ``Conv`` (2-D) -> conv2d; ``Gemm`` and ``MatMul`` with a constant weight -> linear
(a MatMul followed by the Add of a constant bias is one linear with bias, as torch exports
nn.Linear on sequences); ``MatMul`` of two activations -> matmul (attention scores and context).
Pooling: ``MaxPool``/``AveragePool`` (2-D) -> maxpool2d/avgpool2d; ``GlobalAveragePool`` and a
``ReduceMean`` over the two spatial axes keeping them -> adaptive_avgpool2d to 1x1;
``GlobalMaxPool`` -> maxpool2d over the whole map. Normalisation: ``BatchNormalization`` of
(C, H, W) -> batchnorm2d; ``LayerNormalization`` over the last axis with a bias -> layernorm.
Activations: Relu, Sigmoid, Tanh, Softmax, LeakyRelu, HardSwish, Gelu, Clip(0, 6) (relu6).
Element-wise: ``Add``/``Sum`` of activations -> add. Data movement: ``Concat`` of activations ->
concat; ``Flatten`` and a ``Reshape`` to a vector -> flatten; ``Dropout`` -> dropout;
``Identity`` and ``Cast`` are no layer at all.
"""

from __future__ import annotations

import math

import onnx

from .convert import Converter, Unsupported, attributes, handles

ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softmax": "softmax",
               "LeakyRelu": "leaky_relu", "HardSwish": "hardswish", "Gelu": "gelu"}


def _weight(c: Converter, node: onnx.NodeProto, index: int) -> tuple[int, ...]:
    """Shape of the constant input ``index`` (a weight); Unsupported when it is computed from the input."""
    name = node.input[index]
    if c.g.is_activation(name):
        raise Unsupported(f"{node.op_type} (weights computed from the input)")
    return c.g.const_shape(name)


def _has_input(node: onnx.NodeProto, index: int) -> bool:
    return len(node.input) > index and bool(node.input[index])


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
@handles("Conv")
def conv(c: Converter, node: onnx.NodeProto) -> None:
    _image(c, node)
    weight = _weight(c, node, 1)  # (Cout, Cin/groups, kh, kw)
    if _has_input(node, 2) and c.g.is_activation(node.input[2]):
        raise Unsupported("Conv (bias computed from the input)")
    groups = int(attributes(node).get("group", 1))
    c.emit("conv2d", [node.input[0]], node.output[0], **_window(c, node, tuple(weight[2:])), groups=groups,
           bias=_has_input(node, 2))


@handles("Gemm")
def gemm(c: Converter, node: onnx.NodeProto) -> None:
    a = attributes(node)
    if not c.g.is_activation(node.input[0]) or a.get("transA", 0):
        raise Unsupported("Gemm (the activation is not the first, untransposed operand)")
    _weight(c, node, 1)
    if _has_input(node, 2) and c.g.is_activation(node.input[2]):
        raise Unsupported("Gemm (bias computed from the input)")
    c.emit("linear", [node.input[0]], node.output[0], bias=_has_input(node, 2))


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


@handles("MatMul")
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
@handles("MaxPool", "AveragePool")
def pool(c: Converter, node: onnx.NodeProto) -> None:
    _image(c, node)
    a = attributes(node)
    kind = "maxpool2d" if node.op_type == "MaxPool" else "avgpool2d"
    extra = {"count_include_pad": bool(a["count_include_pad"])} if "count_include_pad" in a else {}
    c.emit(kind, [node.input[0]], node.output[0], **_window(c, node, tuple(a["kernel_shape"])),
           ceil_mode=bool(a.get("ceil_mode", 0)), **extra)


@handles("GlobalAveragePool")
def global_average_pool(c: Converter, node: onnx.NodeProto) -> None:
    _image(c, node)
    c.emit("adaptive_avgpool2d", [node.input[0]], node.output[0], output_size=(1, 1))


@handles("GlobalMaxPool")
def global_max_pool(c: Converter, node: onnx.NodeProto) -> None:
    _, h, w = _image(c, node)
    c.emit("maxpool2d", [node.input[0]], node.output[0], kernel=(h, w), stride=(h, w), padding=(0, 0),
           ceil_mode=False)


@handles("ReduceMean")
def reduce_mean(c: Converter, node: onnx.NodeProto) -> None:
    shape, out = c.g.shape(node.input[0]), c.g.shape(node.output[0])
    if len(shape) == 3 and out == (shape[0], 1, 1):  # the mean over H and W: global average pooling
        c.emit("adaptive_avgpool2d", [node.input[0]], node.output[0], output_size=(1, 1))
        return
    raise Unsupported("ReduceMean (other than over the spatial axes of an image)")


# --- normalisation and activations -------------------------------------------------------------
@handles("BatchNormalization")
def batch_norm(c: Converter, node: onnx.NodeProto) -> None:
    _image(c, node)
    c.emit("batchnorm2d", [node.input[0]], node.output[0])


@handles("LayerNormalization")
def layer_norm(c: Converter, node: onnx.NodeProto) -> None:
    rank = len(c.g.shape(node.input[0])) + 1
    axis = int(attributes(node).get("axis", -1))
    if axis % rank != rank - 1 or not _has_input(node, 2):
        raise Unsupported("LayerNormalization (over several axes, or without bias)")
    c.emit("layernorm", [node.input[0]], node.output[0])


@handles(*ACTIVATIONS)
def activation(c: Converter, node: onnx.NodeProto) -> None:
    c.emit("activation", [node.input[0]], node.output[0], kind=ACTIVATIONS[node.op_type])


@handles("Clip")
def clip(c: Converter, node: onnx.NodeProto) -> None:
    a = attributes(node)
    bounds = []
    for index, key in ((1, "min"), (2, "max")):
        if _has_input(node, index):
            value = c.g.const_value(node.input[index])
            bounds.append(None if value is None or value.size != 1 else float(value.reshape(())))
        else:
            bounds.append(a.get(key))
    if bounds == [0.0, 6.0]:
        c.emit("activation", [node.input[0]], node.output[0], kind="relu6")
        return
    if bounds[0] == 0.0 and bounds[1] is None:
        c.emit("activation", [node.input[0]], node.output[0], kind="relu")
        return
    raise Unsupported("Clip (other than relu/relu6)")


# --- element-wise and data movement ------------------------------------------------------------
@handles("Add", "Sum")
def add(c: Converter, node: onnx.NodeProto) -> None:
    xs = c.activations(node)
    if len(xs) != len(node.input) or len(set(xs)) < 2:
        raise Unsupported(f"{node.op_type} (of a constant, or of a tensor with itself)")
    c.emit("add", xs, node.output[0])


@handles("Concat")
def concat(c: Converter, node: onnx.NodeProto) -> None:
    xs = c.activations(node)
    rank = len(c.g.shape(node.output[0])) + 1
    axis = int(attributes(node)["axis"]) % rank
    if axis == 0:
        raise Unsupported("Concat (along the batch)")
    if len(xs) != len(node.input) or len(set(xs)) < 2:
        raise Unsupported("Concat (with constants, or of a tensor with itself)")
    c.emit("concat", xs, node.output[0], axis=axis - 1)


@handles("Flatten", "Reshape")
def flatten(c: Converter, node: onnx.NodeProto) -> None:
    if len(c.g.shape(node.output[0])) != 1:
        raise Unsupported(f"{node.op_type} (to a shape other than a vector)")
    c.emit("flatten", [node.input[0]], node.output[0])


@handles("Dropout")
def dropout(c: Converter, node: onnx.NodeProto) -> None:
    ratio = c.g.const_value(node.input[1]) if _has_input(node, 1) else None
    p = float(ratio.reshape(())) if ratio is not None and ratio.size == 1 else float(
        attributes(node).get("ratio", 0.5))
    c.emit("dropout", [node.input[0]], node.output[0], p=p)


@handles("Identity", "Cast")
def identity(c: Converter, node: onnx.NodeProto) -> None:
    c.alias(node.output[0], node.input[0])
