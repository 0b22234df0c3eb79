"""Per-image traffic on every link: FPDeep §4.1–4.2 and §5.1–5.2 (datapaths 1–6), note §2.2.

Devices are placed along a pipeline order (the chain itself; a snake through a 2-D mesh). For a
layer l whose portions sit on devices j0..j1, fed by the device p that finished layer l - 1
(device 0 for the first layer), the values per image are:

ICP (Type-II), with the "chain" reduction of §4.2 (Fig. 8B):
  forward   input activations bypassed to the members right of a link (datapath 1) and the
            partial sums of all OC outputs passed member to member (datapath 2);
  backward  the output errors broadcast to the members (datapath 3) and the input errors each
            member computes, sent back to p (datapath 4).
OCP (Type-III): every input goes to every member (cached everywhere, §4.1), each member's outputs
  (after its SFU) are gathered to j1; backward, j1 returns each member its output errors, and the
  partial input errors are summed along the chain back to p.

Only one layer's traffic crosses a link: the layer the cut falls in (earlier layers are complete
on the left, later ones have not begun). With ``cum`` of its C units on the left:
  ICP: H_in² · (C - cum) + OC · H'² · [cum > 0]        (the same both ways)
  OCP: IC · H_in² + handoff / OC · cum
which at a layer boundary (cum = 0) is the complete activation map, as note §2.2 gives it.

"central" reduction (the paper's 2-D scheme, §4.2 / Fig. 9): every member sends its partial sums
straight to the layer's last device, inputs go straight from p to each member and broadcasts
follow a tree of shortest paths, routed on the topology graph (:class:`Routes`). On a chain, the
"chain" reduction is exact, and the traffic of a link depends on the cut before it alone
(:func:`cut_traffic`).

Parked weights (datapaths 5 and 6) travel ``weight_passes`` times towards their user and their
gradients once back, per image (:mod:`.memory`).
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from optmap.system import System

from .layers import LayerTable
from .partition import Partition


def layer_spans(part: Partition) -> tuple[np.ndarray, np.ndarray]:
    """Last device of every layer and its producer p, the last device of the layer before (M, L)."""
    present = part.present
    last = present.shape[1] - 1 - np.argmax(present[:, ::-1, :], axis=1)
    producer = np.concatenate([np.zeros((len(last), 1), int), last[:, :-1]], axis=1)
    return last, producer


def cut_traffic(table: LayerTable, layer: np.ndarray, within: np.ndarray, split: np.ndarray) -> np.ndarray:
    """Values per image crossing, each way, a link with the first ``within`` units of ``layer``
    (and all earlier layers) on its left, under the "chain" reduction (module docstring).

    Only that layer's traffic crosses: earlier layers are complete on the left, later ones have
    not begun. ``layer == len(table)`` is past the last layer: nothing crosses.
    """
    past = layer >= len(table)
    l = np.minimum(layer, len(table) - 1)
    total = table.units[l, split]
    icp = table.in_spatial[l] * (total - within) + (within > 0) * table.out_channels[l] * table.out_spatial[l]
    ocp = table.in_channels[l] * table.in_spatial[l] + table.handoff[l] / table.out_channels[l] * within
    return np.where(past, 0.0, np.where(split == 0, icp, ocp))


def _at(table: LayerTable, units: np.ndarray, splits: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """cut_traffic at global unit ``positions`` (M, K) of mappings with ``units`` / ``splits`` (M, L)."""
    ends = np.cumsum(units, axis=1)
    layer = (positions[..., None] >= ends[:, None, :]).sum(-1)
    starts = np.concatenate([np.zeros((len(units), 1)), ends], axis=1)
    within = positions - np.take_along_axis(starts, layer, 1)
    split = np.take_along_axis(splits, np.minimum(layer, len(table) - 1), 1)
    return cut_traffic(table, layer, within, split)


def hop_loads(table: LayerTable, part: Partition) -> np.ndarray:
    """Values per image crossing each pipeline hop b → b+1, each way (M, N - 1)."""
    return _at(table, part.units, part.splits, part.bounds[:, 1:-1])


def unit_traffic(table: LayerTable, splits: np.ndarray) -> np.ndarray:
    """Values per image crossing a cut placed before each global unit, and at the end (U + 1,)."""
    splits = np.asarray(splits, int)
    units = table.units[np.arange(len(table)), splits].astype(int)
    layer = np.repeat(np.arange(len(table)), units)
    within = np.arange(units.sum()) - np.repeat(np.cumsum(units) - units, units)
    return np.append(cut_traffic(table, layer, within, splits[layer]), 0.0)


def parked_hops(flows, m: int, n: int, passes: int) -> tuple[np.ndarray, np.ndarray]:
    """Forward / backward hop loads (M, N - 1) of parked weights (``passes`` times towards their
    user) and their gradients (once back), from :class:`.memory.Flows`."""
    fwd, bwd = np.zeros((m, n)), np.zeros((m, n))  # difference arrays over the hops
    lo, hi = np.minimum(flows.donor, flows.user), np.maximum(flows.donor, flows.user)
    downstream = flows.donor < flows.user  # the weights travel forward
    for target, values in ((fwd, np.where(downstream, passes, 1) * flows.values),
                           (bwd, np.where(downstream, 1, passes) * flows.values)):
        np.add.at(target, (flows.row, lo), values)
        np.add.at(target, (flows.row, hi), -values)
    return np.cumsum(fwd, axis=1)[:, :-1], np.cumsum(bwd, axis=1)[:, :-1]


class Routes:
    """Directed links of a system graph, their bandwidths, and min-hop paths between devices.

    ``order[k]`` is the device at pipeline position k; paths are networkx's (deterministic)
    shortest paths, so a snake through a mesh routes neighbours over their direct link.
    """

    def __init__(self, system: System, order: list[int]) -> None:
        self.graph, self.order = system.graph, list(order)
        self.edges = [e for u, v in system.graph.edges for e in ((u, v), (v, u))]
        self.index = {e: k for k, e in enumerate(self.edges)}
        self.capacity = np.array([system.graph.edges[e]["bandwidth"] for e in self.edges], float)
        self._paths: dict[tuple[int, int], np.ndarray] = {}
        n = len(order)
        self.hop_forward = np.zeros((max(n - 1, 0), len(self.edges)))
        self.hop_backward = np.zeros_like(self.hop_forward)
        for k in range(n - 1):
            self.hop_forward[k, self.path(k, k + 1)] = 1.0
            self.hop_backward[k, self.path(k + 1, k)] = 1.0

    def path(self, a: int, b: int) -> np.ndarray:
        """Directed-edge indices from position ``a`` to position ``b``."""
        key = (a, b)
        if key not in self._paths:
            nodes = nx.shortest_path(self.graph, self.order[a], self.order[b])
            self._paths[key] = np.array([self.index[e] for e in zip(nodes[:-1], nodes[1:])], int)
        return self._paths[key]

    def tree(self, a: int, targets) -> np.ndarray:
        """Edges of the union of shortest paths from ``a`` to every target (a broadcast tree)."""
        parts = [self.path(a, t) for t in targets if t != a]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, int)

    def hop_capacity(self) -> np.ndarray:
        """B/s each pipeline hop carries each way (its narrowest link), inf after the last device."""
        both = np.minimum(self._narrowest(self.hop_forward), self._narrowest(self.hop_backward))
        return np.concatenate([both, [np.inf]])

    def _narrowest(self, hops: np.ndarray) -> np.ndarray:
        return np.where(hops > 0, self.capacity, np.inf).min(1, initial=np.inf)

    def chain_loads(self, forward: np.ndarray, backward: np.ndarray) -> np.ndarray:
        """Hop loads (M, N - 1) each way, carried along the pipeline order: loads per edge (M, E)."""
        return forward @ self.hop_forward + backward @ self.hop_backward


def central_loads(table: LayerTable, part: Partition, flows, routes: Routes, passes: int) -> np.ndarray:
    """Loads per directed edge (M, E) with the 2-D scheme: direct transfers, central reductions."""
    last, producer = layer_spans(part)
    loads = np.zeros((len(part.chan), len(routes.edges)))
    for row in range(len(part.chan)):
        load = loads[row]

        def send(a: int, b: int, values: float) -> None:
            if a != b and values > 0:
                load[routes.path(a, b)] += values

        for l in range(len(table)):
            members = np.flatnonzero(part.chan[row, :, l])
            p, j1, c = int(producer[row, l]), int(last[row, l]), part.chan[row, :, l]
            if part.splits[row, l] == 0:  # ICP
                partial = table.out_channels[l] * table.out_spatial[l]
                for j in members:
                    send(p, j, c[j] * table.in_spatial[l])  # datapath 1
                    send(j, p, c[j] * table.in_spatial[l])  # datapath 4
                    send(j, j1, partial)  # datapath 2, reduced at j1
                load[routes.tree(j1, members)] += partial  # datapath 3
            else:  # OCP
                inputs = table.in_channels[l] * table.in_spatial[l]
                per_unit = table.handoff[l] / table.out_channels[l]
                load[routes.tree(p, members)] += inputs
                for j in members:
                    send(j, p, inputs)  # partial input errors, reduced at p
                    send(j, j1, c[j] * per_unit)
                    send(j1, j, c[j] * per_unit)
        for donor, user, values in flows.of(row):
            send(donor, user, passes * values)
            send(user, donor, values)
    return loads
