"""Table III's models (parameters and MACs asserted) and the H2H comparison's multi-modal DAGs."""

import pytest

from optmap.plugins.mars.layers import layer_graph
from optmap.plugins.mars.workloads import casia_surf, facebagnet
from optmap.plugins.zoo.models import alexnet, resnet34, resnet101, vgg16, wide_resnet50_2

from conftest import channel_shuffle

# Table III: #Convs (main path), #Params, FLOPs (which are MAC counts, note §1.5)
TABLE_III = {
    "alexnet": (alexnet, 5, 61.1e6, 727e6),
    "vgg16": (vgg16, 13, 138e6, 15.5e9),
    "resnet34": (resnet34, 33, 21.8e6, 3.68e9),
    "resnet101": (resnet101, 100, 44.55e6, 7.85e9),
    "wrn50-2": (wide_resnet50_2, 49, 68.8e6, 11.4e9),
}
TORCHVISION_PARAMS = {"alexnet": 61_100_840, "vgg16": 138_357_544, "resnet34": 21_797_672,
                      "resnet101": 44_549_160, "wrn50-2": 68_883_240}


def profiler_macs(workload):
    """MACs as a module-hook profiler (ptflops) counts them: conv/linear MACs + bias, one per
    activation output, two per batch-norm output, one per pooled input element."""
    total = 0
    for layer in workload.layers():
        if layer.op in ("conv2d", "linear"):
            total += layer.macs + (layer.out_elements if layer.attr("bias", True) else 0)
        elif layer.op == "activation":
            total += layer.out_elements
        elif layer.op == "batchnorm2d":
            total += 2 * layer.out_elements
        elif layer.op in ("maxpool2d", "avgpool2d", "adaptive_avgpool2d"):
            total += layer.in_elements
    return total


@pytest.mark.parametrize("name", TABLE_III)
def test_table_iii_parameters_and_macs(name):
    build, convs, params, macs = TABLE_III[name]
    w = build(batch=1, dtype="fp16", phase="inference")
    assert w.params == TORCHVISION_PARAMS[name]  # torchvision-exact
    assert abs(w.params / params - 1) < 0.003  # Table III rounds (138M) or truncates (68.8M for 68.88M)
    main_path = [layer for layer in w.layers() if layer.op == "conv2d" and "downsample" not in layer.name]
    assert len(main_path) == convs  # #Convs counts main-path convolutions (projections excluded)
    if name != "alexnet":  # the paper's FLOPs are profiler MAC counts (element-wise ops included)
        digits = 2 if name in ("resnet34", "resnet101") else 1
        assert round(profiler_macs(w) / 1e9, digits) == pytest.approx(macs / 1e9)
        assert abs(w.macs / macs - 1) < 0.01  # conv + FC MACs alone within 1 %


def test_alexnet_727m_is_the_original_grouped_alexnet():
    # torchvision's AlexNet (64/192/384/256/256, no groups): 714.2 M MACs; Table III's 727 M matches
    # Krizhevsky's grouped AlexNet (96/256/384/384/256 on 227², groups of 2 in conv2, 4, 5):
    conv = (96 * 3 * 121 * 55 * 55 + 256 * 48 * 25 * 27 * 27 + 384 * 256 * 9 * 13 * 13
            + 384 * 192 * 9 * 13 * 13 + 256 * 192 * 9 * 13 * 13)
    fc = 9216 * 4096 + 4096 * 4096 + 4096 * 1000
    assert round((conv + fc) / 1e6, 1) == 724.4  # + ReLU, pooling and bias terms ≈ 727 M
    assert alexnet(batch=1).macs == 714_188_480


def test_multimodal_dags_branch_and_merge():
    for build, convs, branch_end, fused in ((casia_surf, 50, "layer3.1.conv2", "layer4.0.conv1"),
                                             (facebagnet, 101, "layer2.3.conv3", "layer3.0.conv1")):
        w = build(batch=1)
        graph = layer_graph(w)
        names = [layer.name for layer in graph.layers]
        assert len(names) == convs
        assert len(graph.host_inputs) == 3  # RGB, depth and IR images from the host
        into_fusion = [e for e in graph.edges if names[e.dst] == fused]
        assert sorted(names[e.src] for e in into_fusion) == sorted(f"{m}.{branch_end}" for m in ("rgb", "depth", "ir"))
        slices = sorted((e.lo, e.hi) for e in into_fusion)  # each branch supplies a third of the channels
        assert [x for pair in slices for x in pair] == pytest.approx([0, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 1])
        assert w.layer("fusion").op == "concat"


def test_casia_surf_and_facebagnet_sizes():
    casia, face = casia_surf(batch=1), facebagnet(batch=1)
    assert casia.params == 19_364_546 and face.params == 27_381_698  # 3 branches + shared stages
    assert face.macs > casia.macs  # FaceBag is the heavier model, as H2H's latencies suggest (520 > 360 ms)
    assert face.layer("rgb.layer1.0.conv2").attr("groups") == 32  # ResNeXt 32×4d


def test_imported_data_movement_only_routes_tensors():
    # An imported channel shuffle between two convolutions: conv1 (4 -> 8 channels, 8x8) ->
    # reshape -> transpose -> reshape -> slice of 4 channels -> conv2. MARS maps the two convs;
    # conv2 reads its 4 x 8 x 8 = 256 input elements from conv1, and nothing else is mapped.
    graph = layer_graph(channel_shuffle(1))
    assert [n.name for n in graph.layers] == ["conv1", "conv2"]
    assert [(e.src, e.dst, e.kind, e.elems) for e in graph.edges] == [(0, 1, "in", 256)]
