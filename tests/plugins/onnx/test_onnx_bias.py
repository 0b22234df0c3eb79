"""Bias-free convolutions stay bias-free: the zero biases an exporter adds are not parameters.

torch's dynamo exporter (``optimize=False``) gives every bias-free convolution the bias
``Expand(CastLike(0, x), Shape(w))``; constant folding turns it into an all-zero initializer.
Counted as parameters they add 4,800 to ResNet-18 (the Cout of its 20 convolutions).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from optmap.plugins.onnx import read_onnx

from onnx_models import model, node, save, value, weight

RESNET18 = Path(__file__).resolve().parents[3] / "tests" / "data" / "onnx" / "resnet18.onnx"
RESNET18_PARAMS = 11_689_512  # torchvision's model card for ResNet18_Weights.IMAGENET1K_V1


def _with_zero_biases(folded: bool) -> tuple[onnx.ModelProto, int]:
    """tests/data/onnx/resnet18.onnx with the zero bias torch exports put back on every Conv:
    a zero initializer (``folded``) or the exporter's ``Expand(CastLike(0, x), Shape(w))``."""
    m = onnx.load(str(RESNET18), load_external_data=False)
    shapes = {t.name: list(t.dims) for t in m.graph.initializer}
    added = 0
    for conv in [n for n in m.graph.node if n.op_type == "Conv"]:
        out_channels = shapes[conv.input[1]][0]
        bias = conv.name + ".zero_bias"
        if folded:
            m.graph.initializer.append(numpy_helper.from_array(np.zeros(out_channels, np.float32), bias))
        else:
            m.graph.node.extend([
                helper.make_node("Constant", [], [bias + ".zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
                helper.make_node("CastLike", [bias + ".zero", conv.input[0]], [bias + ".cast"]),
                helper.make_node("Shape", [conv.input[1]], [bias + ".shape"], start=0, end=1),
                helper.make_node("Expand", [bias + ".cast", bias + ".shape"], [bias])])
        conv.input.append(bias)
        added += out_channels
    return m, added


def test_resnet18_exported_with_zero_biases_keeps_its_parameter_count(tmp_path):
    for folded in (True, False):
        m, added = _with_zero_biases(folded)
        # 64 + 4*64 + (4*128 + 128) + (4*256 + 256) + (4*512 + 512) = 4,800 zero bias elements
        assert added == 4_800
        path = tmp_path / f"resnet18_{folded}.onnx"
        onnx.save_model(m, str(path))
        w = read_onnx(path, batch=2)
        assert w.params == RESNET18_PARAMS
        assert not any(layer.attr("bias") for layer in w.layers() if layer.op == "conv2d")


def _conv_then(after: str, bias_value: float, tmp_path: Path) -> int:
    """Parameters of x (N, 2, 4, 4) -> Conv 3x3 (3 out, pad 1, a constant bias) -> ``after``."""
    nodes = [node("Conv", ["x", "w", "b"], ["c"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    inits = [weight("w", 3, 2, 3, 3, value=0.5), weight("b", 3, value=bias_value)]
    if after == "BatchNormalization":
        nodes.append(node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["y"], "bn"))
        inits += [weight(n, 3, value=1.0) for n in ("g", "beta", "mean", "var")]
    else:
        nodes.append(node("Relu", ["c"], ["y"], "relu"))
    m = model(nodes, [value("x", "N", 2, 4, 4)], [value("y", "N", 3, 4, 4)], inits)
    return read_onnx(save(m, tmp_path / f"{after}{bias_value}.onnx"), batch=2).layer("conv").params


def test_a_zero_bias_is_dropped_only_before_a_batch_norm(tmp_path):
    weights = 3 * 2 * 3 * 3  # Cout * Cin * kh * kw = 54
    # Before a batch norm a zero bias is the exporter's (it would cancel in the norm anyway): 54.
    assert _conv_then("BatchNormalization", 0.0, tmp_path) == weights
    # A non-zero bias before a batch norm, and a zero bias before a ReLU (maybe trained to zero),
    # are parameters: 54 + 3.
    assert _conv_then("BatchNormalization", 0.25, tmp_path) == weights + 3
    assert _conv_then("Relu", 0.0, tmp_path) == weights + 3
