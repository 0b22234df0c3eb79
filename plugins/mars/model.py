"""The ``mars`` cost model: MARS's formulation (Shen et al., DAC 2023) as one design space and its scoring.

Decisions (random keys; :mod:`.level1`, :mod:`.strategies`)
    Level 1, over the AccSet candidates (the topology's dendrogram, :func:`.topology.accset_candidates`):
    ``sets`` (a permutation of the candidates: the selection priority), ``design:<c>`` per
    candidate (categorical, adaptive systems only), ``order`` (a permutation: the place of the
    chosen sets along the layers) and ``cuts`` (a permutation of the gaps after each layer: the
    first k − 1 are the boundaries). Level 2, per mapped layer: ``<l>:es`` and ``<l>:ss`` (two
    permutations of the six loop dimensions: ES and SS priorities), ``<l>:arity`` (a real in
    [0, 1]: the ES factor tuple) and ``<l>:ss_on``. Every vector decodes to a valid mapping:
    disjoint sets covering every device, non-empty contiguous layer ranges, one strategy per layer.
    The formulation's repair maps every vector to the canonical vector of the mapping it decodes
    to (one vector per mapping); its sampler draws designs in proportion to their normalised
    performance (Sec. V) and the other keys uniformly.

Scoring (every reconstruction a named option; note §3, :mod:`.tables`, :mod:`.subproblem`,
:mod:`.traffic`): per set, Σ over its layers of compute + All-Reduce + SS ring + re-layout, plus
the transfers into it from other sets and the host; sets are aggregated by ``sum`` (single
inference, one set after another; default, note §6.14) or ``max`` (pipelined period). A set whose
weights plus largest activations exceed a device's DRAM makes the mapping infeasible (Sec. III).
The total is a function of the mapping alone, so every engine (``mars``, ``mars-baseline``,
``h2h``, ``ga``, ``optuna``, ``random``) is scored by it.

Report (:mod:`.report`): per layer its set, design, ES and SS; a ``sets`` table (devices, design, layer range,
latency). Metrics: ``time`` (s), ``compute_time``, ``collective_time`` (All-Reduce + SS), ``relayout_time``,
``inter_set_time``, ``host_time`` (``collective_time`` includes the halo exchange when on), ``memory_fraction`` (largest footprint / DRAM), ``memory_bytes`` (that footprint),
``largest_set`` (devices in the largest AccSet; Table III uses 2 and 4),
``baseline_time`` (the Herald-derived baseline of Sec. VI-A on the same model) and ``reduction``
(1 − time / baseline_time, Table III's "Latency/ms (−x%)").
"""

from __future__ import annotations

from collections import defaultdict
from functools import cached_property
from typing import Literal

import numpy as np

from optmap import schedule
from optmap.bounds import MAX_DIMENSION, NonNegative, ints

from optmap.cost import BATCH, CostModel, CostReport
from optmap.errors import OptmapError
from optmap.host import Host
from optmap.space import DesignSpace, Mapping, categorical, permutation, real
from optmap.system import System
from optmap.units import gBps_to_bytes_per_s
from optmap.workload import Workload

from . import level1, report
from .designs import Design, design_of, lookup_designs
from .layers import layer_graph
from .level1 import Plan
from .strategies import DIMS, GENES, StrategySet
from .subproblem import SubProblem
from .tables import CostOptions, SetClass, node_table
from .topology import search_candidates, set_label
from .traffic import Traffic

MARS_TABLES = "mars_tables"  # capability of the native engines: subproblem(), plan_vector(), candidates
TABLE_II = ("superlip", "systolic", "winograd")


