"""What AccPar's cost model takes from the system it is given, beyond each accelerator's own figures.

AccPar (§4, Eq. 7) gives every accelerator its own link to its partner on the other side of a
split, at its network bandwidth: a non-blocking network. So the formulation prices the two
topologies that are such networks, ``fully-connected`` and ``hierarchical`` (groups of them), and
refuses the others (a ring, a mesh or a torus makes partners share links, a contention AccPar has
no term for) with one line at load.

The accelerators' network bandwidths stay the paper-faithful default. What a problem file sets in
``[system]`` on top of them is priced, never ignored:

* ``bandwidth_gbps``: every link's rate; a side's transfers run at no more than it;
* ``inter_bandwidth_gbps`` (hierarchical): the rate between groups, for a split whose partners sit
  in different groups (the first instance's partners decide);
* ``latency_us`` / ``inter_latency_us``: one latency per transfer that moves data (a node's Table 4
  fetch, an edge's Table 5 conversion) at every split: ``latency_us`` between any partners, plus
  ``inter_latency_us`` between partners in different groups. What the file does not set is 0:
  AccPar's model has no latency term, as in the paper;
* ``switch``: how the graph is drawn; per-flow bandwidth and latency are the same either way.

Options the file did not set keep their topology defaults out of AccPar's arithmetic (the paper
prices no link and no latency), so every reproduction stays where it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optmap.system import System
from optmap.units import gbps_to_bytes_per_s, us_to_s

from .hierarchy import Split

TOPOLOGIES = ("fully-connected", "hierarchical")
OPTIONS = ("bandwidth_gbps", "inter_bandwidth_gbps", "latency_us", "inter_latency_us", "switch")
REASON = ("AccPar gives every accelerator its own link to its partner at its network bandwidth (§4, Eq. 7), a "
          "non-blocking network, and has no term for partners sharing the links of a ring, mesh or torus")


@dataclass(frozen=True)
class SplitNetwork:
    """A split's link cap (B/s, ``inf`` when the file sets none) and per-transfer latency (s)."""

    bandwidth: float = math.inf
    latency: float = 0.0


def split_networks(system: System, splits: list[Split]) -> dict[tuple[int, int], SplitNetwork]:
    """The network each split's transfers see, by (level, parent class), from what the file set."""
    given = getattr(system, "options_given", frozenset())
    params = system.params

    def written(name: str, convert, unset: float) -> float:
        return convert(params[name]) if name in given and params.get(name) is not None else unset

    out = {}
    for split in splits:
        a, b = split.first
        crosses = system.topology == "hierarchical" and system.group_of(a) is not system.group_of(b)
        bandwidth = min(written("bandwidth_gbps", gbps_to_bytes_per_s, math.inf),
                        written("inter_bandwidth_gbps", gbps_to_bytes_per_s, math.inf) if crosses else math.inf)
        latency = written("latency_us", us_to_s, 0.0) + (written("inter_latency_us", us_to_s, 0.0) if crosses else 0.0)
        out[(split.level, split.parent)] = SplitNetwork(bandwidth, latency)
    return out
