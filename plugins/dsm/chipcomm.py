"""Chip-to-chip transfers on the 2-D torus (DSM Fig. 5, §II-D, Fig. 7) and the parallelism types.

A parallelism type splits ChipD's mb (data) and out (model) over the two torus axes (§III-A):
Data splits mb over all M·N chips, Model splits out over all, DataXModelY splits mb over X (M)
and out over Y (N), ModelXDataY out over X and mb over Y. Hence:

* gradient reduction (UPD, data-parallel axes): ring reduce-scatter along X, then along Y on
  the 1/M-th that is left, pipelined; then the new weights are all-gathered back (Y then X);
  HBM reads own and received partials and writes the sums (note §4.4h: "memory-bound");
* rotation (model-parallel axes): M·N feature iterations, one X move each, one Y move every M
  (§II-D); each move sends a 1/G slice both ways round the ring (both links of the axis);
* relayout (adjacent layers of different types): an all-to-all along every axis whose role
  (mb or features) changes, plus reading and writing the tensor in HBM (Fig. 5 lists the memory
  bus); the time of the group is that of its slowest link (§II-D).

Ring collectives come from :mod:`optmap.collectives` with the axis bandwidth (both directions of
both links of a chip along that axis, :class:`Torus`) and the links' latency.
"""

from __future__ import annotations

from optmap.collectives import allgather, reduce_scatter

from .chip import ChipConfig
from .passes import Rotation
from .torus import Torus

PTYPES = ("Data", "Model", "DataXModelY", "ModelXDataY")
BASE_PTYPES = PTYPES[:2]  # without the hybrid optimisation (§II-C)
ROLES = {"Data": ("mb", "mb"), "Model": ("out", "out"), "DataXModelY": ("mb", "out"), "ModelXDataY": ("out", "mb")}
PIPELINE = "pipe"  # the layout of a timestep-pipelining group (every axis differs from any type)


def chips_along(ptype: str, torus: Torus) -> tuple[int, int]:
    """(chips splitting mb, chips splitting out) of a parallelism type (note §4.4b)."""
    sizes = {"x": torus.m, "y": torus.n}
    roles = ROLES[ptype]
    mb = out = 1
    for axis, role in zip("xy", roles):
        if role == "mb":
            mb *= sizes[axis]
        else:
            out *= sizes[axis]
    return mb, out


def gradient_axes(ptype: str, torus: Torus) -> list[tuple[int, float]]:
    """(chips, axis bandwidth) of each data-parallel axis, in reduction order (X then Y)."""
    axes = (("x", torus.m, torus.x_bandwidth), ("y", torus.n, torus.y_bandwidth))
    return [(p, bw) for (axis, p, bw), role in zip(axes, ROLES[ptype]) if role == "mb" and p > 1]


def gradient_payloads(ptype: str, torus: Torus, weight_bytes: float) -> list[float]:
    """Bytes entering each reduction phase: W along X, then W/M along Y (§III-A: "1/M of X")."""
    payloads, left = [], weight_bytes
    for p, _ in gradient_axes(ptype, torus):
        payloads.append(left)
        left /= p
    return payloads


def gradient_reduction(ptype: str, torus: Torus, hw: ChipConfig, weight_bytes: float,
                       staging: str = "links") -> float:
    """SumofGrad + BroadcastW (Fig. 5, not overlapped): reduce-scatter then all-gather, per axis, pipelined.

    ``staging`` (note §7.9): ``"links"`` (Fig. 5 lists chip-to-chip links and the on-chip
    interconnect, no memory bus): received pieces stream link -> ring -> link, so HBM only reads
    the chip's own partial gradient once and writes the new weights once; ``"memory"`` (Fig. 13
    calls the reduction "memory-bound"): received partials are staged in HBM, which reads own and
    received partials and writes the sums, and the broadcast writes what it receives and reads
    what it sends.
    """
    axes = gradient_axes(ptype, torus)
    if not axes or weight_bytes == 0:
        return 0.0
    payloads = gradient_payloads(ptype, torus, weight_bytes)
    reduce = max(reduce_scatter(w, p, bw, torus.latency) for w, (p, bw) in zip(payloads, axes))
    gather = max(allgather(w, p, bw, torus.latency) for w, (p, bw) in zip(payloads, axes))
    if staging == "links":
        return max(reduce, weight_bytes / hw.hbm_effective) + max(gather, weight_bytes / hw.hbm_effective)
    moved = sum((p - 1) / p * w for w, (p, _) in zip(payloads, axes))
    return max(reduce, 3 * moved / hw.hbm_effective) + max(gather, 2 * moved / hw.hbm_effective)


def rotation(ptype: str, torus: Torus, nbytes: float) -> Rotation:
    """Rotation of ``nbytes`` (the whole feature tensor one chip needs) among the model-parallel chips."""
    roles = ROLES[ptype]
    if ptype == "Model":
        group, n_x, n_y = torus.chips, torus.chips - torus.n, torus.n - 1
    elif roles[0] == "out":
        group, n_x, n_y = torus.m, torus.m - 1, 0
    elif roles[1] == "out":
        group, n_x, n_y = torus.n, 0, torus.n - 1
    else:
        return Rotation()
    if group == 1:
        return Rotation()
    piece = nbytes / group
    return Rotation(group=group, n_x=n_x, n_y=n_y, t_x=piece / torus.x_bandwidth + torus.latency,
                    t_y=piece / torus.y_bandwidth + torus.latency, nbytes=nbytes)


def _all_to_all(per_chip: float, chips: int, axis_bandwidth: float) -> float:
    """All-to-all along one ring of ``chips``: floor(p²/4) byte-hops per 1/p share, on 2p directed links."""
    if chips == 1:
        return 0.0
    return per_chip * (chips * chips // 4) / (chips * axis_bandwidth)


def relayout(before: str, after: str, torus: Torus, hw: ChipConfig, per_chip: float) -> float:
    """RelayoutAlongX/Y (Fig. 5, not overlapped) of a tensor of ``per_chip`` bytes between two layouts."""
    if before == after or torus.chips == 1:
        return 0.0
    old = ROLES.get(before, (PIPELINE, PIPELINE))
    new = ROLES.get(after, (PIPELINE, PIPELINE))
    links = [_all_to_all(per_chip, size, bandwidth)
             for a, b, size, bandwidth in zip(old, new, (torus.m, torus.n), (torus.x_bandwidth, torus.y_bandwidth))
             if a != b and size > 1]
    if not links:  # the layouts differ only along an axis of one chip: nothing moves
        return 0.0
    return max(*links, 2 * per_chip / hw.hbm_effective)


def stage_transfer(torus: Torus, nbytes: float) -> float:
    """Timestep pipelining (§III-D): one step's output of a stage to the next stage's rows, over the M
    chips' Y links at the boundary (one link each, half the Y bandwidth)."""
    if torus.n == 1:
        return 0.0
    return nbytes / (torus.m * torus.y_bandwidth / 2) + torus.latency
