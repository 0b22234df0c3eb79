"""Alpha-beta (Hockney) costs of collective communication, vectorised over message sizes.

Sending ``n`` bytes over one link costs ``α + n/B`` (α = ``latency`` in s, B = ``bandwidth`` in
B/s). The collective formulas are the standard ones of Thakur, Rabenseifner & Gropp,
"Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1), 2005 (cited below as
"Thakur+05"); the reduction's arithmetic (their γ term) is left out: these are communication
times only.

Conventions:

* ``nbytes`` is a float or a numpy array; ``p``, ``bandwidth`` and ``latency`` may be arrays too
  (numpy broadcasting). The result is a float for all-scalar inputs and an array otherwise.
* What ``nbytes`` means per collective (``n`` below):
  - ``allreduce``, ``broadcast``, ``point_to_point``: the whole buffer each participant holds.
  - ``allgather``: the gathered result (each participant contributes ``n/p``).
  - ``reduce_scatter``: the full input vector on each participant (each ends with ``n/p``).
  - ``all_to_all``: each participant's whole send buffer (``n/p`` to every participant).
* ``p == 1`` or ``nbytes == 0`` costs 0 (nothing is sent, so no α either).
* Logarithmic algorithms take ``L = ceil(log2 p)`` steps for any ``p``: the ideal step count. (MPICH
  handles a non-power-of-two ``p`` with one or two extra steps; this model does not.)
* ``bandwidth`` may be ``inf`` (then only α counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from optmap.errors import OptmapError

if TYPE_CHECKING:  # pragma: no cover
    from optmap.system import System

__all__ = [
    "ALGORITHMS",
    "allreduce",
    "allgather",
    "reduce_scatter",
    "broadcast",
    "all_to_all",
    "point_to_point",
    "collective_time",
]

# kind → its algorithms; the first is the default.
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "tree", "recursive_doubling", "rabenseifner"),
    "allgather": ("ring", "recursive_doubling"),
    "reduce_scatter": ("ring", "recursive_halving"),
    "broadcast": ("tree", "scatter_allgather"),
    "all_to_all": ("pairwise", "bruck"),
    "point_to_point": ("direct",),
}


def _arrays(what: str, nbytes, p, bandwidth, latency):
    """Validated float arrays, the log2 step count and whether every input was a scalar."""
    scalar = all(np.ndim(x) == 0 for x in (nbytes, p, bandwidth, latency))
    n = np.asarray(nbytes, dtype=float)
    pp = np.asarray(p, dtype=float)
    bw = np.asarray(bandwidth, dtype=float)
    lat = np.asarray(latency, dtype=float)
    if np.any(~(n >= 0)) or np.any(np.isinf(n)):
        raise OptmapError(f"{what}: nbytes must be finite and >= 0, got {_show(nbytes)}")
    if np.any(~(pp >= 1)) or np.any(pp != np.floor(pp)) or np.any(np.isinf(pp)):
        raise OptmapError(f"{what}: participants p must be an integer >= 1, got {_show(p)}")
    if np.any(~(bw > 0)):
        raise OptmapError(f"{what}: bandwidth must be > 0 B/s, got {_show(bandwidth)}")
    if np.any(~(lat >= 0)) or np.any(np.isinf(lat)):
        raise OptmapError(f"{what}: latency must be finite and >= 0 s, got {_show(latency)}")
    # ceil(log2 p) exactly for integer p >= 1: frexp(p-1) gives the bit length of p-1.
    steps = np.frexp(pp - 1.0)[1].astype(float)
    return n, pp, bw, lat, steps, scalar


def _show(x) -> str:
    a = np.asarray(x)
    return repr(x) if a.ndim == 0 else f"an array with values in [{a.min()}, {a.max()}]"


def _finish(t, n, p, scalar):
    t = np.where((p <= 1) | (n == 0), 0.0, t)
    return float(t) if scalar else t


def _pick(kind: str, algorithm: str | None) -> str:
    valid = ALGORITHMS[kind]
    if algorithm is None:
        return valid[0]
    key = str(algorithm).strip().lower().replace("-", "_")
    if key not in valid:
        raise OptmapError(
            f"{kind}: unknown algorithm '{algorithm}'; valid: {', '.join(valid)}"
        )
    return key


def allreduce(nbytes, p, bandwidth, latency, algorithm: str = "ring"):
    """All-reduce of an ``nbytes`` buffer over ``p`` participants (time in s)."""
    alg = _pick("allreduce", algorithm)
    n, p, bw, a, L, scalar = _arrays("allreduce", nbytes, p, bandwidth, latency)
    if alg == "ring":
        t = 2 * (p - 1) * a + 2 * (p - 1) / p * n / bw  # Thakur+05 (ring reduce-scatter + ring allgather)
    elif alg == "recursive_doubling":
        t = L * (a + n / bw)  # Thakur+05 (recursive doubling, whole buffer each step)
    elif alg == "tree":
        t = 2 * L * (a + n / bw)  # Thakur+05 (binomial-tree reduce then binomial-tree broadcast, unpipelined)
    else:  # rabenseifner
        t = 2 * L * a + 2 * (p - 1) / p * n / bw  # Thakur+05 (recursive-halving RS + recursive-doubling AG)
    return _finish(t, n, p, scalar)


def allgather(nbytes, p, bandwidth, latency, algorithm: str = "ring"):
    """All-gather whose gathered result is ``nbytes`` (each participant brings ``nbytes/p``)."""
    alg = _pick("allgather", algorithm)
    n, p, bw, a, L, scalar = _arrays("allgather", nbytes, p, bandwidth, latency)
    if alg == "ring":
        t = (p - 1) * a + (p - 1) / p * n / bw  # Thakur+05 (ring allgather)
    else:  # recursive_doubling
        t = L * a + (p - 1) / p * n / bw  # Thakur+05 (recursive-doubling allgather)
    return _finish(t, n, p, scalar)


def reduce_scatter(nbytes, p, bandwidth, latency, algorithm: str = "ring"):
    """Reduce-scatter of an ``nbytes`` input vector (each participant keeps ``nbytes/p``)."""
    alg = _pick("reduce_scatter", algorithm)
    n, p, bw, a, L, scalar = _arrays("reduce_scatter", nbytes, p, bandwidth, latency)
    if alg == "ring":
        t = (p - 1) * a + (p - 1) / p * n / bw  # Thakur+05 (ring / pairwise-exchange reduce-scatter)
    else:  # recursive_halving
        t = L * a + (p - 1) / p * n / bw  # Thakur+05 (recursive-halving reduce-scatter)
    return _finish(t, n, p, scalar)


def broadcast(nbytes, p, bandwidth, latency, algorithm: str = "tree"):
    """Broadcast of an ``nbytes`` buffer from one root to ``p - 1`` others."""
    alg = _pick("broadcast", algorithm)
    n, p, bw, a, L, scalar = _arrays("broadcast", nbytes, p, bandwidth, latency)
    if alg == "tree":
        t = L * (a + n / bw)  # Thakur+05 (binomial-tree broadcast)
    else:  # scatter_allgather
        t = (L + p - 1) * a + 2 * (p - 1) / p * n / bw  # Thakur+05 (van de Geijn: binomial scatter + ring allgather)
    return _finish(t, n, p, scalar)


def all_to_all(nbytes, p, bandwidth, latency, algorithm: str = "pairwise"):
    """All-to-all where each participant sends ``nbytes/p`` to every participant."""
    alg = _pick("all_to_all", algorithm)
    n, p, bw, a, L, scalar = _arrays("all_to_all", nbytes, p, bandwidth, latency)
    if alg == "pairwise":
        t = (p - 1) * a + (p - 1) / p * n / bw  # Thakur+05 (pairwise exchange; own n/p stays local)
    else:  # bruck
        t = L * a + L * n / (2 * bw)  # Thakur+05 (Bruck: log p steps of n/2 each)
    return _finish(t, n, p, scalar)


def point_to_point(nbytes, bandwidth, latency):
    """One message of ``nbytes`` over a path of ``bandwidth`` and ``latency``."""
    n, p, bw, a, _, scalar = _arrays("point_to_point", nbytes, 2, bandwidth, latency)
    t = a + n / bw  # Hockney α-β model
    return _finish(t, n, p, scalar)


_FUNCS = {
    "allreduce": allreduce,
    "allgather": allgather,
    "reduce_scatter": reduce_scatter,
    "broadcast": broadcast,
    "all_to_all": all_to_all,
}


def _kind(kind: str) -> str:
    key = str(kind).strip().lower().replace("-", "").replace("_", "")
    for k in ALGORITHMS:
        if k.replace("_", "") == key:
            return k
    raise OptmapError(f"unknown collective '{kind}'; valid: {', '.join(ALGORITHMS)}")


def collective_time(
    system: "System",
    kind: str,
    nbytes,
    devices: Sequence[int] | None = None,
    algorithm: str | None = None,
):
    """Time (s) of collective ``kind`` over ``devices`` of ``system`` (all devices when ``None``).

    B is :meth:`System.subset_bandwidth` (the bottleneck of a ring over the devices, in the order
    given) and α is :meth:`System.subset_latency` (the largest latency between ring neighbours).
    Non-ring algorithms use the same B and α: an approximation that ignores that their partners
    may be farther apart than ring neighbours. ``point_to_point`` takes ``devices=[src, dst]``
    and uses that path's bandwidth and latency. ``kind`` accepts ``all-reduce`` / ``all_reduce``.
    """
    k = _kind(kind)
    devs = range(system.count) if devices is None else list(devices)  # a range: no list of every device
    if k == "point_to_point":
        if len(devs) != 2:
            shown = list(devs) if len(devs) <= 64 else f"all {len(devs):,} devices"
            raise OptmapError(f"point_to_point needs devices=[src, dst], got {shown}")
        src, dst = devs
        if src == dst:
            return _finish(0.0, np.asarray(nbytes, float), np.asarray(1.0), np.ndim(nbytes) == 0)
        _pick(k, algorithm)
        return point_to_point(nbytes, system.path_bandwidth(src, dst), system.path_latency(src, dst))
    bw = system.subset_bandwidth(devs)
    lat = system.subset_latency(devs)
    return _FUNCS[k](nbytes, len(devs), bw, lat, algorithm=_pick(k, algorithm))
