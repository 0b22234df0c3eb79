"""AccTFM two-stream schedule, Algorithm 1 (faithful and exact), batch evaluator, Megatron tables."""

import numpy as np
import pytest

from optmap.plugins.acctfm.tensor_parallel import (
    ComputeModel, Compression, alpha_beta_allreduce, collective_coeffs, megatron_tables,
)
from optmap.plugins.acctfm.schedule import (
    PS, CostTables, alg1, batch_makespan, brute_force, evaluate, evaluate_batch, exact_dp, solve,
    simulate_pass, split_or_merge, uniform,
)
from optmap.plugins.transformer.presets import TF8, preset

K = np.array(PS, float)


def _instance(rng, L):
    """Random per-micro-batch tables with a launch overhead and an α term (note §2.5 style)."""
    C, M = rng.uniform(0.2, 5, L), rng.uniform(0.2, 5, L)
    e, a = rng.uniform(0, 0.3), rng.uniform(0, 0.5)
    return C[:, None] / K + e, a + M[:, None] / K


def _tables(rng, L):
    f, b = _instance(rng, L), _instance(rng, L)
    return CostTables(ks=PS, tcp_fwd=f[0], tcm_fwd=f[1], tcp_bwd=b[0], tcm_bwd=b[1],
                      bytes_fwd=np.ones((L, 3)), bytes_bwd=np.ones((L, 3)), serial_cp_fwd=0.5)


def test_split_or_merge_vectors():
    # note §2.5 test vectors
    assert split_or_merge([1, 2], 4) == [1, 1, 2, 2]
    assert split_or_merge([1, 2, 3, 4], 2) == [2, 4]
    assert split_or_merge([5], 4) == [5, 5, 5, 5]
    assert split_or_merge([1, 2, 3, 4], 1) == [4]


def test_all_k1_is_serial_sum():
    rng = np.random.default_rng(0)
    tcp, tcm = _instance(rng, 7)
    assert simulate_pass([1] * 7, tcp, tcm) == pytest.approx(tcp[:, 0].sum() + tcm[:, 0].sum())


def test_worked_example():
    # note §2.5: C = [1, .4, 4, .6], M = 1, e = 0.1, a = 0.2; T_cp = C/K + e, T_cm = a + M/K
    tcp = np.array([1.0, 0.4, 4.0, 0.6])[:, None] / K + 0.1
    tcm = 0.2 + np.ones(4)[:, None] / K
    assert [simulate_pass([k] * 4, tcp, tcm) for k in PS] == pytest.approx([11.2, 9.0, 9.25])
    for dp in (alg1, exact_dp, brute_force):
        r = dp(tcp, tcm)
        assert r.ks == (2, 4, 4, 2) and r.makespan == pytest.approx(8.7)
    _, trace = simulate_pass([2, 4, 4, 2], tcp, tcm, trace=True)
    expect = [(2, 1.2, [1.3, 2.0]), (4, 2.4, [2.45, 2.9, 3.35, 3.8]),
              (4, 6.85, [4.25, 5.1, 6.2, 7.3]), (2, 7.7, [8.0, 8.7])]
    for (k, p, m), (ek, ep, em) in zip(trace, expect):
        assert k == ek and p == pytest.approx(ep) and m == pytest.approx(em)


def test_counterexample_faithful_vs_exact():
    # note §2.5: Alg. 1 → [2,2,4] = 11.65, optimum [4,4,4] = 11.25
    tcp = np.array([[1.2, 0.7, 0.45], [3.2, 1.7, 0.95], [4.2, 2.2, 1.2]])
    tcm = np.array([[3.2, 1.7, 0.95], [4.0, 2.0, 1.0], [3.0, 1.5, 0.75]])
    fa = alg1(tcp, tcm)
    assert fa.ks == (2, 2, 4) and fa.makespan == pytest.approx(11.65)
    for dp in (exact_dp, brute_force):
        r = dp(tcp, tcm)
        assert r.ks == (4, 4, 4) and r.makespan == pytest.approx(11.25)


