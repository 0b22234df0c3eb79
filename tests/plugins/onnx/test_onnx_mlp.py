"""An MLP written with onnx.helper: MatMul + Add bias is one linear, Gemm is a linear, FLOPs by hand."""

from __future__ import annotations

import pytest

from optmap.plugins.onnx import read_onnx

from onnx_models import model, node, save, scalar, value, weight


def mlp(batch: int | str = "N"):
    """x(784) -> MatMul 784x256 + Add b1 -> Relu -> Dropout(0.1) -> Gemm 256 -> 10 (+ bias) -> Softmax."""
    nodes = [
        node("MatMul", ["x", "w1"], ["h"], "fc1_matmul"),
        node("Add", ["h", "b1"], ["hb"], "fc1"),
        node("Relu", ["hb"], ["r"], "relu"),
        node("Dropout", ["r", "ratio"], ["d"], "drop"),
        node("Gemm", ["d", "w2", "b2"], ["z"], "fc2"),
        node("Softmax", ["z"], ["y"], "softmax", axis=-1),
    ]
    inits = [weight("w1", 784, 256), weight("b1", 256), scalar("ratio", 0.1), weight("w2", 256, 10),
             weight("b2", 10)]
    return model(nodes, [value("x", batch, 784)], [value("y", batch, 10)], inits)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return save(mlp(), tmp_path_factory.mktemp("onnx") / "mlp.onnx")


def test_matmul_and_bias_add_are_one_linear(path):
    w = read_onnx(path, batch=64, phase="inference")
    assert [(layer.name, layer.op, layer.out_shape) for layer in w.layers()] == [
        ("x", "input", (784,)), ("fc1_matmul", "linear", (256,)), ("relu", "activation", (256,)),
        ("drop", "dropout", (256,)), ("fc2", "linear", (10,)), ("softmax", "activation", (10,))]
    assert w.layer("fc1_matmul").attr("bias") is True and w.layer("drop").attr("p") == pytest.approx(0.1)
    assert w.inputs_of("fc2") == ("drop",)


def test_parameters_and_inference_flops_by_hand(path):
    w = read_onnx(path, batch=64, phase="inference")
    # fc1 784*256 + 256 = 200,960; fc2 256*10 + 10 = 2,570.
    assert w.params == 203_530
    # Inference counts the forward pass only: 2 * (784*256 + 256*10) = 406,528 for the two
    # contractions, one FLOP per element for relu (256), dropout (256) and softmax (10).
    assert w.flops().total == w.flops().forward == 64 * (406_528 + 256 + 256 + 10)


def test_defaults_come_from_the_file(tmp_path):
    # A fixed batch of 32 in the file is the default batch; float32 inputs make the dtype fp32.
    w = read_onnx(save(mlp(batch=32), tmp_path / "fixed.onnx"))
    assert (w.batch, w.dtype, w.phase, w.name) == (32, "fp32", "training", "fixed")
    assert read_onnx(save(mlp(), tmp_path / "sym.onnx")).batch == 1  # a symbolic batch: 1 unless given
