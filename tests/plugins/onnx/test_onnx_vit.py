"""A real transformer export: torchvision's VisionTransformer (2 layers, 4 heads, width 64) from
``tests/data/onnx/make_vit.py``. nn.MultiheadAttention moves the batch to the second axis and
folds it into the heads; the class token is expanded to the batch and concatenated."""

from __future__ import annotations

from pathlib import Path

import pytest

from optmap.plugins.onnx import read_onnx

VIT = Path(__file__).resolve().parents[2] / "data" / "onnx" / "vit_tiny.onnx"
SEQ, WIDTH, HEADS, MLP = 17, 64, 4, 128  # 16 patches of 8x8 in a 32x32 image, plus the class token


@pytest.fixture(scope="module")
def vit():
    return read_onnx(VIT, batch=8)


def test_parameters_equal_torchs_count(vit):
    # By hand: conv_proj 3*8*8*64 + 64 = 12352; class token 64; position embedding 17*64 = 1088;
    # per encoder layer: two layer norms 2*128, in_proj 64*192 + 192 = 12480, out_proj 64*64 + 64 =
    # 4160, MLP 64*128 + 128 and 128*64 + 64 (16576): 33472, twice; final norm 128; head 64*10 + 10.
    # make_vit.py printed torch's own count, sum(p.numel()), which is the same 81,226.
    assert vit.params == 12352 + 64 + 1088 + 2 * 33472 + 128 + 650 == 81_226


def test_macs_by_hand(vit):
    # conv_proj: 64*4*4 outputs x 3*8*8 = 196,608. Per layer: in_proj 17*64*192 = 208,896; scores
    # and context 4 heads * 17 * 17 * 16 = 18,496 each; out_proj 17*64*64 = 69,632; MLP 2 * 17*64*128
    # = 278,528. Head 64*10 = 640.
    per_layer = 208_896 + 2 * 18_496 + 69_632 + 278_528
    assert vit.macs == 196_608 + 2 * per_layer + 640 == 1_385_344


def test_heads_are_unfolded_from_the_batch(vit):
    products = [layer for layer in vit.layers() if layer.op == "matmul"]
    assert [p.out_shape for p in products] == [(HEADS, SEQ, SEQ), (HEADS, SEQ, WIDTH // HEADS)] * 2
    scores = products[0]
    assert scores.name == "encoder.layers.encoder_layer_0.self_attention.scaled_dot_product_attention.matmul"
    assert scores.in_shapes == ((HEADS, SEQ, 16), (HEADS, 16, SEQ))


def test_class_token_and_position_embedding_are_parameters(vit):
    assert (vit.layer("cat").op, vit.layer("cat").params, vit.layer("cat").out_shape) == ("copy", 64, (SEQ, WIDTH))
    assert (vit.layer("encoder.add").op, vit.layer("encoder.add").params) == ("elementwise", SEQ * WIDTH)
    assert vit.layer("encoder.layers.encoder_layer_1.mlp.1").attr("kind") == "gelu"