def test_exact_equals_brute_force_and_dominates():
    rng = np.random.default_rng(42)
    n_suboptimal = 0
    for _ in range(200):
        L = int(rng.integers(1, 7))
        tcp, tcm = _instance(rng, L)
        ex, bf, fa = exact_dp(tcp, tcm), brute_force(tcp, tcm), alg1(tcp, tcm)
        assert ex.makespan == pytest.approx(bf.makespan, abs=1e-12)
        assert simulate_pass(ex.ks, tcp, tcm) == pytest.approx(ex.makespan, abs=1e-12)
        assert simulate_pass(fa.ks, tcp, tcm) == pytest.approx(fa.makespan, abs=1e-12)
        assert ex.makespan <= fa.makespan + 1e-12
        assert all(ex.makespan <= simulate_pass([k] * L, tcp, tcm) + 1e-12 for k in PS)
        n_suboptimal += fa.makespan > ex.makespan + 1e-9
    assert 0 < n_suboptimal < 40  # Alg. 1 is a heuristic (note: ~2 % of random instances)


def test_batch_evaluator_matches_scalar():
    rng = np.random.default_rng(5)
    L = 9
    tab = _tables(rng, L)
    X = rng.choice(PS, size=(300, 2 * L))
    got = evaluate_batch(tab, X)
    ref = [evaluate(tab, x[:L], x[L:]).iter_time for x in X]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    idx = np.searchsorted(PS, X)
    np.testing.assert_allclose(evaluate_batch(tab, idx, encoding="index"), got)
    np.testing.assert_array_equal(evaluate_batch(tab, X[:3]), got[:3])  # the few-rows scalar path: same floats
    assert evaluate_batch(tab, X[0]).shape == (1,)
    with pytest.raises(ValueError):
        evaluate_batch(tab, np.full((2, 2 * L), 3))
    with pytest.raises(ValueError):
        evaluate_batch(tab, X[:, :L])


def test_batch_makespan_generic_ps():
    rng = np.random.default_rng(6)
    ps = (1, 2, 3, 8)  # generalised s(i) = ceil(i·K_prev/K) (note D17)
    tcp, tcm = rng.random((5, 4)), rng.random((5, 4))
    kidx = rng.integers(0, 4, size=(50, 5))
    ref = [simulate_pass([ps[c] for c in row], tcp, tcm, ps) for row in kidx]
    np.testing.assert_allclose(batch_makespan(kidx, tcp, tcm, ps), ref, atol=1e-12)


def test_solve_and_evaluate_fields():
    rng = np.random.default_rng(7)
    tab = _tables(rng, 6)
    kf, kb, ex = solve(tab, "exact")
    _, _, fa = solve(tab, "faithful")
    _, _, bf = solve(tab, "brute")
    assert ex.iter_time == pytest.approx(bf.iter_time) and ex.iter_time <= fa.iter_time + 1e-12
    base = uniform(tab, 1)
    assert base.idle_rate == pytest.approx(base.comm_time / base.iter_time)  # serial: idle = comm share
    assert 0 <= ex.idle_rate < base.idle_rate
    assert ex.iter_time == pytest.approx(ex.fwd_time + ex.bwd_time + 0.5)
    assert base.comm_bytes == 12 and uniform(tab, 4).comm_bytes == 48


# ---- Megatron cost tables --------------------------------------------------------------------------------

def test_collective_coefficients():
    assert collective_coeffs("recursive_doubling", 4) == (2.0, 2.0)
    assert collective_coeffs("ring", 4) == (6.0, 1.5)
    assert collective_coeffs("rabenseifner", 4) == (4.0, 1.5)
    ar = alpha_beta_allreduce(4, alpha=1e-5, bandwidth=1e9)
    np.testing.assert_allclose(ar(np.array([0.0, 1e6])), [0.0, 2e-5 + 2e-3])  # T = 2α + 2βm


