"""A small CNN with a residual block, written with onnx.helper: layers, FLOPs, parameters, DAG."""

from __future__ import annotations

import pytest

from optmap.plugins.onnx import read_onnx
from optmap.workload import Node, Parallel

from onnx_models import model, node, save, value, weight

BATCH = 4


def residual_cnn():
    """x(N,3,8,8) -> conv1 3x3 (8, a non-zero bias: a zero one before a norm is an exporter's) -> bn1
    -> relu1 -> [conv2 3x3 -> relu2 -> conv3 1x1] + relu1 -> relu3 -> maxpool 2x2/2 -> global average pool -> flatten -> fc (Gemm 8 -> 10, bias)."""
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["n1"], "bn1"),
        node("Relu", ["n1"], ["r1"], "relu1"),
        node("Conv", ["r1", "w2"], ["c2"], "conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("Relu", ["c2"], ["r2"], "relu2"),
        node("Conv", ["r2", "w3"], ["c3"], "conv3", kernel_shape=[1, 1]),
        node("Add", ["c3", "r1"], ["s"], "add"),
        node("Relu", ["s"], ["r3"], "relu3"),
        node("MaxPool", ["r3"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
        node("GlobalAveragePool", ["p"], ["gap"], "gap"),
        node("Flatten", ["gap"], ["f"], "flatten"),
        node("Gemm", ["f", "wfc", "bfc"], ["y"], "fc", transB=1),
    ]
    inits = [weight("w1", 8, 3, 3, 3), weight("b1", 8, value=0.1), weight("g", 8), weight("beta", 8), weight("mean", 8),
             weight("var", 8, value=1.0), weight("w2", 8, 8, 3, 3), weight("w3", 8, 8, 1, 1),
             weight("wfc", 10, 8), weight("bfc", 10)]
    return model(nodes, [value("x", "N", 3, 8, 8)], [value("y", "N", 10)], inits)


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    path = save(residual_cnn(), tmp_path_factory.mktemp("onnx") / "cnn.onnx")
    return read_onnx(path, batch=BATCH)


def test_layers_shapes_and_attributes(workload):
    layers = {layer.name: layer for layer in workload.layers()}
    assert [(n, layers[n].op, layers[n].out_shape) for n in layers] == [
        ("x", "input", (3, 8, 8)), ("conv1", "conv2d", (8, 8, 8)), ("bn1", "batchnorm2d", (8, 8, 8)),
        ("relu1", "activation", (8, 8, 8)), ("conv2", "conv2d", (8, 8, 8)), ("relu2", "activation", (8, 8, 8)),
        ("conv3", "conv2d", (8, 8, 8)), ("add", "add", (8, 8, 8)), ("relu3", "activation", (8, 8, 8)),
        ("pool", "maxpool2d", (8, 4, 4)), ("gap", "adaptive_avgpool2d", (8, 1, 1)), ("flatten", "flatten", (8,)),
        ("fc", "linear", (10,)),
    ]
    assert dict(layers["conv1"].attrs) == {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1), "groups": 1,
                                           "bias": True}
    assert layers["conv2"].attr("bias") is False and layers["conv3"].attr("kernel") == (1, 1)
    assert dict(layers["pool"].attrs) == {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0), "ceil_mode": False}
    assert workload.batch == BATCH and workload.dtype == "fp32" and workload.name == "cnn"


def test_parameters_by_hand(workload):
    # conv1 8*3*3*3 + 8 bias = 224; bn1 gamma+beta 2*8 = 16; conv2 8*8*3*3 = 576; conv3 8*8 = 64;
    # fc 8*10 + 10 = 90. BN running statistics are buffers, not parameters.
    params = {layer.name: layer.params for layer in workload.layers() if layer.params}
    assert params == {"conv1": 224, "bn1": 16, "conv2": 576, "conv3": 64, "fc": 90}
    assert workload.params == 970


def test_flops_by_hand(workload):
    # MACs per sample = output elements x (Cin/groups * kh * kw): conv1 512*27 = 13824,
    # conv2 512*72 = 36864, conv3 512*8 = 4096, fc 10*8 = 80. A contraction's forward is 2 MACs,
    # and backward-data and weight-gradient each equal the forward.
    macs = {layer.name: layer.macs for layer in workload.weighted_layers()}
    assert macs == {"conv1": 13824, "conv2": 36864, "conv3": 4096, "fc": 80}
    for name, m in macs.items():
        f = workload.layer(name).flops(BATCH)
        assert (f.forward, f.backward_data, f.weight_grad) == (2 * m * BATCH,) * 3
    # Element-wise layers: one FLOP per output element (512 per sample) forward and backward;
    # bn1 also counts its weight gradient; the 2x2 max pool 4 per output (4*128 = 512);
    # global average pooling reads 8*4*4 = 128 elements; flatten is free.
    contractions = 3 * 2 * sum(macs.values())  # 329184
    bn, relus, add, pool, gap = 3 * 512, 3 * 2 * 512, 2 * 512, 2 * 512, 2 * 128
    assert workload.flops().total == BATCH * (contractions + bn + relus + add + pool + gap) == BATCH * 336096


def test_residual_branch_is_kept(workload):
    assert workload.inputs_of("add") == ("conv3", "relu1")  # the Add's input order
    assert workload.block_view() == (Node("conv1"), Parallel((("conv2", "conv3"), ())), Node("add"), Node("fc"))


def test_transposed_convolution(tmp_path):
    # x (N, 8, 4, 4) -> ConvTranspose W (8, 4, 2, 2), stride 2, bias -> (4, 8, 8). Each of the
    # 8*4*4 input elements is multiplied into 4 * 2*2 outputs: 2048 MACs; the weights are
    # 8*4*2*2 = 128 plus 4 biases.
    nodes = [node("ConvTranspose", ["x", "w", "b"], ["y"], "up", kernel_shape=[2, 2], strides=[2, 2])]
    m = model(nodes, [value("x", "N", 8, 4, 4)], [value("y", "N", 4, 8, 8)], [weight("w", 8, 4, 2, 2), weight("b", 4)])
    layer = read_onnx(save(m, tmp_path / "up.onnx"), batch=3).layer("up")
    assert (layer.op, layer.out_shape, layer.weighted) == ("conv_transpose2d", (4, 8, 8), True)
    assert (layer.macs, layer.params) == (2048, 132)
    assert layer.flops(3).total == 3 * 3 * 2 * 2048  # forward, backward-data, weight-gradient: 2 MACs each
