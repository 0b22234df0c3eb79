"""AccTFM hybrid compression: token top-k, piecewise/linear quantisers, message accounting."""

import numpy as np
import pytest

from optmap.plugins.acctfm.compression import (
    HybridCompressor, compressed_allreduce, compression_ratio, gather_tokens, global_token_mask,
    linear_levels, message_bytes, num_kept, piecewise_encode, piecewise_levels, quant_mse, quantize,
    scatter_tokens, token_scores, topk_mask,
)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_piecewise_level_sets():
    # note §3.4: 4 bits = N 3 clusters + sign → 15 levels {0, ±1/12, ±1/6, ±1/4, ±1/3, ±1/2, ±2/3, ±1}
    lv = piecewise_levels(4)
    pos = np.array([0, 1 / 12, 1 / 6, 1 / 4, 1 / 3, 1 / 2, 2 / 3, 1])
    assert len(lv) == 15
    np.testing.assert_allclose(lv, np.concatenate([-pos[:0:-1], pos]))
    assert lv[8] == pytest.approx(1 / 12)  # U_0 = max/12 for N = 3 (Eq. 12)
    np.testing.assert_allclose(piecewise_levels(3), [-1, -0.5, -0.25, 0, 0.25, 0.5, 1])  # 7 levels
    assert all(len(piecewise_levels(b)) == 2 ** b - 1 for b in range(2, 9))
    np.testing.assert_allclose(linear_levels(4) * 7, np.arange(-7, 8))  # step = max/7 (Eq. 4)


@pytest.mark.parametrize("method", ["piecewise", "linear"])
@pytest.mark.parametrize("bits", [2, 3, 4, 5, 8])
def test_quantised_values_on_level_set_and_bounded(method, bits):
    x = np.random.default_rng(bits).standard_normal(5000) * 3
    m = np.abs(x).max()
    q = quantize(x, bits, method)
    assert np.all(np.abs(q) <= m * (1 + 1e-12))  # |Q(x)| <= max|x|
    levels = (piecewise_levels if method == "piecewise" else linear_levels)(bits) * m
    assert np.abs(q[:, None] - levels[None, :]).min(1).max() < 1e-9
    assert np.all(np.sign(q) * np.sign(x) >= 0)  # sign preserved (or zero)
    # each value goes to the nearest level of its cluster: error at most half the widest interval
    assert np.abs(q - x).max() <= np.diff(levels).max() / 2 + 1e-12


def test_piecewise_codes_fit_bits_and_edge_cases():
    x = np.random.default_rng(0).standard_normal(1000)
    codes, m = piecewise_encode(x, 4)
    assert np.abs(codes).max() <= 7 and m == np.abs(x).max()  # 15 codes in 4 bits
    assert quantize(np.array([m, -m, 0.0]), 4, scale=m).tolist() == [m, -m, 0.0]
    assert np.all(quantize(np.zeros(10), 4) == 0)
    assert np.array_equal(quantize(x, 32), x)


def test_piecewise_beats_linear_mse_on_gaussian():
    x = np.random.default_rng(0).standard_normal(200_000)
    pw, lin = quant_mse(x, 4, "piecewise"), quant_mse(x, 4, "linear")
    assert pw < 0.6 * lin  # note §6.2 test 5 (ratio ≈ 0.45)
    for bits in (3, 5):
        assert quant_mse(x, bits, "piecewise") < quant_mse(x, bits, "linear")


def test_compression_ratios_vs_fp32():
    # note §3.5: (32 / bits) · (1 / keep), payload only
    assert compression_ratio(0.5, 4) == pytest.approx(16.0)
    assert compression_ratio(0.6, 4) == pytest.approx(13.333, abs=1e-3)
    mb = message_bytes(128, 256, 1024, keep_ratio=0.5, bits=4)
    assert mb.dense_fp32 / mb.payload == 16.0
    assert mb.scale == 4 and mb.index == 0 and mb.scores == 128 * 256 * 4  # overheads the ratio omits
    assert 15.0 < mb.ratio < 16.0
    mb6 = message_bytes(128, 250, 1024, keep_ratio=0.6, bits=4)  # 0.6·250 = 150 tokens exactly
    assert mb6.dense_fp32 / mb6.payload == pytest.approx(40 / 3)
    none = message_bytes(4, 16, 8)
    assert none.total == none.dense_fp32 == 4 * 16 * 8 * 4
    assert message_bytes(4, 16, 8, 0.5, 32, with_scores=False).scores == 0
    assert message_bytes(2, 10, 8, 0.5, 4, index_bytes_per_token=4).index == 2 * 5 * 4


