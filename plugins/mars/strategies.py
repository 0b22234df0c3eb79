"""Parallelism strategies (ES, SS) on an accelerator set of P devices (Sec. IV, Fig. 2; note §2.2-2.4).

A strategy splits the loop nest (C_out, C_in, H, W, K_h, K_w) into *exclusive shards*: ES factors
``f`` with ∏ f = P (at most ``max_es_dims`` split dimensions, paper: two, C(6,2) = 15 pairs), and
optionally rotates one operand in *shared shards* around the set's ring (SS dimension ``ss``).
Device j sits at mixed-radix coordinate j of the factor grid (dimensions in the order above).

Which operand SS rotates (note §2.3, §6.8): Weight for C_out, K_h, K_w; In for H, W; for C_in,
In when ES splits C_out (In is then the replicated operand), else Weight. SS on a dimension that
ES already splits is off by default (note §6.6; ``ss_on_es_dims`` allows it, giving the paper's
C(6,2)·6 = 90 count).

Tensor layouts for re-layout (note §3.5), as boxes in fractional coordinates (C, H, W) of a
tensor, so one matrix per set size serves every layer:

* device j *holds* its output box: C_out, H, W intervals of its grid cell (reduction splits leave
  the box replicated across the reduction group, after the All-Reduce of Fig. 2(b); SS leaves
  the exclusive region complete after the last phase);
* device j *needs* its input box: C_in, H, W intervals (halos ignored, note §6.11); when SS
  rotates In, only its own 1/P shard along the SS dimension (the ring delivers the rest).

Random-key decoding (Sec. V "individual genes decide the ES and SS sets ... prioritizes
parallelism at the dimensions with higher gene values"; note §4.2): 14 genes per layer, ES
priorities (6), SS priorities (6), the arity gene (which factor tuple) and the SS on/off gene.
The priorities are random keys of a permutation of the six dimensions (optmap's permutation
variables): the dimension listed first, i.e. with the *lowest* key, has the highest priority.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

DIMS = ("C_out", "C_in", "H", "W", "K_h", "K_w")
M, N, R, C, KH, KW = range(6)
OUT_AXES = (M, R, C)  # Out is (C_out, H, W)
IN_AXES = (N, R, C)  # In is (C_in, H_in, W_in)
GENES = 14  # per layer: es[6], ss[6], arity, ss_on
WEIGHT, INPUT = 0, 1


def factor_tuples(p: int, max_dims: int) -> tuple[tuple[int, ...], ...]:
    """Ordered factorisations of ``p`` into 1..max_dims factors > 1 (P = 1: the empty one)."""
    if p == 1:
        return ((),)
    out = []

    def grow(rest: int, prefix: tuple[int, ...]) -> None:
        if rest == 1:
            out.append(prefix)
            return
        if len(prefix) == max_dims:
            return
        for f in range(rest, 1, -1):
            if rest % f == 0:
                grow(rest // f, prefix + (f,))

    grow(p, ())
    return tuple(sorted(out, key=lambda t: (len(t), [-f for f in t])))


def rotated(factors: np.ndarray, ss: int) -> int:
    """The operand SS on ``ss`` rotates: WEIGHT or INPUT (module docstring)."""
    if ss in (R, C):
        return INPUT
    if ss == N and factors[M] > 1:
        return INPUT
    return WEIGHT


@dataclass(frozen=True, eq=False)
class StrategySet:
    """Every strategy on P devices: ``factors`` (S, 6), ``ss`` (S,) (-1 = none), and their layouts."""

    p: int
    max_es_dims: int = 2
    ss_on_es_dims: bool = False

    @cached_property
    def tuples(self) -> tuple[tuple[int, ...], ...]:
        return factor_tuples(self.p, self.max_es_dims)

    @cached_property
    def _enumerated(self) -> tuple[np.ndarray, np.ndarray]:
        seen, factors, ss = set(), [], []
        for t in self.tuples:
            for dims in itertools.permutations(range(6), len(t)):
                f = [1] * 6
                for d, k in zip(dims, t):
                    f[d] = k
                if tuple(f) in seen:
                    continue
                seen.add(tuple(f))
                options = [-1] if self.p == 1 else [-1] + [d for d in range(6) if self.ss_on_es_dims or f[d] == 1]
                for s in options:
                    factors.append(f)
                    ss.append(s)
        return np.array(factors, dtype=np.int64), np.array(ss, dtype=np.int64)

    @property
    def factors(self) -> np.ndarray:
        return self._enumerated[0]

    @property
    def ss(self) -> np.ndarray:
        return self._enumerated[1]

    def __len__(self) -> int:
        return len(self.ss)

    # --- lookup from (factors, ss) to an index --------------------------------------------------
    @cached_property
    def _divisors(self) -> np.ndarray:
        return np.array([d for d in range(1, self.p + 1) if self.p % d == 0])

    def codes(self, factors: np.ndarray, ss: np.ndarray) -> np.ndarray:
        """Integer code of (factors (…, 6), ss (…)): mixed radix over divisor indices and ss + 1."""
        idx = np.searchsorted(self._divisors, factors)
        radix = len(self._divisors) ** np.arange(6)
        return (idx * radix).sum(-1) * 7 + (ss + 1)

    @cached_property
    def _lookup(self) -> np.ndarray:
        table = np.full(len(self._divisors) ** 6 * 7, -1, dtype=np.int64)
        table[self.codes(self.factors, self.ss)] = np.arange(len(self))
        return table

    def index(self, factors: np.ndarray, ss: np.ndarray) -> np.ndarray:
        """Strategy indices of (factors, ss) arrays."""
        return self._lookup[self.codes(factors, ss)]

    def label(self, s: int) -> tuple[str, str]:
        """``("{H,W}", "{C_out}")`` for strategy ``s`` (factors shown when not an even split)."""
        f = self.factors[s]
        split = [d for d in range(6) if f[d] > 1]
        uneven = len({int(f[d]) for d in split}) > 1
        es = ",".join(f"{DIMS[d]}×{f[d]}" if uneven else DIMS[d] for d in split)
        s_dim = int(self.ss[s])
        return "{" + es + "}" if es else "∅", "{" + DIMS[s_dim] + "}" if s_dim >= 0 else "∅"

    # --- layouts ----------------------------------------------------------------------------------
    @cached_property
    def _coords(self) -> np.ndarray:
        """Grid coordinate (S, P, 6) of every device under every strategy."""
        f = self.factors
        coords = np.zeros((len(self), self.p, 6), dtype=np.int64)
        rest = np.broadcast_to(np.arange(self.p), (len(self), self.p)).copy()
        for d in range(5, -1, -1):
            coords[:, :, d] = rest % f[:, d:d + 1]
            rest //= f[:, d:d + 1]
        return coords

    def _intervals(self, axes: tuple[int, ...]) -> np.ndarray:
        """(S, P, 3, 2) fractional [lo, hi) per device along ``axes`` of the grid."""
        f = self.factors[:, None, list(axes)].astype(float)
        c = self._coords[:, :, list(axes)]
        return np.stack([c / f, (c + 1) / f], axis=-1)

    @cached_property
    def hold(self) -> np.ndarray:
        """Output box each device holds after the layer: (S, P, 3, 2)."""
        return self._intervals(OUT_AXES)

    @cached_property
    def need(self) -> np.ndarray:
        """Input box each device needs before the layer: (S, P, 3, 2)."""
        box = self._intervals(IN_AXES).copy()
        for s in range(len(self)):
            d = int(self.ss[s])
            if d >= 0 and d in IN_AXES and rotated(self.factors[s], d) == INPUT:
                a = IN_AXES.index(d)
                lo, hi = box[s, :, a, 0].copy(), box[s, :, a, 1]
                width = (hi - lo) / self.p
                rank = np.arange(self.p)
                box[s, :, a, 0] = lo + rank * width
                box[s, :, a, 1] = lo + (rank + 1) * width
        return box

    def relayout_fraction(self, kind: str, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
        """(S_src, S_dst): the largest fraction of the tensor one device must receive (note §3.5).

        ``kind`` "in": producer's held output → consumer's needed input, the producer's tensor
        being channels [lo, hi) of the consumer's input; "out": held output → held output.
        """
        key = (kind, round(lo, 12), round(hi, 12))
        cache = self.__dict__.setdefault("_relayout", {})
        if key not in cache:
            want = (self.need if kind == "in" else self.hold).copy()
            if (lo, hi) != (0.0, 1.0):  # the consumer's channel slice this producer supplies
                width = hi - lo
                want[:, :, 0, 0] = np.clip((want[:, :, 0, 0] - lo) / width, 0.0, 1.0)
                want[:, :, 0, 1] = np.clip((want[:, :, 0, 1] - lo) / width, 0.0, 1.0)
            have = self.hold
            want_vol = np.prod(np.maximum(want[..., 1] - want[..., 0], 0.0), axis=-1)  # (S, P)
            lo_ = np.maximum(have[:, None, :, :, 0], want[None, :, :, :, 0])
            hi_ = np.minimum(have[:, None, :, :, 1], want[None, :, :, :, 1])
            inter = np.prod(np.maximum(hi_ - lo_, 0.0), axis=-1)  # (S_src, S_dst, P)
            cache[key] = np.maximum(want_vol[None] - inter, 0.0).max(-1)
        return cache[key]

    # --- random keys ----------------------------------------------------------------------------
    def decode(self, keys: np.ndarray, extents: np.ndarray) -> np.ndarray:
        """Strategy indices (n, L) from genes (n, L, 14) for layers with ``extents`` (L, 6).

        ES: the arity gene picks a factor tuple; dimensions are taken in ES-priority order (lowest
        key first), skipping one whose extent is smaller than its factor; if the tuple cannot be
        met, the whole P goes to the highest-priority dimension that can take it (else the
        largest one). SS (when its gene > 0.5): the highest SS-priority dimension, not split by
        ES, whose local extent is at least P; none if no dimension qualifies.
        """
        keys = np.asarray(keys, float)
        n, nl = keys.shape[:2]
        ext = np.broadcast_to(np.asarray(extents, float)[None], (n, nl, 6))
        factors = np.ones((n, nl, 6), dtype=np.int64)
        if self.p > 1:
            es = keys[..., :6]
            first = np.array([t[0] for t in self.tuples])
            second = np.array([t[1] if len(t) > 1 else 0 for t in self.tuples])
            pick = np.clip((keys[..., 12] * len(self.tuples)).astype(np.int64), 0, len(self.tuples) - 1)
            f1, f2 = first[pick], second[pick]
            ok1 = ext >= f1[..., None]
            d1 = np.where(ok1, es, np.inf).argmin(-1)  # first in priority among dims that can take f1
            ok2 = (ext >= f2[..., None]) & (np.arange(6) != d1[..., None])
            d2 = np.where(ok2, es, np.inf).argmin(-1)
            fail = ~ok1.any(-1) | ((f2 > 0) & ~ok2.any(-1))
            whole = ext >= self.p
            fallback = np.where(whole.any(-1), np.where(whole, es, np.inf).argmin(-1), ext.argmax(-1))
            d1 = np.where(fail, fallback, d1)
            f1 = np.where(fail, self.p, f1)
            use2 = ~fail & (f2 > 0)
            np.put_along_axis(factors, d1[..., None], f1[..., None], -1)
            rows = np.nonzero(use2)
            factors[rows[0], rows[1], d2[use2]] = f2[use2]
        ss = np.full((n, nl), -1, dtype=np.int64)
        if self.p > 1:
            local = np.ceil(ext / factors)
            cand = (local >= self.p) & (keys[..., 13:14] > 0.5)
            if not self.ss_on_es_dims:
                cand &= factors == 1
            gene = np.where(cand, keys[..., 6:12], np.inf)
            ss = np.where(cand.any(-1), gene.argmin(-1), -1)
        return self.index(factors, ss)

    @cached_property
    def genes(self) -> np.ndarray:
        """(S, 14) genes that decode to each strategy (for layers where it is valid)."""
        keys = np.ones((len(self), GENES))
        keys[:, 12:] = 0.0
        for s in range(len(self)):
            f = self.factors[s]
            split = sorted((d for d in range(6) if f[d] > 1), key=lambda d: -f[d])
            t = tuple(int(f[d]) for d in split)
            for rank, d in enumerate(split):
                keys[s, d] = 0.1 * rank  # listed first: the highest priority
            keys[s, 12] = (self.tuples.index(t) + 0.5) / len(self.tuples) if t in self.tuples else 0.0
            if self.ss[s] >= 0:
                keys[s, 6 + self.ss[s]] = 0.0
                keys[s, 13] = 1.0
        return keys

    def encode(self, strategies: np.ndarray) -> np.ndarray:
        """Genes (…, 14) that decode to ``strategies`` (…) (for layers where they are valid)."""
        return self.genes[np.asarray(strategies, dtype=np.int64)]
