"""Imported graphs meet the formulations: a CNN with data movement maps with DSM and MARS; a GPT
block is refused in one line that says what to use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import numpy_helper

from optmap.errors import OptmapError
from optmap.plugins.dsm.layers import build_graph
from optmap.plugins.mars.layers import layer_graph
from optmap.plugins.onnx import read_onnx
from optmap.problem import load

from conftest import make_problem
from onnx_models import ints, model, node, save, value, weight

ROOT = Path(__file__).resolve().parents[3]
S, D, H = 4, 8, 2  # sequence, width, heads


def gpt_block(path: Path) -> Path:
    """nanoGPT's attention half-block as torch's dynamo exporter writes it (optimize=False):
    x -> LayerNorm -> c_attn (MatMul + bias Add) -> SplitToSequence / SequenceAt into q, k, v ->
    Reshape (S, H, D/H) + Transpose to (H, S, D/H) -> q kᵀ -> Softmax -> · v -> back to (S, D) ->
    c_proj -> + x."""
    hd = D // H
    nodes = [node("LayerNormalization", ["x", "ln_g", "ln_b"], ["h"], "ln_1", axis=-1),
             node("MatMul", ["h", "w_attn"], ["qkv0"], "c_attn"), node("Add", ["qkv0", "b_attn"], ["qkv"], "c_attn_bias"),
             node("SplitToSequence", ["qkv", "width"], ["seq"], "split", axis=2)]
    for i, t in enumerate("qkv"):
        nodes += [node("SequenceAt", ["seq", f"i{i}"], [t], f"{t}_at"),
                  node("Reshape", [t, "heads_shape"], [t + "4"], f"{t}_view"),
                  node("Transpose", [t + "4"], [t + "h"], f"{t}_heads", perm=[0, 2, 1, 3])]
    nodes += [node("Transpose", ["kh"], ["kt"], "k_t", perm=[0, 1, 3, 2]), node("MatMul", ["qh", "kt"], ["att"], "scores"),
              node("Softmax", ["att"], ["p"], "softmax", axis=-1), node("MatMul", ["p", "vh"], ["yh"], "context"),
              node("Transpose", ["yh"], ["ys"], "y_seq", perm=[0, 2, 1, 3]), node("Reshape", ["ys", "seq_shape"], ["y"], "y_view"),
              node("MatMul", ["y", "w_proj"], ["o"], "c_proj"), node("Add", ["o", "x"], ["out"], "residual")]
    inits = [weight("ln_g", D), weight("ln_b", D), weight("w_attn", D, 3 * D), weight("b_attn", 3 * D),
             numpy_helper.from_array(np.array(D, np.int64), "width"), ints("heads_shape", 0, S, H, hd),
             ints("seq_shape", 0, S, D), weight("w_proj", D, D),
             *[numpy_helper.from_array(np.array(i, np.int64), f"i{i}") for i in range(3)]]
    return save(model(nodes, [value("x", "N", S, D)], [value("out", "N", S, D)], inits, opset=18), path)


def test_the_gpt_block_imports(tmp_path):
    w = read_onnx(gpt_block(tmp_path / "gpt.onnx"), batch=2)
    # Parameters by hand: LayerNorm 2 * 8, c_attn 8 * 24 + 24, c_proj 8 * 8 (no bias) = 296.
    assert w.params == 16 + 192 + 24 + 64 == 296
    assert [w.layer(n).op for n in ("q_at", "q_view", "q_heads", "scores")] == ["slice", "reshape", "transpose", "matmul"]
    # q kᵀ: H * S * S * (D/H) = 2 * 4 * 4 * 4 = 128 MACs, as is softmax(·) v.
    assert w.layer("scores").macs == w.layer("context").macs == 128


def _problem(problem: str, tmp_path: Path) -> dict:
    spec = dict(load(ROOT / "problems" / problem).spec)
    spec["workload"] = {"file": str(gpt_block(tmp_path / "gpt.onnx")), "batch": 8, "dtype": "bf16"}
    return spec


@pytest.mark.parametrize("problem, cost", [("acctfm/tiny.toml", "acctfm"), ("llm/megatron-22b.toml", "megatron-3d")])
def test_transformer_planners_ask_for_the_model_sizes(tmp_path, problem, cost):
    with pytest.raises(OptmapError) as err:
        make_problem(_problem(problem, tmp_path))
    message = str(err.value)
    assert "\n" not in message and cost in message and "layer graph" in message
    assert 'model = "transformer"' in message


def test_dsm_names_the_transformer_planners(tmp_path):
    # DSM folds the norm, slices, reshapes and transposes into c_attn; the scores MatMul of two
    # activations is no DSM layer.
    with pytest.raises(OptmapError, match=r"layer 'scores'.*cannot price op 'matmul'.*acctfm or megatron-3d") as err:
        make_problem(_problem("dsm/small.toml", tmp_path))
    assert "\n" not in str(err.value)


def test_an_imported_cnn_with_relu6_and_a_channel_shuffle_maps_with_dsm_and_mars(tmp_path):
    # x (N, 4, 8, 8) -> conv1 3x3 (8, no bias) -> Clip(0, 6) -> Reshape (2, 4, 8, 8) -> Transpose
    # -> Reshape (8, 8, 8) -> Slice channels 0:4 -> conv2 3x3 (8) -> GlobalAveragePool -> Flatten -> Gemm.
    nodes = [node("Conv", ["x", "w1"], ["c1"], "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Clip", ["c1", "zero", "six"], ["r1"], "relu6"), node("Reshape", ["r1", "s5"], ["g"], "group"),
             node("Transpose", ["g"], ["t"], "shuffle", perm=[0, 2, 1, 3, 4]),
             node("Reshape", ["t", "s4"], ["u"], "ungroup"), node("Slice", ["u", "st", "en", "ax"], ["h"], "half"),
             node("Conv", ["h", "w2"], ["c2"], "conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("GlobalAveragePool", ["c2"], ["p"], "gap"), node("Flatten", ["p"], ["f"], "flatten"),
             node("Gemm", ["f", "wf", "bf"], ["y"], "fc", transB=1)]
    inits = [weight("w1", 8, 4, 3, 3), weight("w2", 8, 4, 3, 3), weight("wf", 10, 8), weight("bf", 10, value=0.1),
             *[numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("zero", 0.0), ("six", 6.0))],
             ints("s5", -1, 2, 4, 8, 8), ints("s4", -1, 8, 8, 8), ints("st", 0), ints("en", 4), ints("ax", 1)]
    m = model(nodes, [value("x", "N", 4, 8, 8)], [value("y", "N", 10)], inits)
    w = read_onnx(save(m, tmp_path / "shuffle.onnx"), batch=2, dtype="fp16")
    assert w.layer("relu6").op == "activation"
    dsm = build_graph(w)
    assert [layer.name for layer in dsm.layers] == ["conv1", "conv2", "fc"]
    # conv1's SFPs: ReLU6 (read + write, 512 outputs), the transpose (512) and slice (256) copies
    # (read + write each); the reshapes are views: 2 * 512 + 2 * 512 + 2 * 256 = 2,560 accesses.
    assert dsm.layer("conv1").aux_fwd == 2_560
    assert [n.name for n in layer_graph(w).layers] == ["conv1", "conv2"]
