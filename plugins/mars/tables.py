"""Per-layer cost tables: every layer × every strategy on one kind of accelerator set (note §3.3-3.7, §4.3b).

Reconstruction (the paper gives no equations; note §3, every term an option of the ``mars``
cost model). For a set of P accelerators with bottleneck bandwidth B and per-message latency α,
a layer with extents e under strategy (f, ss):

* compute (note §3.3): local extents e' = ⌈e / f⌉; with SS each of the P phases works on
  ⌈e'_ss / P⌉; T_comp = phases · cycles(e'') / f_clk. A set of mixed fixed designs (H2H) stalls
  until its slowest member finishes (Sec. VI-C): the max over the members' designs.
* design peaks (option ``design_peaks``): "pes" (default) scales each design's cycle model so
  that its peak equals Table II's #PEs in MAC/cycle (438, 572, 576), Sec. VI-A's "to make their
  theoretical performance comparable ... similar numbers of PEs"; "parameters" times it by the
  cycle model alone (peaks 448, 1144, 2304). A design without #PEs is never scaled.
* DDR roofline (option ``dram_gbytes_per_s``, off by default): the designs' own models ([14]
  SuperLIP after Zhang et al.'s roofline, [16] Lu et al.) bound a layer by its off-chip traffic;
  each device's local input, weight and output boxes cross its DDR at least once, so
  T_comp ≥ (|In_local| + |W_local| + |Out_local|) / B_DDR (a lower bound of every design's traffic).
* All-Reduce (Fig. 2(b), note §3.4): ES on a reduction dimension (C_in, K_h, K_w) sums partial
  outputs in groups of q = f_Cin·f_Kh·f_Kw: T_AR = 2(q−1)α + 2(q−1)/q · |Out shard| / B (ring).
* SS ring (Fig. 2(c), note §3.4): P − 1 steps passing a 1/P shard of the rotated operand's local
  box: T_SS = (P−1)(α + |X_local| / (P·B)); compute and transfer alternate (``ss_overlap`` off,
  note §6.9) or overlap (double buffering: T = T_phase + (P−1)·max(T_phase, step)).
* halo exchange (note §6.11, off by default as in the paper's Fig. 2): with ``halo`` on, a
  layer split along H (W) with a kernel taller (wider) than 1 first fetches K − 1 input rows
  (columns) of its local width (height) and channels from its neighbours: α + bytes / B.
* memory (Sec. III, note §3.7): per device, the weight box (or its 1/P shard plus a receive
  buffer under weight-SS) counts towards the sum over the layer set; input + output boxes (input
  shard plus buffer under input-SS) towards the maximum.

A strategy is valid for a layer when every split extent is at least its factor and, with SS, the
local extent along the SS dimension is at least P; a layer too small for any split keeps one
fallback (the whole P on its largest dimension) so that every layer has a strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .designs import Design
from .layers import LayerGraph
from .strategies import KH, KW, M, N, C, R, WEIGHT, StrategySet, rotated


@dataclass(frozen=True)
class SetClass:
    """What a layer's cost on an accelerator set depends on besides the design.

    ``members``: the fixed designs of the set's devices (H2H, sorted), or () when the set is
    configured with one chosen design (adaptive, Sec. III).
    """

    p: int
    bandwidth: float  # B/s, bottleneck of the set's ring (inf for one device)
    latency: float  # s, per-message α
    memory: float  # bytes, the smallest DRAM in the set
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class CostOptions:
    """The cost model's options that reach the tables (documented on :class:`MarsCostModel`)."""

    bytes_per_element: int = 2
    ss_overlap: bool = False
    halo: bool = False
    dram_bandwidth: float = float("inf")  # B/s of one device's DDR; inf = compute-bound designs
    peaks_from_pes: bool = False  # scale each design so its peak is Table II's #PEs (MAC/cycle)


@dataclass(frozen=True, eq=False)
class NodeTable:
    """(L, S) arrays for every layer and strategy of one (set class, design)."""

    compute: np.ndarray
    allreduce: np.ndarray
    shared: np.ndarray  # SS ring (net of overlap when ss_overlap)
    halo: np.ndarray  # halo exchange of spatial splits (0 unless the halo option is on)
    weight_bytes: np.ndarray
    act_bytes: np.ndarray
    valid: np.ndarray

    @cached_property
    def node(self) -> np.ndarray:
        """Layer latency without re-layout: compute + All-Reduce + SS + halo; ``inf`` when invalid."""
        return np.where(self.valid, self.compute + self.allreduce + self.shared + self.halo, np.inf)