def test_megatron_tables_baseline_and_shapes():
    ar = alpha_beta_allreduce(4)
    cfg = preset("TF8", seq_len=64)
    tab = megatron_tables(cfg, 16, 4, ar)
    L = cfg.n_blocks
    assert tab.tcp_fwd.shape == (L, 3) and tab.names[0] == "enc0.self_attn"
    # message = (B/K)·S·d_model·4 bytes per micro-batch
    np.testing.assert_allclose(tab.bytes_fwd[0], 16 / K * 64 * 1024 * 4)
    assert tab.bytes_bwd[13, 0] == 2 * 16 * 64 * 1024 * 4  # cross-attn: + d(encoder output)
    base = uniform(tab, 1)  # Megatron-LM: serial compute → comm
    serial = (tab.tcp_fwd[:, 0].sum() + tab.tcm_fwd[:, 0].sum() + tab.tcp_bwd[:, 0].sum()
              + tab.tcm_bwd[:, 0].sum() + tab.serial_time)
    assert base.iter_time == pytest.approx(serial)
    # a per-micro-batch overhead: splitting costs total compute (note §1.2)
    tot = tab.tcp_fwd * K
    assert np.all(np.diff(tot, axis=1) > 0)
    assert np.all(tab.tcp_bwd[:, 0] > tab.tcp_fwd[:, 0])
    with pytest.raises(ValueError):
        megatron_tables(cfg, 6, 4, ar)


def test_megatron_compression_shrinks_messages():
    ar = alpha_beta_allreduce(4)
    cfg = preset("TF8", seq_len=64)
    plain = megatron_tables(cfg, 16, 4, ar)
    comp = megatron_tables(cfg, 16, 4, ar, compression=Compression(keep_ratio=0.5, bits=4))
    a = cfg.arrays()
    data = comp.bytes_fwd - np.where(a.computes_mask[:, None], 64 * 16 / K * 4, 0)  # minus An bytes
    np.testing.assert_allclose(plain.bytes_fwd / (data - 4), 16.0)  # 16× payload (+4-byte scale)
    np.testing.assert_allclose(plain.bytes_bwd / (comp.bytes_bwd - 4), 16.0)  # no An backward
    assert np.all(comp.tcm_fwd < plain.tcm_fwd) and np.all(comp.tcp_fwd > plain.tcp_fwd)
    assert uniform(comp, 1).iter_time < uniform(plain, 1).iter_time
    quant_only = megatron_tables(cfg, 16, 4, ar, compression=Compression(bits=4))
    np.testing.assert_allclose(plain.bytes_fwd / (quant_only.bytes_fwd - 4), 8.0)


def test_megatron_custom_allreduce_and_compute_model():
    calls = []

    def ar(nbytes):
        calls.append(np.shape(nbytes))
        return 1e-9 * nbytes + 1e-3

    tab = megatron_tables(preset("gpt2", seq_len=32), 8, 2, ar,
                          compute=ComputeModel(launch_overhead=0.0, half_tokens=0.0))
    assert all(len(s) == 1 for s in calls)  # the host's collective gets flat arrays
    # with no overhead and a flat efficiency curve, K·t_cp(K) is independent of K
    np.testing.assert_allclose(tab.tcp_fwd * K, tab.tcp_fwd[:, :1] * np.ones(3))
    assert tab.serial_cm_bwd == pytest.approx(1e-9 * 8 * 32 * 768 * 4 + 1e-3)


def test_tf8_pipeline_speedup_bounded():
    ar = alpha_beta_allreduce(4)
    tab = megatron_tables(TF8, 128, 4, ar)
    base = uniform(tab, 1)
    kf, kb, best = solve(tab, "exact")
    _, _, fa = solve(tab, "faithful")
    sp = base.iter_time / best.iter_time
    f = base.idle_rate
    assert 1.0 < sp <= 1.0 / max(f, 1 - f) + 1e-9  # perfect-overlap bound (note §4.6)
    assert best.iter_time <= fa.iter_time + 1e-12
    assert all(best.iter_time <= uniform(tab, k).iter_time + 1e-12 for k in PS)


