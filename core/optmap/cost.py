"""The cost-model contract: a formulation's design space and how a mapping of it is scored.

A cost model is a :class:`CostModel`: required are ``space``, ``metrics`` and ``evaluate``;
everything else has a default (optuna's ``BaseSampler`` is the model: a small abstract surface).
A class that does not inherit from it but has the three required members is accepted too
(duck typing); :func:`missing` says what a returned object lacks.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any
from typing import Mapping as TMapping

import numpy as np

from optmap.space import DesignSpace, Mapping

# Capabilities a cost model may offer; engines that need one declare it in ``requires``.
BATCH = "batch"  # evaluate_batch(X) scores a whole population in one vectorised call

SENSES = ("min", "max")

# Standard metric names: what composition relies on (a pipeline of stages adds its stages'
# ``time``, adds in-flight activations to their ``memory_bytes`` and checks it against a
# device's memory). A formulation that computes one of these reports it under this name and
# unit, besides any names of its own (``memory_gib``, ``storage_bytes``, ...).
TIME = "time"  # seconds of one step of the workload (an iteration, an inference, a period)
MEMORY = "memory_bytes"  # peak bytes held on one device, the fullest device of the mapping
STANDARD_METRICS = {
    TIME: "seconds of one step of the workload (iteration, inference or pipeline period)",
    MEMORY: "peak bytes held per device (the fullest device), weights, gradients, state and activations",
}


@dataclass(frozen=True)
class LayerCost:
    """One row of a per-layer breakdown: seconds of compute and communication, bytes of memory
    where the model reports them (NaN where it does not), and the layer's decisions."""

    name: str
    compute: float
    communication: float
    memory_bytes: float = math.nan  # NaN: the model does not report per-layer memory (JSON null)
    decisions: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CostReport:
    """What a cost model says of one mapping.

    ``metrics`` holds every scalar the model computes (SI units; ``time`` in seconds is the usual
    objective); ``plan`` is a JSON-friendly description of the decisions; ``layers`` the
    per-layer breakdown; ``tables`` any other breakdown as named tables of rows (one dict per
    row, the same keys in each: per pipeline stage, per device, per accelerator set), which
    ``optmap run`` prints and the JSON result keeps. Column names carry their unit
    (``"seconds"``, ``"GiB"``, ``"stage us"``).

    Stages (a convention every formulation that runs layers in pipeline stages follows, so that
    ``optmap show RESULT --plot`` draws its schedule, :mod:`optmap.timeline`, and composite
    formulations can read their parts' stages):

    - ``tables["stages"]``: one row per stage in pipeline order, with ``stage`` (its label, e.g.
      ``"FPGA 3"`` or ``"2: layers 13-24"``) and ``seconds`` (one micro-batch through the stage,
      forward and backward with its transfers: the ``t_s`` of :func:`optmap.schedule.pipeline_time`);
      optionally ``forward_s`` and ``backward_s``, its two passes (without them the whole of
      ``seconds`` is drawn as one box per micro-batch);
    - in ``plan``: ``micro_batches`` (``m``, default 1), ``schedule`` (``"1f1b"`` or ``"gpipe"``,
      default ``"1f1b"``) and ``interleaving`` (model chunks per device, ``v``, default 1).

    ``children`` holds the reports of the formulations a composite one nests (per pipeline
    stage: ``{"stage1": CostReport, ...}``), shown by ``run`` / ``show`` and kept, nested, in
    the JSON result.
    """

    metrics: dict[str, float]
    feasible: bool = True
    reason: str = ""
    layers: tuple[LayerCost, ...] = ()
    plan: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    children: dict[str, "CostReport"] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "feasible": self.feasible,
            "reason": self.reason,
            "plan": self.plan,
            "layers": [
                {
                    "name": row.name,
                    "compute_s": row.compute,
                    "communication_s": row.communication,
                    "memory_bytes": row.memory_bytes,
                    **row.decisions,
                }
                for row in self.layers
            ],
            "tables": self.tables,
            **({"children": {name: child.to_json() for name, child in self.children.items()}}
               if self.children else {}),
        }


