"""Alpha-beta collective costs: hand-computed values, vectorisation, edge cases, System glue."""

import numpy as np
import pytest

from optmap import collectives as C
from optmap.errors import OptmapError
from optmap.plugins.hardware.accelerators import TPU_V2, TPU_V3
from optmap.plugins.hardware.topologies import hierarchical, ring
from optmap.system import GroupSpec

# Shared small numbers: p = 4, n = 8e6 B, B = 1e9 B/s, α = 1e-6 s  →  n/B = 8e-3 s, L = log2 4 = 2
N, P, BW, A = 8e6, 4, 1e9, 1e-6

HAND = [
    # allreduce ring: 2(p-1)α + 2(p-1)/p·n/B = 6e-6 + 1.5·8e-3 = 0.012006
    (C.allreduce, "ring", 0.012006),
    # allreduce recursive doubling: L(α + n/B) = 2·(1e-6 + 8e-3) = 0.016002
    (C.allreduce, "recursive_doubling", 0.016002),
    # allreduce tree: 2L(α + n/B) = 4·(1e-6 + 8e-3) = 0.032004
    (C.allreduce, "tree", 0.032004),
    # allreduce rabenseifner: 2Lα + 2(p-1)/p·n/B = 4e-6 + 0.012 = 0.012004
    (C.allreduce, "rabenseifner", 0.012004),
    # allgather ring: (p-1)α + (p-1)/p·n/B = 3e-6 + 0.75·8e-3 = 0.006003
    (C.allgather, "ring", 0.006003),
    # allgather recursive doubling: Lα + (p-1)/p·n/B = 2e-6 + 0.006 = 0.006002
    (C.allgather, "recursive_doubling", 0.006002),
    # reduce-scatter ring: 3e-6 + 0.006 = 0.006003
    (C.reduce_scatter, "ring", 0.006003),
    # reduce-scatter recursive halving: 2e-6 + 0.006 = 0.006002
    (C.reduce_scatter, "recursive_halving", 0.006002),
    # broadcast binomial tree: L(α + n/B) = 2·(1e-6 + 8e-3) = 0.016002
    (C.broadcast, "tree", 0.016002),
    # broadcast scatter+allgather: (L + p - 1)α + 2(p-1)/p·n/B = 5e-6 + 0.012 = 0.012005
    (C.broadcast, "scatter_allgather", 0.012005),
    # all-to-all pairwise: (p-1)α + (p-1)/p·n/B = 3e-6 + 0.006 = 0.006003
    (C.all_to_all, "pairwise", 0.006003),
    # all-to-all Bruck: Lα + L·n/(2B) = 2e-6 + 2·4e-3 = 0.008002
    (C.all_to_all, "bruck", 0.008002),
]


@pytest.mark.parametrize("fn,alg,expected", HAND, ids=[f"{f.__name__}-{a}" for f, a, _ in HAND])
def test_hand_computed(fn, alg, expected):
    got = fn(N, P, BW, A, algorithm=alg)
    assert isinstance(got, float)
    assert got == pytest.approx(expected, rel=1e-12)


def test_point_to_point_and_defaults():
    assert C.point_to_point(N, BW, A) == pytest.approx(0.008001)  # α + n/B = 1e-6 + 8e-3
    assert C.allreduce(N, P, BW, A) == pytest.approx(0.012006)  # default ring
    assert C.broadcast(N, P, BW, A) == pytest.approx(0.016002)  # default binomial tree
    assert C.all_to_all(N, P, BW, A) == pytest.approx(0.006003)  # default pairwise


def test_non_power_of_two_uses_ceil_log2():
    # p = 5 → L = ceil(log2 5) = 3: 3·(1e-6 + 8e-3) = 0.024003
    assert C.allreduce(N, 5, BW, A, algorithm="recursive_doubling") == pytest.approx(0.024003)
    # p = 2 → L = 1; p = 8 → L = 3; p = 9 → L = 4 (n = 0 aside, α only: B = inf)
    inf = float("inf")
    for p, steps in [(2, 1), (3, 2), (8, 3), (9, 4), (1024, 10), (1025, 11)]:
        assert C.broadcast(1.0, p, inf, 1.0) == steps


