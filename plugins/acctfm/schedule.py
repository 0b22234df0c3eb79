"""Two-stream list scheduling of micro-batched Megatron blocks and Algorithm 1 (AccTFM §4.2).

Model (seed note §1.4). One compute stream and one communication stream, each FIFO in layer then
micro-batch order. Layer l runs K_l equal micro-batches with per-micro-batch times t_cp, t_cm:

    s(i) = ceil(i·K_prev/K)            # previous micro-batch holding mb i's last sample (Alg. 1 SplitOrMerge)
    P_i  = max(M_prev[s(i)], P_{i-1}) + t_cp   # Alg. 1 line 25
    M_i  = max(P_i, M_{i-1}) + t_cm            # Alg. 1 line 26
    P_0  = P_prev (last compute end), M_0 = M_prev[K_prev] (last comm end)

Start state P = 0, M = [0] (note D4). A pass's makespan is the last comm end of its last layer.

Contention (``slowdown`` σ, the cost model's ``overlap_slowdown``): a compute interval that runs
while the communication stream is busy runs 1 + σ times slower for that part (communication
kernels take SMs and memory bandwidth; Lee et al., "Characterizing Compute-Communication Overlap
in GPU-Accelerated Distributed Deep Learning", arXiv:2507.03114, 2025, measure an 18.9 % average
compute slowdown under overlap). Compute that starts at S with the comm stream busy until M
(the last comm end scheduled so far: the stream is busy without a gap from S to M) ends at
``S + t_cp + min(σ·t_cp, σ/(1+σ)·max(0, M - S))`` (:func:`compute_end`); σ = 0 is the paper's
perfect overlap. The end grows with S and M, so the exact DP stays exact.
The backward pass runs the same recurrence over the layers in reverse order with backward times
(§4.2.2). Iteration time = forward makespan + backward makespan + serial extras (note §2.6:
no cross-pass overlap).

Tables ``tcp``/``tcm`` have shape [L, P]: per-micro-batch times of layer l when it is split into
``ps[p]`` micro-batches, in the order the pass processes the layers.

Search: ``alg1`` is Algorithm 1 as printed, with the note's corrections (D2, D3): one state per
(layer, K), chosen by the smallest last comm end, ties by compute end. It is not exact (note
§2.5). ``exact_dp`` keeps every Pareto-non-dominated state (P_K, M_1..M_K) per (layer, K), which is
exact because the recurrence is monotone in every state component (max-plus). ``brute_force``
enumerates all |ps|^L schedules with the vectorised evaluator.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

PS: tuple[int, ...] = (1, 2, 4)  # Alg. 1 input: ps = [1, 2, 4], pn = 3


def compute_end(start, busy_until, t_cp: float, slowdown: float):
    """End of a compute interval of length ``t_cp`` (uncontended) starting at ``start`` while the
    comm stream is busy until ``busy_until``, slowed by 1 + ``slowdown`` where they overlap
    (module docstring); floats or numpy arrays."""
    if not slowdown:
        return start + t_cp
    if isinstance(start, float) and isinstance(busy_until, float):
        return start + t_cp + min(slowdown * t_cp, slowdown / (1 + slowdown) * max(0.0, busy_until - start))
    return start + t_cp + np.minimum(slowdown * t_cp, slowdown / (1 + slowdown) * np.maximum(0.0, busy_until - start))


@dataclass(frozen=True)
class CostTables:
    """Per-micro-batch costs of the block chain, in forward layer order, for each K in ``ks``.

    ``tcp_*``/``tcm_*``: seconds per micro-batch, shape [L, len(ks)]. ``bytes_*``: All-Reduce message
    bytes per micro-batch (data message + token-score message), shape [L, len(ks)]. The serial
    extras (embedding, output head, loss) run unpipelined before/after the chain.
    """

    ks: tuple[int, ...]
    tcp_fwd: np.ndarray
    tcm_fwd: np.ndarray
    tcp_bwd: np.ndarray
    tcm_bwd: np.ndarray
    bytes_fwd: np.ndarray
    bytes_bwd: np.ndarray
    names: tuple[str, ...] = ()
    serial_cp_fwd: float = 0.0
    serial_cm_fwd: float = 0.0
    serial_cp_bwd: float = 0.0
    serial_cm_bwd: float = 0.0
    serial_bytes: float = 0.0
    overlap_slowdown: float = 0.0  # σ of compute overlapped by communication (module docstring)

    @property
    def n_layers(self) -> int:
        return self.tcp_fwd.shape[0]

    @property
    def serial_time(self) -> float:
        return self.serial_cp_fwd + self.serial_cm_fwd + self.serial_cp_bwd + self.serial_cm_bwd


@dataclass(frozen=True)
class ScheduleResult:
    iter_time: float  # fwd + bwd makespans + serial extras (s)
    fwd_time: float  # forward chain makespan (s)
    bwd_time: float  # backward chain makespan (s)
    compute_time: float  # busy time of the compute stream (s)
    comm_time: float  # busy time of the communication stream (s)
    idle_rate: float  # 1 - compute_time / iter_time (the paper's GPU idle rate, Fig. 6)
    comm_bytes: float  # Σ All-Reduce message bytes of the iteration (m of Eq. 3, not wire bytes)


@dataclass(frozen=True)
class DPResult:
    ks: tuple[int, ...]  # chosen K per layer, in the pass's processing order
    makespan: float
    n_states: int = 0  # states kept (exact DP), for diagnostics


# ---- Algorithm 1 building blocks --------------------------------------------------------------------

def split_or_merge(pre_cm: Sequence[float], k: int) -> list[float]:
    """Alg. 1 SplitOrMerge: the comm end each of the K micro-batches waits for, s = ceil(i·len/K)."""
    n = len(pre_cm)
    return [pre_cm[(i * n + k - 1) // k - 1] for i in range(1, k + 1)]  # Alg. 1 lines 32-35


def cal_par_end(pre_cp: float, pre_cm: Sequence[float], t_cp: float, t_cm: float, k: int,
                slowdown: float = 0.0) -> tuple[float, list[float]]:
    """Alg. 1 CalParEnd: (last compute end, comm ends of the K micro-batches) of the next layer."""
    pre = split_or_merge(pre_cm, k)
    cp, cm, ends = pre_cp, pre_cm[-1], []  # lines 22-23 (M_0 = last comm end of the previous layer)
    for i in range(k):
        cp = compute_end(max(pre[i], cp), cm, t_cp, slowdown)  # line 25 (+ contention)
        cm = max(cp, cm) + t_cm  # line 26
        ends.append(cm)
    return cp, ends


def _col(ps: Sequence[int], k: int) -> int:
    try:
        return list(ps).index(k)
    except ValueError:
        raise ValueError(f"micro-batch count {k} is not one of {tuple(ps)}") from None


def simulate_pass(ks: Sequence[int], tcp: np.ndarray, tcm: np.ndarray, ps: Sequence[int] = PS,
                  trace: bool = False, slowdown: float = 0.0):
    """Makespan of one pass for the schedule ``ks`` (processing order); with ``trace``, also the
    per-layer states [(K, P_K, [M_1..M_K]), ...]."""
    cp, cm, states = 0.0, [0.0], []  # note D4: P = 0, M = [0]
    for l, k in enumerate(ks):
        c = _col(ps, k)
        cp, cm = cal_par_end(cp, cm, float(tcp[l][c]), float(tcm[l][c]), k, slowdown)
        if trace:
            states.append((k, cp, list(cm)))
    return (cm[-1], states) if trace else cm[-1]


def evaluate(tables: CostTables, k_fwd: Sequence[int], k_bwd: Sequence[int]) -> ScheduleResult:
    """Iteration time, idle rate and bytes of one schedule (both lists in forward layer order)."""
    ps, L = tables.ks, tables.n_layers
    if len(k_fwd) != L or len(k_bwd) != L:
        raise ValueError(f"schedule needs {L} forward and {L} backward micro-batch counts")
    sigma = tables.overlap_slowdown
    fwd = simulate_pass(k_fwd, tables.tcp_fwd, tables.tcm_fwd, ps, slowdown=sigma)
    bwd = simulate_pass(list(k_bwd)[::-1], tables.tcp_bwd[::-1], tables.tcm_bwd[::-1], ps, slowdown=sigma)  # §4.2.2
    cf = np.array([_col(ps, k) for k in k_fwd])
    cb = np.array([_col(ps, k) for k in k_bwd])
    kf, kb, rows = np.asarray(k_fwd, float), np.asarray(k_bwd, float), np.arange(L)
    compute = float(kf @ tables.tcp_fwd[rows, cf] + kb @ tables.tcp_bwd[rows, cb]) + tables.serial_cp_fwd + tables.serial_cp_bwd
    comm = float(kf @ tables.tcm_fwd[rows, cf] + kb @ tables.tcm_bwd[rows, cb]) + tables.serial_cm_fwd + tables.serial_cm_bwd
    nbytes = float(kf @ tables.bytes_fwd[rows, cf] + kb @ tables.bytes_bwd[rows, cb]) + tables.serial_bytes
    it = fwd + bwd + tables.serial_time
    return ScheduleResult(iter_time=it, fwd_time=fwd, bwd_time=bwd, compute_time=compute,
                          comm_time=comm, idle_rate=1.0 - compute / it if it > 0 else 0.0, comm_bytes=nbytes)


def uniform(tables: CostTables, k: int) -> ScheduleResult:
    """Every layer and both directions split into ``k`` micro-batches (k = 1 is Megatron-LM)."""
    return evaluate(tables, [k] * tables.n_layers, [k] * tables.n_layers)


# ---- vectorised batch evaluator ----------------------------------------------------------------------

SCALAR_ROWS = 8  # batch_makespan evaluates up to this many rows one by one in plain Python


def _scalar_makespan(cols: Sequence[int], tcp: list, tcm: list, ps: Sequence[int], slowdown: float = 0.0) -> float:
    """One pass's makespan with K given as column indices (the arithmetic of ``cal_par_end``)."""
    cp, cm = 0.0, [0.0]  # note D4: P = 0, M = [0]
    for l, c in enumerate(cols):
        cp, cm = cal_par_end(cp, cm, tcp[l][c], tcm[l][c], ps[c], slowdown)
    return cm[-1]