def valid_strategies(graph: LayerGraph, strategies: StrategySet) -> np.ndarray:
    """(L, S) mask of the strategies each layer can take (module docstring)."""
    dims = graph.dims[:, None, :]
    f = strategies.factors[None].astype(float)
    ok = (dims >= f).all(-1)
    ss = strategies.ss
    if strategies.p > 1:
        local = np.ceil(dims / f)
        along = np.take_along_axis(local, np.maximum(ss, 0)[None, :, None].repeat(len(dims), 0), -1)[..., 0]
        ok &= (ss[None] < 0) | (along >= strategies.p)
        fallback = np.zeros((6,), dtype=np.int64)
        for layer, e in enumerate(graph.dims):
            if not ok[layer].any():
                fallback[:] = 1
                fallback[int(np.argmax(e))] = strategies.p
                ok[layer, strategies.index(fallback[None], np.array([-1]))[0]] = True
    return ok


def node_table(graph: LayerGraph, strategies: StrategySet, designs: tuple[Design, ...], cls: SetClass,
               options: CostOptions) -> NodeTable:
    """The cost tables of every layer of ``graph`` on set class ``cls`` with ``designs`` (max over them)."""
    p, b = strategies.p, options.bytes_per_element
    f = strategies.factors.astype(float)  # (S, 6)
    ss = strategies.ss
    dims = graph.dims[:, None, :]  # (L, 1, 6)
    local = np.ceil(dims / f[None])  # (L, S, 6)
    phase = local.copy()
    has_ss = ss >= 0
    if has_ss.any():
        cols = np.nonzero(has_ss)[0]
        phase[:, cols, ss[cols]] = np.ceil(local[:, cols, ss[cols]] / p)
    phases = np.where(has_ss, p, 1)[None, :]
    stride = graph.strides[:, None]
    compute = np.zeros(phase.shape[:2])
    for design in designs:
        t = design.seconds(phase, stride) * phases  # note §3.3; max over members (Sec. VI-C)
        if options.peaks_from_pes and design.pes:  # Sec. VI-A: "theoretical performance comparable"
            t = t * (design.macs_per_cycle / design.pes)
        unsupported = np.array([layer.op not in design.supports for layer in graph.layers])
        compute = np.maximum(compute, np.where(unsupported[:, None], np.inf, t))
    out = np.array([layer.out_elems for layer in graph.layers], float)[:, None]
    inp = np.array([layer.in_elems for layer in graph.layers], float)[:, None]
    wgt = np.array([layer.weight_elems for layer in graph.layers], float)[:, None]
    out_local = out / (f[:, M] * f[:, R] * f[:, C])[None]
    in_local = inp / (f[:, N] * f[:, R] * f[:, C])[None]
    w_local = wgt / (f[:, M] * f[:, N] * f[:, KH] * f[:, KW])[None]
    q = (f[:, N] * f[:, KH] * f[:, KW])[None]
    alpha, bw = cls.latency, cls.bandwidth
    allreduce = np.where(q > 1, 2 * (q - 1) * alpha + 2 * (q - 1) / q * out_local * b / bw, 0.0)  # note §3.4 ring AR
    on_weight = np.array([s >= 0 and rotated(strategies.factors[i], int(s)) == WEIGHT for i, s in enumerate(ss)])
    on_input = has_ss & ~on_weight
    x_local = np.where(on_weight[None], w_local, in_local)
    step = alpha + x_local / p * b / bw  # one ring step of a 1/P shard
    shared = np.where(has_ss[None], (p - 1) * step, 0.0)  # note §3.4: (P−1)(α + S_sh/B)
    if options.ss_overlap:
        t_phase = compute / phases
        overlapped = t_phase + (p - 1) * np.maximum(t_phase, step) - compute
        shared = np.where(has_ss[None], overlapped, 0.0)
    dram = (in_local + w_local + out_local) * b / options.dram_bandwidth  # each local box crosses DDR once
    compute = np.maximum(compute, dram)  # DDR roofline of the designs' own models ([14], [16])
    halo = np.zeros_like(compute)
    if options.halo:  # note §6.11: K − 1 rows (columns) of the local input from the neighbours
        rows_in, cols_in = local[..., R] * stride, local[..., C] * stride
        elems = ((f[None, :, R] > 1) * (dims[..., KH] - 1) * cols_in
                 + (f[None, :, C] > 1) * (dims[..., KW] - 1) * rows_in) * local[..., N]
        halo = np.where(elems > 0, alpha + elems * b / bw, 0.0)
    weight_bytes = np.where(on_weight[None], 2 * w_local / p, w_local) * b  # note §3.7
    act_bytes = (np.where(on_input[None], 2 * in_local / p, in_local) + out_local) * b
    return NodeTable(compute, allreduce, shared, halo, weight_bytes, act_bytes, valid_strategies(graph, strategies))