def test_faithful_can_lose_to_uniform_exact_cannot():
    # found by seeded search: Alg. 1 keeps one state per (layer, K), so it can even lose to uniform K=4
    tcp = np.array([0.3, 3.8, 2.8])[:, None] / K + 0.1
    tcm = 0.1 + np.array([1.8, 4.0, 1.7])[:, None] / K
    fa, ex = alg1(tcp, tcm), exact_dp(tcp, tcm)
    assert fa.ks == (2, 4, 4) and fa.makespan == pytest.approx(9.175)
    assert simulate_pass([4, 4, 4], tcp, tcm) == pytest.approx(8.875)
    assert ex.makespan <= 8.875 + 1e-12 and ex.makespan == pytest.approx(brute_force(tcp, tcm).makespan)


def test_contention_slows_overlapped_compute_by_hand():
    # one layer, K = 2, t_cp = 2, t_cm = 1 per micro-batch, σ = 0.5. Micro-batch 1: compute [0, 2],
    # comm [2, 3]. Micro-batch 2 starts computing at 2 while comm runs until 3: one second at
    # 1/(1 + σ) speed does 2/3 of a second's work, the remaining 4/3 run alone: ends at 2 + 1 + 4/3
    # = 13/3; its comm [13/3, 16/3]. Without contention: 4 and 5.
    tcp, tcm = np.array([[4.0, 2.0, 1.0]]), np.array([[2.0, 1.0, 0.5]])
    assert simulate_pass([2], tcp, tcm) == pytest.approx(5.0)
    assert simulate_pass([2], tcp, tcm, slowdown=0.5) == pytest.approx(16 / 3)
    # compute entirely inside a longer comm: 1 + σ times its length (t_cm = 4: [2, 6] covers 2·1.5)
    assert simulate_pass([2], tcp, 4 * tcm, slowdown=0.5) == pytest.approx(2 + 4 + 4)  # comm-bound either way
    assert batch_makespan(np.array([[1]]), tcp, tcm, PS, 0.5)[0] == pytest.approx(16 / 3)
    assert batch_makespan(np.array([[1]] * 20), tcp, tcm, PS, 0.5)[0] == pytest.approx(16 / 3)  # vectorised path


def test_contention_keeps_the_exact_dp_exact_and_the_baseline_unchanged():
    rng = np.random.default_rng(3)
    for _ in range(10):
        tcp, tcm = _instance(rng, 6)
        exact, brute = exact_dp(tcp, tcm, slowdown=0.189), brute_force(tcp, tcm, slowdown=0.189)
        assert exact.makespan == pytest.approx(brute.makespan, rel=1e-12)
        assert alg1(tcp, tcm, slowdown=0.189).makespan >= brute.makespan - 1e-12
        # all K = 1 never overlaps (each layer waits for the previous All-Reduce): serial sum
        assert simulate_pass([1] * 6, tcp, tcm, slowdown=0.189) == pytest.approx(tcp[:, 0].sum() + tcm[:, 0].sum())


def test_contention_option_of_the_cost_model():
    # default σ = 0.189 (Lee et al., arXiv:2507.03114, average compute slowdown under overlap)
    from pathlib import Path

    import optmap

    tiny = Path(__file__).parents[3] / "problems" / "acctfm" / "tiny.toml"
    assert optmap.load(tiny).cost_model.overlap_slowdown == 0.189
    # at 10 Gb/s and 50 µs per step the tiny problem is communication-bound (slowed compute still
    # ends first); at 400 Gb/s and 1 µs its compute sets the pace, so overlapped compute shows
    fast_links = ["system.bandwidth_gbps=400", "system.groups.0.network_gbps=400", "system.latency_us=1"]
    default = optmap.load(tiny, overrides=fast_links)
    perfect = optmap.load(tiny, overrides=fast_links + ["cost.overlap_slowdown=0"])
    x = default.cost_model.plan_vector([4] * default.cost_model.L, [4] * default.cost_model.L,
                                       default.cost_model.off)[None]
    slow, fast = default.cost_model.evaluate_batch(x), perfect.cost_model.evaluate_batch(x)
    assert slow["time"][0] > fast["time"][0]
    assert default.cost_model.baseline.iter_time == perfect.cost_model.baseline.iter_time
