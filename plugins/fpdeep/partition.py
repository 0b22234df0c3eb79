"""Where the chain is cut and how fast each device runs its part: FPDeep §3.2, §4.2, §6.3.3.

Pure numpy on plain arrays (no optmap objects; range sums from optmap.schedule), vectorised over a
population of M mappings.

The work line. Every layer's FP + EB + PG work (``LayerTable.work``, DSP-cycles) is laid end to
end; a cut is a point on that line (``slot / grid × total``), rounded to the nearest unit of the
layer it falls in (a channel of the layer's split dimension). Device j runs the units between cut
j and cut j + 1 (one device may run parts of several layers, and one layer may span several
devices, §3.2). ``grid`` is chosen so that every unit boundary has a slot (:func:`cut_grid`).

Compute (note §2.2, §5.3–5.5). A portion of ``c`` units of layer l runs FP, EB and PG on separate
CE arrays of ``t`` tiles each; a tile is K×K MACs, so the portion takes ``3 t K²`` DSPs (rounded
to a multiple of K², §6.3.3) and ``macs_per_unit·c / (t K² f)`` seconds per image, f the MACs per
second of one DSP. The portions of a device run concurrently; the device's stage time is their
maximum, and it gives its portions the tiles that minimise it within its DSP budget
(:func:`stage_times`, exact). The pipeline period is the slowest stage (FPDeep Eq. 7, read as a
period, note §5.1).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from optmap import schedule

from .layers import LayerTable

DRAM_PASSES = 2  # bytes moved per image for every byte held in DRAM (see .memory)
BISECTIONS = 64  # halvings of log(hi / lo): the stage time is exact to ~1e-15 relative
EPS = 1e-12  # float slack in ceilings of exact quotients
STAGE_TOLERANCE = 1e-9  # relative precision of a multi-portion device's stage time


def cut_grid(table: LayerTable) -> int:
    """Slots on the work line such that every unit boundary of every split has its own slot."""
    return int(math.ceil(table.work.sum() / table.min_unit_work)) + 1


@dataclass(frozen=True, eq=False)
class Partition:
    """Decoded cuts of M mappings: ``chan[m, j, l]`` units of layer l on device j, plus splits."""

    splits: np.ndarray  # (M, L) 0 = II (ICP), 1 = III (OCP)
    units: np.ndarray  # (M, L) units of each layer under its split
    chan: np.ndarray  # (M, N, L)
    bounds: np.ndarray  # (M, N + 1) global unit index of every device boundary

    @property
    def present(self) -> np.ndarray:
        return self.chan > 0


def decode(table: LayerTable, slots: np.ndarray, splits: np.ndarray, grid: int) -> Partition:
    """Cuts (M, N - 1) slots in [0, grid] (read as a sorted set) and splits (M, L) → Partition."""
    slots = np.sort(np.asarray(slots, float), axis=1)
    splits = np.asarray(splits, int)
    m = len(splits)
    start = table.work_start
    x = slots / grid * start[-1]
    layer = np.clip(np.searchsorted(start[1:], x, side="right"), 0, len(table) - 1)
    units = np.take_along_axis(np.broadcast_to(table.units, (m, *table.units.shape)), splits[..., None], 2)[..., 0]
    frac = (x - start[layer]) / table.work[layer]
    chan_at_cut = np.floor(frac * np.take_along_axis(units, layer, 1) + 0.5)
    offset = schedule.prefix_sums(units)
    bounds = np.concatenate([np.zeros((m, 1)), np.take_along_axis(offset, layer, 1) + chan_at_cut,
                             offset[:, -1:]], axis=1)
    lo = np.maximum(bounds[:, :-1, None], offset[:, None, :-1])
    hi = np.minimum(bounds[:, 1:, None], offset[:, None, 1:])
    return Partition(splits, units, np.maximum(hi - lo, 0.0), bounds)


def encode(table: LayerTable, bounds: np.ndarray, splits: np.ndarray, grid: int) -> np.ndarray:
    """Slots (N - 1,) that :func:`decode` turns back into the unit boundaries ``bounds[1:-1]``."""
    units = table.units[np.arange(len(table)), splits]
    offset = schedule.prefix_sums(units)
    inner = np.asarray(bounds[1:-1], float)
    layer = np.clip(np.searchsorted(offset, inner, side="right") - 1, 0, len(table) - 1)
    x = table.work_start[layer] + (inner - offset[layer]) / units[layer] * table.work[layer]
    return np.rint(x / table.work_start[-1] * grid)


def portion_macs(table: LayerTable, part: Partition) -> np.ndarray:
    """Per-phase MACs per image of every portion (M, N, L)."""
    per_unit = np.take_along_axis(table.macs_per_unit[None], part.splits[..., None], 2)[..., 0]
    return part.chan * per_unit[:, None, :]


def tiles_for(macs: np.ndarray, kernel: np.ndarray, rate: np.ndarray, period) -> np.ndarray:
    """Tiles per phase each portion needs to finish ``macs`` within ``period`` (0 for no work)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(macs > 0, macs / (kernel * rate * period), 0.0)
    return np.ceil(need * (1 - EPS))


