"""torch's ``.split`` / ``.chunk`` as SplitToSequence + SequenceAt, and clamps as activations."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from optmap.plugins.onnx import read_onnx

from onnx_models import ints, model, node, save, scalar, value, weight

S, D = 4, 8


def _index(name: str, i: int):
    return numpy_helper.from_array(np.array(i, np.int64), name)


@pytest.mark.parametrize("split", [_index("split", D), ints("split", D, D, D)], ids=["chunk_size", "sizes"])
def test_split_to_sequence_gives_q_k_v(tmp_path, split):
    # nanoGPT: q, k, v = self.c_attn(x).split(n_embd, dim=2), as torch's dynamo exporter writes it:
    # MatMul (S, D) x (D, 3D) -> SplitToSequence(axis 2) -> SequenceAt 0, 1, 2 -> q + k + v.
    nodes = [node("MatMul", ["x", "w"], ["qkv"], "c_attn"),
             node("SplitToSequence", ["qkv", "split"], ["seq"], "split", axis=2),
             *[node("SequenceAt", ["seq", f"i{i}"], [n], n) for i, n in enumerate("qkv")],
             node("Sum", ["q", "k", "v"], ["y"], "merge")]
    inits = [weight("w", D, 3 * D), split, *[_index(f"i{i}", i) for i in range(3)]]
    m = model(nodes, [value("x", "N", S, D)], [value("y", "N", S, D)], inits, opset=18)
    w = read_onnx(save(m, tmp_path / "qkv.onnx"), batch=2)
    assert [(layer.name, layer.op, layer.out_shape) for layer in w.layers()] == [
        ("x", "input", (S, D)), ("c_attn", "linear", (S, 3 * D)), ("q", "slice", (S, D)), ("k", "slice", (S, D)),
        ("v", "slice", (S, D)), ("merge", "add", (S, D))]
    assert [w.inputs_of(n) for n in ("q", "k", "v")] == [("c_attn",)] * 3
    # Slices move data: 0 FLOPs. Parameters: W only, 8 * 24 = 192.
    assert [w.layer(n).flops(2).total for n in "qkv"] == [0, 0, 0]
    assert w.params == 192


def test_split_with_num_outputs(tmp_path):
    # opset 18's Split(num_outputs=3), as torch exports .chunk(3, dim=2) with the optimiser on.
    nodes = [node("MatMul", ["x", "w"], ["qkv"], "c_attn"),
             node("Split", ["qkv"], ["q", "k", "v"], "split", axis=2, num_outputs=3), node("Sum", ["q", "k", "v"], ["y"], "m")]
    m = model(nodes, [value("x", "N", S, D)], [value("y", "N", S, D)], [weight("w", D, 3 * D)], opset=18)
    w = read_onnx(save(m, tmp_path / "chunk.onnx"), batch=2)
    assert [(w.layer(f"split.{i}").op, w.layer(f"split.{i}").out_shape) for i in range(3)] == [("slice", (S, D))] * 3


def test_uneven_chunks(tmp_path):
    # x.split(3, dim=1) of (N, 8, 4): chunks of 3, 3 and 2 rows (ONNX: the last chunk is smaller).
    nodes = [node("SplitToSequence", ["x", "three"], ["seq"], "split", axis=1),
             node("SequenceAt", ["seq", "last"], ["y"], "tail")]
    m = model(nodes, [value("x", "N", 8, 4)], [value("y", "N", 2, 4)],
              [_index("three", 3), _index("last", -1)], opset=18)
    assert read_onnx(save(m, tmp_path / "tail.onnx"), batch=2).layer("tail").out_shape == (2, 4)


def test_clamps_are_activations(tmp_path):
    # x (N, 8): Clip with bounds CastLike(Constant) as torch exports hardtanh(0, 6) -> relu6;
    # Clip(-2, 2) -> clamp; torch's relu6 as Min(Relu(x), 6) -> relu then clamp; Max of two
    # activations stays binary.
    def cast(name: str, v: float) -> list:
        return [helper.make_node("Constant", [], [name + "_c"], value=numpy_helper.from_array(np.array(v, np.float64))),
                helper.make_node("CastLike", [name + "_c", "x"], [name])]
    nodes = [*cast("zero", 0.0), *cast("six", 6.0), node("Clip", ["x", "zero", "six"], ["a"], "hardtanh"),
             node("Clip", ["a", "minus2", "two"], ["b"], "clamp"), node("Relu", ["b"], ["r"], "relu"),
             node("Min", ["r", "six"], ["m"], "relu6_min"), node("Max", ["m", "b"], ["y"], "join")]
    m = model(nodes, [value("x", "N", D)], [value("y", "N", D)], [scalar("minus2", -2.0), scalar("two", 2.0)])
    w = read_onnx(save(m, tmp_path / "clamp.onnx"), batch=2)
    got = {layer.name: (layer.op, layer.attr("kind") or layer.attr("fn")) for layer in w.layers()}
    assert got == {"x": ("input", None), "hardtanh": ("activation", "relu6"), "clamp": ("activation", "clamp"),
                   "relu": ("activation", "relu"), "relu6_min": ("activation", "clamp"), "join": ("binary", "Max")}
    # One FLOP per element forward and backward (the IR's activation rule): 2 * (2 * 8) per clamp.
    assert w.layer("relu6_min").flops(2).total == 32
