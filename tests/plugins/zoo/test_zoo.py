"""The built-in model zoo: exact torchvision parameter counts, MACs and block views."""

import inspect

import pytest

from optmap.plugins import zoo
from optmap.workload import Node, Parallel

# sum(p.numel() for p in torchvision.models.<name>().parameters())
TORCHVISION_PARAMS = {
    "alexnet": 61_100_840, "vgg11": 132_863_336, "vgg13": 133_047_848, "vgg16": 138_357_544,
    "vgg19": 143_667_240, "resnet18": 11_689_512, "resnet34": 21_797_672, "resnet50": 25_557_032,
    "resnet101": 44_549_160, "resnet152": 60_192_808,
}
# MACs at 3x224x224: torchvision docs' "GFLOPS" column (pytorch.org/vision/stable/models.html), which
# counts multiply-accumulates of conv/linear layers; ptflops reports the same to the quoted precision.
TORCHVISION_GMACS = {"resnet50": 4.09, "vgg16": 15.47, "alexnet": 0.71, "resnet18": 1.81}


@pytest.mark.parametrize("name, params", TORCHVISION_PARAMS.items())
def test_params_match_torchvision(name, params):
    assert zoo.MODELS[name](batch=1).params == params


def test_lenet5():
    w = zoo.lenet(batch=64)
    # conv1 1*6*25+6 + conv2 6*16*25+16 + fc 400*120+120 + 120*84+84 + 84*10+10
    assert w.params == 61_706 and w.layer("fc1").in_channels == 16 * 5 * 5
    assert [layer.name for layer in w.weighted_layers()] == ["conv1", "conv2", "fc1", "fc2", "fc3"]


@pytest.mark.parametrize("name, gmacs", TORCHVISION_GMACS.items())
def test_macs_match_reported(name, gmacs):
    assert zoo.MODELS[name](batch=1).macs / 1e9 == pytest.approx(gmacs, rel=0.01)


def test_resnet18_block_view():
    view = zoo.resnet18(batch=1).block_view()
    parallels = [it for it in view if isinstance(it, Parallel)]
    assert len(parallels) == 8
    assert sum(1 for p in parallels if p.paths[1]) == 3  # layer2.0, layer3.0, layer4.0 downsample
    assert view[:3] == (Node("conv1"), Parallel((("layer1.0.conv1", "layer1.0.conv2"), ())), Node("layer1.0.add"))
    assert Parallel((("layer2.0.conv1", "layer2.0.conv2"), ("layer2.0.downsample.0",))) in view
    assert view[-1] == Node("fc") and len(view) == 1 + 2 * 8 + 1
    assert all(isinstance(view[i - 1], Node) and isinstance(view[i + 1], Node)
               for i, it in enumerate(view) if isinstance(it, Parallel))


def test_resnet50_block_view():
    w = zoo.resnet50(batch=1)
    parallels = [it for it in w.block_view() if isinstance(it, Parallel)]
    assert len(parallels) == 16 and sum(1 for p in parallels if p.paths[1]) == 4  # layer1.0 too (64 -> 256)
    assert parallels[0].paths == (("layer1.0.conv1", "layer1.0.conv2", "layer1.0.conv3"), ("layer1.0.downsample.0",))
    assert w.layer("layer2.0.conv2").attr("stride") == (2, 2)  # torchvision v1.5: stride on the 3x3
    assert len(w.weighted_layers()) == 50 + 4


def test_vgg16_is_a_chain():
    w = zoo.vgg16(batch=1)
    view = w.block_view()
    assert len(view) == 16 and all(isinstance(it, Node) for it in view) and w.is_chain()
    assert w.input_elements_of("classifier.0") == 512 * 7 * 7


def test_alexnet_matches_accpar_reference_shapes():
    w = zoo.alexnet(batch=1)
    conv = [layer for layer in w.weighted_layers() if layer.op == "conv2d"]
    assert [layer.out_shape for layer in conv] == [(64, 55, 55), (192, 27, 27), (384, 13, 13),
                                                   (256, 13, 13), (256, 13, 13)]
    assert w.input_elements_of("classifier.1") == 9216


def test_builders_signature_and_registration():
    registered = {}
    zoo.optmap_register_workloads(register=lambda name, factory: registered.setdefault(name, factory))
    assert set(registered) == {"lenet", "alexnet", "vgg11", "vgg13", "vgg16", "vgg19",
                               "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "gnmt"}
    for name, build in registered.items():
        params = inspect.signature(build).parameters.values()
        assert all(p.kind is p.KEYWORD_ONLY and p.annotation is not p.empty for p in params), name
        image = {"image_size", "num_classes"} if name != "gnmt" else {"timesteps", "vocab"}
        assert {"batch", "dtype", "phase", *image} <= {p.name for p in params}
    w = registered["resnet18"](batch=32, dtype="bf16", phase="inference", image_size=112, num_classes=10)
    assert (w.name, w.batch, w.dtype, w.phase, w.bytes_per_element) == ("resnet18", 32, "bf16", "inference", 2)
    assert w.layer("fc").out_shape == (10,) and w.layer("layer4.1.conv2").out_shape == (512, 4, 4)