def stage_times(macs: np.ndarray, table: LayerTable, rate: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """Each device's smallest stage time (M, N): the min over tile counts within its DSP budget.

    ``macs`` (M, N, L) per-phase MACs of every portion; ``rate`` (N,) MACs/s of one DSP; ``budget``
    (N,) DSPs the CE arrays may use. ``inf`` where the portions cannot get one tile each. A device
    with one portion gives it every tile that fits; with several, feasibility of a target period
    is monotone, so a bisection finds the optimum (to ``STAGE_TOLERANCE``); a feasible target's
    tiles give a stage time at most the target, which becomes the upper end.
    """
    m, n, layers = macs.shape
    kernel, per_tile = table.kernel, table.phases * table.kernel
    flat = macs.reshape(-1, layers)
    rate1, budget1 = np.tile(rate, m), np.tile(budget, m)
    active = flat > 0
    portions = active.sum(1)
    fits_one = (active * per_tile).sum(1) <= budget1  # one tile per phase for every portion
    single = np.where(active, flat / (kernel * np.floor(budget1[:, None] / per_tile) * rate1[:, None]), 0.0).max(1)
    stage = np.where(portions == 1, single, 0.0)
    pending = np.flatnonzero((portions > 1) & fits_one)
    w, r, b, act = flat[pending], rate1[pending, None], budget1[pending], active[pending]

    def achieved(period: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tiles = np.maximum(tiles_for(w, kernel, r, period[:, None]), act)
        fits = (per_tile * tiles).sum(1) <= b
        return fits, np.where(act, w / (kernel * r * np.maximum(tiles, 1)), 0.0).max(1)

    lo = (w * table.phases).sum(1) / (b * r[:, 0])
    hi = achieved(np.where(act, w / (kernel * r), 0.0).max(1))[1]  # one tile each
    for _ in range(BISECTIONS):
        if (hi <= lo * (1 + STAGE_TOLERANCE)).all():
            break
        mid = np.sqrt(lo * hi)
        fits, value = achieved(mid)
        hi, lo = np.where(fits, np.minimum(value, hi), hi), np.where(fits, lo, mid)
    stage[pending] = hi
    stage[~fits_one] = np.inf
    return stage.reshape(m, n)


# --- the exact partition (the fpdeep engine's phases 1-2) ------------------------------------

PERIOD_TOLERANCE = 1e-6  # the engine's period is within this relative gap of the optimum


def min_period_partition(table: LayerTable, splits: np.ndarray, devices: dict, per_unit: dict,
                         traffic: np.ndarray, hint: float | None = None,
                         below: float | None = None) -> tuple[np.ndarray, float] | None:
    """The unit boundaries (N + 1,) minimising the period: every device's stage time — its CE
    arrays with K×K-rounded tiles, and its DRAM traffic (FC weights, and whatever exceeds its
    BRAM, priced as in :mod:`.memory` without parking) — and the time each link needs for the
    traffic of the cut before it.

    ``devices``: arrays (N,) ``rate`` (MACs/s of a DSP), ``budget`` (DSPs), ``bram`` (bytes),
    ``dram_rate`` (B/s) and ``link_rate`` (values/s of the link after the device; the last is
    unused). ``per_unit``: arrays (L, 2) per unit of each layer and split, ``bram`` and
    ``dram`` bytes, and ``bram_fixed`` bytes every device of the layer holds. ``traffic``
    (U + 1,): values per image crossing a cut before each unit (and at the end).

    The classic algorithm for min-max partitions of a sequence with monotone interval costs: a
    test "can every device, in order, take as much as fits within period T, ending at a cut its
    link can carry, and cover the chain?" inside a bisection on T. Greedy is exact: the ends one
    device can reach form a prefix (more units never need fewer DSPs or bytes), and starting later
    never reaches less, so the furthest allowed end is never worse. A feasible test also gives the
    period its partition achieves, which tightens the upper end; ``hint``, a period near the
    answer, narrows the first bracket. Devices past the last needed one stay empty. Returns the
    boundaries and their period, within ``PERIOD_TOLERANCE`` of the optimum; None, after a
    single test, when no partition has a period below ``below``.
    """
    splits = np.asarray(splits, int)
    rows = np.arange(len(table))
    units = [int(u) for u in table.units[rows, splits]]
    offset = schedule.prefix_sums(units).astype(int)
    macs = [float(v) for v in table.macs_per_unit[rows, splits]]
    kernel, per_tile = [float(k) for k in table.kernel], [float(v) for v in table.phases * table.kernel]
    bram_unit, bram_fixed, dram_unit = ([float(v) for v in per_unit[key][rows, splits]]
                                        for key in ("bram", "bram_fixed", "dram"))
    fleet = list(zip(*(np.asarray(devices[key], float).tolist()
                       for key in ("rate", "budget", "bram", "dram_rate", "link_rate"))))
    layers, total, n = len(units), int(offset[-1]), len(fleet)
    index, ends = np.arange(total + 1), offset.tolist()

    def extend(start: int, limit: int, period: float, device) -> tuple[int, float]:
        """The furthest end ≤ ``limit`` one device reaches from ``start``, and its stage time."""
        mac_rate, left, bram, dram_rate, _ = device
        layer = bisect.bisect_right(ends, start) - 1
        done, memory, fc_bytes, achieved = start, 0.0, 0.0, 0.0
        allowance = period * dram_rate  # DRAM bytes per image that fit the period
        while layer < layers and done < limit:
            speed = kernel[layer] * mac_rate * period  # MACs one tile does within the period
            tiles = left // per_tile[layer]
            take = math.floor(tiles * speed / macs[layer] * (1 + EPS)) if tiles >= 1 else 0
            while take > 0 and math.ceil(macs[layer] * take / speed * (1 - EPS)) > tiles:
                take -= 1
            # DRAM bytes = FC bytes + 2 × (BRAM demand over capacity): both linear pieces must fit
            spare = allowance - fc_bytes
            over = allowance - fc_bytes - DRAM_PASSES * (memory + bram_fixed[layer] - bram)
            for budget_bytes, slope in ((spare, dram_unit[layer]), (over, dram_unit[layer] + DRAM_PASSES * bram_unit[layer])):
                if slope > 0 and budget_bytes < math.inf:
                    take = min(take, math.floor(budget_bytes / slope * (1 + EPS)))
                elif budget_bytes < -EPS * allowance:
                    take = 0
            take = min(take, ends[layer + 1] - done, limit - done)
            if take <= 0:
                break
            need = math.ceil(macs[layer] * take / speed * (1 - EPS))
            memory += bram_fixed[layer] + bram_unit[layer] * take
            fc_bytes += dram_unit[layer] * take
            dram = fc_bytes + DRAM_PASSES * max(0.0, memory - bram)
            achieved = max(achieved, macs[layer] * take / (kernel[layer] * mac_rate * need), dram / dram_rate)
            left -= per_tile[layer] * need
            done += take
            if done < ends[layer + 1]:
                break
            layer += 1
        return done, achieved

    def reach(period: float) -> tuple[list[int], float] | None:
        """Boundaries of the greedy partition at ``period`` and its achieved period, or None."""
        bounds, achieved, cache = [0], 0.0, {}
        for j, device in enumerate(fleet):
            start = bounds[-1]
            end, time = extend(start, total, period, device)
            if j < n - 1 and end < total:
                limit = device[4] * period
                if limit not in cache:  # the last allowed cut at or before each unit
                    cache[limit] = np.maximum.accumulate(np.where(traffic <= limit * (1 + EPS), index, -1))
                allowed = int(cache[limit][end])
                if allowed < start:
                    return None
                if allowed < end:
                    end, time = extend(start, allowed, period, device)
                time = max(time, traffic[end] / device[4])
            bounds.append(end)
            achieved = max(achieved, time)
        return (bounds, achieved) if bounds[-1] == total else None

    if below is not None and reach(below) is None:
        return None
    bound = float(table.work.sum() / (np.asarray(devices["budget"]) * devices["rate"]).sum())  # perfect balance
    lo = hi = bound
    found, step = reach(bound), 0.02
    if found is None and hint is not None and hint > bound:
        probe = reach(hint)
        if probe is not None:
            low = max(bound, probe[1] / 1.01)
            if reach(low) is None:
                lo, hi, found = low, probe[1], probe
    while found is None:
        lo, hi, step = hi, bound * (1 + step), 2 * step
        found = reach(hi)
        if step > 1e12:
            raise ValueError("no partition fits: a layer portion cannot get one tile on any device")
    bounds, hi = found
    while hi > lo * (1 + PERIOD_TOLERANCE):
        mid = math.sqrt(lo * hi)
        probe = reach(mid)
        if probe is None:
            lo = mid
        else:
            bounds, hi = probe
    return np.array(bounds, float), hi
