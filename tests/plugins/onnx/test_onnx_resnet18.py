"""torchvision's ResNet-18 exported to ONNX equals the zoo's ``resnet18`` layer for layer.

``tests/data/onnx/resnet18.onnx`` was exported by ``tests/data/onnx/make_resnet18.py`` (torch
2.14.1, torchvision 0.29.1) with its weights stripped, so this runs without PyTorch. The zoo model
is written by hand from torchvision's source; the ONNX file comes from torchvision itself, so
agreement checks both the importer and the zoo.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from optmap.plugins.onnx import read_onnx
from optmap.plugins.zoo import resnet18
from optmap.problem import load
from optmap.run import solve

from conftest import make_problem

ROOT = Path(__file__).resolve().parents[3]
RESNET18 = ROOT / "tests" / "data" / "onnx" / "resnet18.onnx"


def _signature(layer) -> tuple:
    return layer.op, layer.in_shapes, layer.out_shape, layer.attrs


def zoo_names(onnx_workload, zoo_workload) -> dict[str, str]:
    """ONNX layer name -> zoo layer name, from the unique isomorphism of the two layer graphs that
    pairs layers of equal op, shapes and attributes (and edges of equal input position)."""
    matcher = nx.algorithms.isomorphism.DiGraphMatcher(
        onnx_workload.graph, zoo_workload.graph,
        node_match=lambda a, b: _signature(a["layer"]) == _signature(b["layer"]),
        edge_match=lambda a, b: a["index"] == b["index"])
    mappings = [m for m, _ in zip(matcher.isomorphisms_iter(), range(2))]
    assert len(mappings) == 1, "the two graphs must match in exactly one way"
    return mappings[0]


@pytest.fixture(scope="module")
def both():
    return read_onnx(RESNET18, batch=512, dtype="bf16"), resnet18(batch=512, dtype="bf16")


def test_same_layers_flops_and_parameters(both):
    onnx_net, zoo = both
    names = zoo_names(onnx_net, zoo)  # every layer is paired with an identical one (op, shapes, attrs)
    assert len(names) == len(zoo.layers()) == 70
    for ours, theirs in names.items():
        a, b = onnx_net.layer(ours), zoo.layer(theirs)
        assert (a.params, a.macs, a.flops(512)) == (b.params, b.macs, b.flops(512))
    # torchvision's model card for ResNet18_Weights.IMAGENET1K_V1: 11,689,512 parameters and
    # "1.81 GFLOPS" per 224x224 image (torchvision counts multiply-adds).
    assert onnx_net.params == zoo.params == 11_689_512
    assert round(onnx_net.macs / 1e9, 2) == 1.81
    assert onnx_net.flops() == zoo.flops()


def test_layer_names_follow_the_torch_modules(both):
    onnx_net, zoo = both
    names = zoo_names(onnx_net, zoo)
    same = [n for n, z in names.items() if n == z]
    # conv / bn / downsample / pooling / fc modules and the block adds keep torchvision's names;
    # the ReLU module a BasicBlock applies twice is relu and relu_2 (the zoo: relu1, relu2), the
    # input and torch.flatten (aten.view) differ too.
    assert {"conv1", "bn1", "maxpool", "layer2.0.downsample.0", "layer4.1.bn2", "layer3.0.add", "avgpool",
            "fc"} <= set(same)
    assert sorted(set(names) - set(same)) == sorted(
        ["image", "view"] + [f"layer{s}.{b}.relu{x}" for s in range(1, 5) for b in (0, 1) for x in ("", "_2")])


def test_same_accpar_plan_as_the_zoo_model():
    # AccPar §6: ResNet-18, batch 512, bf16, on 128 TPU-v2 + 128 TPU-v3 (the paper's Fig. 5 system).
    zoo_problem = load(ROOT / "problems" / "accpar" / "hetero-resnet18.toml")
    spec = dict(zoo_problem.spec)
    spec["workload"] = {"file": str(RESNET18), "batch": 512, "dtype": "bf16"}
    onnx_problem = make_problem(spec)
    assert onnx_problem.workload.name == "resnet18"
    names = zoo_names(onnx_problem.workload, zoo_problem.workload)
    ours, theirs = (solve(p, engine="accpar", seed=0) for p in (onnx_problem, zoo_problem))
    assert ours.values == theirs.values
    for a, b in zip(ours.report.plan["levels"], theirs.report.plan["levels"], strict=True):
        assert {names[n]: t for n, t in a["types"].items()} == b["types"]
        assert a["comm_elements"] == b["comm_elements"]
    assert ours.report.plan["shares"] == theirs.report.plan["shares"]
