"""The bandwidth-centric model, checked by hand: chip-to-chip transfers, one pass of one layer, splits, invariants."""

from __future__ import annotations

import numpy as np
import pytest

from optmap.errors import OptmapError
from optmap.plugins.dsm.chip import build_dsm_chip
from optmap.plugins.dsm.chipcomm import gradient_payloads, gradient_reduction, relayout, rotation
from optmap.plugins.dsm.layers import PrimaryLayer
from optmap.plugins.dsm.passes import pass_cost
from optmap.plugins.dsm.splits import explicit_splits, factorizations, tile_size
from optmap.plugins.dsm.torus import Torus
from optmap.problem import load
from tests.conftest import ROOT

HW = build_dsm_chip().config
ASYM = Torus(4, 16, 120e9, 40e9)
HBM = 256e9 * 0.8  # Fig. 10: 256 GB/s at 80 % efficiency
SMALL = ROOT / "problems" / "dsm" / "small.toml"


def test_gradient_reduction_by_hand():
    w = 512 * 512 * 9 * 2  # CONV4_2's weights in FP16 (note §4.5: 4.72 MB)
    # Y carries 1/M of X's payload (§III-A)
    assert gradient_payloads("Data", ASYM, w) == [w, w / 4]
    link = max(3 / 4 * w / 120e9, 15 / 16 * (w / 4) / 40e9)  # ring reduce-scatter along X, then Y, pipelined
    moved = 3 / 4 * w + 15 / 16 * w / 4
    # staged in HBM (Fig. 13's "memory-bound" reading, note §7.9): own and received partials read, sums written
    expected = max(link, 3 * moved / HBM) + max(link, 2 * moved / HBM)  # + all-gather; HBM-bound
    assert gradient_reduction("Data", ASYM, HW, w, "memory") == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(113.4e-6, rel=1e-3)
    # default: Fig. 5 lists only chip links and the on-chip interconnect for SumofGrad / BroadcastW, so
    # received pieces stream through; HBM reads the own partial once and writes the new weights once. The
    # reduction is then link-bound (it used to be the staged value above, whatever the torus' bandwidths).
    streamed = max(link, w / HBM) + max(link, w / HBM)
    assert gradient_reduction("Data", ASYM, HW, w) == pytest.approx(streamed, rel=1e-12)
    assert streamed == pytest.approx(2 * 3 / 4 * w / 120e9, rel=1e-12)  # the X ring phase sets the pace: 59 us
    # so the asymmetric torus now shortens it (§II-E): the symmetric 80/80 torus reduces the same W slower
    assert gradient_reduction("Data", Torus(4, 16, 80e9, 80e9), HW, w) > 1.4 * streamed
    # hybrids reduce along one axis only; model parallelism has no reduction
    dxmy = max(3 / 4 * w / 120e9, 3 * 3 / 4 * w / HBM) + max(3 / 4 * w / 120e9, 2 * 3 / 4 * w / HBM)
    assert gradient_reduction("DataXModelY", ASYM, HW, w, "memory") == pytest.approx(dxmy, rel=1e-12)
    assert gradient_reduction("DataXModelY", ASYM, HW, w) == pytest.approx(2 * max(3 / 4 * w / 120e9, w / HBM))
    assert gradient_reduction("Model", ASYM, HW, w) == 0.0


