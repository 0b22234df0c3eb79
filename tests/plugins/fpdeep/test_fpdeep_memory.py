"""On-chip memory, parameter balancing and the priced DRAM fall-back (FPDeep §3.4.2, §5.2.2)."""

import numpy as np
import pytest

from optmap.plugins.fpdeep.layers import layer_table
from optmap.plugins.fpdeep.memory import device_storage, overflow_fraction, unit_costs
from optmap.plugins.fpdeep.partition import cut_grid, decode, encode
from optmap.plugins.fpdeep.traffic import parked_hops
from optmap.workload import WorkloadBuilder


def two_convs():
    """conv 3->4 then 4->6, 3x3 on 8x8 (64 pixels per channel)."""
    b = WorkloadBuilder("two", (3, 8, 8))
    b.conv2d(b.conv2d("input", 4, 3, padding=1, name="c1"), 6, 3, padding=1, name="c2")
    return layer_table(b.build(1))


TABLE = two_convs()
# device 0: all 3 input channels of c1; devices 1 and 2: input channels 0:2 and 2:4 of c2 (ICP)
PART = decode(TABLE, encode(TABLE, np.array([0.0, 3, 5, 7]), np.array([0, 0]), cut_grid(TABLE))[None],
              np.zeros((1, 2), int), cut_grid(TABLE))


def storage(capacity, park, images=1.0):
    costs = unit_costs(TABLE, 4.0, images, fc_batch=1)
    return device_storage(PART, costs, np.array([park], float), np.array(capacity, float), 4.0)


def test_memory_per_device_by_hand():
    s = storage([1e9] * 3, [0, 0, 0])
    # LPRAM = channels x K² x OC (§5.2.2) and an equal LGB, 4-byte values
    assert s.weights[0].tolist() == [2 * 4 * 3 * 9 * 4, 2 * 4 * 2 * 9 * 6, 2 * 4 * 2 * 9 * 6]
    # Act-RAM: one image of its own input channels (64 values each)
    assert s.activations[0].tolist() == [4 * 3 * 64, 4 * 2 * 64, 4 * 2 * 64]
    assert s.need[0].tolist() == [864 + 768, 864 + 512, 864 + 512]
    assert s.dram[0].tolist() == [0, 0, 0]
    assert storage([1e9] * 3, [0, 0, 0], images=2.0).activations[0, 0] == 2 * 768


def test_overflow_is_parked_on_the_nearest_upstream_devices():
    capacity = [3000, 1500, 1000]
    fraction = overflow_fraction(storage(capacity, [0, 0, 0]), np.array(capacity, float))[0]
    assert fraction.tolist() == pytest.approx([0, 0, (1376 - 1000) / 864])
    s = storage(capacity, [0, 0, 0.5])  # park half of device 2's 864 B
    # device 1 (nearest) has 1500 - 1376 = 124 B spare, device 0 takes the other 308 B
    assert s.hosted[0].tolist() == [308, 124, 0]
    assert s.need[0].tolist() == [1632 + 308, 1500, 1376 - 432]
    assert s.spill[0].tolist() == [0, 0, 0] and s.unplaced[0].tolist() == [0, 0, 0]
    assert list(s.flows.of(0)) == [(1, 2, 124 / 8), (0, 2, 308 / 8)]  # weight values (half of each block: gradients)
    fwd, bwd = parked_hops(s.flows, 1, 3, passes=2)
    # weights travel to device 2 twice per image (FP and EB), their gradients back once
    assert fwd[0].tolist() == [2 * 308 / 8, 2 * 432 / 8] and bwd[0].tolist() == [308 / 8, 432 / 8]


def test_what_fits_nowhere_falls_back_to_dram_at_a_price():
    s = storage([1700, 1500, 1000], [0, 0, 0.5])  # device 0 has only 68 B spare now
    assert s.hosted[0].tolist() == [68, 124, 0]
    assert s.unplaced[0, 2] == 432 - 192
    # every byte held in DRAM crosses the DRAM interface twice per image
    assert s.dram[0].tolist() == [0, 0, 2 * 240]
    s = storage([1000, 1000, 1000], [0, 0, 0])  # no parking: the excess spills
    assert s.spill[0].tolist() == [632, 376, 376]
    assert s.dram[0].tolist() == [2 * 632, 2 * 376, 2 * 376]
