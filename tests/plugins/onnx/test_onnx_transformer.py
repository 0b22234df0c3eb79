"""A transformer block written with onnx.helper: multi-head attention as MatMul/Softmax/MatMul with
reshapes and transposes, a GELU written out with Erf (as TorchScript exports it), FLOPs by hand;
the same attention as one fused ONNX ``Attention`` node; token embeddings and a fused QKV Split."""

from __future__ import annotations

import pytest

from optmap.plugins.onnx import read_onnx

from onnx_models import ints, model, node, save, scalar, value, weight

S, D, HEADS, DH, FF = 4, 8, 2, 4, 16  # sequence, model width, heads, head width, FFN width


def _linear(x: str, name: str, d_in: int, d_out: int) -> tuple[list, list]:
    """MatMul + bias Add, as torch exports nn.Linear on a sequence."""
    nodes = [node("MatMul", [x, f"{name}.w"], [f"{name}.mm"], name), node("Add", [f"{name}.mm", f"{name}.b"], [name])]
    return nodes, [weight(f"{name}.w", d_in, d_out), weight(f"{name}.b", d_out)]


def _heads(x: str, perm: list[int]) -> list:
    """(S, D) -> (S, HEADS, DH) -> transposed by ``perm`` (batch axis 0 stays first)."""
    return [node("Reshape", [x, "split_heads"], [f"{x}.r"], f"{x}.reshape"),
            node("Transpose", [f"{x}.r"], [f"{x}.t"], f"{x}.transpose", perm=perm)]


def transformer_block():
    """Pre-LN block: x + attn(ln1(x)), then + ffn(ln2(.)) with GELU(h) = 0.5 h (1 + erf(h / sqrt 2))."""
    nodes = [node("LayerNormalization", ["x", "ln1.g", "ln1.b"], ["ln1"], "ln1", axis=-1)]
    inits = [weight("ln1.g", D), weight("ln1.b", D), weight("ln2.g", D), weight("ln2.b", D),
             ints("split_heads", 0, S, HEADS, DH), ints("merge_heads", 0, S, D), scalar("sqrt_dh", DH ** 0.5),
             scalar("sqrt2", 2 ** 0.5), scalar("one", 1.0), scalar("half", 0.5)]
    for name in ("q", "k", "v"):
        more_nodes, more_inits = _linear("ln1", name, D, D)
        nodes, inits = nodes + more_nodes, inits + more_inits
    nodes += _heads("q", [0, 2, 1, 3]) + _heads("k", [0, 2, 3, 1]) + _heads("v", [0, 2, 1, 3])  # K is transposed
    nodes += [
        node("MatMul", ["q.t", "k.t"], ["scores"], "scores"),
        node("Div", ["scores", "sqrt_dh"], ["scaled"], "scale"),
        node("Softmax", ["scaled"], ["probs"], "softmax", axis=-1),
        node("MatMul", ["probs", "v.t"], ["ctx"], "context"),
        node("Transpose", ["ctx"], ["ctx.t"], "context.transpose", perm=[0, 2, 1, 3]),
        node("Reshape", ["ctx.t", "merge_heads"], ["ctx.m"], "context.reshape"),
    ]
    out_nodes, out_inits = _linear("ctx.m", "out", D, D)
    fc1_nodes, fc1_inits = _linear("ln2", "fc1", D, FF)
    fc2_nodes, fc2_inits = _linear("gelu", "fc2", FF, D)
    nodes += out_nodes + [node("Add", ["x", "out"], ["res1"], "residual1"),
                          node("LayerNormalization", ["res1", "ln2.g", "ln2.b"], ["ln2"], "ln2", axis=-1)]
    nodes += fc1_nodes + [
        node("Div", ["fc1", "sqrt2"], ["g.div"], "gelu.div"), node("Erf", ["g.div"], ["g.erf"], "gelu.erf"),
        node("Add", ["g.erf", "one"], ["g.add"], "gelu.add"), node("Mul", ["fc1", "g.add"], ["g.mul"], "gelu.mul"),
        node("Mul", ["g.mul", "half"], ["gelu"], "gelu.half"),
    ]
    nodes += fc2_nodes + [node("Add", ["res1", "fc2"], ["y"], "residual2")]
    return model(nodes, [value("x", "N", S, D)], [value("y", "N", S, D)], inits + out_inits + fc1_inits + fc2_inits)


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    return read_onnx(save(transformer_block(), tmp_path_factory.mktemp("onnx") / "block.onnx"), batch=2)


