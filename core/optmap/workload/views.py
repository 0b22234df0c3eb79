"""The series-parallel block view of a workload, for layer-wise dynamic programs.

A chain of weighted and merge layers, with the parallel paths of residual / inception blocks
between a fork and its merge. Any formulation that solves a layer-wise DP (AccPar's Eq. 9 with
its multi-path blocks, DeepSpatialMatrix's chain of relayout costs) reads the workload through
this view and :mod:`optmap.chain_dp`.
"""

from __future__ import annotations

from dataclasses import dataclass

from optmap.errors import OptmapError


@dataclass(frozen=True)
class Node:
    """A weighted or merge layer in a block view."""

    name: str


@dataclass(frozen=True)
class Parallel:
    """Paths between the preceding fork Node and the following merge Node; () is an identity path."""

    paths: tuple[tuple[str, ...], ...]


BlockItem = Node | Parallel



def series_parallel_view(workload) -> tuple[BlockItem, ...]:
    """The series-parallel view of ``workload`` (a Workload) for layer-wise DPs: Nodes and Parallels.

    Non-weighted single-input ops (pool, activation, norm, flatten, dropout) are collapsed away.
    Each Parallel stands between its fork Node and its merge Node; its paths are ordered by the
    merge's input position. Nested forks, multi-input layers inside a path and paths that merge
    at different nodes are not series-parallel in this sense and raise OptmapError.
    """
    layers = {n: workload.layer(n) for n in workload.order}
    kept = [n for n in workload.order if layers[n].weighted or layers[n].kind.merge]

    def fail(detail: str) -> OptmapError:
        return OptmapError(f"workload '{workload.name}' is not series-parallel (forks must re-merge at one "
                           f"add/concat without nested forks): {detail}")

    def source(n: str) -> str | None:  # the kept layer whose output reaches n's output, or None for the input
        while not (layers[n].weighted or layers[n].kind.merge):
            preds = workload.inputs_of(n)
            if not preds:
                return None
            if len(preds) != 1:
                raise fail(f"'{n}' ({layers[n].op}) has {len(preds)} inputs")
            n = preds[0]
        return n

    sources = {v: [source(u) for u in workload.inputs_of(v)] for v in kept}
    succ: dict[str, list[tuple[str, int]]] = {v: [] for v in kept}
    for v in kept:
        for i, u in enumerate(sources[v]):
            if u is not None:
                succ[u].append((v, i))
    if not kept:
        return ()
    starts = [v for v in kept if None in sources[v] or not sources[v]]  # no producer: it reads the input
    if len(starts) != 1 or sources[starts[0]] not in ([None], []):
        raise fail(f"the network input must feed exactly one weighted layer, it feeds {starts}")

    u = starts[0]
    items: list[BlockItem] = [Node(u)]
    seen = {u}
    while succ[u]:
        outs = succ[u]
        if len(outs) == 1:
            v = outs[0][0]
            if len(sources[v]) != 1:
                raise fail(f"'{v}' joins '{u}' with a branch that did not fork from it")
            items.append(Node(v))
            seen.add(v)
            u = v
            continue
        paths, merge = [], None
        for v, i in outs:
            path: list[str] = []
            while not layers[v].kind.merge:
                if len(sources[v]) != 1:
                    raise fail(f"'{v}' inside a branch of '{u}' has {len(sources[v])} inputs")
                if len(succ[v]) != 1:
                    raise fail(f"'{v}' inside a branch of '{u}' has {len(succ[v])} consumers")
                path.append(v)
                v, i = succ[v][0]
            if merge is None:
                merge = v
            elif v != merge:
                raise fail(f"branches from '{u}' merge at both '{merge}' and '{v}'")
            paths.append((i, tuple(path)))
            seen.update(path)
        if sorted(i for i, _ in paths) != list(range(len(sources[merge]))):
            raise fail(f"'{merge}' merges branches that did not all fork from '{u}'")
        items += [Parallel(tuple(p for _, p in sorted(paths))), Node(merge)]
        seen.add(merge)
        u = merge
    missing = [v for v in kept if v not in seen]
    if missing:
        raise fail(f"layers {missing[:3]} are off the main path")
    return tuple(items)


