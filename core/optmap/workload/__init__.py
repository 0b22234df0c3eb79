"""The workload IR: `Layer` (an op kind + per-sample shapes + attributes) and `Workload` (a DAG of layers).

- :mod:`~optmap.workload.ops`: the open vocabulary of operation kinds and their FLOP / parameter
  rules (plugins register more through the ``optmap_register_ops`` hook);
- :mod:`~optmap.workload.general_ops`: the general kinds every importer and sequence model shares
  (element-wise, binary, reduce, norm, embedding, attention, transposed convolution, data movement);
- :mod:`~optmap.workload.layer`: `Layer`, dtypes and phases (both open);
- :mod:`~optmap.workload.graph`: `Workload` (its networkx view built on first use) and
  `DeferredGraph` (a layer graph built on first use);
- :mod:`~optmap.workload.builder`: `WorkloadBuilder`, shape inference;
- :mod:`~optmap.workload.views`: the series-parallel block view for layer-wise DPs.
"""

from optmap.workload.builder import WorkloadBuilder
from optmap.workload.graph import DeferredGraph, Workload
from optmap.workload.layer import (
    DTYPE_BYTES,
    PHASE_PASSES,
    Layer,
    Shape,
    dtype_bytes,
    register_dtype,
    register_phase,
)
from optmap.workload.ops import (
    ACTIVATIONS,
    LayerFlops,
    OpKind,
    op_kind,
    op_names,
    register_op,
)
from optmap.workload.views import BlockItem, Node, Parallel, series_parallel_view

__all__ = [
    "ACTIVATIONS", "BlockItem", "DeferredGraph", "DTYPE_BYTES", "Layer", "LayerFlops", "Node", "OpKind", "PHASE_PASSES",
    "Parallel", "Shape", "Workload", "WorkloadBuilder", "dtype_bytes", "op_kind", "op_names",
    "register_dtype", "register_op", "register_phase", "series_parallel_view",
]
