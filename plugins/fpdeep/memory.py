"""On-chip memory per device, parameter balancing and the DRAM fall-back: FPDeep §3.4.2, §5.2.2.

Per device, in values (note §2.2; Eqs. 10 and 12 with β = 1, every buffer in BRAM):

* LPRAM: the weights of its CONV portions (ICP: ``c · K² · OC``, the paper's SF·K·K·OC);
* LGB: their gradient buffer, averaged over the mini-batch, as large as LPRAM;
* Act-RAM: the inputs of its portions from FP until PG uses them, ``activation_images`` images'
  worth (ICP: its own input channels; OCP: every input channel);
* BPRAM + BGB: weights and gradients it hosts for other devices (parameter balancing).

FC weights live in DRAM (§7: "we only use off-chip memory when we are processing the fully
connected layer"); the FC layers read them once per ``fc_batch`` images for FP and for EB and
update their gradients once (read + write): 4 × weights per ``fc_batch`` images.

Parameter balancing (§3.4.2, Fig. 6). The mapping parks a fraction of a device's weights (with
their gradient buffer) on other devices: users are served deepest first (later layers first), each
from the nearest device with room, upstream first (the paper's example parks layer-8 weights in
FPGAs 3 and 1 and streams them downstream), then downstream. Each image, the parked weights travel
to the user ``weight_passes`` times (FP and EB each fetch them: the user has no room to keep
them between the two) and their gradients travel back once.

Fall-back (priced). Parked data no device can host, and anything over a device's BRAM, is held in
that device's DRAM; every such byte crosses the DRAM interface twice per image (weights read by
FP and EB, gradients read and written by PG, activations written by FP and read by PG). The DRAM
time is part of the device's stage time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layers import LayerTable
from .partition import DRAM_PASSES, Partition

FC_DRAM_PASSES = 4  # FC weights: read for FP, read for EB, gradient read + write


@dataclass(frozen=True, eq=False)
class Storage:
    """Memory of M mappings on N devices (bytes), and the parked-weight flows of each mapping."""

    weights: np.ndarray  # LPRAM + LGB before parking
    activations: np.ndarray  # Act-RAM
    parked: np.ndarray  # LPRAM + LGB placed on other devices
    hosted: np.ndarray  # BPRAM + BGB
    unplaced: np.ndarray  # parked data no device could host (held in DRAM)
    need: np.ndarray  # on-chip demand after parking (Eq. 12's per-device storage)
    spill: np.ndarray  # need above BRAM (held in DRAM)
    dram: np.ndarray  # DRAM bytes moved per image, FC weights included
    flows: "Flows"  # the parked weight blocks


@dataclass(frozen=True, eq=False)
class UnitCosts:
    """Bytes per unit of each layer and split (L, 2): BRAM for LPRAM + LGB (CONV layers), BRAM
    for Act-RAM, Act-RAM every device of the layer holds whatever its share (OCP's inputs), and
    DRAM traffic per image of the FC weights."""

    weights: np.ndarray
    activations: np.ndarray
    activations_fixed: np.ndarray
    fc_dram: np.ndarray


def unit_costs(table: LayerTable, value_bytes: float, activation_images: float, fc_batch: int) -> UnitCosts:
    conv = (~table.fc)[:, None]
    return UnitCosts(
        weights=2.0 * value_bytes * table.weights_per_unit * conv,  # LPRAM + LGB
        activations=value_bytes * activation_images * table.act_per_unit,
        activations_fixed=value_bytes * activation_images * table.act_fixed,
        fc_dram=FC_DRAM_PASSES * value_bytes * table.weights_per_unit * ~conv / fc_batch,
    )


def _per_unit(values: np.ndarray, splits: np.ndarray) -> np.ndarray:
    return np.take_along_axis(np.broadcast_to(values, (len(splits), *values.shape)), splits[..., None], 2)[..., 0]


def device_storage(part: Partition, costs: UnitCosts, park: np.ndarray, capacity: np.ndarray,
                   value_bytes: float) -> Storage:
    """Memory per device for M mappings; ``park`` (M, N) is the parked fraction of each device."""

    def total(values: np.ndarray) -> np.ndarray:
        return (part.chan * _per_unit(values, part.splits)[:, None, :]).sum(-1)

    weights = total(costs.weights)
    activations = total(costs.activations) + (part.present * _per_unit(costs.activations_fixed, part.splits)[:, None, :]).sum(-1)
    demand = np.clip(park, 0.0, 1.0) * weights
    base = weights - demand + activations
    hosted, unplaced, flows = _place(demand, np.maximum(capacity - base, 0.0), value_bytes)
    need = base + hosted
    spill = np.maximum(need - capacity, 0.0)
    dram = DRAM_PASSES * (spill + unplaced) + total(costs.fc_dram)
    return Storage(weights, activations, demand - unplaced, hosted, unplaced, need, spill, dram, flows)


@dataclass(frozen=True)
class Flows:
    """Parked weight blocks of M mappings: mapping ``row``, ``donor`` and ``user`` devices, and the
    weight ``values`` (their gradients, as many, travel back)."""

    row: np.ndarray
    donor: np.ndarray
    user: np.ndarray
    values: np.ndarray

    def of(self, row: int):
        """(donor, user, values) of one mapping."""
        mine = self.row == row
        return zip(self.donor[mine].tolist(), self.user[mine].tolist(), self.values[mine].tolist())


def _place(demand: np.ndarray, spare: np.ndarray, value_bytes: float):
    """Greedy placement of parked bytes, vectorised over mappings: deepest user first, each from
    the nearest devices with room, upstream first."""
    m, n = demand.shape
    room, hosted, unplaced = spare.copy(), np.zeros_like(demand), demand.copy()
    parts = []
    for user in range(n - 1, -1, -1):
        left = demand[:, user]
        if not (left > 0).any():
            continue
        order = np.concatenate([np.arange(user - 1, -1, -1), np.arange(user + 1, n)])  # nearest first
        avail = room[:, order]
        take = np.clip(left[:, None] - (np.cumsum(avail, axis=1) - avail), 0.0, avail)
        room[:, order] -= take
        hosted[:, order] += take
        unplaced[:, user] = left - take.sum(1)
        rows, k = np.nonzero(take > 0)
        parts.append((rows, order[k], np.full(len(rows), user), take[rows, k] / (2.0 * value_bytes)))
    columns = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, int if i < 3 else float)
               for i in range(4)]
    return hosted, np.maximum(unplaced, 0.0), Flows(*columns)


def overflow_fraction(storage: Storage, capacity: np.ndarray) -> np.ndarray:
    """The fraction of each device's weights it must park to fit its BRAM (0 where it fits)."""
    over = np.maximum(storage.weights + storage.activations - capacity, 0.0)
    return np.where(storage.weights > 0, np.minimum(over / np.maximum(storage.weights, 1e-300), 1.0), 0.0)

