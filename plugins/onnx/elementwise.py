"""Activations, element-wise arithmetic and reductions.

* Relu, Sigmoid, Tanh, Softmax, LeakyRelu, HardSwish, Gelu -> activation. A ``Clip`` with constant
  bounds (torch exports them as ``CastLike(Constant)``) -> activation relu6 for [0, 6], relu for
  [0, ∞), else clamp; so is ``Min``/``Max`` of one activation and a constant scalar (torch's
  ``relu6`` as ``Min(Relu(x), 6)``, ``clamp_min``).
* ``Add``/``Sum`` of two or more activations -> add (a residual merge); any other element-wise
  op of two or more activations (Mul, Sub, Div, Pow, Max, Where, ...) -> binary.
* An element-wise op of one activation and constants (a bias Add, a scale Mul, Exp, Erf, PRelu,
  a Clip with a bound computed in the graph, Resize, ...) -> elementwise. Its floating-point initializers with more than one
  element (a bias, a PReLU slope, a learned position embedding) count as its parameters; scalars
  (a scale, an epsilon, an exponent) and constants computed in the graph (masks) do not.
* ReduceSum, ReduceMax, ..., ArgMax and a ReduceMean that is not a global average pooling ->
  reduce (one FLOP per input element).
"""

from __future__ import annotations

import onnx

from .convert import Converter, Handler, Unsupported, attributes, has_input
from optmap.workload.general_ops import BINARY, ELEMENTWISE, REDUCE

ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softmax": "softmax",
               "LeakyRelu": "leaky_relu", "HardSwish": "hardswish", "Gelu": "gelu"}
UNARY = ("Abs", "Acos", "Asin", "Atan", "Ceil", "Celu", "Cos", "Cosh", "CumSum", "Elu", "Erf", "Exp", "Floor",
         "HardSigmoid", "IsInf", "IsNaN", "Log", "LogSoftmax", "Mish", "Neg", "Not", "PRelu", "Reciprocal",
         "Resize", "Round", "Selu", "Shrink", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Tan",
         "ThresholdedRelu", "Trilu", "Upsample")
BINARY_OPS = ("Add", "And", "BitShift", "Div", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual",
              "Mean", "Mod", "Mul", "Or", "Pow", "Sub", "Sum", "Where", "Xor")
REDUCTIONS = ("ArgMax", "ArgMin", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
              "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare")


def activation(c: Converter, node: onnx.NodeProto) -> None:
    c.emit("activation", [node.input[0]], node.output[0], kind=ACTIVATIONS[node.op_type])


def _clip_bounds(c: Converter, node: onnx.NodeProto) -> list[float | None]:
    a, bounds = attributes(node), []
    for index, key in ((1, "min"), (2, "max")):
        if has_input(node, index):  # opset 11+: bounds are inputs
            bounds.append(c.g.const_scalar(node.input[index]))
        else:
            bounds.append(a.get(key))
    return bounds


def clip(c: Converter, node: onnx.NodeProto) -> None:
    bounds = _clip_bounds(c, node)
    given = [x for x in node.input[1:] if x]
    if len([b for b in bounds if b is not None]) < len(given):  # a bound that is no known constant
        arithmetic(c, node)
        return
    kind = {(0.0, 6.0): "relu6", (0.0, None): "relu"}.get(tuple(bounds), "clamp")
    c.emit("activation", [node.input[0]], node.output[0], kind=kind)


def min_max(c: Converter, node: onnx.NodeProto) -> None:
    xs = c.activations(node)
    constants = [x for x in node.input if x and not c.g.is_activation(x)]
    if len(xs) == 1 and constants and all(c.g.const_scalar(x) is not None for x in constants):
        c.emit("activation", xs, node.output[0], kind="clamp")  # a clamp by constant scalars
    else:
        arithmetic(c, node)


def arithmetic(c: Converter, node: onnx.NodeProto) -> None:
    xs = list(dict.fromkeys(c.activations(node)))  # x * x reads x once
    if len(xs) == 1:
        c.emit(ELEMENTWISE, xs, node.output[0], fn=node.op_type, params=c.trainable_elements(node))
    elif node.op_type in ("Add", "Sum") and len(xs) == len(node.input):
        c.emit("add", xs, node.output[0])
    else:
        c.emit(BINARY, xs, node.output[0], fn=node.op_type)


def reduce(c: Converter, node: onnx.NodeProto) -> None:
    if has_input(node, 1) and c.g.is_activation(node.input[1]):
        raise Unsupported(f"{node.op_type} (axes computed from the input)")
    c.emit(REDUCE, [node.input[0]], node.output[0], fn=node.op_type)


# ONNX op type -> its handler (reader.py joins the tables of every handler module)
HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(ACTIVATIONS, activation),
    "Clip": clip,
    **dict.fromkeys(("Min", "Max"), min_max),
    **dict.fromkeys((*UNARY, *BINARY_OPS), arithmetic),
    **dict.fromkeys(REDUCTIONS, reduce),
}