def test_rotation_by_hand():
    f = 25088 * 512 * 2  # FCON1's input features (note §4.5: 25.7 MB)
    rot = rotation("Model", ASYM, f)
    # M·N iterations: one X move each, a Y move every M (§II-D): 48 X and 15 Y moves of F/64
    assert (rot.group, rot.n_x, rot.n_y) == (64, 48, 15)
    assert rot.t_x == pytest.approx(f / 64 / 120e9) and rot.t_y == pytest.approx(f / 64 / 40e9)
    busy = np.array([1e-6, 1e-3])
    # X and Y moves run on different links at once and the slower axis paces the iterations (§II-D:
    # a group's time is its slowest link's; §II-E's Y = X/M rule balances this maximum). Before the
    # fix the two axes were summed (48 t_x + 15 t_y), which made Model pay for its Y moves twice over.
    along_x = 48 * np.maximum(busy / 64, rot.t_x) + 16 * busy / 64
    along_y = 15 * np.maximum(busy / 64, rot.t_y) + 49 * busy / 64
    assert np.allclose(rot.overlapped(busy), np.maximum(along_x, along_y), rtol=1e-12)
    assert rot.overlapped(np.array([0.0]))[0] == pytest.approx(max(48 * rot.t_x, 15 * rot.t_y))
    assert rot.exposed == pytest.approx(max(48 * rot.t_x, 15 * rot.t_y))  # BWD: not overlapped, axes concurrent
    assert rotation("DataXModelY", ASYM, f).n_y == 15 and rotation("ModelXDataY", ASYM, f).n_x == 3
    assert rotation("Data", ASYM, f).group == 1


def test_relayout_by_hand():
    f = 1e6  # bytes per chip
    # all-to-all along a ring of p chips: floor(p²/4) / p x F over both directions of both links
    x, y, hbm = f * 4 / (4 * 120e9), f * 64 / (16 * 40e9), 2 * f / HBM
    assert relayout("Data", "Model", ASYM, HW, f) == pytest.approx(max(x, y, hbm))
    assert relayout("Data", "DataXModelY", ASYM, HW, f) == pytest.approx(max(y, hbm))  # only Y changes role
    assert relayout("Data", "ModelXDataY", ASYM, HW, f) == pytest.approx(max(x, hbm))
    assert relayout("Model", "Model", ASYM, HW, f) == 0.0


def _fc(n_in=1024, n_out=1024):
    return PrimaryLayer("fc", "fc", n_in, n_out, 1, 1)


def test_one_pass_by_hand():
    layer = _fc()
    one = [np.array([v], float) for v in (1024, 32, 1, 1, 8)]  # CoreD: 1024 in, 32 out, 8 samples
    split = [np.array([v], float) for v in (1, 32, 1, 1, 1)]  # 32 cores split the outputs
    cost = pass_cost(layer, "fwd", one, one, split, HW, load_cycles=32)
    # PE array: ceil(1024/32) x ceil(32/32) blocks, each streams 8 vectors but needs 32 cycles to load
    assert cost.pri[0] == pytest.approx((32 * 32 + 32 + 32) / 2e9)
    # HBM: the input once (shared by all cores, multicast), 32 weight slices, the outputs
    hbm = 1024 * 8 * 2 + 32 * (32 * 1024 * 2) + 32 * (32 * 8 * 2)
    assert cost.ovl[0] == pytest.approx(hbm / HBM)  # memory-bound: OvlDt > PriComp
    assert cost.capacity[0] == 2 * (1024 * 8 + 32 * 1024 + 32 * 8) * 2  # double-buffered tiles
    assert cost.psum[0] == 0.0
    # splitting the reduction dimension instead: a ring reduce-scatter of each core's partial outputs
    split_in = [np.array([v], float) for v in (32, 1, 1, 1, 1)]
    core = [np.array([v], float) for v in (32, 1024, 1, 1, 8)]
    psum = pass_cost(layer, "fwd", core, core, split_in, HW, load_cycles=32).psum[0]
    assert psum == pytest.approx(31 / 32 * (1024 * 8 * 2) / 256e9)


