"""The workload IR: shape inference, params/MACs/FLOPs arithmetic, builder errors, block views."""

import pytest

from optmap.errors import OptmapError
from optmap.workload import (
    DTYPE_BYTES, Layer, LayerFlops, Node, Parallel, Workload, WorkloadBuilder, dtype_bytes,
)


def test_dtype_bytes():
    assert dtype_bytes("fp32") == 4 and dtype_bytes("bf16") == 2 and dtype_bytes("int8") == 1
    # the core's formats; plugins add more through optmap_register_dtypes (llm: mxfp8) once a
    # host has loaded in this process, so the table holds at least these
    assert {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"} <= set(DTYPE_BYTES)
    with pytest.raises(OptmapError, match="did you mean 'bf16'"):
        dtype_bytes("bf61")


def test_conv_shape_stride_padding_groups():
    b = WorkloadBuilder("t", (3, 32, 32))
    c1 = b.conv2d("input", 8, 3, stride=2, padding=1)  # (32 + 2 - 3) // 2 + 1 = 16
    assert b.shape(c1) == (8, 16, 16)
    c2 = b.conv2d(c1, 16, (3, 5), stride=(1, 2), padding=(1, 0), groups=4)  # H 16, W (16-5)//2+1 = 6
    assert b.shape(c2) == (16, 16, 6)
    w = b.build(batch=1)
    layer = w.layer(c2)
    assert layer.attr("groups") == 4 and layer.attr("kernel") == (3, 5) and layer.attr("nope", 7) == 7
    # params: (8/4)*16*3*5 weights + 16 bias = 496; MACs: 16*16*6 outputs * 2*15 = 46080
    assert layer.params == 496 and layer.weight_elements == 480 and layer.macs == 46080
    assert (layer.in_channels, layer.out_channels, layer.kernel_elements) == (8, 16, 15)
    assert (layer.in_spatial, layer.out_spatial, layer.in_elements) == (256, 96, 2048)


def test_pool_shapes_and_ceil_mode():
    b = WorkloadBuilder("t", (4, 112, 112))
    assert b.shape(b.maxpool2d("input", 3, stride=2)) == (4, 55, 55)  # floor(109/2)+1
    assert b.shape(b.maxpool2d("input", 3, stride=2, ceil_mode=True)) == (4, 56, 56)  # ceil(109/2)+1
    assert b.shape(b.avgpool2d("input", 2)) == (4, 56, 56)
    b2 = WorkloadBuilder("t", (1, 5, 5))
    # ceil((5+2-2)/4)+1 = 3, but the third window would start at 8 >= 5+1 (all padding): PyTorch drops it
    assert b2.shape(b2.maxpool2d("input", 2, stride=4, padding=1, ceil_mode=True)) == (1, 2, 2)
    assert b2.shape(b2.adaptive_avgpool2d("input", (3, 1))) == (1, 3, 1)
    with pytest.raises(OptmapError, match="padding"):
        b2.maxpool2d("input", 2, padding=2)


def test_tiny_conv_flops_by_hand():
    b = WorkloadBuilder("t", (2, 4, 4))
    c = b.conv2d("input", 3, 3)  # out (3, 2, 2)
    layer = b.build(batch=5).layer(c)
    # params = Cin*Cout*kh*kw + Cout = 2*3*9 + 3 = 57
    # MACs/sample = Cout*Ho*Wo * Cin*kh*kw = 3*2*2 * 2*9 = 216
    # forward = 2*216*5 = 2160 = backward_data = weight_grad; total 6480
    assert layer.out_shape == (3, 2, 2) and layer.params == 57 and layer.macs == 216
    assert layer.flops(5) == LayerFlops(2160, 2160, 2160) and layer.flops(5).total == 6480


def test_tiny_linear_flops_by_hand():
    b = WorkloadBuilder("t", (10,))
    fc = b.linear("input", 4)
    nb = b.linear(fc, 2, bias=False)
    w = b.build(batch=3)
    # params = 10*4 + 4 = 44; MACs = 10*4 = 40; forward = 2*40*3 = 240
    assert w.layer(fc).params == 44 and w.layer(fc).macs == 40
    assert w.layer(fc).flops(3) == LayerFlops(240, 240, 240)
    assert w.layer(nb).params == 8 and (w.layer(fc).in_channels, w.layer(fc).in_spatial) == (10, 1)


def test_non_weighted_flops_and_params():
    b = WorkloadBuilder("t", (4, 6, 6))
    bn = b.batchnorm2d("input")
    relu = b.activation(bn)
    pool = b.maxpool2d(relu, 2)  # (4, 3, 3)
    flat = b.flatten(pool)
    w = b.build(batch=2)
    assert w.layer(bn).params == 8 and not w.layer(bn).weighted  # gamma, beta: params but not weighted
    assert w.layer(bn).flops(2) == LayerFlops(288, 288, 288)  # 4*36 per sample * 2; params -> weight_grad
    assert w.layer(relu).flops(2) == LayerFlops(288, 288, 0)
    assert w.layer(pool).flops(2) == LayerFlops(288, 288, 0)  # 4*3*3 outputs * 4 kernel elements * 2
    assert w.layer(flat).flops(2) == LayerFlops() and w.layer(flat).out_shape == (36,)
    assert w.weighted_layers() == () and w.params == 8


def test_workload_totals_phase_and_order():
    b = WorkloadBuilder("t", (10,))
    x = b.linear("input", 4, name="fc1")
    x = b.activation(x, name="act")
    b.linear(x, 2, name="fc2")
    train, infer = b.build(batch=3), b.build(batch=3, dtype="bf16", phase="inference")
    assert [layer.name for layer in train.layers()] == ["input", "fc1", "act", "fc2"]
    assert [layer.name for layer in train.weighted_layers()] == ["fc1", "fc2"]
    assert train.params == 44 + 10 and train.macs == 48
    assert train.flops() == LayerFlops(2 * 48 * 3 + 12, 2 * 48 * 3 + 12, 2 * 48 * 3)
    assert infer.flops() == LayerFlops(train.flops().forward) and infer.bytes_per_element == 2
    assert train.is_chain() and train.block_view() == (Node("fc1"), Node("fc2"))


def test_matmul_and_concat_shapes():
    b = WorkloadBuilder("t", (16, 8))  # 16 tokens x 8 features
    q, k = b.linear("input", 8, name="q"), b.linear("input", 8, name="k")
    s = b.matmul(q, k, transpose_b=True, name="scores")
    w = b.build(batch=2)
    layer = w.layer(s)
    assert layer.out_shape == (16, 16) and layer.macs == 16 * 16 * 8 and layer.weighted
    assert layer.flops(1) == LayerFlops(2 * 2048, 4 * 2048, 0) and layer.params == 0
    b2 = WorkloadBuilder("t", (3, 8, 8))
    a, c = b2.conv2d("input", 4, 1), b2.conv2d("input", 5, 1)
    assert b2.shape(b2.concat(a, c)) == (9, 8, 8)
    with pytest.raises(OptmapError, match="differ outside axis"):
        b2.concat(a, b2.maxpool2d(c, 2))


@pytest.mark.parametrize("call, match", [
    (lambda b: b.conv2d("input", 8, 3, groups=2), "groups"),
    (lambda b: b.conv2d("input", 8, 9), "larger than the padded input"),
    (lambda b: b.conv2d("input", 8, 0), "kernel"),
    (lambda b: b.conv2d("nope", 8, 3), "no layer 'nope'"),
    (lambda b: b.linear("input", 10), "flatten it first"),
    (lambda b: b.add("input", b.conv2d("input", 4, 1)), "one shape"),
    (lambda b: b.add("input"), "two or more"),
    (lambda b: b.activation("input", "relux"), "did you mean 'relu'"),
    (lambda b: b.conv2d("input", 4, 1, name="input"), "used twice"),
    (lambda b: b.matmul("input", "input"), "passed twice"),
    (lambda b: b.batchnorm2d(b.flatten("input")), r"expected \(C, H, W\)"),
])
def test_builder_errors(call, match):
    with pytest.raises(OptmapError, match=match):
        call(WorkloadBuilder("t", (3, 8, 8)))


def test_build_and_layer_errors():
    b = WorkloadBuilder("t", (3, 8, 8))
    for kwargs, match in [({"batch": 0}, "batch"), ({"batch": 2, "dtype": "fp33"}, "did you mean"),
                          ({"batch": 2, "phase": "train"}, "phase")]:
        with pytest.raises(OptmapError, match=match):
            b.build(**kwargs)
    with pytest.raises(OptmapError, match="unknown op"):
        Layer("x", "conv3d", ((1,),), (1,))
    with pytest.raises(OptmapError, match="did you mean 'input'"):
        b.build(batch=1).layer("inptu")
    with pytest.raises(OptmapError, match="input shape"):
        WorkloadBuilder("t", (3, 0, 8))


def test_layer_attrs_normalised():
    a = Layer("c", "conv2d", [[2, 4, 4]], [3, 2, 2], {"kernel": (3, 3), "bias": False, "groups": 1})
    assert a.attrs == (("bias", False), ("groups", 1), ("kernel", (3, 3)))
    assert a.in_shapes == ((2, 4, 4),) and a.params == 54 and isinstance(hash(a), int)


def _residual(downsample: bool) -> WorkloadBuilder:
    b = WorkloadBuilder("res", (4, 8, 8))
    x = b.activation(b.conv2d("input", 4, 3, padding=1, name="stem"), name="r0")
    y = b.conv2d(x, 4, 3, padding=1, name="a")
    y = b.conv2d(b.batchnorm2d(y, name="bn"), 4, 3, padding=1, name="b")
    s = b.conv2d(x, 4, 1, name="proj") if downsample else x
    z = b.add(y, s, name="merge")
    z = b.maxpool2d(z, 2, name="pool")
    b.linear(b.flatten(z, name="flat"), 10, name="fc")
    return b


def test_block_view_residual_and_input_elements():
    w = _residual(False).build(batch=1)
    assert w.block_view() == (Node("stem"), Parallel((("a", "b"), ())), Node("merge"), Node("fc"))
    assert not w.is_chain()
    assert w.input_elements_of("fc") == 4 * 4 * 4  # after the collapsed 2x2 pool and flatten
    assert w.input_elements_of("merge", 1) == 256
    w2 = _residual(True).build(batch=1)
    assert w2.block_view()[1] == Parallel((("a", "b"), ("proj",)))


def test_block_view_inception_like_concat():
    b = WorkloadBuilder("inc", (4, 8, 8))
    x = b.conv2d("input", 8, 1, name="stem")
    p1 = b.conv2d(x, 2, 1, name="p1")
    p2 = b.conv2d(b.conv2d(x, 2, 1, name="p2a"), 2, 3, padding=1, name="p2b")
    p3 = b.maxpool2d(x, 3, stride=1, padding=1, name="p3")
    b.concat(p1, p2, p3, name="cat")
    assert b.build(batch=1).block_view() == (
        Node("stem"), Parallel((("p1",), ("p2a", "p2b"), ())), Node("cat"))


def test_block_view_rejects_nested_fork():
    b = WorkloadBuilder("nested", (4, 8, 8))
    x = b.conv2d("input", 4, 1, name="stem")
    y = b.conv2d(x, 4, 1, name="a")
    inner = b.add(b.conv2d(y, 4, 1, name="a1"), y, name="inner")  # a fork inside the outer path
    b.add(inner, x, name="outer")
    w = b.build(batch=1)
    with pytest.raises(OptmapError, match="not series-parallel"):
        w.block_view()
    assert not w.is_chain()


def test_workload_validates_graph():
    w = _residual(False).build(batch=1)
    g = w.graph.copy()
    g.add_edge("fc", "stem", index=1)
    with pytest.raises(OptmapError, match="cycle"):
        Workload.from_graph("bad", g, batch=1)


def test_order_and_graph_view_match_networkx_on_random_dags():
    """The dictionary IR's topological order is networkx's lexicographical sort by insertion
    rank, and its lazily built DiGraph holds exactly the layers and the indexed edges."""
    import random

    import networkx as nx

    rng = random.Random(7)
    for trial in range(30):
        layers, producers = {"input": Layer("input", "input", (), (4,))}, {}
        names = ["input"]
        for i in range(rng.randint(1, 25)):
            inputs = tuple(rng.sample(names, min(len(names), rng.randint(1, 2))))
            name = f"n{i}"
            op = "add" if len(inputs) == 2 else "dropout"
            layers[name] = Layer(name, op, tuple((4,) for _ in inputs), (4,))
            producers[name] = inputs
            names.append(name)
        order = list(layers)
        rng.shuffle(order)  # insertion order need not be topological
        w = Workload(f"random{trial}", {n: layers[n] for n in order}, producers, batch=2)
        reference = nx.DiGraph()
        reference.add_nodes_from(order)
        reference.add_edges_from((u, v) for v, inputs in producers.items() for u in inputs)
        rank = {n: i for i, n in enumerate(order)}
        assert w.order == tuple(nx.lexicographical_topological_sort(reference, key=rank.__getitem__))
        assert list(w.graph.nodes) == order and set(w.graph.edges) == set(reference.edges)
        for v, inputs in producers.items():
            assert [w.graph.edges[u, v]["index"] for u in inputs] == list(range(len(inputs)))
            assert w.inputs_of(v) == inputs
        again = Workload.from_graph(w.name, w.graph, batch=2)
        assert again.order == w.order and dict(again.producers) == dict(producers)


def test_workload_refuses_unknown_producers():
    layers = {"input": Layer("input", "input", (), (4,)), "a": Layer("a", "dropout", ((4,),), (4,))}
    with pytest.raises(OptmapError, match="unknown layer 'ghost'"):
        Workload("bad", layers, {"a": ("ghost",)}, batch=1)


def test_transformer_planning_never_imports_networkx():
    """A formulation that only walks the layers (the LLM planner) does not pay networkx's import."""
    import subprocess
    import sys
    from pathlib import Path

    problem = Path(__file__).resolve().parents[2] / "problems" / "llm" / "megatron-22b.toml"
    code = (
        "import sys, optmap\n"
        f"result = optmap.solve(optmap.load({str(problem)!r}))\n"
        "assert result.best is not None\n"
        "print('networkx' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