def test_p1_and_zero_bytes_cost_nothing():
    for fn, alg, _ in HAND:
        assert fn(N, 1, BW, A, algorithm=alg) == 0.0
        assert fn(0.0, 8, BW, A, algorithm=alg) == 0.0
    assert C.point_to_point(0.0, BW, A) == 0.0


def test_vectorised_equals_scalar():
    sizes = np.array([0.0, 1.0, 1e3, 1e6, 5e7])
    for fn, alg, _ in HAND:
        for p in (1, 2, 6, 8):
            vec = fn(sizes, p, BW, A, algorithm=alg)
            assert isinstance(vec, np.ndarray) and vec.shape == sizes.shape
            scalars = [fn(float(n), p, BW, A, algorithm=alg) for n in sizes]
            np.testing.assert_allclose(vec, scalars, rtol=1e-15)
    # p, bandwidth and latency broadcast too
    ps = np.array([1, 2, 4, 7])
    vec = C.allreduce(N, ps, BW, A)
    np.testing.assert_allclose(vec, [C.allreduce(N, int(p), BW, A) for p in ps], rtol=1e-15)
    np.testing.assert_allclose(
        C.point_to_point(sizes, BW, A), [C.point_to_point(float(n), BW, A) for n in sizes]
    )


def test_errors():
    with pytest.raises(OptmapError, match="integer >= 1"):
        C.allreduce(N, 0, BW, A)
    with pytest.raises(OptmapError, match="integer >= 1"):
        C.allreduce(N, 2.5, BW, A)
    with pytest.raises(OptmapError, match="bandwidth must be > 0"):
        C.allgather(N, 4, 0.0, A)
    with pytest.raises(OptmapError, match="nbytes must be finite and >= 0"):
        C.allgather(np.array([1.0, -1.0]), 4, BW, A)
    with pytest.raises(OptmapError, match="latency"):
        C.broadcast(N, 4, BW, -1e-6)
    with pytest.raises(OptmapError, match="unknown algorithm 'bogus'; valid: ring, tree"):
        C.allreduce(N, 4, BW, A, algorithm="bogus")


def test_collective_time_on_systems():
    r = ring([GroupSpec(TPU_V2, 8)], latency_us=1.0)
    # ring of 8 tpu-v2: B = 1e9 B/s, α = 1e-6 s
    assert C.collective_time(r, "allreduce", N) == pytest.approx(C.allreduce(N, 8, 1e9, 1e-6))
    # devices 0..3 of the 8-ring: the ring closes 3 → 0 over 3 hops, so α = 3 µs
    assert r.subset_latency([0, 1, 2, 3]) == pytest.approx(3e-6)
    assert C.collective_time(r, "all-reduce", N, devices=[0, 1, 2, 3], algorithm="tree") == (
        pytest.approx(C.allreduce(N, 4, 1e9, 3e-6, algorithm="tree"))
    )
    # point to point 0 → 3 on the ring: 3 hops of 1 µs, 1e9 B/s
    assert C.collective_time(r, "point_to_point", N, devices=[0, 3]) == pytest.approx(3e-6 + 8e-3)
    assert C.collective_time(r, "point_to_point", N, devices=[2, 2]) == 0.0
    vec = C.collective_time(r, "allgather", np.array([1e3, 1e6]))
    assert isinstance(vec, np.ndarray) and vec.shape == (2,)

    h = hierarchical([GroupSpec(TPU_V2, 4), GroupSpec(TPU_V3, 4)])
    # within the tpu-v3 group: 2e9 B/s, α = 1 µs; across groups: 1e9 B/s, α = 2 µs
    assert C.collective_time(h, "allreduce", N, devices=[4, 5, 6, 7]) == pytest.approx(
        C.allreduce(N, 4, 2e9, 1e-6)
    )
    assert C.collective_time(h, "allreduce", N) == pytest.approx(C.allreduce(N, 8, 1e9, 2e-6))
    with pytest.raises(OptmapError, match="unknown collective 'gather'"):
        C.collective_time(h, "gather", N)
    with pytest.raises(OptmapError, match=r"devices=\[src, dst\]"):
        C.collective_time(h, "point_to_point", N, devices=[0, 1, 2])