def test_rotated_features_bypass_hbm():
    # Fig. 5: RotateAlongX/Y use the chip links and the on-chip interconnect, no memory bus. A chip of a
    # 64-chip Model group reads only its own 1/64 of FCON1's input from HBM; the other slices reach its
    # cores over the ring. Before the fix the received slices were written to HBM and the whole input read
    # back, making the pass HBM-bound at (received + whole input) / HBM.
    layer = _fc(25088, 4096)
    core = [np.array([v], float) for v in (25088, 64, 1, 1, 16)]  # Model: out 4096/64 per chip, mb 512/32 per core
    split = [np.array([v], float) for v in (1, 1, 1, 1, 32)]  # Fig. 12: FC layers split mb over the cores
    f = 25088 * 512 * 2
    rot = rotation("Model", ASYM, 0.0)  # zero bytes: the transfer time itself does not matter here
    cost = pass_cost(layer, "fwd", core, core, split, HW, load_cycles=32, rotation=rot)
    weights, outputs = 64 * 25088 * 2, 64 * 512 * 2
    ring = f / 2 + weights + outputs / 2  # the cores' own input slices and outputs half-way, weights multicast
    port = f / 32 + weights + outputs / 32  # one core's bytes through its scratchpad port
    hbm = f / 64 + weights + outputs  # only the chip's own input slice comes from HBM
    assert cost.ovl[0] == pytest.approx(max(ring / 256e9, port / 128e9, hbm / HBM), rel=1e-9)
    assert cost.ovl[0] == pytest.approx(ring / 256e9, rel=1e-9)  # 62.7 us: ring-bound, no longer HBM-bound
    assert cost.ovl[0] < (f * 63 / 64 + f + weights) / HBM / 4  # the old accounting: 265 us


def test_splits_and_tiles():
    splits = factorizations(32)
    assert len(splits) == 126 and (splits.prod(1) == 32).all()  # C(9, 4), note §3.3
    assert len(factorizations(32, ("in", "out", "ij", "mb"))) == 56  # C(8, 3) without kij
    levels = np.arange(8)[:, None]
    core = np.array([[1, 3, 33, 100, 512, 1000]])
    assert (tile_size(core, levels, 32) % 32 == 0).all()  # ArrayD: integral multiples of P (§II-E)
    assert (tile_size(core, 0, 32) >= core).all()
    with pytest.raises(OptmapError, match="multiply to 24, but a chip has 32 cores"):
        explicit_splits([{"in": 4, "out": 6}], 32)


@pytest.fixture(scope="module")
def small():
    return load(SMALL).cost_model


def _random_rows(model, n, seed=0):
    return model.space.sample(np.random.default_rng(seed), n)


def test_breakdown_categories_sum_to_the_total(small):
    metrics = small.evaluate_batch(_random_rows(small, 400))
    ok = metrics["feasible"]
    assert ok.sum() > 50
    parts = sum(metrics[c] for c in ("mac", "underuse", "visible", "psum", "rotation", "gradient", "weights", "aux",
                                     "relayout", "pipeline"))
    assert np.allclose(parts[ok], metrics["time"][ok], rtol=1e-12)
    assert (metrics["utilization"][ok] <= 1).all()


def test_report_rows_sum_per_layer(small):
    rows = _random_rows(small, 400)
    ok = small.evaluate_batch(rows)["feasible"]
    report = small.evaluate(small.space.decode(rows[ok][0]))
    assert report.feasible
    layers = report.plan["layers"]
    assert sum(sum(v["seconds"].values()) for v in layers.values()) == pytest.approx(report.metrics["time"])
    for row in report.layers:
        passes = layers[row.name]["passes"]
        assert sum(sum(p["seconds"].values()) for p in passes.values()) <= row.compute + row.communication + 1e-15


def test_dysm_factor_one_is_no_dysm():
    on, off = (load(SMALL, [f"cost.dysm={flag}"]).cost_model for flag in ("true", "false"))
    rows = _random_rows(off, 300, seed=1)
    values = [off.space.decode(x).as_dict() for x in rows]
    lifted = np.array([on.space.encode({**v, **{n: 1 for n in on.space.names if n.endswith(":dysm")}}) for v in values])
    assert np.array_equal(on.evaluate_batch(lifted)["time"], off.evaluate_batch(rows)["time"])


