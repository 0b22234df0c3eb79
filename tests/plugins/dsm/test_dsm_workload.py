"""The workload as DSM sees it: primary layers, folded auxiliary work, edges and the paper's FLOPs/byte checks."""

from __future__ import annotations

import pytest

from optmap.errors import OptmapError
from optmap.plugins.dsm.layers import build_graph, flops_per_byte
from optmap.plugins.dsm.view import chain_view
from optmap.plugins.zoo import resnet50, vgg16
from optmap.workload import WorkloadBuilder

from conftest import channel_shuffle


@pytest.fixture(scope="module")
def vgg():
    return build_graph(vgg16(batch=1, dtype="fp16"))


def test_flops_per_byte_matches_the_paper(vgg):
    # DSM §I: "842.5 for layer CONV3_2 vs. 25.7 for layer CONV1_1 at half-precision".
    # By hand: FLOPs = 2 x in x out x kij x ij, bytes = 2 x (|I| + |K| + |O|) at N_mb = 1.
    conv3_2 = 2 * 256 * 256 * 9 * 56**2 / (2 * (256 * 56**2 + 256 * 256 * 9 + 256 * 56**2))
    conv1_1 = 2 * 3 * 64 * 9 * 224**2 / (2 * (3 * 224**2 + 64 * 3 * 9 + 64 * 224**2))
    assert flops_per_byte(vgg.layer("features.12")) == pytest.approx(conv3_2, rel=1e-12)
    assert flops_per_byte(vgg.layer("features.12")) == pytest.approx(842.5, abs=0.01)
    assert flops_per_byte(vgg.layer("features.0")) == pytest.approx(conv1_1, rel=1e-12)
    assert flops_per_byte(vgg.layer("features.0")) == pytest.approx(25.778, abs=5e-4)  # note §2.3; the paper truncates to 25.7


def test_vgg16_layers_pooling_and_aux(vgg):
    assert [layer.kind for layer in vgg.layers] == ["conv"] * 13 + ["fc"] * 3
    pooled = {layer.name for layer in vgg.layers if layer.out_ratio == 0.25}
    assert pooled == {"features.2", "features.7", "features.14", "features.21", "features.28"}  # 2x2 max pools
    # CONV1_1: bias (read + write) and ReLU (read + write) on 64 x 224 x 224 outputs, SFP accesses per sample
    assert vgg.layer("features.0").aux_fwd == 4 * 64 * 224 * 224
    # CONV1_2 also max-pools: one read per input element and one write per output element
    assert vgg.layer("features.2").aux_fwd == 4 * 64 * 224 * 224 + 64 * 224 * 224 + 64 * 112 * 112
    # backward: bias gradient reads the error once, ReLU reads error and activation and writes (3)
    assert vgg.layer("features.0").aux_bwd == 4 * 64 * 224 * 224
    assert vgg.layer("features.0").from_input and not vgg.layer("features.2").from_input


def test_resnet50_shortcuts_fold_into_the_adding_layer():
    graph = build_graph(resnet50(batch=1, dtype="fp16"))
    assert len(graph.layers) == 54  # 53 convolutions (16 blocks x 3 + 4 downsamples + stem) + fc
    # identity shortcut of block layer1.1: from layer1.0's last conv (owner of its add and relu) to layer1.1.conv3
    edge = graph.graph.edges["layer1.0.conv3", "layer1.1.conv3"]
    assert edge["elements"] == 256 * 56 * 56 and not edge["main"] and not edge["reuse"]
    assert graph.layer("layer1.1.conv3").shortcut_elements == 256 * 56 * 56
    # an output is kept in the scratchpads for one consumer only: the first (main-path) one
    assert graph.reuse_consumer("layer1.0.conv3") == "layer1.1.conv1"
    assert graph.reuse_producer("layer1.0.downsample.0") is None
    view = chain_view(graph.graph)
    assert len(view.nodes) == 1 + 16 + 1  # the stem (first fork), each block's last conv (its merge), fc
    assert {p for seg in view.segments for p in seg} >= {("layer1.0.conv1", "layer1.0.conv2"), ("layer1.0.downsample.0",)}


def test_ops_dsm_cannot_price_are_one_line_errors():
    b = WorkloadBuilder("grouped", (8, 8, 8))
    b.conv2d("input", 8, 3, padding=1, groups=2, name="dw")
    with pytest.raises(OptmapError, match="cannot price grouped convolutions"):
        build_graph(b.build(4, "fp16"))
    b = WorkloadBuilder("scores", (4, 16))
    b.matmul("input", b.input((16, 4), "keys"), name="qk")
    with pytest.raises(OptmapError, match="cannot price op 'matmul'"):
        build_graph(b.build(4, "fp16"))


@pytest.fixture(scope="module")
def gnmt_ir():
    from optmap.plugins.zoo import gnmt

    return gnmt(batch=1, dtype="fp16")


