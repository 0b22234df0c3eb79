"""Per-image link traffic (FPDeep datapaths 1-6, note §2.2): hand values, a flow-by-flow
simulation of the 1-D chain against the closed form, and the 2-D scheme's routing."""

import numpy as np
import pytest

from optmap.plugins.fpdeep.layers import layer_table
from optmap.plugins.fpdeep.memory import Flows
from optmap.plugins.fpdeep.model import pipeline_order
from optmap.plugins.fpdeep.partition import cut_grid, decode, encode
from optmap.plugins.fpdeep.traffic import Routes, central_loads, cut_traffic, hop_loads
from optmap.plugins.fpdeep.hardware import vc709
from optmap.plugins.hardware.topologies import chain, mesh2d
from optmap.plugins.zoo.models import vgg16
from optmap.system import GroupSpec
from optmap.workload import WorkloadBuilder

VGG = layer_table(vgg16(batch=1))


def test_vgg16_conv1_2_cut_by_hand():
    # ICP cut after 32 of 64 input channels: bypassed inputs 224²·32 + partial sums 64·224² (note §2.2)
    assert cut_traffic(VGG, np.array(1), np.array(32), np.array(0)) == 224 * 224 * 32 + 64 * 224 * 224
    # OCP: every input (64·224²) + the left half of the pooled outputs (32 channels of 112²)
    assert cut_traffic(VGG, np.array(1), np.array(32), np.array(1)) == 64 * 224 * 224 + 32 * 112 * 112
    # at a layer boundary (before conv2_1) the complete pooled map crosses: 64·112², either split
    for split in (0, 1):
        assert cut_traffic(VGG, np.array(2), np.array(0), np.array(split)) == 64 * 112 * 112
    assert cut_traffic(VGG, np.array(len(VGG)), np.array(0), np.array(0)) == 0  # past the end


def small_net():
    b = WorkloadBuilder("small", (3, 8, 8))
    x = b.conv2d("input", 4, 3, padding=1, name="c1")
    x = b.maxpool2d(b.conv2d(x, 6, 3, padding=1, name="c2"), 2, name="pool")
    b.linear(b.flatten(x, name="flat"), 5, name="fc")
    return layer_table(b.build(1))


def simulate_chain(table, chan, splits):
    """Forward / backward values per link, transfer by transfer, as §5.1 describes the datapaths."""
    n = chan.shape[0]
    fwd, bwd = np.zeros(n - 1), np.zeros(n - 1)

    def move(a, b, values):  # store-and-forward along the chain
        if a < b:
            fwd[a:b] += values
        elif b < a:
            bwd[b:a] += values

    producer = 0
    for l in range(len(table)):
        members = [j for j in range(n) if chan[j, l] > 0]
        j0, j1 = members[0], members[-1]
        hin, ic, oc = table.in_spatial[l], table.in_channels[l], table.out_channels[l]
        if splits[l] == 0:  # ICP
            for j in members:
                move(producer, j, chan[j, l] * hin)  # datapath 1: its input channels
                move(j, producer, chan[j, l] * hin)  # datapath 4: their errors
            for b in range(j0, j1):
                move(b, b + 1, oc * table.out_spatial[l])  # datapath 2: partial sums, hop by hop
                move(b + 1, b, oc * table.out_spatial[l])  # datapath 3: output errors, hop by hop
        else:  # OCP
            per_channel = table.handoff[l] / oc
            move(producer, j1, ic * hin)  # every input to every member (multicast: once per link)
            move(j1, producer, ic * hin)  # partial input errors summed back along the chain
            for j in members:
                move(j, j1, chan[j, l] * per_channel)  # outputs gathered to the last member
                move(j1, j, chan[j, l] * per_channel)  # their errors returned
        producer = j1
    return fwd, bwd


def test_closed_form_equals_the_flow_simulation():
    table = small_net()
    grid, rng = cut_grid(table), np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(2, 7))
        splits = rng.integers(0, 2, len(table))
        total = int(table.units[np.arange(len(table)), splits].sum())
        bounds = np.concatenate([[0], np.sort(rng.integers(0, total + 1, n - 1)), [total]]).astype(float)
        part = decode(table, encode(table, bounds, splits, grid)[None], splits[None], grid)
        fwd, bwd = simulate_chain(table, part.chan[0], splits)
        loads = hop_loads(table, part)[0]
        assert np.allclose(loads, fwd) and np.allclose(loads, bwd)


def routes(topology, n, **options):
    system = topology([GroupSpec(vc709(), n)], **options)
    return Routes(system, pipeline_order(system))


def test_snake_order_keeps_pipeline_neighbours_adjacent():
    r = routes(mesh2d, 12, shape=[4, 3])
    assert r.order == [0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11]
    assert (r.hop_forward.sum(1) == 1).all() and (r.hop_backward.sum(1) == 1).all()


def test_central_reduction_on_a_chain_by_hand():
    # one ICP layer on three devices (1 + 1 + 1 input channels), nothing else
    table = layer_table(_one_conv())
    r = routes(chain, 3)
    part = decode(table, encode(table, np.array([0.0, 1, 2, 3]), np.array([0]), cut_grid(table))[None],
                  np.array([[0]]), cut_grid(table))
    loads = central_loads(table, part, Flows(*(np.zeros(0, int),) * 3, np.zeros(0)), r, passes=2)[0]
    by_edge = {edge: loads[k] for k, edge in enumerate(r.edges)}
    psum, inputs = 4 * 16, 16  # 4 output channels of 4x4; one input channel of 4x4
    # 0 -> 1: device 1's inputs, device 2's inputs, device 0's partial sums (to device 2)
    assert by_edge[(0, 1)] == pytest.approx(2 * inputs + psum)
    # 1 -> 2: device 2's inputs, the partial sums of devices 0 and 1
    assert by_edge[(1, 2)] == pytest.approx(inputs + 2 * psum)
    # 2 -> 1: errors broadcast to devices 0 and 1 (once on this link) + device 2's input errors
    assert by_edge[(2, 1)] == pytest.approx(psum + inputs)


def _one_conv():
    b = WorkloadBuilder("one", (3, 4, 4))
    b.conv2d("input", 4, 3, padding=1, name="c")
    return b.build(1)