def test_more_link_bandwidth_never_slows_a_mapping(small):
    fast = load(SMALL, ["system.x_bandwidth_gBps=240", "system.y_bandwidth_gBps=80"]).cost_model
    rows = _random_rows(small, 400, seed=2)
    slow_t, fast_t = small.evaluate_batch(rows)["time"], fast.evaluate_batch(rows)["time"]
    ok = np.isfinite(slow_t)
    assert (fast_t[ok] <= slow_t[ok] * (1 + 1e-12)).all() and (fast_t[ok] < slow_t[ok]).any()


def test_bad_core_splits_are_one_line_errors():
    with pytest.raises(OptmapError, match=r"core_splits\[1\]: the factors ij=8 multiply to 8"):
        load(SMALL, ["cost.core_splits=[{ij = 32}, {ij = 8}]"])


def test_hbm_capacity_is_checked(small):
    from optmap.plugins.dsm.evaluation import decode, hbm_bytes

    x = small.plans()["data-parallel"].array[None]
    rows = decode(small, x)
    # by hand, data parallel on 4 chips: every chip holds all weights and their gradients, plus a
    # quarter of each layer's stored outputs (16 samples, FP16)
    weights = 16 * 32 * 9 + 32 * 64 * 9 + 4096 * 256
    outputs = 32 * 16 * 16 + 64 * 8 * 8 + 256
    assert hbm_bytes(small, rows)[0] == pytest.approx(2 * 2 * weights + outputs * 16 * 2 / 4)
    tiny = load(SMALL, ["system.groups.0.hbm_gb=0.001"]).cost_model  # a 1 MB HBM cannot hold the 1 M FC weights
    report = tiny.evaluate(tiny.space.decode(x[0]))
    assert not report.feasible and "GB of HBM" in report.reason


def test_split_bus_serialises_core_reductions():
    from dataclasses import replace

    bus = replace(HW, interconnect="split-bus")
    layer = _fc()
    core = [np.array([v], float) for v in (256, 1024, 1, 1, 8)]
    split = [np.array([v], float) for v in (4, 1, 1, 1, 8)]  # groups of 4 cores share an output tile
    ring = pass_cost(layer, "fwd", core, core, split, HW, load_cycles=32).psum[0]
    assert ring == pytest.approx(3 / 4 * (1024 * 8 * 2) / 256e9)
    # [R] the 32 / 4 = 8 groups take turns on the two halves of the bus
    assert pass_cost(layer, "fwd", core, core, split, bus, load_cycles=32).psum[0] == pytest.approx(ring * 4)


def test_kept_weights_cost_no_traffic_kept_inputs_a_reshuffle():
    layer = _fc(4096, 4096)
    core = [np.array([v], float) for v in (4096, 128, 1, 1, 1)]  # one sample: a matrix-vector product
    split = [np.array([v], float) for v in (1, 32, 1, 1, 1)]
    fetch = pass_cost(layer, "fwd", core, core, split, HW, load_cycles=32)
    held = pass_cost(layer, "fwd", core, core, split, HW, load_cycles=32, resident=(False, True, False))
    # weights from HBM: 32 slices of 128 x 4096; held weights leave the input and output traffic only,
    # which PriComp (128 x 4 blocks of 32 x 32, each 32 load cycles, + fill) hides
    assert fetch.ovl[0] == pytest.approx((4096 * 2 + 4096 * 4096 * 2 + 4096 * 2) / HBM)
    assert held.ovl[0] == pytest.approx(held.pri[0]) == pytest.approx((128 * 4 * 32 + 64) / 2e9)
    # a kept input is re-laid over the ring: C²/4 hops for a 1/C share each, on 2C directed links
    kept = pass_cost(layer, "fwd", core, core, split, HW, load_cycles=32, resident=(True, False, False))
    ring = 4096 * 2 * (32 * 32 // 4) / (2 * 32 * 32) + (4096 * 4096 * 2) / 2  # input reshuffle + weight unicast
    assert kept.ovl[0] == pytest.approx(max((4096 * 4096 * 2 + 4096 * 2) / HBM, ring / 256e9, kept.pri[0]))
