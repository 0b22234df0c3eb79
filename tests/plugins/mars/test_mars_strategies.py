"""ES/SS strategies: the paper's counts, Fig. 2's shards, layouts, and random-key decoding."""

import numpy as np
import pytest

from optmap.plugins.mars.strategies import C, KH, M, N, R, StrategySet, factor_tuples, rotated, WEIGHT, INPUT


def index(strategies, factors, ss=-1):
    return int(strategies.index(np.array([factors]), np.array([ss]))[0])


def test_counts_of_sec_iv():
    # "exclusive shards on two dimensions ... C(6,2) = 15 choices; with shared shards on one dimension
    # C(6,2)·6 = 90" — on 4 devices, pairs split 2 × 2
    allowed = StrategySet(4, ss_on_es_dims=True)
    pairs = [s for s in range(len(allowed)) if sorted(allowed.factors[s]) == [1, 1, 1, 1, 2, 2]]
    assert len({tuple(allowed.factors[s]) for s in pairs}) == 15
    assert len([s for s in pairs if allowed.ss[s] >= 0]) == 90
    # default (note §6.6): SS never on an ES dimension → 15·4 SS pairs, 6 single-dimension ES × 5 SS
    default = StrategySet(4)
    assert len(default) == 15 * (1 + 4) + 6 * (1 + 5)
    assert factor_tuples(4, 2) == ((4,), (2, 2)) and factor_tuples(8, 2) == ((8,), (4, 2), (2, 4))
    assert factor_tuples(8, 3)[-1] == (2, 2, 2) and factor_tuples(1, 2) == ((),)


def test_fig2b_exclusive_shards_and_reduction_group():
    # Fig. 2(b): ES = {C_in, W} on 4 accelerators: each holds ¼ of In and ½ of Weight; pairs
    # sharing a W half sum partial outputs (an All-Reduce group of 2)
    s = StrategySet(4)
    i = index(s, [1, 2, 1, 2, 1, 1])
    need = s.need[i]  # (device, axis C/H/W, lo-hi)
    volumes = np.prod(need[..., 1] - need[..., 0], axis=-1)
    assert volumes.tolist() == [0.25] * 4
    hold = s.hold[i]  # Out split along W only, replicated in the C_in group
    assert np.prod(hold[..., 1] - hold[..., 0], axis=-1).tolist() == [0.5] * 4
    assert np.array_equal(hold[0], hold[2]) and not np.array_equal(hold[0], hold[1])


def test_which_operand_rotates():
    # note §2.3: Weight for C_out; In for H, W; for C_in In when ES splits C_out, else Weight
    f = np.ones(6, int)
    assert rotated(f, M) == WEIGHT and rotated(f, R) == INPUT and rotated(f, KH) == WEIGHT
    assert rotated(np.array([2, 1, 1, 1, 1, 1]), N) == INPUT and rotated(np.array([1, 1, 2, 1, 1, 1]), N) == WEIGHT


def test_relayout_fractions_by_hand():
    s = StrategySet(4)
    h4, w4 = index(s, [1, 1, 4, 1, 1, 1]), index(s, [1, 1, 1, 4, 1, 1])
    cout4, cin4 = index(s, [4, 1, 1, 1, 1, 1]), index(s, [1, 4, 1, 1, 1, 1])
    frac = s.relayout_fraction("in")
    assert frac[h4, h4] == 0.0  # same H quarters held and needed
    assert frac[h4, w4] == pytest.approx(0.25 - 1 / 16)  # need a W quarter, hold one H quarter of it
    assert frac[cout4, cin4] == 0.0  # C_out quarter j of the producer is C_in quarter j of the consumer
    assert frac[h4, cin4] == pytest.approx(0.25 - 1 / 16)
    # an input-rotating SS needs only its 1/P shard at the start: ES {C_out}, SS {H}
    cout_ss_h = index(s, [4, 1, 1, 1, 1, 1], R)
    assert frac[h4, cout_ss_h] == 0.0  # device j holds H quarter j = its first shard
    # "out" edges (residual add into the consumer's output layout)
    assert s.relayout_fraction("out")[h4, w4] == pytest.approx(0.25 - 1 / 16)
    # a concatenated slice: the producer supplies channels [0.5, 1) of the consumer's input
    half = s.relayout_fraction("in", 0.5, 1.0)
    assert half[cout4, cin4] == pytest.approx(0.5)  # devices 2, 3 need the whole slice, hold ¼ of it


def test_decode_prioritises_high_genes_and_skips_too_small_dimensions():
    s = StrategySet(4)
    extents = np.array([[64, 3, 224, 224, 3, 3]], float)  # VGG conv1_1
    keys = np.ones((1, 1, 14))
    keys[0, 0, [N, R, C]] = [0.1, 0.2, 0.3]  # priority: C_in, H, W first (lowest keys)
    keys[0, 0, 12] = 0.9  # arity: the (2, 2) tuple; C_in = 3 can take a factor of 2
    assert s.factors[s.decode(keys, extents)[0, 0]].tolist() == [1, 2, 2, 1, 1, 1]
    keys[0, 0, 12] = 0.1  # arity: the (4,) tuple; C_in = 3 < 4 is skipped → H × 4
    assert s.factors[s.decode(keys, extents)[0, 0]].tolist() == [1, 1, 4, 1, 1, 1]
    keys[0, 0, 13] = 1.0  # SS on: the first SS priority among dims not split with local extent >= 4
    keys[0, 0, 6 + KH] = 0.0  # K_h = 3 < 4 → not eligible; next in priority
    keys[0, 0, 6 + M] = 0.5
    assert s.label(int(s.decode(keys, extents)[0, 0])) == ("{H}", "{C_out}")


def test_decode_always_valid_and_encode_round_trips():
    rng = np.random.default_rng(0)
    for p in (1, 2, 4, 8):
        s = StrategySet(p)
        extents = np.array([[64, 3, 224, 224, 3, 3], [512, 512, 7, 7, 3, 3], [2048, 512, 7, 7, 1, 1],
                            [3, 2, 1, 1, 1, 1]], float)
        decoded = s.decode(rng.random((200, 4, 14)), extents)
        assert (decoded >= 0).all()
        f = s.factors[decoded]
        assert (np.prod(f, axis=-1) == p).all()
        ok = (f <= extents[None]).all(-1)
        assert ok[:, :3].all()  # only the tiny last layer may need the fallback
        for row in decoded[:20]:
            back = s.decode(s.encode(row)[None], extents)
            assert back[0].tolist() == row.tolist()