def test_gnmt_lstm_flops_params_and_structure(gnmt_ir):
    layers = {layer.name: layer for layer in gnmt_ir.layers()}
    lstms = [n for n, layer in layers.items() if layer.op == "lstm"]
    assert len(lstms) == 16 and layers["attention"].op == "attention"
    # DSM §IV: "~16M FLOPs/layer" = 2 x 4H x (H + H) per timestep and sample for H = 1024 (note §2.1)
    assert layers["enc3"].flops(1).forward / 128 == 2 * 4 * 1024 * 2048 == 16_777_216
    # PyTorch nn.LSTM(1024, 1024): weight_ih 4H x H_in, weight_hh 4H x H, two 4H biases
    assert layers["enc3"].params == 4 * 1024 * (1024 + 1024) + 8 * 1024
    assert layers["enc1"].params == 2 * (4 * 1024 * 2048 + 8 * 1024)  # bidirectional: two directions
    # attention (the IR's scaled dot-product kind, one head): scores and context for 128 x 128 step
    # pairs of 1024 features, plus one FLOP per score for the softmax; no weights
    attention = layers["attention"].flops(1)
    products, scores = 2 * 2 * 128 * 128 * 1024, 128 * 128
    assert (attention.forward, attention.backward_data, attention.weight_grad) == (products + scores,
                                                                                   2 * products + scores, 0)
    assert layers["attention.concat"].out_shape == (128, 2048)  # dec2 reads the query beside its context
    # residual connections from the third layer up (Wu et al. §3.1): enc3..enc8 and dec3..dec8
    assert sum(layer.op == "add" for layer in layers.values()) == 12


def test_gnmt_as_dsm_layers(gnmt_ir):
    from optmap.plugins.dsm.pipelining import pipe_runs

    graph = build_graph(gnmt_ir)
    enc1, enc3, attention = graph.layer("enc1"), graph.layer("enc3"), graph.layer("attention")
    # §II-A: an LSTM's inputs are its layer input and its own previous output; 4 gates (x2 directions)
    assert (enc3.n_in, enc3.n_out, enc3.timesteps, enc3.recurrent, enc3.pipelinable) == (2048, 4096, 128, True, True)
    assert (enc1.n_out, enc1.pipelinable) == (8192, False)  # bidirectional: not pipelinable (§III-D)
    assert enc3.out_ratio == 0.25  # the cell output h (H) of the 4H gates leaves the layer
    assert not attention.shared_kernel and attention.n_ij == 128
    assert graph.layer("dec2").producers == ("attention",)  # the concat of query and context is the attention's
    view = chain_view(graph.graph)
    assert view.nodes[:2] == ("(inputs)", "attention")  # encoder and decoder's first layer are two paths
    runs = pipe_runs(graph, rows=16)
    assert [run.layers for run in runs] == [tuple(f"enc{i}" for i in range(2, 9)), tuple(f"dec{i}" for i in range(2, 9))]
    assert runs[0].rows == (3, 3, 2, 2, 2, 2, 2)  # 16 rows by work: enc2 reads 2H, so it gets a larger share


def test_graphs_that_are_not_series_parallel_get_one_line():
    import networkx as nx

    bridge = nx.DiGraph([("a", "b"), ("a", "c"), ("b", "c"), ("b", "d"), ("c", "d")])
    with pytest.raises(OptmapError, match="series-parallel"):
        chain_view(bridge)


def test_data_movement_folds_into_the_owner_at_zero_compute():
    # An imported channel shuffle: conv1 (8 x 8 x 8 out) -> reshape (2, 4, 8, 8) -> transpose ->
    # reshape back -> slice the first 4 channels -> conv2. No MACs are added; the reshapes are
    # views (0 accesses); the transpose copies 512 elements and the slice 256 (a read and a write
    # each: 2 x 512 + 2 x 256 = 1,536 SFP accesses on conv1, forward and backward alike).
    graph = build_graph(channel_shuffle(4))
    assert [layer.name for layer in graph.layers] == ["conv1", "conv2"]
    conv1 = graph.layer("conv1")
    assert (conv1.aux_fwd, conv1.aux_bwd) == (1536.0, 1536.0)
    assert conv1.macs_per_sample == 4 * 8 * 64 * 9  # in x out x ij x kij: the convolution alone
    # conv2 reads the 256 sliced elements from conv1, its main input.
    assert graph.layer("conv2").producers == ("conv1",)
    assert graph.graph.edges["conv1", "conv2"]["elements"] == 256


def test_a_transformer_op_names_the_formulations_that_plan_transformers():
    b = WorkloadBuilder("scores", (4, 16))
    b.matmul("input", b.input((16, 4), "keys"), name="qk")
    with pytest.raises(OptmapError, match="acctfm or megatron-3d"):
        build_graph(b.build(4, "fp16"))
