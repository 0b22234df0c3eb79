"""Sub-systems: some devices of a `System` as a `System` of their own, and the links between two.

A composite formulation gives each pipeline stage some devices and prices the stage with another
formulation on :func:`sub_system`: the chosen devices renumbered ``0..k-1`` in the order given,
each group cut to its chosen devices (empty groups dropped), the topology's name and options
kept except those that describe the whole system's extent (:data:`WHOLE_SYSTEM_PARAMS`, e.g. a
torus's ``shape``): a formulation that needs them refuses a sub-system instead of pricing some
devices as the whole machine. Routing is the parent's: the other devices stay in the graph as relay nodes (named
``"relay<id>"``, like switches), so a path between two chosen devices is exactly the parent's
path, its links, bandwidth and latency unchanged. The graph is built only when routing needs it.

:func:`stage_transfer` prices a tensor moving between two sub-systems (pipeline stages).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Sequence

from optmap.errors import OptmapError
from optmap.system.graph import GraphRecipe
from optmap.system.groups import Group
from optmap.system.system import System

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

# System.params that describe the whole system (its geometry), not kept by a sub-system.
WHOLE_SYSTEM_PARAMS = ("shape",)


def _relabelled(parent: System, devices: tuple[int, ...]) -> "nx.Graph":
    """The parent's graph with ``devices`` renumbered 0..k-1 and every other device a relay."""
    import networkx as nx

    new_id = {d: i for i, d in enumerate(devices)}
    names = {node: new_id.get(node, f"relay{node}") if isinstance(node, int) else node for node in parent.graph}
    graph = nx.relabel_nodes(parent.graph, names, copy=True)
    for node in names.values():
        if isinstance(node, str) and node.startswith("relay"):
            graph.nodes[node].pop("accelerator", None)
    return graph


@functools.lru_cache(maxsize=64)
def _size(system: System) -> tuple[int, int]:
    """Nodes and links of ``system``'s graph, counted once (networkx counts edges one by one)."""
    if system._recipe is not None:
        return system._recipe.nodes, system._recipe.links
    return system.graph.number_of_nodes(), system.graph.number_of_edges()


def groups_of(system: System, devices: Sequence[int]) -> list[tuple[Group, list[int]]]:
    """The groups that ``devices`` come from, in the system's order, each with the positions in
    ``devices`` of its members (sorted)."""
    members: dict[int, list[int]] = {}
    spans = [(g.devices[0], g.devices[-1] + 1) if g.devices.contiguous else None for g in system.groups]
    for i, d in enumerate(devices):
        gi = next((k for k, span in enumerate(spans) if span and span[0] <= d < span[1]), None)
        if gi is None:
            gi = system.groups.index(system.group_of(d))
        members.setdefault(gi, []).append(i)
    return [(system.groups[k], sorted(members[k])) for k in sorted(members)]


def sub_system(system: System, devices: Sequence[int]) -> System:
    """The devices ``devices`` of ``system`` (ids, in the order they get as ``0..k-1``) as a
    :class:`System`; see the module docstring."""
    chosen = tuple(system._check_device(d) for d in devices)
    if not chosen:
        raise OptmapError(f"system '{system.topology}': a sub-system needs at least one device")
    if len(set(chosen)) != len(chosen):
        raise OptmapError(f"system '{system.topology}': a sub-system lists a device twice")
    groups = [Group(g.name, g.accelerator, ids) for g, ids in groups_of(system, chosen)]
    accelerators = [system.devices[d] for d in chosen]
    recipe = GraphRecipe(functools.partial(_relabelled, system, chosen), *_size(system))
    params = {k: v for k, v in system.params.items() if k not in WHOLE_SYSTEM_PARAMS}
    sub = System(accelerators, groups, recipe, topology=system.topology, params=params)
    if hasattr(system, "options_given"):
        object.__setattr__(sub, "options_given", system.options_given)
    return sub


def stage_transfer(system: System, sender: Sequence[int], receiver: Sequence[int]) -> tuple[float, float]:
    """(bytes/s, seconds): how fast a tensor spread evenly over ``sender``'s devices reaches
    ``receiver``: every sending device moves its share at once, over the path between the two
    stages' nearest devices (the last sender and the first receiver), so the rate is
    ``len(sender)`` times that path's per-flow bandwidth and the latency is the path's.

    The assumption (each sender has its own path of the same rate) holds for switched and
    fully connected topologies; on a ring or torus it is optimistic, as the parent's routing
    model does not price contention either (:mod:`optmap.system.system`).
    """
    a, b = system._check_device(sender[-1]), system._check_device(receiver[0])
    if a == b:
        return float("inf"), 0.0
    return len(sender) * system.path_bandwidth(a, b), system.path_latency(a, b)
