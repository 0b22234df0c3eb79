"""Accelerators, groups of devices, and the topology of a multi-accelerator system.

- :mod:`~optmap.system.accelerator`: `Accelerator` (SI units, free-form ``attrs``);
- :mod:`~optmap.system.groups`: `GroupSpec` (a problem file's group), `Group`, `DeviceIds`,
  `DeviceKinds`, `assign_devices`: device ranges and runs of one kind, whatever the count;
- :mod:`~optmap.system.system`: `System` (devices, groups, the graph on demand, routing);
- :mod:`~optmap.system.graph`: `Link`, `device_graph`, `GraphRecipe`, the size limit
  `GRAPH_SIZE_LIMIT`;
- :mod:`~optmap.system.routing`: minimum-hop routes (widest, quickest).

networkx is imported only when a graph is built.
"""

from optmap.system.accelerator import DEFAULT_DTYPE_KEY, Accelerator, canonical_dtype
from optmap.system.graph import GraphRecipe, Link, device_graph, square_shape
from optmap.system.groups import DeviceIds, DeviceKinds, Group, GroupSpec, assign_devices
from optmap.system.system import System

__all__ = [
    "DEFAULT_DTYPE_KEY", "Accelerator", "DeviceIds", "DeviceKinds", "Group", "GraphRecipe",
    "GroupSpec", "Link", "System", "assign_devices", "canonical_dtype", "device_graph", "square_shape",
]
