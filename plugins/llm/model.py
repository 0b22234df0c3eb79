"""Cost model ``megatron-3d``: tensor × pipeline × data parallel training plans of a transformer.

Decisions (one categorical variable each; the choices are the sizes that can divide the model):
``tensor_parallel`` (divisors of the heads, key/value heads and d_ff), ``pipeline_parallel`` (sizes that split
the layers, :mod:`.stages`), ``data_parallel`` (divisors of the global batch), ``microbatch_size`` (divisors of
the batch up to ``max_microbatch``), ``interleaving`` (virtual stages per device, likewise; pins widen both,
:mod:`.choices`), ``recompute`` (none / selective /
full, for a MoE model moe and norm_act, with latent attention mla_up_proj, both mla_up_proj_moe: :mod:`.recompute`),
``sequence_parallel``, ``optimizer_sharding`` (ZeRO-1, Megatron's distributed optimizer)
and ``dp_overlap`` (gradient reduction overlapped with the backward pass); ``context_parallel``
(ring attention over the sequence, :mod:`.context`), ``expert_parallel`` (mixture-of-experts
models: the experts split over ranks carved out of tensor × data × context parallelism,
:mod:`.moe`; only 1 for a dense model), ``fsdp`` (ZeRO-3, :mod:`.sharding`) and ``offload``
(optimizer state and / or activations to host memory, :mod:`.offload`) and ``grad_reduce_in_fp32``
(main gradients accumulated and reduced in fp32, Megatron-LM's default beside bf16 weights, or in
the 16-bit type as ``--grad-reduce-in-bf16`` and NVIDIA's performance recipes do).

A plan is valid when tensor × pipeline × context × data GPUs fit in the system (``use_all_gpus``: equal
it), the sequence splits into ``2·cp`` chunks and the attention is fused where ``cp > 1``, data × micro-batch divides the batch, an interleaved schedule (v > 1) has p > 1 and
micro-batches divisible by p (Megatron-LM's requirements), and the layers split over the p·v
model chunks (:mod:`.stages`: evenly, or with shorter first and last stages as Megatron-Core allows); with
``moe_a2a_overlap`` a plan needs expert parallelism, interleaving when pipelined, and no full or moe
recomputation (:func:`.moe.overlap_invalid`). Sequence
parallelism without tensor parallelism, and sharding or overlap without data parallelism, change
nothing (Megatron ignores them). A valid plan is feasible when its memory per GPU fits.

Every plan's report has the tables ``time_breakdown`` (the iteration's parts) and
``memory_per_gpu``; the report of the best plan a ``megatron-3d`` search found also has
``top_plans``, the best plans of that search (:attr:`Megatron3DCostModel.ranking`). Time and memory: :mod:`.timing` and :mod:`.memory`;
compute: :mod:`.compute`; links: :mod:`.cluster`.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from optmap.bounds import Fraction, NonNegative, Positive, floats, ints
from optmap.cost import BATCH, CostModel, CostReport
from optmap.errors import OptmapError
from optmap.space import DesignSpace, Mapping, categorical
from optmap.system import System
from optmap.units import gib_to_bytes
from optmap.workload import Workload

from . import accuracy, checks, export as launch, recompute as recomputation
from . import choices, inputs, memory, moe, offload, precision, reasons, rules, stages, timing
from .cluster import expert_links, plan_links
from .offload import OFFLOAD
from .compute import attention_rates, devices

MEGATRON_PLANS = "megatron_plans"  # capability the native engine needs: ``plan_arrays`` / ``score``

DECISIONS = ("tensor_parallel", "pipeline_parallel", "data_parallel", "microbatch_size", "interleaving",
             "recompute", "sequence_parallel", "optimizer_sharding", "dp_overlap", "context_parallel",
             "expert_parallel", "fsdp", "offload", "grad_reduce_in_fp32", "expert_tensor_parallel")
CATEGORIES = {"recompute": memory.RECOMPUTE, "offload": offload.OFFLOAD}  # decisions carried as indices
SWITCHES = ("sequence_parallel", "optimizer_sharding", "dp_overlap")
PART_LABELS = {"forward_s": "forward", "backward_s": "backward", "recompute_s": "recomputation",
               "tp_comm_s": "tensor-parallel communication", "embedding_logits_s": "embedding, logits and loss",
               "pp_comm_s": "stage transfers", "bubble_s": "pipeline bubble",
               "grad_accumulation_s": "gradient accumulation", "dp_comm_s": "data-parallel reduction",
               "optimizer_s": "optimizer step", "cp_comm_s": "context-parallel ring",
               "fsdp_comm_s": "FSDP gathers and reduce-scatters", "offload_s": "activation offloading",
               "ep_comm_s": "expert-parallel all-to-all"}
MEMORY_LABELS = {"memory_weights": "weights (16-bit)", "memory_weight_copies": "FP8 weight copies",
                 "memory_gradients": "main gradients (fp32 or 16-bit: grad_reduce_in_fp32)",
                 "memory_optimizer": "optimizer state (fp32 master, Adam m and v)",
                 "memory_activations": "activations",
                 "memory_step_copy": "fp32 copy of 16-bit gradients (optimizer step only, not beside activations)"}
GIB = 2.0**30


class Megatron3DCostModel(CostModel):
    """Megatron-LM 3D parallelism (Narayanan et al. SC'21; Korthikanti et al. 2022) on a GPU cluster."""

    capabilities = frozenset({BATCH, MEGATRON_PLANS})
    default_engine = "megatron-3d"
    # model FLOPs count 3 × forward (MFU); hardware FLOPs add recomputation (Narayanan Eq. 3, Table 1)
    metrics = ("time", "throughput", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "memory_gib", "gpus",
               "memory_bytes")
    senses = {"throughput": "max", "model_tflops_per_gpu": "max", "hardware_tflops_per_gpu": "max"}
    units = {"throughput": "tokens/s", "model_tflops_per_gpu": "TFLOP/s per GPU (model FLOPs, no recomputation)",
             "hardware_tflops_per_gpu": "TFLOP/s per GPU (hardware FLOPs, with recomputation)",
             "memory_gib": "GiB per GPU"}

    def __init__(
        self,
        workload: Workload,
        system: System,
        *,
        max_microbatch: ints(1, 4096) = 16,
        max_interleaving: ints(1, 1024) = 16,
        use_all_gpus: bool = False,
        recompute: tuple[memory.Recompute, ...] = memory.RECOMPUTE,
        grad_bytes: Literal[2, 4] | None = None,
        sp_gather_redo: bool = True,
        scatter_gather: bool = True,
        tp_overlap: bool = True,
        tp_comm_overlap: bool = True,
        grad_accumulation_fusion: bool = True,
        memory_reserve_gib: NonNegative = 2.0,
        compute: Literal["fitted", "shared"] = "fitted",
        gemm_efficiency: Fraction | None = None,
        memory_efficiency: Fraction | None = None,
        fp8_gemm_efficiency: Fraction | None = None,
        fp8_param_gather: bool = True,
        fp8_scaling: Literal["delayed", "current"] = "delayed",
        uneven_stages: Literal["balanced", "any", "layout", "never"] = "balanced",
        expert_tensor_parallel: ints(1, 4096) | None = None,
        moe_load_imbalance: floats(1.0) = 1.0,
        moe_a2a_overlap: bool = False,
        moe_comm_sms: ints(0, 1024) = 20,
        moe_dispatcher: Literal["auto", "alltoall", "deepep", "hybridep"] = "auto",
        attention: Literal["flash", "unfused"] = "flash",
        attention_tflops: tuple[Positive, Positive] | None = None,
        fused_swiglu: bool = True,
        max_context_parallel: ints(1, 65536) | None = None,
        fsdp_reshard_after_forward: bool = True,
        offload: tuple[Literal["none", "optimizer", "activations", "both"], ...] = ("none",),
    ) -> None:
        """Options: ``max_microbatch`` / ``max_interleaving`` bound those choices; ``use_all_gpus``
        demands tensor × pipeline × data = GPU count (default: a plan may leave GPUs idle, as
        Calculon's search does); ``recompute`` the settings the search may use; ``grad_bytes``
        pins the main gradients' bytes per element (decision ``grad_reduce_in_fp32``: 4 its fp32, 2 the 16-bit
        type; default: with bf16 and FP8 recipes the search chooses, with fp16 16-bit, Megatron-LM's default there);
        ``sp_gather_redo`` sequence parallelism re-gathers LayerNorm outputs in
        backward (Korthikanti §4.2.2); ``scatter_gather`` Narayanan §4.1; ``tp_overlap`` the
        asynchronous tensor-parallel collectives of Megatron-LM since 2022 (false: 2021's
        synchronous ones); ``tp_comm_overlap`` with sequence parallelism, the collectives chunked
        beside their GEMMs (``--tp-comm-overlap``, as NeMo's and Megatron-Bridge's recipes set it;
        false: Megatron-LM 2022); ``grad_accumulation_fusion`` weight-gradient GEMMs accumulate into the
        main gradient (Megatron-LM since mid-2022; false: a separate add per micro-batch);
        ``memory_reserve_gib`` per GPU kept for the CUDA context and communication buffers
        (assumption); ``compute`` the GEMM and element-wise kernel times: ``fitted`` this
        plugin's roofline, calibrated on published Megatron-LM runs (A100) and H100 measurements,
        whose fractions ``gemm_efficiency`` / ``memory_efficiency`` override, or ``shared`` the
        project's compute model (``optmap.compute``) with the accelerator's measured calibration
        (accelerators ``a100-sxm``, ``h100-sxm``; :mod:`.compute`); ``fp8_gemm_efficiency`` the
        fraction of the FP8 peak the linear GEMMs reach with ``dtype = "fp8"`` / ``"mxfp8"``
        (default: a preset's measured ``fp8_gemm_tflops`` over the FP8 peak, else the 16-bit ``gemm`` fraction; :mod:`.precision`);
        ``fp8_param_gather`` the FP8 weights are the parameters (NeMo's and Megatron-Bridge's FP8
        recipes; false: a 16-bit weight plus FP8 copies, :func:`.precision.kept_weight_bytes`); ``fp8_scaling``
        ``delayed`` (Megatron-Core's default) or ``current`` (``--fp8-recipe tensorwise``: an amax pass per cast);
        ``uneven_stages`` which splits of the layers over pipeline stages a plan may use (``balanced``: even,
        or first and last stages one layer short where embedding and loss count as layers; ``any``: also any
        pipeline size up to the layers; ``layout``: any pipeline size and interleaving, Megatron-Core's
        explicit layout; ``never``: even only; :mod:`.stages`); ``attention`` the attention core, ``flash`` (fused,
        Megatron-Core today) or ``unfused`` (Megatron-LM 2021-2022; :mod:`.attention`), ``attention_tflops`` a fused
        kernel's measured forward and backward TFLOP/s (default: the accelerator preset's measured ones, ``[attrs.kernels]``, else its products on the GEMM curve); ``fused_swiglu`` a gated MLP
        stores its input and output only (Megatron-Core's fused SwiGLU; :mod:`.memory`);
        ``max_context_parallel`` bounds ``context_parallel`` (default 32, or s/8,192 for longer sequences, :func:`.context.default_limit`); ``fsdp_reshard_after_forward`` FSDP
        gathers each layer again for its backward (false: keeps the stage gathered, :mod:`.sharding`); ``offload`` the settings the search
        may use (:mod:`.offload`; the host link is the topology's ``host_gbps``; default none: offloading
        only trades time for memory and multiplies the plans by four, so the search tries it when asked,
        e.g. ``offload = ["none", "optimizer", "activations", "both"]``); mixture-of-experts models (:mod:`.moe`):
        ``expert_tensor_parallel`` pins the ranks that split each expert's width (``--expert-tensor-parallel-size``;
        default: the search tries 1, as Megatron-Core's MoE guide recommends for fine-grained experts, and the
        plan's tensor-parallel size, Megatron-Core's default; decision ``expert_tensor_parallel``), ``moe_load_imbalance`` (>= 1) the busiest
        rank's tokens over the balanced share, ``moe_a2a_overlap`` the all-to-alls beside another micro-batch's compute
        (``--overlap-moe-expert-parallel-comm``; ``moe_comm_sms`` the SMs they hold), ``moe_dispatcher`` the token
        dispatcher (``auto``: the flex dispatcher's backend for the system; ``alltoall``; ``deepep`` /
        ``hybridep``: a token crosses the network once per node; :func:`.moe.dispatcher_for`)."""
        cfg, rec = checks.planned(workload)
        checks.options(max_microbatch=max_microbatch, max_interleaving=max_interleaving, recompute=recompute,
                       attention=attention, attention_tflops=attention_tflops, offload=offload,
                       max_context_parallel=max_context_parallel, uneven_stages=uneven_stages,
                       memory_reserve_gib=memory_reserve_gib, gemm_efficiency=gemm_efficiency,
                       memory_efficiency=memory_efficiency, fp8_gemm_efficiency=fp8_gemm_efficiency)
        moe_dispatcher = moe.dispatcher_for(moe_dispatcher, system.topology)
        moe.check_options(cfg, expert_tensor_parallel, moe_load_imbalance, moe_dispatcher)
        precision.check_scaling(rec, fp8_scaling)
        if not system.is_homogeneous:
            raise OptmapError("megatron-3d plans a cluster of one GPU kind; list one [[system.groups]] entry")
        self.workload, self.system, self.config = workload, system, cfg
        self.batch, self.n = workload.batch, system.count
        self.use_all_gpus = use_all_gpus
        acc = system.devices[0]
        self.recipe, self.fp8_param_gather = rec, rec.low_precision and fp8_param_gather
        if rec.low_precision and rec.linear_dtype not in dict(acc.peak_flops):
            raise OptmapError(f"[workload] dtype = \"{rec.name}\" needs the accelerator's {rec.linear_dtype} peak, "
                              f"which '{acc.name}' does not list ({', '.join(dict(acc.peak_flops))}); use bf16 or an "
                              f"accelerator with {rec.linear_dtype} tensor cores")
        self.device, self.linear_device, self.calibrated = devices(acc, rec, workload.dtype, compute, gemm_efficiency,
                                                                   memory_efficiency, fp8_gemm_efficiency)
        self.capacity = acc.memory_bytes
        self.options = inputs.Options(sp_gather_redo=sp_gather_redo, scatter_gather=scatter_gather,
                                      tp_overlap=tp_overlap, tp_comm_overlap=tp_comm_overlap,
                                      grad_accumulation_fusion=grad_accumulation_fusion,
                                      memory_reserve=gib_to_bytes(memory_reserve_gib), uneven_stages=uneven_stages,
                                      gemm_input_bytes=rec.gemm_input_bytes,
                                      fp8_scaling=precision.scaling_of(rec, fp8_scaling),
                                      weight_copy_bytes=precision.kept_weight_bytes(rec, fp8_param_gather),
                                      attention=attention, attention_tflops=attention_rates(acc, attention, attention_tflops),
                                      fused_swiglu=fused_swiglu, fsdp_reshard=fsdp_reshard_after_forward,
                                      host_bandwidth=float(system.params.get("host_bandwidth", 64e9)),
                                      host_memory=float(system.params.get("host_memory", math.inf)),
                                      moe_load_imbalance=float(moe_load_imbalance),
                                      moe_a2a_overlap=moe_a2a_overlap, moe_dispatcher=moe_dispatcher,
                                      moe_comm_share=moe.comm_share(acc, moe_comm_sms))
        kv = cfg.heads if cfg.kv_heads is None else cfg.kv_heads
        width = math.gcd(math.gcd(cfg.heads, kv), cfg.d_ff)
        gradients = precision.gradient_choices(rec.name, grad_bytes)  # the old default first: plans without it keep their meaning
        self.etp_pinned = expert_tensor_parallel is not None  # else the search tries 1 and t (:func:`.moe.invalid`)
        expert_sizes = moe.expert_tensor_sizes(cfg, choices.divisors(width, self.n), expert_tensor_parallel)
        bound = choices.bounded(cfg, self.batch, self.n, uneven_stages, max_microbatch, max_interleaving, max_context_parallel)
        self.space = DesignSpace((
            categorical("tensor_parallel", choices.divisors(width, self.n)),
            categorical("pipeline_parallel", bound["pipeline_parallel"]),
            categorical("data_parallel", choices.divisors(self.batch, self.n)),
            categorical("microbatch_size", bound["microbatch_size"]),
            categorical("interleaving", bound["interleaving"]),
            categorical("recompute", recomputation.choices(cfg, recompute)),
            categorical("sequence_parallel", (False, True)),
            categorical("optimizer_sharding", (False, True)),
            categorical("dp_overlap", (False, True)),
            # issue 25's decisions default to off, so plans written before them still name one plan
            categorical("context_parallel", bound["context_parallel"], default=1),
            categorical("expert_parallel", moe.expert_parallel_sizes(cfg, self.n), default=1),
            categorical("fsdp", (False, True), default=False),
            categorical("offload", tuple(o for o in OFFLOAD if o in offload),
                        default="none" if "none" in offload else None),
            categorical("grad_reduce_in_fp32", gradients, default=gradients[0]),
            categorical("expert_tensor_parallel", expert_sizes, default=expert_sizes[0]),
        ))
        # the best plan of the last megatron-3d search (its vector) and the rows of its top plans
        self.ranking: tuple[tuple[float, ...], list[dict]] | None = None

    def admit(self, pins: dict) -> "Megatron3DCostModel":
        return choices.admit(self, pins)  # the search's bounds widened to hold the pins (:mod:`.choices`)

    # --- plans as arrays ------------------------------------------------------------------------
    def values(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """Decision values of the rows of a space matrix, one array per decision (recompute as its index)."""
        X = np.asarray(X, float).reshape(-1, len(DECISIONS))
        out = {}
        for i, var in enumerate(self.space.variables):
            table = np.array([CATEGORIES[var.name].index(c) for c in var.choices] if var.name in CATEGORIES
                             else var.choices)
            out[var.name] = table[np.clip(np.rint(X[:, i]).astype(np.int64), 0, len(table) - 1)]
        return out

    @staticmethod
    def plan_arrays(v: dict[str, np.ndarray]) -> inputs.Plans:
        """:class:`inputs.Plans` from decision arrays (any shapes that broadcast together)."""
        return inputs.Plans(tp=np.asarray(v["tensor_parallel"], float), pp=np.asarray(v["pipeline_parallel"], float),
                            dp=np.asarray(v["data_parallel"], float), mb=np.asarray(v["microbatch_size"], float),
                            vp=np.asarray(v["interleaving"], float), recompute=np.asarray(v["recompute"], np.int64),
                            sp=np.asarray(v["sequence_parallel"], bool), zero=np.asarray(v["optimizer_sharding"], bool),
                            overlap=np.asarray(v["dp_overlap"], bool), cp=np.asarray(v["context_parallel"], float),
                            ep=np.asarray(v["expert_parallel"], float), fsdp=np.asarray(v["fsdp"], bool),
                            offload=np.asarray(v["offload"], np.int64),
                            fp32_grads=np.asarray(v["grad_reduce_in_fp32"], bool),
                            etp=np.asarray(v["expert_tensor_parallel"], float))

    def validity(self, plans: inputs.Plans) -> dict[str, np.ndarray]:
        """Boolean arrays, True where a plan breaks that rule (see the module docstring)."""
        t, p, d, b, v = plans.tp, plans.pp, plans.dp, plans.mb, plans.vp
        cp = np.asarray(plans.cp, float)
        gpus = t * p * d * cp
        m = self.batch / (d * b)
        return {
            "gpus": (gpus != self.n) if self.use_all_gpus else (gpus > self.n),
            "batch": np.mod(self.batch, d * b) != 0,
            "interleaving": (v > 1) & ((p == 1) | (np.mod(m, p) != 0)),
            "stages": ~stages.split(self.config.layers, p, v, self.options.uneven_stages).valid,
            "context": self.validity_of_context(cp),
            "experts": moe.invalid(self.config, t, d * cp, plans.ep, plans.sp, plans.etp, self.etp_pinned),
            "overlap": moe.overlap_invalid(self.config, p, v, plans.ep, plans.recompute) if self.options.moe_a2a_overlap
            else np.zeros(np.shape(p), bool),
        }

    def validity_of_context(self, cp) -> np.ndarray:
        """True where ``cp`` cannot split the sequence in ``2·cp`` chunks or attention is unfused."""
        cp = np.asarray(cp, float)
        return (cp > 1) & ((np.mod(self.config.seq_len, 2 * cp) != 0) | (self.options.attention != "flash"))

    def links(self, plans: inputs.Plans) -> inputs.Links:
        """Per plan, the links of its TP group, DP group and stage hop (:func:`.cluster.plan_links`)."""
        links = plan_links(self.system, plans.tp, plans.dp, plans.pp, plans.cp)
        if self.config.moe is None:
            return inputs.Links(**links)
        return inputs.Links(**links, **expert_links(self.system, plans.tp, plans.dp * plans.cp, plans.pp, plans.ep,
                                                    plans.etp))

    def score(self, plans: inputs.Plans, breakdown: bool = True) -> dict[str, np.ndarray]:
        """Every column of :func:`timing.evaluate` and ``feasible`` (valid and fits in memory);
        ``breakdown`` false: without the memory parts (a search's columns)."""
        bad = self.validity(plans)
        invalid = bad["gpus"] | bad["batch"] | bad["interleaving"] | bad["stages"] | bad["context"] | bad["experts"] \
            | bad["overlap"]
        # invalid plans are priced as the nearest valid shape would be, then marked infeasible
        safe = inputs.Plans(**{**plans.__dict__, "vp": np.where(bad["interleaving"] | bad["stages"], 1.0, plans.vp),
                               "ep": np.where(bad["experts"], 1.0, plans.ep),
                               "etp": np.where(bad["experts"], 1.0, plans.etp)})
        out = timing.evaluate(self.config, self.batch, safe, self.links(safe), self.device, self.capacity, self.options,
                              linear=self.linear_device, breakdown=breakdown)
        out["feasible"] = out["feasible"] & ~invalid
        out.derive("memory_gib", lambda: out["memory"] / GIB)
        out["memory_bytes"] = out["memory"]  # the standard name (optmap.cost.STANDARD_METRICS)
        return out

    def evaluate_batch(self, X: np.ndarray) -> dict[str, np.ndarray]:
        cols = self.score(self.plan_arrays(self.values(X)), breakdown=False)
        n = len(np.atleast_2d(X))
        return {k: np.broadcast_to(np.asarray(cols[k]), (n,)) for k in (*self.metrics, "feasible")}

    # --- one plan, with its report --------------------------------------------------------------
    def evaluate(self, mapping: Mapping) -> CostReport:
        plan = mapping.as_dict()
        one = {k: np.array([CATEGORIES[k].index(plan[k]) if k in CATEGORIES else plan[k]]) for k in DECISIONS}
        cols = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in self.score(self.plan_arrays(one)).items()}
        metrics = {k: cols[k] for k in self.metrics}
        reason = self._reason(plan, cols)
        m = self.batch / (plan["data_parallel"] * plan["microbatch_size"])
        available = (self.capacity - self.options.memory_reserve) / GIB
        tables = {"time_breakdown": [{"part": PART_LABELS[k], "seconds": cols[k],
                                      "percent": 100.0 * cols[k] / cols["time"]} for k in timing.PARTS if cols[k] > 0],
                  "memory_per_gpu": [{"part": label, "GiB": cols[k] / GIB} for k, label in MEMORY_LABELS.items()
                                     if cols[k] > 0 or k not in ("memory_weight_copies", "memory_step_copy")]
                  + [{"part": "total", "GiB": cols["memory"] / GIB},
                     {"part": "available (capacity - reserve)", "GiB": available}]}
        tables["stages"] = self._stages(plan, cols, m)
        if held_out := accuracy.table(self.system.devices[0].name, self.config.moe is not None):  # :mod:`.accuracy`
            tables["held_out_accuracy"] = held_out
        if self.ranking is not None and np.allclose(mapping.vector, self.ranking[0]):
            tables["top_plans"] = list(self.ranking[1])
        return CostReport(metrics=metrics, feasible=not reason, reason=reason, tables=tables,
                          plan={**plan, "micro_batches": m if m == int(m) else None,
                                **self.stage_layers(plan["pipeline_parallel"], plan["interleaving"]),
                                "calibrated_accelerator": self.calibrated, "schedule": "1f1b"})

    def _stages(self, plan: dict, cols: dict, m: float) -> list[dict]:
        """The pipeline stages (optmap.cost.CostReport's convention), each priced as the slowest:
        per micro-batch, the forward and everything else timing.evaluate charges m times."""
        p = plan["pipeline_parallel"]
        per_micro_batch = sum(cols[k] for k in timing.PARTS if k not in ("bubble_s", "dp_comm_s", "optimizer_s")) / m
        forward = cols["forward_s"] / m
        per_stage = self.config.layers / p
        return [{"stage": f"{s + 1}: layers {math.floor(s * per_stage) + 1}-{math.floor((s + 1) * per_stage)}",
                 "seconds": per_micro_batch, "forward_s": forward, "backward_s": per_micro_batch - forward}
                for s in range(p)]

    def stage_layers(self, p: int, v: int) -> dict:
        """Transformer layers per pipeline stage of a plan (:mod:`.stages`): ``layers_per_stage`` (a
        middle stage's; the common count when even) and, when uneven, the first and last stages'
        and chunks'."""
        lay = stages.split(self.config.layers, p, v, self.options.uneven_stages)
        first, middle, last = (float(np.asarray(x)) for x in (lay.first_device, lay.middle_device, lay.last_device))
        if first == middle == last:
            return {"layers_per_stage": first}
        return {"layers_per_stage": middle if p > 2 else first, "layers_first_stage": int(first),
                "layers_last_stage": int(last),
                "layers_per_chunk": [int(np.asarray(lay.first_chunk)), int(np.asarray(lay.middle_chunk)),
                                     int(np.asarray(lay.last_chunk))]}

    def _reason(self, plan: dict, cols: dict) -> str:
        return reasons.why_not(self, plan, cols["memory_gib"], cols["memory_host"] / GIB)

    export_targets = launch.TARGETS

    def export(self, plan: dict, target: str) -> tuple[str, list[str]]:
        """The plan as Megatron-Core flags or a DeepSpeed config (:mod:`.export`)."""
        return launch.export(self, plan, target)

    def plans(self) -> dict[str, Mapping]:
        """``megatron``: the Megatron-LM practitioners' rule of thumb (:func:`.rules.megatron_rule`)."""
        return rules.megatron_rule(self)
