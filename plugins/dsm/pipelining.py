"""Timestep pipelining (DSM §III-D, Fig. 9): a run of LSTM layers on disjoint chip groups, each on its own timestep.

Decisions recorded here ([R], note §5.4 and §7.16):

* A *pipe group* is a maximal run of consecutive unidirectional LSTM layers, each the only
  consumer of the previous (bidirectional layers are "not amenable to pipelining", §III-D).
* Chips are allocated "based on their OPS complexity" (§III-D) in whole X rings (rows of M chips),
  so every stage is an M x rows sub-torus: rows proportional to the layer's MACs, largest
  remainder, at least one row each (a group needs at least as many rows as layers).
* A stage takes one timestep's time on its sub-torus; sending its output to the next stage over
  the M chips' Y links at the boundary is double-buffered (overlapped with the next step, like
  every output write, §II-D), so only its excess over the step shows; the group runs
  ``(T + g - 1) x`` the slowest stage per pass (fill and drain); gradient reductions and one-off
  weight transfers follow, per layer.
* Entering and leaving a group re-lays the activations out (every axis changes, Fig. 5 relayout).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from .layers import DSMGraph


@dataclass(frozen=True)
class PipeRun:
    """A run of pipelinable layers (names in order) and each one's share of the torus rows."""

    layers: tuple[str, ...]
    rows: tuple[int, ...]

    @property
    def name(self) -> str:
        return self.layers[0]

    @property
    def stages(self) -> int:
        return len(self.layers)


def pipe_runs(graph: DSMGraph, rows: int) -> tuple[PipeRun, ...]:
    """Every maximal run of >= 2 pipelinable layers that fits ``rows`` torus rows (one row per stage at least)."""
    g = graph.graph
    runs, current = [], []
    for layer in graph.layers:
        name = layer.name
        chained = bool(current) and list(g.successors(current[-1])) == [name] and list(g.predecessors(name)) == [
            current[-1]]
        if layer.pipelinable and chained:
            current.append(name)
            continue
        runs.append(current)
        current = [name] if layer.pipelinable else []
    runs.append(current)
    out = []
    for run in runs:
        if 2 <= len(run) <= rows:
            macs = np.array([graph.layer(n).macs_per_sample for n in run], float)
            out.append(PipeRun(tuple(run), allocate(macs, rows)))
    return tuple(out)


def allocate(work: np.ndarray, rows: int) -> tuple[int, ...]:
    """Rows per stage in proportion to ``work`` (largest remainder), each at least 1, summing to ``rows``."""
    g = len(work)
    extra = rows - g  # one row each first
    share = work / work.sum() * extra
    base = np.floor(share).astype(int)
    order = np.argsort(-(share - base), kind="stable")
    base[order[: extra - base.sum()]] += 1
    return tuple(int(r) + 1 for r in base)


def in_runs(runs: tuple[PipeRun, ...]) -> dict[str, PipeRun]:
    """Layer name -> its run."""
    return {name: run for run in runs for name in run.layers}


def contract(graph: nx.DiGraph, run: PipeRun) -> nx.DiGraph:
    """``graph`` with a run's layers merged into one node named after the run's first layer."""
    out = graph.copy()
    for name in run.layers[1:]:
        out = nx.contracted_nodes(out, run.name, name, self_loops=False, copy=False)
    return out
