"""The device graph of a system: built on demand, checked, and refused above a size limit.

A :class:`System` keeps its topology as a :class:`GraphRecipe` (a picklable builder and the
number of nodes and links it will make) until something asks for routing (``path_bandwidth``,
``subset_bandwidth``, ``link``, ``graph``); cost models that work on groups (AccPar) never build
it. A graph larger than :data:`GRAPH_SIZE_LIMIT` nodes plus links is refused with one line
instead of running the machine out of memory. networkx is imported only here, on first use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from optmap.errors import OptmapError
from optmap.system.accelerator import Accelerator, _check_positive

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

# Largest device graph a system builds, in nodes plus links. A networkx node or link costs about
# 500 bytes (2^20 devices on a switch, 2.1 M elements, measured 1.0 GB), so this is about 1 GB.
GRAPH_SIZE_LIMIT = 1 << 21


@dataclass(frozen=True)
class Link:
    """One direct link: ``bandwidth`` in B/s, ``latency`` in s."""

    bandwidth: float
    latency: float


@dataclass(frozen=True)
class GraphRecipe:
    """How to build a system's graph later: ``build()`` returns it; ``nodes`` and ``links`` say
    how large it will be, so it can be refused before it is built. ``build`` must pickle (a
    module-level function or a ``functools.partial`` of one) so systems travel to workers."""

    build: Callable[[], "nx.Graph"]
    nodes: int
    links: int

    @property
    def size(self) -> int:
        return self.nodes + self.links


def device_graph(devices: Sequence[Accelerator]) -> "nx.Graph":
    """A graph holding the device nodes ``0..len-1`` (attribute ``accelerator``) and no edges."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from((i, {"accelerator": acc}) for i, acc in enumerate(devices))
    return g


def build_graph(recipe: GraphRecipe, where: str, devices: int) -> "nx.Graph":
    """``recipe``'s graph, or one OptmapError line when it is larger than the limit."""
    if recipe.size > GRAPH_SIZE_LIMIT:
        raise OptmapError(
            f"{where}: routing between devices needs the device graph of {devices:,} devices "
            f"({recipe.size:,} nodes and links, more than optmap.system.graph.GRAPH_SIZE_LIMIT = "
            f"{GRAPH_SIZE_LIMIT:,}, about 1 GB); use fewer devices or a cost model that works on "
            f"groups of devices (e.g. accpar)"
        )
    return recipe.build()


def validate_graph(g: Any, devices: Sequence[Accelerator], where: str) -> None:
    """One OptmapError line for the first thing wrong with a system's graph (see :class:`System`)."""
    import networkx as nx

    if not isinstance(g, nx.Graph) or g.is_directed() or g.is_multigraph():
        raise OptmapError(f"{where}: graph must be an undirected networkx.Graph")
    n = len(devices)
    for node, data in g.nodes(data=True):
        if isinstance(node, bool) or not isinstance(node, (int, str)):
            raise OptmapError(f"{where}: graph node {node!r} must be a device id or a switch name")
        if isinstance(node, int):
            if not 0 <= node < n:
                raise OptmapError(f"{where}: graph node {node} is not a device id (0..{n - 1})")
            if data.get("accelerator") != devices[node]:
                raise OptmapError(f"{where}: graph node {node} lacks its 'accelerator' attribute")
    if g.number_of_nodes() - sum(isinstance(v, str) for v in g) < n:
        missing = next(i for i in range(n) if i not in g)
        raise OptmapError(f"{where}: device {missing} is not in the graph")
    for u, v, data in g.edges(data=True):
        if u == v:
            raise OptmapError(f"{where}: self-loop on node {u!r}")
        _check_positive(f"{where}: link ({u!r}, {v!r})", "bandwidth", data.get("bandwidth"))
        _check_positive(f"{where}: link ({u!r}, {v!r})", "latency", data.get("latency"), allow_zero=True)
    if n > 1:
        reach = nx.node_connected_component(g, 0)
        if len(reach) - sum(isinstance(v, str) for v in reach) < n:
            cut = next(i for i in range(n) if i not in reach)
            raise OptmapError(f"{where}: device {cut} cannot reach device 0; the graph is disconnected")


def square_shape(n: int) -> tuple[int, int]:
    """The most square ``(X, Y)`` with ``X * Y == n`` and ``X >= Y`` (a prime n gives ``(n, 1)``)."""
    y = math.isqrt(n)
    while n % y:
        y -= 1
    return n // y, y