def test_attention_layers_and_dag(block):
    ops = {layer.name: (layer.op, layer.out_shape) for layer in block.layers()}
    assert ops["q"] == ops["k"] == ops["v"] == ops["out"] == ("linear", (S, D))  # MatMul + bias Add
    assert ops["q.transpose"] == ("transpose", (HEADS, S, DH)) and ops["k.transpose"] == ("transpose", (HEADS, DH, S))
    assert ops["scores"] == ("matmul", (HEADS, S, S)) and ops["context"] == ("matmul", (HEADS, S, DH))
    assert ops["scale"] == ("elementwise", (HEADS, S, S)) and ops["softmax"] == ("activation", (HEADS, S, S))
    assert ops["context.reshape"] == ("reshape", (S, D)) and ops["gelu.mul"] == ("binary", (S, FF))
    assert block.inputs_of("scores") == ("q.transpose", "k.transpose")
    assert block.inputs_of("context") == ("softmax", "v.transpose")
    assert block.inputs_of("residual1") == ("x", "out") and block.inputs_of("residual2") == ("residual1", "fc2")
    assert block.layer("k.transpose").attr("perm") == (0, 2, 3, 1)  # ONNX's perm, batch axis included


def test_parameters_by_hand(block):
    # q, k, v, out: 8*8 + 8 = 72 each; fc1 8*16 + 16 = 144; fc2 16*8 + 8 = 136; two layer norms
    # 2*8 each. Scalars (sqrt(dh), sqrt(2), 1, 0.5) are not parameters. Total 600, the textbook
    # 4(d^2 + d) + 2 d d_ff + d_ff + d + 4d for d = 8, d_ff = 16.
    assert block.params == 600 == 4 * (D * D + D) + 2 * D * FF + FF + D + 4 * D
    assert {n: block.layer(n).params for n in ("q", "fc1", "fc2", "ln1", "scale", "gelu.add")} == {
        "q": 72, "fc1": 144, "fc2": 136, "ln1": 16, "scale": 0, "gelu.add": 0}


def test_training_flops_by_hand(block):
    # Linear MACs: q, k, v, out 4*8*8 = 256 each, fc1 and fc2 4*8*16 = 512 each: 2048 in all;
    # forward 2 MACs, backward-data and weight-gradient the same: 3 * 2 * 2048 = 12288.
    linear = 3 * 2 * (4 * 256 + 2 * 512)
    # Attention products: scores (2,4,4) x K=4 and context (2,4,4) x K=4 are 128 MACs each;
    # forward 2 * 128, backward twice that (both operands are activations), no weight gradient.
    products = 2 * (2 * 128 + 4 * 128)
    # One FLOP per element forward and backward: scale and softmax on 2*4*4 = 32 scores, five
    # GELU ops on 4*16 = 64, two residual adds on 4*8 = 32; layer norms add a weight gradient.
    elementwise = 2 * (32 + 32) + 2 * 5 * 64 + 2 * 2 * 32 + 2 * 3 * 32
    assert block.flops().total == 2 * (linear + products + elementwise) == 2 * 14912
    assert sum(layer.flops(2).total for layer in block.layers() if layer.op in ("reshape", "transpose")) == 0


def fused_attention():
    """Q, K, V (N, S, D) -> ONNX Attention (opset 23) with 2 heads -> (N, S, D)."""
    nodes = [node("Attention", ["q", "k", "v"], ["y"], "attn", q_num_heads=HEADS, kv_num_heads=HEADS)]
    return model(nodes, [value(n, "N", S, D) for n in "qkv"], [value("y", "N", S, D)], [], opset=23)


def test_fused_attention_matches_the_matmul_softmax_matmul_pattern(tmp_path, block):
    layer = read_onnx(save(fused_attention(), tmp_path / "attn.onnx"), batch=2).layer("attn")
    assert (layer.op, layer.out_shape, layer.in_shapes) == ("attention", (S, D), ((S, D),) * 3)
    assert (layer.attr("heads"), layer.attr("q_len"), layer.attr("kv_len"), layer.attr("head_dim")) == (2, 4, 4, 4)
    # heads * S * S * (DH + DH) = 2*4*4*8 = 256 MACs: the scores and context products together.
    assert layer.macs == 256 == block.layer("scores").macs + block.layer("context").macs
    # Its FLOPs are those two matmuls and the softmax (the explicit scale Div of the block is not part of it).
    parts = [block.layer(n).flops(2) for n in ("scores", "softmax", "context")]
    assert layer.flops(2) == parts[0] + parts[1] + parts[2]


