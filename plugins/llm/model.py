"""Cost model ``megatron-3d``: tensor × pipeline × data parallel training plans of a transformer.

Decisions (one categorical variable each; the choices are the sizes that can divide the model):
``tensor_parallel`` (divisors of the heads, key/value heads and d_ff), ``pipeline_parallel``
(divisors of the layers), ``data_parallel`` (divisors of the global batch), ``microbatch_size``
(divisors of the batch up to ``max_microbatch``), ``interleaving`` (virtual pipeline stages per
device, divisors of the layers up to ``max_interleaving``), ``recompute`` (none / selective /
full), ``sequence_parallel``, ``optimizer_sharding`` (ZeRO-1, Megatron's distributed optimizer)
and ``dp_overlap`` (gradient reduction overlapped with the backward pass).

A plan is valid when tensor × pipeline × data GPUs fit in the system (``use_all_gpus``: equal
it), data × micro-batch divides the batch, and an interleaved schedule (v > 1) has p > 1, layers
divisible by p·v and micro-batches divisible by p (Megatron-LM's requirements). Sequence
parallelism without tensor parallelism, and sharding or overlap without data parallelism, change
nothing (Megatron ignores them). A valid plan is feasible when its memory per GPU fits.
Time and memory: :mod:`.timing` and :mod:`.memory`; compute: :mod:`.compute`; links: :mod:`.cluster`.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from optmap.bounds import Fraction, NonNegative, ints
from optmap.cost import BATCH, CostReport, LayerCost
from optmap.errors import OptmapError
from optmap.plugins.transformer.workload import TransformerWorkload
from optmap.space import DesignSpace, Mapping, categorical
from optmap.system import System
from optmap.units import gib_to_bytes
from optmap.workload import Workload

from . import memory, timing
from .cluster import group_link
from .compute import Device, Efficiency, efficiency_for

MEGATRON_PLANS = "megatron_plans"  # capability the native engine needs: ``plan_arrays`` / ``valid``

DECISIONS = ("tensor_parallel", "pipeline_parallel", "data_parallel", "microbatch_size", "interleaving",
             "recompute", "sequence_parallel", "optimizer_sharding", "dp_overlap")
PARTS = ("forward_s", "backward_s", "recompute_s", "tp_comm_s", "embedding_logits_s", "pp_comm_s",
         "bubble_s", "dp_comm_s", "optimizer_s")


def divisors(n: int, limit: float = math.inf) -> tuple[int, ...]:
    return tuple(k for k in range(1, n + 1) if n % k == 0 and k <= limit)


class Megatron3DCostModel:
    """Megatron-LM 3D parallelism (Narayanan et al. SC'21; Korthikanti et al. 2022) on a GPU cluster."""

    capabilities = frozenset({BATCH, MEGATRON_PLANS})
    default_engine = "megatron-3d"
    metrics = ("time", "throughput", "tflops_per_gpu", "memory_gib", "memory_weights_gib",
               "memory_activations_gib", "gpus", *PARTS)

    def __init__(
        self,
        workload: Workload,
        system: System,
        *,
        max_microbatch: ints(1, 4096) = 16,
        max_interleaving: ints(1, 1024) = 16,
        use_all_gpus: bool = False,
        recompute: tuple[Literal["none", "selective", "full"], ...] = memory.RECOMPUTE,
        grad_bytes: Literal[2, 4] | None = None,
        sp_gather_redo: bool = True,
        scatter_gather: bool = True,
        memory_reserve_gib: NonNegative = 2.0,
        gemm_efficiency: Fraction | None = None,
        memory_efficiency: Fraction | None = None,
    ) -> None:
        """Options: ``max_microbatch`` / ``max_interleaving`` bound those choices; ``use_all_gpus``
        demands tensor × pipeline × data = GPU count (default: a plan may leave GPUs idle, as
        Calculon's search does); ``recompute`` the settings the search may use; ``grad_bytes``
        per reduced gradient (default 4 for bf16, whose gradients Megatron-LM accumulates in fp32,
        else 2); ``sp_gather_redo`` sequence parallelism re-gathers LayerNorm outputs in backward
        (Korthikanti §4.2.2); ``scatter_gather`` Narayanan §4.1; ``memory_reserve_gib`` per GPU
        kept for the CUDA context and communication buffers (assumption); ``gemm_efficiency`` /
        ``memory_efficiency`` override the accelerator's calibrated fractions (:mod:`.compute`)."""
        if not isinstance(workload, TransformerWorkload) or workload.config is None:
            raise OptmapError('the megatron-3d cost model plans a transformer; use [workload] model = "transformer"')
        cfg = workload.config
        if cfg.kind not in ("decoder-only", "encoder"):
            raise OptmapError(f"megatron-3d plans a stack of identical layers (decoder-only or encoder), "
                              f"not '{cfg.kind}'; use a GPT- or Llama-style preset")
        if workload.phase != "training":
            raise OptmapError("megatron-3d plans training; set [workload] phase = \"training\"")
        for name, value in (("max_microbatch", max_microbatch), ("max_interleaving", max_interleaving)):
            if value < 1:
                raise OptmapError(f"[cost] {name} must be >= 1, got {value}")
        if not recompute or any(r not in memory.RECOMPUTE for r in recompute):
            raise OptmapError(f"[cost] recompute must list some of {list(memory.RECOMPUTE)}, got {list(recompute)}")
        if memory_reserve_gib < 0:
            raise OptmapError(f"[cost] memory_reserve_gib must be >= 0, got {memory_reserve_gib}")
        for name, value in (("gemm_efficiency", gemm_efficiency), ("memory_efficiency", memory_efficiency)):
            if value is not None and not 0.0 < value <= 1.0:
                raise OptmapError(f"[cost] {name} must be in (0, 1], got {value}")
        if not system.is_homogeneous:
            raise OptmapError("megatron-3d plans a cluster of one GPU kind; list one [[system.groups]] entry")
        self.workload, self.system, self.config = workload, system, cfg
        self.batch, self.n = workload.batch, system.count
        self.use_all_gpus = use_all_gpus
        acc = system.devices[0]
        eff, self.calibrated = efficiency_for(acc.name)
        eff = Efficiency(gemm=gemm_efficiency or eff.gemm, memory=memory_efficiency or eff.memory,
                         half_dim=eff.half_dim, launch=eff.launch)
        self.device = Device(acc.flops_per_s(workload.dtype), acc.memory_bandwidth, eff)
        self.capacity = acc.memory_bytes
        dtype = workload.dtype.lower()
        self.options = timing.Options(grad_bytes=float(grad_bytes or (4 if dtype in ("bf16", "bfloat16") else 2)),
                                      sp_gather_redo=sp_gather_redo, scatter_gather=scatter_gather,
                                      memory_reserve=gib_to_bytes(memory_reserve_gib))
        kv = cfg.heads if cfg.kv_heads is None else cfg.kv_heads
        width = math.gcd(math.gcd(cfg.heads, kv), cfg.d_ff)
        self.space = DesignSpace((
            categorical("tensor_parallel", divisors(width, self.n)),
            categorical("pipeline_parallel", divisors(cfg.layers, self.n)),
            categorical("data_parallel", divisors(self.batch, self.n)),
            categorical("microbatch_size", divisors(self.batch, max_microbatch)),
            categorical("interleaving", divisors(cfg.layers, max_interleaving)),
            categorical("recompute", tuple(r for r in memory.RECOMPUTE if r in recompute)),
            categorical("sequence_parallel", (False, True)),
            categorical("optimizer_sharding", (False, True)),
            categorical("dp_overlap", (False, True)),
        ))
        self._links: dict[tuple[int, int, int], tuple[float, ...]] = {}

    # --- plans as arrays ------------------------------------------------------------------------
    def values(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """Decision values of the rows of a space matrix, one array per decision."""
        X = np.asarray(X, float).reshape(-1, len(DECISIONS))
        out = {}
        for i, var in enumerate(self.space.variables):
            table = np.array([memory.RECOMPUTE.index(c) for c in var.choices] if var.name == "recompute"
                             else var.choices)
            out[var.name] = table[np.clip(np.rint(X[:, i]).astype(np.int64), 0, len(table) - 1)]
        return out

    def plan_arrays(self, v: dict[str, np.ndarray]) -> timing.Plans:
        return timing.Plans(tp=v["tensor_parallel"].astype(float), pp=v["pipeline_parallel"].astype(float),
                            dp=v["data_parallel"].astype(float), mb=v["microbatch_size"].astype(float),
                            vp=v["interleaving"].astype(float), recompute=v["recompute"].astype(np.int64),
                            sp=v["sequence_parallel"].astype(bool), zero=v["optimizer_sharding"].astype(bool),
                            overlap=v["dp_overlap"].astype(bool))

    def validity(self, plans: timing.Plans) -> dict[str, np.ndarray]:
        """Boolean arrays, True where a plan breaks that rule (see the module docstring)."""
        t, p, d, b, v = plans.tp, plans.pp, plans.dp, plans.mb, plans.vp
        gpus = t * p * d
        m = self.batch / (d * b)
        return {
            "gpus": (gpus != self.n) if self.use_all_gpus else (gpus > self.n),
            "batch": np.mod(self.batch, d * b) != 0,
            "interleaving": (v > 1) & ((p == 1) | (np.mod(self.config.layers, p * v) != 0) | (np.mod(m, p) != 0)),
        }

    def links(self, plans: timing.Plans) -> timing.Links:
        """Per plan, the links of its TP group, DP group and stage hop (Megatron rank order:
        tensor-parallel ranks consecutive, data-parallel ranks t apart, stages t·d apart)."""
        stride_d, stride_p = self.n + 1, self.config.layers + 1
        keys = (plans.tp.astype(np.int64) * stride_d + plans.dp.astype(np.int64)) * stride_p + plans.pp.astype(np.int64)
        uniq, inverse = np.unique(keys, return_inverse=True)
        triples = [(int(k // stride_p // stride_d), int(k // stride_p % stride_d), int(k % stride_p)) for k in uniq]
        rows = np.array([self._group_links(*k) for k in triples]).reshape(len(uniq), 7)[inverse.ravel()]
        return timing.Links(*(rows[:, i] for i in range(6)), pp_crosses_nodes=rows[:, 6] > 0)

    def _group_links(self, t: int, d: int, p: int) -> tuple[float, ...]:
        key = (t, d, p)
        if key not in self._links:
            last = self.n - 1
            tp = group_link(self.system, np.minimum(np.arange(t), last))
            dp = group_link(self.system, np.minimum(np.arange(d) * t, last))
            pp = group_link(self.system, [0, min(t * d, last)]) if p > 1 else tp
            self._links[key] = (tp.bandwidth, tp.latency, dp.bandwidth, dp.latency, pp.bandwidth, pp.latency,
                                float(pp.bandwidth < tp.bandwidth))
        return self._links[key]

    def score(self, plans: timing.Plans) -> dict[str, np.ndarray]:
        """Every metric and ``feasible`` (valid and fits in memory) for arrays of plans."""
        bad = self.validity(plans)
        invalid = bad["gpus"] | bad["batch"] | bad["interleaving"]
        # invalid plans are priced as the nearest valid shape would be, then marked infeasible
        safe = timing.Plans(**{**plans.__dict__, "vp": np.where(bad["interleaving"], 1.0, plans.vp)})
        out = timing.evaluate(self.config, self.batch, safe, self.links(safe), self.device, self.capacity, self.options)
        out["feasible"] = out["feasible"] & ~invalid
        return out

    def evaluate_batch(self, X: np.ndarray) -> dict[str, np.ndarray]:
        return self.score(self.plan_arrays(self.values(X)))

    # --- one plan, with its report --------------------------------------------------------------
    def evaluate(self, mapping: Mapping) -> CostReport:
        plan = mapping.as_dict()
        cols = self.score(self.plan_arrays({k: np.array([plan[k] if k != "recompute" else
                                                         memory.RECOMPUTE.index(plan[k])]) for k in DECISIONS}))
        metrics = {k: float(np.asarray(cols[k])[0]) for k in self.metrics}
        reason = self._reason(plan, metrics)
        m = self.batch // (plan["data_parallel"] * plan["microbatch_size"]) if not reason.startswith("batch") else 0
        compute = sum(metrics[k] for k in ("forward_s", "backward_s", "recompute_s", "embedding_logits_s"))
        comm = sum(metrics[k] for k in ("tp_comm_s", "pp_comm_s", "dp_comm_s"))
        rows = (LayerCost("iteration (compute | communication)", compute, comm, gib_to_bytes(metrics["memory_gib"]),
                          decisions={"micro-batches": m, "layers/stage": self.config.layers // plan["pipeline_parallel"]}),)
        return CostReport(metrics=metrics, feasible=not reason, reason=reason, layers=rows,
                          plan={**plan, "micro_batches": m, "calibrated_accelerator": self.calibrated})

    def _reason(self, plan: dict, metrics: dict) -> str:
        t, p, d = plan["tensor_parallel"], plan["pipeline_parallel"], plan["data_parallel"]
        b, v = plan["microbatch_size"], plan["interleaving"]
        if (t * p * d != self.n) if self.use_all_gpus else (t * p * d > self.n):
            rel = "differs from" if self.use_all_gpus else "exceeds"
            return f"tensor × pipeline × data = {t * p * d} GPUs {rel} the system's {self.n}"
        if self.batch % (d * b):
            return f"batch {self.batch} is not divisible by data_parallel × microbatch_size = {d * b}"
        if v > 1 and (p == 1 or self.config.layers % (p * v) or (self.batch // (d * b)) % p):
            return (f"interleaving {v} needs pipeline_parallel > 1, layers ({self.config.layers}) divisible by "
                    f"pipeline × interleaving and micro-batches divisible by pipeline_parallel")
        limit = (self.capacity - self.options.memory_reserve) / 2**30
        if metrics["memory_gib"] > limit:
            return f"needs {metrics['memory_gib']:.1f} GiB per GPU, {limit:.1f} GiB available"
        return ""

    def plans(self) -> dict[str, Mapping]:
        """The Megatron papers' heuristic plan, to seed generic engines: the widest tensor
        parallelism inside a node, the fewest pipeline stages that fit with full recomputation,
        the rest data parallel, micro-batch 1 (Narayanan et al. SC'21 §3 takeaways)."""
        gpn = int(self.system.params.get("gpus_per_node", 8))
        choices = {v.name: v.choices for v in self.space.variables}
        t = max(c for c in choices["tensor_parallel"] if c <= gpn)
        rc = "full" if "full" in choices["recompute"] else choices["recompute"][-1]
        for p in choices["pipeline_parallel"]:
            ds = [d for d in choices["data_parallel"] if t * p * d <= self.n]
            if not ds or 1 not in choices["microbatch_size"]:
                continue
            plan = {"tensor_parallel": t, "pipeline_parallel": p, "data_parallel": max(ds), "microbatch_size": 1,
                    "interleaving": 1, "recompute": rc, "sequence_parallel": False,
                    "optimizer_sharding": False, "dp_overlap": False}
            mapping = self.space.mapping(plan)
            if self.evaluate(mapping).feasible:
                return {"megatron": mapping}
        return {}
