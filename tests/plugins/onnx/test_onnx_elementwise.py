"""Element-wise ops and reductions: which constants are parameters, and FLOPs by hand."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from optmap.plugins.onnx import read_onnx

from onnx_models import ints, model, node, save, scalar, value, weight


def test_trainable_constants_and_flops(tmp_path):
    # x (N, 8, 4, 4): PRelu with a per-channel slope (8, 1, 1) -> Mul by a scalar -> Where with a
    # constant boolean mask and a scalar filler -> Clip(0, 6) -> Clip(-1, 1) -> ReduceSum over H, W.
    mask = numpy_helper.from_array(np.ones((1, 4, 4), bool), "mask")
    nodes = [node("PRelu", ["x", "slope"], ["p"], "prelu"), node("Mul", ["p", "two"], ["m"], "scale"),
             node("Where", ["mask", "m", "zero"], ["w"], "masked"),
             node("Clip", ["w", "zero", "six"], ["r6"], "relu6"), node("Clip", ["r6", "minus1", "one"], ["c"], "clip"),
             node("ReduceSum", ["c", "axes"], ["y"], "sum", keepdims=0)]
    inits = [weight("slope", 8, 1, 1), scalar("two", 2.0), mask, scalar("zero", 0.0), scalar("six", 6.0),
             scalar("minus1", -1.0), scalar("one", 1.0), ints("axes", 2, 3)]
    w = read_onnx(save(model(nodes, [value("x", "N", 8, 4, 4)], [value("y", "N", 8)], inits), tmp_path / "e.onnx"),
                  batch=2)
    layers = {layer.name: layer for layer in w.layers()}
    assert {n: (layers[n].op, layers[n].attr("fn") or layers[n].attr("kind")) for n in layers if n != "x"} == {
        "prelu": ("elementwise", "PRelu"), "scale": ("elementwise", "Mul"), "masked": ("elementwise", "Where"),
        "relu6": ("activation", "relu6"), "clip": ("activation", "clamp"), "sum": ("reduce", "ReduceSum")}
    # (Clip(-1, 1) was an elementwise layer until issue 27: a clamp by constants is an activation,
    # which every formulation prices; its FLOPs below are unchanged.)
    # Only the PReLU slope is trainable: 8 elements. Scalars and the boolean mask are not parameters.
    assert {n: layers[n].params for n in layers} == {n: (8 if n == "prelu" else 0) for n in layers}
    # One FLOP per output element (128) forward and backward; the PReLU also for its weight
    # gradient; the reduction one per input element (128) forward and backward.
    assert [layers[n].flops(2).total for n in ("prelu", "scale", "masked", "relu6", "clip", "sum")] == [
        2 * 3 * 128, 2 * 2 * 128, 2 * 2 * 128, 2 * 2 * 128, 2 * 2 * 128, 2 * 2 * 128]
    assert layers["sum"].out_shape == (8,)