def test_embedding_position_and_fused_qkv_split(tmp_path):
    # ids (N, S) int64 -> Gather rows of a (100, D) table -> + learned positions (S, D) ->
    # one MatMul to 3D -> Split into q, k, v.
    nodes = [node("Gather", ["table", "ids"], ["tok"], "embed"), node("Add", ["tok", "pos"], ["h"], "position"),
             node("MatMul", ["h", "w_qkv"], ["qkv"], "qkv"),
             node("Split", ["qkv", "sizes"], ["q", "k", "v"], "split", axis=-1)]
    inits = [weight("table", 100, D), weight("pos", S, D), weight("w_qkv", D, 3 * D), ints("sizes", D, D, D)]
    m = model(nodes, [value("ids", "N", S, elem=7)], [value(n, "N", S, D) for n in "qkv"], inits)
    w = read_onnx(save(m, tmp_path / "embed.onnx"), batch=3)
    assert w.dtype == "fp32"  # an int64 input does not make the workload int
    layers = {layer.name: layer for layer in w.layers()}
    assert [(n, layers[n].op, layers[n].out_shape) for n in layers] == [
        ("ids", "input", (S,)), ("embed", "embedding", (S, D)), ("position", "elementwise", (S, D)),
        ("qkv", "linear", (S, 3 * D)), ("split.0", "slice", (S, D)), ("split.1", "slice", (S, D)),
        ("split.2", "slice", (S, D))]
    # Parameters: the table 100*8, the positions 4*8 (a non-scalar float initializer), W_qkv 8*24.
    assert [layers[n].params for n in ("embed", "position", "qkv")] == [800, 32, 192]
    # The lookup computes nothing forward; its weight gradient adds one value per output element.
    f = layers["embed"].flops(3)
    assert (f.forward, f.backward_data, f.weight_grad) == (0, 0, 3 * S * D)


def test_batch_folded_into_the_heads(tmp_path):
    # As nn.MultiheadAttention does: x (N, S, D) -> (S, N, D) -> (S, N*HEADS, DH) -> (N*HEADS, S, DH).
    # Shapes at batch 2 and 3 show which axis carries the batch; a folded axis divided by the batch
    # is the heads: per sample (HEADS, S, DH), and Q Kᵀ has HEADS * S * S * DH = 128 MACs.
    nodes = [node("Transpose", ["x"], ["sb"], "to_seq_first", perm=[1, 0, 2]),
             node("Reshape", ["sb", "fold"], ["folded"], "fold_heads"),
             node("Transpose", ["folded"], ["heads"], "heads_first", perm=[1, 0, 2]),
             node("Transpose", ["heads"], ["keys_t"], "keys_t", perm=[0, 2, 1]),
             node("MatMul", ["heads", "keys_t"], ["y"], "scores")]
    m = model(nodes, [value("x", "N", S, D)], [value("y", "N2", S, S)], [ints("fold", S, -1, DH)])
    w = read_onnx(save(m, tmp_path / "fold.onnx"), batch=2)
    assert [(layer.name, layer.out_shape) for layer in w.layers()] == [
        ("x", (S, D)), ("to_seq_first", (S, D)), ("fold_heads", (S, HEADS, DH)), ("heads_first", (HEADS, S, DH)),
        ("keys_t", (HEADS, DH, S)), ("scores", (HEADS, S, S))]
    assert w.layer("scores").macs == HEADS * S * S * DH == 128


def test_a_tensor_without_the_batch_is_refused(tmp_path):
    # ReduceSum over axis 0 sums the batch away: no axis of the result carries it.
    nodes = [node("ReduceSum", ["x", "axes"], ["y"], "sum_batch", keepdims=0)]
    m = model(nodes, [value("x", "N", D)], [value("y", D)], [ints("axes", 0)])
    from optmap.errors import OptmapError

    with pytest.raises(OptmapError, match=r"tensor 'y' \(output of ReduceSum node 'sum_batch'\) has shape \[8\] "
                                          r"at batch 2 and \[8\] at batch 3; optmap needs one axis that carries"):
        read_onnx(save(m, tmp_path / "sum.onnx"))
