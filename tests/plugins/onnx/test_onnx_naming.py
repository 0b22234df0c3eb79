"""Layer names: TorchScript-style scoped names, nameless nodes, and names used twice."""

from __future__ import annotations

from onnx import helper

from optmap.plugins.onnx import read_onnx

from onnx_models import model, save, value, weight


def test_scoped_nameless_and_repeated_names(tmp_path):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["a"], name="/layer1/layer1.0/conv1/Conv", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["a"], ["b"]),  # no name: called after its op
        helper.make_node("Relu", ["b"], ["c"]),
        helper.make_node("Relu", ["c"], ["d"], name="act"),
        helper.make_node("Relu", ["d"], ["y"], name="act"),  # a name used twice
    ]
    m = model(nodes, [value("x", "N", 2, 3, 3)], [value("y", "N", 2, 3, 3)], [weight("w", 2, 2, 1, 1)])
    names = [layer.name for layer in read_onnx(save(m, tmp_path / "names.onnx")).layers()]
    # "/layer1/layer1.0/conv1/Conv": a segment that extends its parent's path replaces it.
    assert names == ["x", "layer1.0.conv1.Conv", "relu", "relu_2", "act", "act_2"]
