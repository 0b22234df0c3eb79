"""AccPar's view of a workload: the weighted layers and merge nodes of its block view, as arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from optmap.errors import OptmapError
from optmap.workload import Node, Parallel, Workload

from .tables import MERGE, WEIGHTED


@dataclass(frozen=True)
class Graph:
    """The block view as arrays: node shapes, edges, and the chain/segments for the DP."""

    names: tuple[str, ...]
    role: np.ndarray
    kind: tuple[str, ...]  # "conv2d", "linear", "add", ... per node
    d_in: np.ndarray
    d_out: np.ndarray
    kernel: np.ndarray
    s_in: np.ndarray
    s_out: np.ndarray
    flops_2mac: np.ndarray  # forward + backward-data + weight-gradient FLOPs per sample, from the IR
    edge_u: np.ndarray
    edge_v: np.ndarray
    edge_role_u: np.ndarray
    edge_role_v: np.ndarray
    chain: tuple[int, ...]
    segments: tuple[tuple[tuple[int, ...], ...], ...]


def block_graph(workload: Workload) -> Graph:
    """AccPar's view of a workload: weighted layers and merge nodes of its block view."""
    view = workload.block_view()
    names: list[str] = []
    for item in view:
        names.extend([item.name] if isinstance(item, Node) else [n for path in item.paths for n in path])
    index = {name: i for i, name in enumerate(names)}
    layers = [workload.layer(n) for n in names]
    for layer in layers:
        if layer.op == "conv2d" and layer.attr("groups", 1) != 1:
            raise OptmapError(f"accpar: layer '{layer.name}' is a grouped convolution, which AccPar's types do not cover")
        if not (layer.weighted or layer.op in ("add", "concat")):
            raise OptmapError(f"accpar: layer '{layer.name}' ({layer.op}) cannot be partitioned by AccPar")
    chain, segments, edges = [], [], []
    pending: tuple[tuple[int, ...], ...] = ((),)
    for item in view:
        if isinstance(item, Parallel):
            pending = tuple(tuple(index[n] for n in path) for path in item.paths)
            continue
        node = index[item.name]
        if chain:
            segments.append(pending)
            for path in pending:
                hops = (chain[-1], *path, node)
                edges.extend(zip(hops[:-1], hops[1:]))
        chain.append(node)
        pending = ((),)
    merge = np.array([layer.op in ("add", "concat") for layer in layers])
    d_in = np.array([layer.in_channels for layer in layers], float)
    d_out = np.array([layer.out_channels for layer in layers], float)
    d_in[merge] = d_out[merge]  # a merge node holds one tensor: its output
    s_in = np.array([layer.in_spatial for layer in layers], float)
    s_out = np.array([layer.out_spatial for layer in layers], float)
    s_in[merge] = s_out[merge]
    return Graph(
        names=tuple(names),
        role=np.where(merge, MERGE, WEIGHTED),
        kind=tuple(layer.op for layer in layers),
        d_in=d_in,
        d_out=d_out,
        kernel=np.array([layer.kernel_elements if layer.weighted else 0 for layer in layers], float),
        s_in=s_in,
        s_out=s_out,
        flops_2mac=np.array([layer.flops(1).total for layer in layers], float),
        edge_u=np.array([u for u, _ in edges], int),
        edge_v=np.array([v for _, v in edges], int),
        edge_role_u=np.where(merge, MERGE, WEIGHTED)[[u for u, _ in edges]],
        edge_role_v=np.where(merge, MERGE, WEIGHTED)[[v for _, v in edges]],
        chain=tuple(chain),
        segments=tuple(segments),
    )