def test_num_kept_rounding():
    assert num_kept(256, 0.6) == 154 and num_kept(256, 0.6, "floor") == 153
    assert num_kept(10, 0.0) == 1 and num_kept(10, 1.0) == 10


def test_token_mask_identical_across_devices_and_pads_last():
    rng = np.random.default_rng(1)
    B, S, n_dev, heads = 3, 12, 4, 2
    valid = np.ones((B, S), bool)
    valid[0, 9:] = valid[2, 5:] = False
    bias = np.where(valid[:, None, None, :], 0.0, -1e9)  # padded keys get ~0 attention
    attn = [_softmax(rng.standard_normal((B, heads, S, S)) + bias) for _ in range(n_dev)]
    # every device All-Reduces its An, then runs top-k itself: same inputs → same mask
    masks = [global_token_mask(attn[d:] + attn[:d], 0.5) for d in range(n_dev)]
    assert all(np.array_equal(masks[0], m) for m in masks)
    k = num_kept(S, 0.5)
    assert np.all(masks[0].sum(1) == k)
    for b in range(B):  # a pad is kept only once every real token is
        if masks[0][b][~valid[b]].any():
            assert masks[0][b][valid[b]].all()
    m = topk_mask(np.sum([token_scores(a) for a in attn], 0), 0.5, valid=valid)
    assert m[2, :5].all() and m[2].sum() == k  # only 5 real tokens in row 2: all kept first


def test_gather_scatter_roundtrip():
    x = np.arange(2 * 5 * 3, dtype=float).reshape(2, 5, 3)
    mask = np.array([[1, 0, 1, 0, 0], [0, 1, 0, 0, 1]], bool)
    g = gather_tokens(x, mask)
    assert g.shape == (2, 2, 3)
    y = scatter_tokens(g, mask)
    assert np.array_equal(y[mask], x[mask]) and np.all(y[~mask] == 0)


def test_compressed_allreduce_modes():
    rng = np.random.default_rng(2)
    parts = [rng.standard_normal((2, 6, 4)) for _ in range(4)]
    exact = np.sum(parts, 0)
    out = compressed_allreduce(parts, None, 32)
    assert all(np.allclose(o, exact) for o in out)
    mask = np.zeros((2, 6), bool)
    mask[:, :3] = True
    fq = compressed_allreduce(parts, mask, 4)
    expect = scatter_tokens(np.sum([quantize(gather_tokens(p, mask), 4) for p in parts], 0), mask)
    assert np.allclose(fq[0], expect) and np.all(fq[0][~mask] == 0)
    rd = compressed_allreduce(parts, mask, 4, mode="recursive_doubling")
    assert all(np.array_equal(rd[0], r) for r in rd)  # all devices bit-identical
    rel = np.linalg.norm(rd[0][mask] - exact[mask]) / np.linalg.norm(exact[mask])
    assert rel < 0.5


def test_backward_reuses_forward_mask():
    rng = np.random.default_rng(3)
    B, S, h = 2, 10, 4
    attn = [_softmax(rng.standard_normal((B, 2, S, S))) for _ in range(2)]
    comp = HybridCompressor(keep_ratio=0.6, bits=4)
    fwd = comp.forward([rng.standard_normal((B, S, h)) for _ in range(2)], attn)
    mask = comp.mask.copy()
    assert np.all(fwd[0][~mask] == 0)
    bwd = comp.backward([rng.standard_normal((B, S, h)) for _ in range(2)])  # no attention needed
    assert np.array_equal(comp.mask, mask)
    assert np.all(bwd[0][~mask] == 0) and np.all(bwd[0][mask] != 0)
