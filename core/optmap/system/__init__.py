"""Accelerators, groups of devices, and the topology graph of a multi-accelerator system.

- :mod:`~optmap.system.accelerator`: `Accelerator` (SI units, free-form ``attrs``);
- :mod:`~optmap.system.groups`: `GroupSpec` (a problem file's group), `Group`, `assign_devices`;
- :mod:`~optmap.system.graph`: `System` (devices, groups, the networkx graph, routing);
- :mod:`~optmap.system.routing`: minimum-hop routes (widest, quickest).
"""

from optmap.system.accelerator import DEFAULT_DTYPE_KEY, Accelerator, canonical_dtype
from optmap.system.groups import Group, GroupSpec, assign_devices

_GRAPH = ("Link", "System", "device_graph")  # imported on first use: networkx is slow to import


def __getattr__(name):
    if name in _GRAPH:
        from optmap.system import graph

        return getattr(graph, name)
    raise AttributeError(f"module 'optmap.system' has no attribute {name!r}")

__all__ = [
    "DEFAULT_DTYPE_KEY", "Accelerator", "Group", "GroupSpec", "Link", "System", "assign_devices", "canonical_dtype",
    "device_graph",
]