class MarsCostModel(CostModel):
    """MARS (DAC 2023): accelerator sets, designs, contiguous layer ranges and per-layer ES/SS shards."""

    capabilities = frozenset({BATCH, MARS_TABLES})
    metrics = ("time", "compute_time", "collective_time", "relayout_time", "inter_set_time", "host_time",
               "memory_fraction", "baseline_time", "reduction", "memory_bytes", "largest_set")

    def __init__(
        self,
        workload: Workload,
        system: System,
        *,
        designs: list[str] = list(TABLE_II),
        adaptive: bool = True,
        include_fc: bool = False,
        max_es_dims: ints(1, 6) = 2,
        ss_on_es_dims: bool = False,
        ss_overlap: bool = False,
        halo: bool = False,
        dram_gbytes_per_s: NonNegative = 0.0,
        design_peaks: Literal["parameters", "pes"] = "pes",
        aggregate: Literal["sum", "max"] = "sum",
        inter_set_links: Literal["one", "min-set"] = "one",
        host_io: bool = True,
        min_set_size: ints(1, MAX_DIMENSION) = 1,
        span_slowest_links: bool = False,
        host: Host | None = None,
    ) -> None:
        """Options (note §6 decisions; defaults are the note's recommendations):

        ``designs`` the candidate designs of an adaptive system, registered accelerators that carry
        a cycle model (Table II: superlip, systolic, winograd); ``adaptive = false`` uses each
        device's own fixed design instead (the H2H comparison, Sec. VI-C; a set runs at its
        slowest member). ``include_fc`` maps fully connected layers too (Table III maps
        convolutions only). ``max_es_dims`` dimensions ES may split (Sec. IV: two);
        ``ss_on_es_dims`` lets SS share a dimension ES splits (note §6.6: off); ``ss_overlap``
        overlaps the SS ring with compute (note §6.9: off, Fig. 2(c) alternates); ``halo``
        charges the halo exchange of H/W splits (note §6.11: off, as Fig. 2). ``dram_gbytes_per_s``
        bounds a layer by its device's DDR traffic (0, default: compute-bound, note §3.2).
        ``design_peaks`` "pes" (default: each cycle model scaled to Table II's #PEs as MAC/cycle,
        438, 572, 576; Sec. VI-A: "to make their theoretical performance comparable") or
        "parameters" (the cited designs' own peaks, 448, 1144, 2304). ``aggregate`` "sum" (one
        inference, sets in turn) or "max" (pipelined period). ``inter_set_links`` parallel links
        of a set-to-set or host transfer: "one" (note §6.12) or "min-set". ``host_io`` counts the
        input from and the output to the host (note §6.13). ``min_set_size`` drops AccSet
        candidates smaller than this (note §4.2). ``span_slowest_links`` keeps the candidates
        holding an edge of the lowest bandwidth (on F1 the 8-FPGA set across the host); default
        false: Sec. V's candidates are the sub-graphs the removals *produce* (mars.md).
        ``host`` (given by the host that builds the model, never a problem-file key) supplies the
        registered designs; without one, this plugin's own.
        """
        if workload.phase != "inference" or workload.batch != 1:  # Sec. VI: single-image inference latency
            raise OptmapError(f"mars prices the latency of one inference (Sec. VI, batch 1); got phase "
                              f"\"{workload.phase}\" and batch {workload.batch}: set [workload] phase = "
                              f"\"inference\" and batch = 1")
        self.workload, self.system = workload, system
        self.graph = layer_graph(workload, include_fc)
        self.layers = self.graph.layers
        self.options = CostOptions(bytes_per_element=workload.bytes_per_element, ss_overlap=ss_overlap, halo=halo,
                                   dram_bandwidth=gBps_to_bytes_per_s(dram_gbytes_per_s) if dram_gbytes_per_s
                                   else float("inf"), peaks_from_pes=design_peaks == "pes")
        self.aggregate, self.adaptive, self.max_es_dims, self.ss_on_es_dims = aggregate, adaptive, max_es_dims, ss_on_es_dims
        self.candidates = search_candidates(system, min_set_size, span_slowest_links)
        if adaptive:
            self.designs = lookup_designs(list(designs), host)
            self.device_designs = None
        else:
            self.designs = ()
            self.device_designs = self._fixed_designs()
        self._check_layers_runnable()
        self.classes = [self._set_class(c) for c in self.candidates]
        self._class_index = {cls: i for i, cls in enumerate(dict.fromkeys(self.classes))}
        self.class_of = [self._class_index[cls] for cls in self.classes]
        self.traffic = Traffic(self.graph, system, self.candidates, self.options.bytes_per_element,
                               inter_set_links, host_io)
        self._strategy_sets: dict[int, StrategySet] = {}
        self._tables: dict[tuple[int, int], object] = {}
        self._subs: dict[tuple[int, int, int, int], SubProblem] = {}
        self.space = self._space()

    # --- set-up --------------------------------------------------------------------------------
    def _fixed_designs(self) -> tuple[Design, ...]:
        out = []
        for d, acc in enumerate(self.system.devices):
            design = design_of(acc)
            if design is None:
                raise OptmapError(f"adaptive = false needs devices with fixed designs, but device {d} is "
                                  f"'{acc.name}', which carries no MARS design; use superlip, systolic or winograd")
            out.append(design)
        return tuple(out)

    def _check_layers_runnable(self) -> None:
        pool = self.designs or self.device_designs
        for layer in self.layers:
            if not any(layer.op in design.supports for design in pool):
                names = ", ".join(dict.fromkeys(d.name for d in pool))
                raise OptmapError(f"layer '{layer.name}' ({layer.op}) cannot run on any design ({names}); add a "
                                  f"design that supports {layer.op} layers or set include_fc = false")

    def _set_class(self, devices: tuple[int, ...]) -> SetClass:
        members = () if self.adaptive else tuple(sorted(self.device_designs[d].name for d in devices))
        return SetClass(p=len(devices), bandwidth=self.system.subset_bandwidth(devices),
                        latency=self.system.subset_latency(devices),
                        memory=min(self.system.devices[d].memory_bytes for d in devices), members=members)

    def strategy_set(self, p: int) -> StrategySet:
        if p not in self._strategy_sets:
            self._strategy_sets[p] = StrategySet(p, self.max_es_dims, self.ss_on_es_dims)
        return self._strategy_sets[p]

    def designs_of(self, candidate: int, design: int) -> tuple[Design, ...]:
        """The design a set runs (adaptive: the chosen one) or its members' fixed designs, once each."""
        if self.adaptive:
            return (self.designs[design],)
        return tuple({self.device_designs[d].name: self.device_designs[d] for d in self.candidates[candidate]}.values())

    def subproblem(self, candidate: int, design: int, first: int, last: int) -> SubProblem:
        """Level-2 sub-problem of layers first..last on AccSet candidate ``candidate`` with ``design``.

        Sub-problems of candidates of the same class (size, bandwidth, latency, memory, members)
        are one and the same object: level-2 results are shared between equivalent sets.
        """
        k = self.class_of[candidate]
        key = (k, design if self.adaptive else -1, first, last)
        sub = self._subs.get(key)
        if sub is None:
            cls = self.classes[candidate]
            if key[:2] not in self._tables:
                self._tables[key[:2]] = node_table(self.graph, self.strategy_set(cls.p), self.designs_of(candidate, design),
                                                   cls, self.options)
            sub = SubProblem(self.graph, self.strategy_set(cls.p), self._tables[key[:2]], cls, first, last,
                             self.options.bytes_per_element)
            if len(self._subs) > 200_000:
                self._subs.clear()
            self._subs[key] = sub
        return sub

    def subproblem_key(self, candidate: int, design: int, first: int, last: int) -> tuple[int, int, int, int]:
        return (self.class_of[candidate], design if self.adaptive else -1, first, last)

    # --- the design space -------------------------------------------------------------------------
    def _space(self) -> DesignSpace:
        labels = [set_label(c) for c in self.candidates]
        variables = [permutation("sets", labels, level=1)]
        if self.adaptive:
            variables += [categorical(f"design:{lab}", [d.name for d in self.designs], level=1) for lab in labels]
        variables.append(permutation("order", labels, level=1))
        if len(self.layers) > 1:
            variables.append(permutation("cuts", [layer.name for layer in self.layers[:-1]], level=1))
        for layer in self.layers:
            variables += [permutation(f"{layer.name}:es", DIMS, level=2, layer=layer.name),
                          permutation(f"{layer.name}:ss", DIMS, level=2, layer=layer.name),
                          real(f"{layer.name}:arity", 0.0, 1.0, level=2, layer=layer.name),
                          categorical(f"{layer.name}:ss_on", [False, True], level=2, layer=layer.name)]
        space = DesignSpace(variables)
        c = len(self.candidates)
        first_design = space.columns(f"design:{labels[0]}").start if self.adaptive else space.columns("order").start
        self.cols = {"set": space.columns("sets"), "design": slice(first_design, first_design + (c if self.adaptive else 0)),
                     "order": space.columns("order"),
                     "cut": space.columns("cuts") if len(self.layers) > 1 else slice(0, 0),
                     "genes": slice(space.columns(f"{self.layers[0].name}:es").start, space.width)}
        return DesignSpace(variables, repair=self.canonical, sample=self._sample)

    def _sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Keys uniform; designs drawn in proportion to their normalised performance (Sec. V)."""
        X = rng.random((n, self.space.width))
        genes = X[:, self.cols["genes"]].reshape(n, len(self.layers), GENES)
        genes[..., 13] = np.floor(genes[..., 13] * 2)  # ss_on: a choice index, 0 or 1
        X[:, self.cols["genes"]] = genes.reshape(n, -1)
        if self.adaptive:
            p = self.design_performance / self.design_performance.sum()
            X[:, self.cols["design"]] = rng.choice(len(self.designs), size=(n, len(self.candidates)), p=p)
        return X

    def canonical(self, X: np.ndarray) -> np.ndarray:
        """The formulation's repair: every row replaced by the canonical vector of its mapping."""
        X = np.atleast_2d(np.asarray(X, float))
        plans, states = self._decode(X)
        return np.array([self.plan_vector(Plan(p.sets, p.designs, p.bounds, tuple(row)))
                         for p, row in zip(plans, states.tolist())]).reshape(X.shape)

    @cached_property
    def design_performance(self) -> np.ndarray:
        """Normalised performance of each design on the workload (Sec. V: profiled before the search)."""
        if not self.adaptive:
            return np.ones(0)
        macs = sum(layer.macs for layer in self.layers)
        times = []
        for design in self.designs:
            t = design.seconds(self.graph.dims, self.graph.strides)
            supported = np.array([layer.op in design.supports for layer in self.layers])
            times.append(np.where(supported, t, np.inf).sum())
        speed = macs / np.array(times)
        return speed / speed.max()

    # --- plans <-> vectors ----------------------------------------------------------------------
    def level1_plan(self, x: np.ndarray) -> Plan:
        designs = np.rint(x[self.cols["design"]]).astype(int) if self.adaptive else None
        return level1.decode(x[self.cols["set"]], x[self.cols["order"]], x[self.cols["cut"]], designs,
                             self.candidates, self.system.count, len(self.layers))

    def _decode(self, X: np.ndarray) -> tuple[list[Plan], np.ndarray]:
        """Level-1 plans and strategy rows (n, layers) of the rows of ``X``: one decode per set size
        over every (row, layer) of that size (a strategy depends only on P and the layer's extents)."""
        n, nl = len(X), len(self.layers)
        genes = X[:, self.cols["genes"]].reshape(n, nl, GENES)
        plans = [self.level1_plan(x) for x in X]
        size = np.zeros((n, nl), dtype=np.int64)
        for row, plan in enumerate(plans):
            for c, (a, b) in zip(plan.sets, plan.bounds):
                size[row, a:b + 1] = len(self.candidates[c])
        states = np.zeros((n, nl), dtype=np.int64)
        for p in np.unique(size):
            rows, layers = np.nonzero(size == p)
            states[rows, layers] = self.strategy_set(int(p)).decode(genes[rows, layers][None], self.graph.dims[layers])[0]
        return plans, states

    def plan_of(self, x: np.ndarray) -> Plan:
        """The structured mapping a vector stands for, strategies decoded."""
        plans, states = self._decode(np.asarray(x, float)[None])
        p = plans[0]
        return Plan(p.sets, p.designs, p.bounds, tuple(int(s) for s in states[0]))

    def plan_vector(self, plan: Plan) -> np.ndarray:
        """A space vector that decodes to ``plan`` (its strategies must be valid for their layers)."""
        x = np.zeros(self.space.width)
        sel, order, cut = level1.encode(plan, len(self.candidates), len(self.layers))
        x[self.cols["set"]], x[self.cols["order"]], x[self.cols["cut"]] = sel, order, cut
        if self.adaptive:
            designs = np.zeros(len(self.candidates))
            designs[list(plan.sets)] = plan.designs
            x[self.cols["design"]] = designs
        if plan.strategies is not None:
            genes = np.zeros((len(self.layers), GENES))
            for c, (a, b) in zip(plan.sets, plan.bounds):
                genes[a:b + 1] = self.strategy_set(len(self.candidates[c])).encode(np.array(plan.strategies[a:b + 1]))
            x[self.cols["genes"]] = genes.ravel()
        return x

    @cached_property
    def baseline_plan(self) -> Plan:
        from .baseline import baseline_plan

        return baseline_plan(self)

    def plans(self) -> dict[str, Mapping]:
        """Named plans engines may seed with: the paper's baseline (Sec. VI-A)."""
        return {"baseline": self.space.decode(self.plan_vector(self.baseline_plan))}

    # --- scoring --------------------------------------------------------------------------------
    def _score(self, X: np.ndarray) -> dict[str, np.ndarray]:
        X = np.atleast_2d(np.asarray(X, float))
        n = len(X)
        plans, states = self._decode(X)
        out = {m: np.zeros(n) for m in ("compute_time", "collective_time", "relayout_time", "inter_set_time",
                                         "host_time", "memory_fraction", "memory_bytes", "largest_set")}
        excess = np.zeros(n)
        stages = []
        groups: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
        for row, plan in enumerate(plans):
            inter, host = self.traffic.per_set(plan.sets, plan.bounds)
            stages.append(inter + host)
            out["inter_set_time"][row], out["host_time"][row] = inter.sum(), host.sum()
            out["largest_set"][row] = max(len(self.candidates[c]) for c in plan.sets)
            for i, (c, d, (a, b)) in enumerate(zip(plan.sets, plan.designs, plan.bounds)):
                groups[(c, d, a, b)].append((row, i))
        for (c, d, a, b), members in groups.items():
            rows = np.array([r for r, _ in members])
            parts = self.subproblem(c, d, a, b).parts(states[rows, a:b + 1])
            for j, (r, i) in enumerate(members):
                stages[r][i] += parts["latency"][j]
            for metric, part in (("compute_time", "compute"), ("collective_time", "collective"),
                                 ("relayout_time", "relayout")):
                np.add.at(out[metric], rows, parts[part])
            np.maximum.at(out["memory_fraction"], rows, parts["memory_fraction"])
            np.maximum.at(out["memory_bytes"], rows, parts["memory_bytes"])
            np.maximum.at(excess, rows, parts["excess"])
        # sets in turn: one pass through the stages; pipelined: the steady-state period (optmap.schedule)
        reduce = schedule.pass_time if self.aggregate == "sum" else schedule.period
        out["time"] = np.array([reduce(s) for s in stages])
        out["feasible"] = (excess == 0) & np.isfinite(out["time"])
        return out

    @cached_property
    def baseline_time(self) -> float:
        return float(self._score(self.plan_vector(self.baseline_plan))["time"][0])

    def evaluate_batch(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """Score every row of X: one level-1 decode per row, one vectorised gather per sub-problem."""
        out = self._score(X)
        out["baseline_time"] = np.full(len(out["time"]), self.baseline_time)
        with np.errstate(invalid="ignore"):  # an infeasible (infinite) baseline leaves no reduction
            out["reduction"] = 1.0 - out["time"] / self.baseline_time
        return out

    def evaluate(self, mapping: Mapping) -> CostReport:
        x = np.asarray(mapping.array, float)
        metrics = {k: float(v[0]) for k, v in self.evaluate_batch(x[None]).items() if k != "feasible"}
        plan = self.plan_of(x)
        described = report.describe(self, plan)
        return CostReport(metrics=metrics, feasible=metrics["memory_fraction"] <= 1.0 and np.isfinite(metrics["time"]),
                          reason="" if metrics["memory_fraction"] <= 1.0 else "a set exceeds its DRAM (Sec. III)",
                          layers=tuple(report.layer_rows(self, plan)), plan=described,
                          tables={"sets": [{k: v for k, v in row.items() if k != "devices"} for row in described["sets"]],
                                  "stages": [{"stage": row["set"], "seconds": row["latency_s"] + row["inbound_s"]}
                                             for row in described["sets"]]})
