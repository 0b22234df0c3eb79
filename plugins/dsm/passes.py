"""One layer, one pass, on one chip, for a whole array of candidate (core split, tile) pairs at once (DSM §II-D).

The model is the paper's bandwidth-centric one, ``TotCy = MAX{PriComp, OvlDt} + AuxComp +
Non-OvlDt``, with every open formula a reconstruction ([R], note §4.4) written out here:

* Tensor roles (note §4.4a): FWD ``O = K·I`` (output dims out, ij, mb), BWD ``E_I = Kᵀ·E_O``
  (in, ij, mb), UPD ``dK = E_O·Iᵀ`` (out, in, kij). The PE array holds a block of ``rows x cols``
  (in, out) pairs and streams ij x mb vectors through it (output-stationary in UPD, weight-
  stationary otherwise), so a block takes ``max(stream, load_cycles)`` cycles: the stream must
  cover the loading of the next block, which is why P needs ij·mb >= rows (note §7.1).
* Core <-> memory traffic (Fig. 5 FetchInp/FetchKer/WriteOut, overlapped by double buffering):
  output-stationary tiling, so an operand is refetched once per tile of the output dims it lacks
  (note §4.4e); data shared by cores is fetched once and multicast (§II-D). Links and their loads:
  HBM = unique bytes, the ring's busiest link next to the memory port = unique bytes (multicast
  travels both ways once, a core's own data half the time each way), a core's scratchpad port =
  its own bytes. OvlDt = the slowest (§II-D: "determined by the link which is the slowest").
* PartialSumAcc (not overlapped): when the core split cuts a reduction dimension, the cores of a
  group reduce-scatter their partial outputs over the ring (:func:`optmap.collectives.reduce_scatter`).
* AuxComp: scratchpad accesses of the SFP ops over the scratchpad bandwidth, PE array idle (§II-D).
* Capacity: streamed tensors double-buffered (2 tiles), resident tensors whole (note §4.4e).

Tensors kept in the scratchpad (memory reuse, §III-B) are flagged per operand (``resident``): no
HBM traffic, one core-to-core reshuffle on the ring into the consumer's layout, whole CoreD slice
in the scratchpad.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optmap.collectives import reduce_scatter

from .chip import ChipConfig
from .layers import PrimaryLayer
from .splits import IJ, IN, KIJ, MB, OUT

TENSORS = {"I": (IN, IJ, MB), "K": (OUT, IN, KIJ), "O": (OUT, IJ, MB)}
ROLES = {"fwd": ("I", "K", "O"), "bwd": ("O", "K", "I"), "upd": ("I", "O", "K")}  # operand A, operand B, output
OUTPUT_DIMS = {"fwd": (OUT, IJ, MB), "bwd": (IN, IJ, MB), "upd": (OUT, IN, KIJ)}


@dataclass(frozen=True)
class Rotation:
    """Feature rotation of a model-parallel layer (Fig. 5 RotateAlongX/Y): ``n_x`` steps along X,
    ``n_y`` along Y among ``group`` chips; ``t_x``/``t_y`` seconds per step; ``nbytes`` the whole
    rotated tensor per chip. Received slices travel the chip links and the on-chip interconnect
    only (Fig. 5 lists no memory bus for RotateAlongX/Y, unlike Relayout): a chip reads just its
    own 1/group slice from HBM. Fields may be arrays (one per candidate)."""

    group: np.ndarray | int = 1
    n_x: np.ndarray | int = 0
    n_y: np.ndarray | int = 0
    t_x: np.ndarray | float = 0.0
    t_y: np.ndarray | float = 0.0
    nbytes: np.ndarray | float = 0.0

    def overlapped(self, busy: np.ndarray) -> np.ndarray:
        """FWD and UPD: Σ over the group's iterations of max(compute, transfer) along each axis (note §4.4i).

        The X and Y moves use different links and run concurrently, so the slower axis paces the
        iterations: §II-D times a group of concurrent transfers by its slowest link, and §II-E's
        rule (Y bandwidth 1/M of X's, for Y traffic 1/M of X's) balances exactly this maximum (it
        would not balance a sum, whose optimum is a Y bandwidth of 1/sqrt(M) of X's).
        """
        step = busy / self.group
        along_x = self.n_x * np.maximum(step, self.t_x) + (self.group - self.n_x) * step
        along_y = self.n_y * np.maximum(step, self.t_y) + (self.group - self.n_y) * step
        return np.maximum(along_x, along_y)

    @property
    def exposed(self):
        """BWD: outputs rotate, which cannot overlap (Fig. 5); X and Y moves concurrent (§II-D, §II-E)."""
        return np.maximum(self.n_x * self.t_x, self.n_y * self.t_y)


@dataclass
class PassCost:
    """Per-candidate seconds of one pass (one step, one spatial minibatch) and its scratchpad need."""

    pri: np.ndarray  # PriComp
    ovl: np.ndarray  # MAX{PriComp, OvlDt} with rotation folded in
    psum: np.ndarray  # PartialSumAcc (not overlapped)
    aux: np.ndarray  # AuxComp
    capacity: np.ndarray  # bytes of scratchpad needed


def _dims(layer: PrimaryLayer, tensor: str) -> tuple[int, ...]:
    if tensor == "K" and not layer.shared_kernel:
        return TENSORS["K"] + (MB,)  # attention: one key matrix per sample
    return TENSORS[tensor]


def tensor_size(layer: PrimaryLayer, tensor: str, work) -> np.ndarray:
    """Elements of ``tensor`` ("I", "K", "O") over ``work`` (five broadcastable arrays, DIMS order);
    an input tile includes its halo (note §4.4e)."""
    size = 1.0
    for k in _dims(layer, tensor):
        if tensor == "I" and k == IJ and layer.kind == "conv":
            side = np.sqrt(work[IJ]) * layer.stride + layer.kernel_side - 1
            size = size * np.minimum(side * side, layer.in_ij)
        else:
            size = size * work[k]
    return size


def _prod(work, dims) -> np.ndarray:
    out = 1.0
    for k in dims:
        out = out * work[k]
    return out


def output_dims(layer: PrimaryLayer, pass_: str) -> tuple[int, ...]:
    """Dimensions of the pass's output; the others are reduced (note §4.4a)."""
    dims = OUTPUT_DIMS[pass_]
    return dims + (MB,) if pass_ == "upd" and not layer.shared_kernel else dims


def pass_cost(
    layer: PrimaryLayer,
    pass_: str,
    core: list,
    tile: list,
    split: list,
    hw: ChipConfig,
    *,
    load_cycles: int,
    resident=(False, False, False),
    write_back=False,
    output_traffic=1.0,
    reserved=0.0,
    rotation: Rotation = Rotation(),
    aux_accesses=0.0,
) -> PassCost:
    """Cost of ``pass_`` for candidates given per dimension (DIMS order) as broadcastable arrays.

    ``core`` is CoreD, ``tile`` ArrayD, ``split`` the core split factors (one step and one spatial
    minibatch). The engine broadcasts splits against tile levels (a dense grid), the evaluator
    passes one row per mapping. Per candidate (scalars or arrays): ``resident`` flags operand A,
    operand B and the output as kept in the scratchpad; ``write_back`` stores a resident operand A
    to HBM meanwhile (training keeps activations for UPD, §III-B1); ``output_traffic`` multiplies
    the output's traffic (partial gradients accumulated in HBM read-modify-write); ``reserved``
    bytes of scratchpad are taken (preloaded weights); ``aux_accesses`` SFP accesses per core.
    """
    e, cores = hw.element_bytes, hw.cores
    tiles = [np.ceil(c / t) for c, t in zip(core, tile)]
    n_tiles = _prod(tiles, range(5))

    # PriComp: blocks of rows x cols (in, out) per tile, each streaming ij x mb vectors (§II-C "P")
    blocks = np.ceil(tile[IN] / hw.array_rows) * np.ceil(tile[OUT] / hw.array_cols) * tile[KIJ]
    stream = tile[IJ] * tile[MB]
    if not layer.shared_kernel:  # a per-sample kernel block serves one sample's vectors only
        blocks, stream = blocks * tile[MB], tile[IJ]
    cycles = np.ceil(n_tiles * blocks / hw.arrays) * np.maximum(stream, load_cycles) * layer.repeats
    pri = (cycles + hw.array_rows + hw.array_cols) / hw.frequency  # + pipeline fill (the "startup time")

    # Core <-> memory traffic (Fig. 5, overlapped)
    out_dims = set(output_dims(layer, pass_))
    hbm = ring = port = 0.0
    capacity = reserved
    for role, tensor in enumerate(ROLES[pass_]):
        dims = _dims(layer, tensor)
        ratio = layer.out_ratio if tensor == "O" else 1.0  # pooled outputs leave the chip smaller
        holders = _prod(split, dims)  # distinct slices across the chip's cores
        whole = tensor_size(layer, tensor, core) * (e * ratio)
        piece = tensor_size(layer, tensor, tile) * e
        kept = resident[role]
        if role == 2:  # the output: written once, after the partial sums are reduced
            unique = whole * holders * output_traffic
            hbm = hbm + np.where(kept, 0.0, unique)
            ring = ring + np.where(kept, 0.0, unique / 2)
            port = port + np.where(kept, 0.0, unique / cores)
            capacity = capacity + np.where(kept, whole + piece, 2 * piece)
            continue
        mine = piece * ratio * _prod(tiles, sorted(set(dims) | out_dims))  # refetched per tile of other outputs
        unique = mine * holders
        local = 1.0 / rotation.group if role == 0 else 1.0  # rotated features: the rest come over the links (Fig. 5)
        stored = whole * holders * write_back
        shared = np.where(holders < cores, unique, unique / 2)  # multicast vs a core's own data
        # a kept activation or error is re-laid for its consumer; kept weights already sit where they are used
        relaid = 0.0 if tensor == "K" else _shuffle_link_bytes(whole * holders, cores, hw.interconnect)
        hbm = hbm + np.where(kept, stored, unique * local)
        ring = ring + np.where(kept, relaid + stored / 2, shared)
        port = port + np.where(kept, stored / cores, mine)
        capacity = capacity + np.where(kept, whole, 2 * piece)
    ovl_mem = np.maximum(np.maximum(hbm / hw.hbm_effective, ring / hw.ring_bandwidth), port / hw.spad_bandwidth)
    busy = np.maximum(pri, ovl_mem)
    ovl = rotation.overlapped(busy)

    # PartialSumAcc: reduce-scatter of partial outputs among the cores sharing an output tile
    group = _prod(split, [k for k in range(5) if k not in out_dims])
    partial = tensor_size(layer, ROLES[pass_][2], core) * e
    psum = reduce_scatter(partial, group, hw.ring_bandwidth, 0.0)
    if hw.interconnect == "split-bus":  # [R] the two bus halves carry the C/g groups' traffic in turn
        psum = psum * np.maximum(1.0, cores / group / 2)
    aux = aux_accesses * e / hw.spad_bandwidth
    return PassCost(pri=pri, ovl=ovl, psum=psum, aux=aux, capacity=capacity)


def _shuffle_link_bytes(chip_bytes, cores: int, interconnect: str):
    """Busiest-link bytes of an all-to-all among the cores (a resident tensor re-laid for its consumer).

    Ring: each core sends 1/C of its share to every core over shortest paths, floor(C²/4) hops per
    core pair set, spread over 2C directed links. Split bus: each half carries half of the data.
    """
    if interconnect == "split-bus":
        return chip_bytes / 2
    return chip_bytes * (cores * cores // 4) / (2.0 * cores * cores)