def batch_makespan(kidx: np.ndarray, tcp: np.ndarray, tcm: np.ndarray, ps: Sequence[int] = PS,
                   slowdown: float = 0.0) -> np.ndarray:
    """Makespans of M schedules at once; ``kidx`` [M, L] holds column indices into ``ps``."""
    kidx = np.asarray(kidx, dtype=np.intp)
    m, L = kidx.shape
    if m <= SCALAR_ROWS:  # a few rows (one trial at a time): plain floats beat numpy's per-call cost
        tcp, tcm = np.asarray(tcp, float).tolist(), np.asarray(tcm, float).tolist()
        return np.array([_scalar_makespan(row, tcp, tcm, ps, slowdown) for row in kidx.tolist()])
    psa = np.asarray(ps, dtype=np.intp)
    kmax = int(psa.max())
    rows = np.arange(m)
    tcp, tcm = np.asarray(tcp, float), np.asarray(tcm, float)
    P = np.zeros(m)  # compute-stream free time
    Mv = np.zeros((m, kmax))  # comm ends of the previous layer's micro-batches
    kp = np.ones(m, dtype=np.intp)  # previous K (start state M = [0])
    cm = np.zeros(m)
    for l in range(L):
        c = kidx[:, l]
        k = psa[c]
        tc, tm = tcp[l][c], tcm[l][c]
        cm = Mv[rows, kp - 1]  # M_0 = last comm end of the previous layer
        new = np.empty_like(Mv)
        for i in range(kmax):
            s = np.minimum(((i + 1) * kp + k - 1) // k - 1, kmax - 1)  # s(i) = ceil(i·K_prev/K)
            pn = compute_end(np.maximum(Mv[rows, s], P), cm, tc, slowdown)  # Alg. 1 line 25
            cn = np.maximum(pn, cm) + tm  # Alg. 1 line 26
            act = i < k
            P = np.where(act, pn, P)
            cm = np.where(act, cn, cm)
            new[:, i] = cm
        Mv, kp = new, k
    return cm


def evaluate_batch(tables: CostTables, schedules: np.ndarray, encoding: str = "k", parts: bool = False):
    """Iteration times of M schedules; ``schedules`` [M, 2L] = forward K's then backward K's, both in
    forward layer order. ``encoding="k"``: entries are micro-batch counts (1, 2, 4); ``"index"``:
    entries index ``tables.ks`` (what generic categorical encoders produce). With ``parts``, returns
    (iteration times, forward makespans, backward makespans)."""
    x = np.asarray(schedules)
    if x.ndim == 1:
        x = x[None, :]
    L = tables.n_layers
    if x.shape[1] != 2 * L:
        raise ValueError(f"schedules need {2 * L} columns (forward then backward), got {x.shape[1]}")
    if encoding == "k":
        lut = np.full(int(max(tables.ks)) + 1, -1, dtype=np.intp)
        lut[list(tables.ks)] = np.arange(len(tables.ks))
        x = lut[x]
        if (x < 0).any():
            raise ValueError(f"micro-batch counts must be in {tables.ks}")
    sigma = tables.overlap_slowdown
    f = batch_makespan(x[:, :L], tables.tcp_fwd, tables.tcm_fwd, tables.ks, sigma)
    b = batch_makespan(x[:, L:][:, ::-1], tables.tcp_bwd[::-1], tables.tcm_bwd[::-1], tables.ks, sigma)
    total = f + b + tables.serial_time
    return (total, f, b) if parts else total


# ---- Algorithm 1 (faithful), exact Pareto DP, brute force -------------------------------------------

def alg1(tcp: np.ndarray, tcm: np.ndarray, ps: Sequence[int] = PS, slowdown: float = 0.0) -> DPResult:
    """Algorithm 1 as printed, with lines 9-10 after the i-loop and 11-16 after the l-loop (note D3);
    the min of line 7 is keyed on the last comm end, ties by compute end (note D2)."""
    L, pn = len(tcp), len(ps)
    f_cp = [0.0] * pn
    f_cm = [[0.0] for _ in range(pn)]  # "layer 0": input ready at t = 0 (note D4)
    par = [[0] * pn for _ in range(L)]
    for l in range(L):
        t_cp, t_cm = [0.0] * pn, [[0.0]] * pn
        for i in range(pn):
            cands = [(cal_par_end(f_cp[j], f_cm[j], float(tcp[l][i]), float(tcm[l][i]), ps[i], slowdown), j)
                     for j in range(pn)]
            (t_cp[i], t_cm[i]), par[l][i] = min(cands, key=lambda x: (x[0][1][-1], x[0][0]))  # lines 7-8
        f_cp, f_cm = t_cp, t_cm  # lines 9-10, after the i-loop
    p = min(range(pn), key=lambda i: f_cm[i][-1])  # line 11
    opt = [0] * L
    for l in range(L - 1, -1, -1):  # lines 12-16: backtracking
        opt[l] = ps[p]
        p = par[l][p]
    return DPResult(tuple(opt), float(f_cm[_col(ps, opt[-1])][-1]) if L else 0.0)


def _pareto(x: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated rows of ``x`` (minimisation); of equal rows the first is kept."""
    n = len(x)
    if n <= 1:
        return np.arange(n)
    le = (x[:, None, :] <= x[None, :, :]).all(-1)  # le[j, i]: row j <= row i everywhere
    earlier = np.tri(n, k=-1, dtype=bool).T  # earlier[j, i]: j < i
    dominated = (le & (~le.T | earlier)).any(0)  # strictly better, or equal and earlier
    return np.flatnonzero(~dominated)


def exact_dp(tcp: np.ndarray, tcm: np.ndarray, ps: Sequence[int] = PS, max_states: int | None = None,
             slowdown: float = 0.0) -> DPResult:
    """Exact layer-wise DP over Pareto-non-dominated states (P_K, M_1..M_K) per (layer, K).

    ``max_states`` caps each front by smallest last comm end (then it is a heuristic); None = exact.
    """
    L = len(tcp)
    if L == 0:
        return DPResult((), 0.0)
    groups = [(1, np.zeros(1), np.zeros((1, 1)))]  # (K, P [n], M [n, K]) — start state P = 0, M = [0]
    back: list[list[tuple[np.ndarray, np.ndarray]]] = []  # per layer, per K: (parent group, parent row)
    total = 0
    for l in range(L):
        new_groups, new_back = [], []
        for i, k in enumerate(ps):
            tc, tm = float(tcp[l][i]), float(tcm[l][i])
            cps, ms, pg, pr = [], [], [], []
            for j, (kprev, P, M) in enumerate(groups):
                s = [(t * kprev + k - 1) // k - 1 for t in range(1, k + 1)]  # SplitOrMerge
                pre = M[:, s]
                cp, cm = P.copy(), M[:, kprev - 1].copy()
                E = np.empty((len(P), k))
                for t in range(k):
                    cp = compute_end(np.maximum(pre[:, t], cp), cm, tc, slowdown)  # Alg. 1 line 25
                    cm = np.maximum(cp, cm) + tm  # Alg. 1 line 26
                    E[:, t] = cm
                cps.append(cp), ms.append(E), pg.append(np.full(len(P), j)), pr.append(np.arange(len(P)))
            cp, E, pg, pr = np.concatenate(cps), np.concatenate(ms), np.concatenate(pg), np.concatenate(pr)
            keep = _pareto(np.column_stack([cp, E]))
            if max_states is not None and len(keep) > max_states:
                keep = keep[np.argsort(E[keep, -1], kind="stable")[:max_states]]
            new_groups.append((k, cp[keep], E[keep]))
            new_back.append((pg[keep], pr[keep]))
            total += len(keep)
        groups, back = new_groups, back + [new_back]
    best_g, best_r, best = 0, 0, np.inf
    for g, (_, _, M) in enumerate(groups):
        r = int(np.argmin(M[:, -1]))
        if M[r, -1] < best:
            best_g, best_r, best = g, r, float(M[r, -1])
    ks = [0] * L
    g, r = best_g, best_r
    for l in range(L - 1, -1, -1):
        ks[l] = ps[g]
        g, r = int(back[l][g][0][r]), int(back[l][g][1][r])
    return DPResult(tuple(ks), best, total)


def brute_force(tcp: np.ndarray, tcm: np.ndarray, ps: Sequence[int] = PS, chunk: int = 200_000,
                slowdown: float = 0.0) -> DPResult:
    """Exhaustive search over all len(ps)^L schedules (use for L <= ~12)."""
    L = len(tcp)
    best, best_ks = np.inf, ()
    it = itertools.product(range(len(ps)), repeat=L)
    while True:
        block = np.array(list(itertools.islice(it, chunk)), dtype=np.intp).reshape(-1, L)
        if len(block) == 0:
            break
        t = batch_makespan(block, tcp, tcm, ps, slowdown)
        r = int(np.argmin(t))
        if t[r] < best:
            best, best_ks = float(t[r]), tuple(ps[c] for c in block[r])
    return DPResult(best_ks, best)


def solve(tables: CostTables, method: str = "exact") -> tuple[tuple[int, ...], tuple[int, ...], ScheduleResult]:
    """Run a DP ("faithful" Alg. 1, "exact", or "brute") once forward and once backward (§4.2.2).

    Returns (k_fwd, k_bwd, result), both schedules in forward layer order.
    """
    fn = {"faithful": alg1, "exact": exact_dp, "brute": brute_force}[method]
    f = fn(tables.tcp_fwd, tables.tcm_fwd, tables.ks, slowdown=tables.overlap_slowdown)
    b = fn(tables.tcp_bwd[::-1], tables.tcm_bwd[::-1], tables.ks, slowdown=tables.overlap_slowdown)
    k_fwd, k_bwd = tuple(f.ks), tuple(b.ks[::-1])
    return k_fwd, k_bwd, evaluate(tables, k_fwd, k_bwd)