class CostModel(ABC):
    """A formulation: decisions (``space``) and their scoring.

    Subclasses set ``space`` and ``metrics`` (usually in ``__init__``) and implement
    :meth:`evaluate`. Optional, with defaults:

    - ``capabilities``: what the model offers beyond the contract (``BATCH`` when
      :meth:`evaluate_batch` is vectorised; a formulation's own names for native engines);
    - ``primary_metric``: the metric a problem optimises when its file has no ``[objective]``;
    - ``senses``: ``{"throughput": "max"}`` for metrics where more is better (default: min);
    - ``default_engine``: the engine a problem uses when its file names none (a native one);
    - ``units``: a metric's unit where its name does not say it (see :func:`unit`);
    - ``topologies`` / ``system_options``: the topologies and ``[system]`` options the model
      prices, when it does not read the whole system through its routing: anything else a user
      writes is refused at load, never silently ignored (``System.options_given`` says what the
      file set);
    - :meth:`evaluate_batch`: scores a population; the default loops over :meth:`evaluate`;
    - :meth:`plans`: named plans (a baseline, a paper's fixed plans) engines may seed with;
    - ``prepare(rows)``: one-off set-up (e.g. loading compiled code) before a search that will
      score about ``rows`` plans starts its clock; see :meth:`optmap.search.Evaluator.prepare`.
    - ``export_targets`` and :meth:`export`: the launch formats a plan can be written as
      (``optmap export RESULT.json --to TARGET``);
    - :meth:`admit`: the model with its space widened to hold a problem's pinned decisions, where
      its choices are search bounds rather than everything it can price.
    """

    space: DesignSpace
    metrics: tuple[str, ...]
    capabilities: frozenset[str] = frozenset()
    senses: TMapping[str, str] = {}
    default_engine: str | None = None  # the engine a problem without [search] engine uses
    units: TMapping[str, str] = {}  # metric -> unit, where the name's SI convention does not say it
    topologies: tuple[str, ...] | None = None  # the topologies it can price (None: any)
    system_options: tuple[str, ...] | None = None  # the [system] options it prices (None: all)
    export_targets: tuple[str, ...] = ()  # launch formats :meth:`export` writes

    @property
    def primary_metric(self) -> str:
        """The default objective: the first metric."""
        return self.metrics[0]

    @abstractmethod
    def evaluate(self, mapping: Mapping) -> CostReport:
        """The full report of one mapping."""

    def evaluate_batch(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """One array of length N per metric (plus a boolean ``"feasible"``) for the rows of ``X``."""
        return evaluate_rows(self, X)

    def plans(self) -> dict[str, Mapping]:
        """Named mappings worth starting a search from."""
        return {}

    def admit(self, pins: dict[str, Any]) -> "CostModel":
        """This model with ``pins`` (decision name → value, as a ``[fix]`` table or ``--fix`` gives
        them) inside its space. A model whose choices are bounds of its search (a largest
        micro-batch, the splits its search prefers) returns a copy whose choices also hold each
        pinned value it can price, so that a pin is priced instead of refused; values it cannot
        price are left for the pins' check to refuse. Default: the model itself."""
        return self

    def export(self, plan: dict[str, Any], target: str) -> tuple[str, list[str]]:
        """A plan (its decisions) as the launch configuration ``target`` (one of ``export_targets``):
        the text, and one note per part of the plan the target cannot express."""
        raise NotImplementedError(f"{type(self).__name__} exports no launch configuration")


def missing(model: Any) -> str | None:
    """What ``model`` lacks to be a cost model (None when it is one)."""
    absent = [name for name in ("space", "metrics", "evaluate") if not hasattr(model, name)]
    if absent:
        return f"a cost model (it has no {', '.join(absent)}; see optmap.cost.CostModel)"
    if not isinstance(model.space, DesignSpace):
        return "a cost model (its space is not an optmap.space.DesignSpace)"
    return None


def admit(model: Any, pins: Any) -> Any:
    """``model.admit(pins)`` where the model has it and ``pins`` is a table of pins, else ``model``."""
    widen = getattr(model, "admit", None)
    return widen(pins) if callable(widen) and isinstance(pins, dict) and pins else model


def primary_metric(model: Any) -> str:
    """The metric a problem optimises by default (the model's ``primary_metric``, else its first)."""
    metric = getattr(model, "primary_metric", None)
    return metric if isinstance(metric, str) else tuple(model.metrics)[0]


def sense(model: Any, metric: str) -> str:
    """``"max"`` if more of ``metric`` is better for this model, else ``"min"``."""
    return dict(getattr(model, "senses", {}) or {}).get(metric, "min")


_SUFFIX_UNITS = (("bytes", "B"), ("flops", "FLOP"), ("elements", "elements"), ("time", "s"), ("_s", "s"),
                 ("period", "s"), ("seconds", "s"), ("throughput", "1/s"), ("watts", "W"), ("joules", "J"))


def unit(model: Any, metric: str) -> str:
    """The unit of ``metric``: the model's ``units`` entry, else read from the name's SI convention
    (``*time``, ``*_s`` seconds, ``*bytes`` bytes, ...); "" for ratios and counts."""
    declared = dict(getattr(model, "units", {}) or {})
    if metric in declared:
        return declared[metric]
    return next((u for suffix, u in _SUFFIX_UNITS if metric.endswith(suffix)), "")


def evaluate_rows(model: Any, X: np.ndarray) -> dict[str, np.ndarray]:
    """Score the rows of ``X`` one by one through ``model.evaluate``."""
    reports = [model.evaluate(model.space.decode(x)) for x in np.atleast_2d(X)]
    columns = {m: np.array([r.metrics.get(m, math.nan) for r in reports], float) for m in model.metrics}
    columns["feasible"] = np.array([r.feasible for r in reports], bool)
    return columns


def evaluate_batch(model: Any, X: np.ndarray) -> dict[str, np.ndarray]:
    """Score the rows of ``X`` with the model's evaluator for populations, or one by one."""
    if BATCH in getattr(model, "capabilities", ()) or isinstance(model, CostModel):
        return model.evaluate_batch(X)
    return evaluate_rows(model, X)
