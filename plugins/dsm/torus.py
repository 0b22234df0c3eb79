"""Tier 5 of the DSM template: chips on an M x N 2-D torus with separate X and Y bandwidths (DSM §II-B, Fig. 7).

The topology ``dsm-torus`` builds an ordinary :class:`optmap.system.System` (device ``d`` at
``(x, y) = (d % M, d // M)``, edges with ``bandwidth``, ``latency`` and ``dim`` = "x"/"y", as
``torus2d``), so every cost model can run on it. Bandwidth convention (note §7.2, decided here):
``x_bandwidth_gBps`` is what one chip sends along X in total, over its +X and -X links together
(so the paper's 80 + 80 GB/s make its "160 GBps coming out of each chip"); each of the two links
therefore carries half of it. A dimension of 2 has one neighbour, so its two links are one edge of
the whole X bandwidth; a dimension of 1 has no links. :class:`Torus` reads M, N and the per-axis
bandwidth back from any such graph (``torus2d`` included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from optmap.bounds import Dimension, Microseconds, Positive
from optmap.errors import OptmapError
from optmap.system import GroupSpec, System, assign_devices, device_graph
from optmap.units import gBps_to_bytes_per_s, us_to_s

# Fig. 10 and §IV: 64 chips as 4 x 16; symmetric 80/80 GB/s, asymmetric 120/40 GB/s; the
# inference system is one 128-TFLOP chip (§V-A2).
PRESETS: dict[str, dict] = {
    "dsm-8pf-sym": {"shape": (4, 16), "x_bandwidth_gBps": 80.0, "y_bandwidth_gBps": 80.0},
    "dsm-8pf-asym": {"shape": (4, 16), "x_bandwidth_gBps": 120.0, "y_bandwidth_gBps": 40.0},
    "dsm-128tf-1chip": {"shape": (1, 1), "x_bandwidth_gBps": 80.0, "y_bandwidth_gBps": 80.0},
}
DEFAULT_X_CHIPS = 4  # Fig. 10 keeps X = 4 chips and sweeps Y (note §1.4)


def dsm_torus(
    groups: list[GroupSpec],
    *,
    preset: Literal["dsm-8pf-sym", "dsm-8pf-asym", "dsm-128tf-1chip"] | None = None,
    shape: list[Dimension] | None = None,
    x_bandwidth_gBps: Positive | None = None,  # noqa: N803 - B = bytes (the paper's GBps)
    y_bandwidth_gBps: Positive | None = None,  # noqa: N803
    latency_us: Microseconds = 0.0,
) -> System:
    """DSM 2-D torus of chips, M x N with X/Y bandwidths in GB/s; presets dsm-8pf-sym/-asym and dsm-128tf-1chip.

    ``preset`` fills shape and bandwidths (explicit options win); without one, the bandwidths are
    80/80 GB/s and the shape [4, chips/4] (X fixed at 4 as in Fig. 10), or [1, 1] for one chip.
    ``latency_us`` per link is 0 by default: the paper's model is bandwidth-centric (§II-D).
    """
    name = "dsm-torus"
    base = PRESETS.get(preset, {}) if preset else {}
    devices, grps = assign_devices(groups)
    n = len(devices)
    if shape is None:
        shape = base.get("shape") or _default_shape(n)
    if len(shape) != 2 or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in shape):
        raise OptmapError(f"topology '{name}': shape must be two positive integers [X, Y], got {shape!r}")
    m, rows = int(shape[0]), int(shape[1])
    if m * rows != n:
        raise OptmapError(f"topology '{name}': shape [{m}, {rows}] holds {m * rows} chips but the groups give {n}; "
                          f"set shape = [X, Y] with X*Y = {n}, or change the group count")
    xbw = gBps_to_bytes_per_s(x_bandwidth_gBps if x_bandwidth_gBps is not None else base.get("x_bandwidth_gBps", 80.0))
    ybw = gBps_to_bytes_per_s(y_bandwidth_gBps if y_bandwidth_gBps is not None else base.get("y_bandwidth_gBps", 80.0))
    latency = us_to_s(latency_us)
    graph = device_graph(devices)
    for y in range(rows):
        for a, b, bw in _ring_links(m, xbw):
            graph.add_edge(a + m * y, b + m * y, bandwidth=bw, latency=latency, dim="x")
    for x in range(m):
        for a, b, bw in _ring_links(rows, ybw):
            graph.add_edge(x + m * a, x + m * b, bandwidth=bw, latency=latency, dim="y")
    params = {"shape": (m, rows), "preset": preset, "x_bandwidth_gBps": xbw / 1e9, "y_bandwidth_gBps": ybw / 1e9,
              "latency_us": latency_us}
    return System(devices=devices, groups=grps, graph=graph, topology=name, params=params)


def _default_shape(n: int) -> tuple[int, int]:
    if n % DEFAULT_X_CHIPS == 0:
        return DEFAULT_X_CHIPS, n // DEFAULT_X_CHIPS
    return n, 1


def _ring_links(size: int, axis_bandwidth: float) -> list[tuple[int, int, float]]:
    """The links of one ring of ``size`` chips; a chip's two links share the axis bandwidth."""
    if size == 1:
        return []
    if size == 2:
        return [(0, 1, axis_bandwidth)]  # both links reach the same neighbour: one edge
    return [(k, (k + 1) % size, axis_bandwidth / 2) for k in range(size)]


@dataclass(frozen=True)
class Torus:
    """The geometry a DSM cost model needs: M chips along X, N along Y, bandwidth per axis (B/s).

    ``x_bandwidth`` is what one chip sends along X over all its X links (both directions of a
    ring), ``latency`` the largest link latency.
    """

    m: int
    n: int
    x_bandwidth: float
    y_bandwidth: float
    latency: float = 0.0

    @property
    def chips(self) -> int:
        return self.m * self.n

    @classmethod
    def of(cls, system: System) -> "Torus":
        """The torus of a ``dsm-torus`` or ``torus2d`` system (shape and per-axis link bandwidth)."""
        shape = system.params.get("shape")
        if system.topology not in ("dsm-torus", "torus2d") or shape is None:
            raise OptmapError(f"the dsm cost model needs a 2-D torus of chips; topology '{system.topology}' is not "
                              f"one; use topology = \"dsm-torus\"")
        m, n = (int(s) for s in shape)
        axis = {"x": 0.0, "y": 0.0}
        latency = 0.0
        for _, _, data in system.graph.edges(0, data=True):
            axis[data.get("dim", "x")] += float(data["bandwidth"])
            latency = max(latency, float(data["latency"]))
        return cls(m, n, axis["x"] or float("inf"), axis["y"] or float("inf"), latency)

    def sub(self, rows: int) -> "Torus":
        """The sub-torus of ``rows`` full X-rings (a timestep-pipelining chip group, §III-D)."""
        return Torus(self.m, rows, self.x_bandwidth, self.y_bandwidth, self.latency)
