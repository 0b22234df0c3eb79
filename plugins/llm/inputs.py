"""What :func:`.timing.evaluate` prices: plans as decision arrays that broadcast together
(:class:`Plans`), the links of each plan's groups (:class:`Links`, from :mod:`.cluster`) and the
cost model's modelling choices (:class:`Options`, documented defaults)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Plans:
    """Decisions of plans as arrays that broadcast together: sizes as floats, recompute as
    indices (:data:`memory.RECOMPUTE`), switches as bools."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    mb: np.ndarray
    vp: np.ndarray
    recompute: np.ndarray
    sp: np.ndarray
    zero: np.ndarray
    overlap: np.ndarray
    cp: np.ndarray = 1.0  # context-parallel size (:mod:`.context`)
    ep: np.ndarray = 1.0  # expert-parallel size (:mod:`.moe`)
    fsdp: np.ndarray = False  # fully sharded data parallel (:mod:`.sharding`)
    offload: np.ndarray = 0  # index into :data:`.offload.OFFLOAD`
    fp32_grads: np.ndarray = True  # main gradients in fp32 (else the 16-bit type; :func:`grad_bytes`)
    etp: np.ndarray = 1.0  # expert-tensor-parallel size: ranks each expert's width is split over (:mod:`.moe`)

    @property
    def grad_bytes(self) -> np.ndarray:
        """Bytes per main-gradient element: 4 in fp32, 2 in the 16-bit type (decision ``grad_reduce_in_fp32``)."""
        return np.where(np.asarray(self.fp32_grads, bool), 4.0, 2.0)


@dataclass(frozen=True)
class Links:
    """Per plan: bandwidth (B/s) and step latency (s) of its TP group, DP group and stage hop."""

    tp_bw: np.ndarray
    tp_lat: np.ndarray
    dp_bw: np.ndarray
    dp_lat: np.ndarray
    pp_bw: np.ndarray
    pp_lat: np.ndarray
    pp_crosses_nodes: np.ndarray
    cp_bw: np.ndarray = np.inf  # one ring step between context-parallel neighbours
    cp_lat: np.ndarray = 0.0
    # expert groups (:func:`.cluster.expert_links`; none for a dense model): the EP group's NVLink
    # and adapter rates, latency and fewest members in a node; the ETP and expert-data-parallel groups
    ep_intra_bw: np.ndarray = np.inf
    ep_inter_bw: np.ndarray = np.inf
    ep_lat: np.ndarray = 0.0
    ep_members: np.ndarray = 1.0
    etp_bw: np.ndarray = np.inf
    etp_lat: np.ndarray = 0.0
    edp_bw: np.ndarray = np.inf
    edp_lat: np.ndarray = 0.0


@dataclass(frozen=True)
class Options:
    """Modelling choices (documented defaults; see the cost model's options)."""

    sp_gather_redo: bool = True  # sequence parallelism re-gathers LayerNorm outputs in backward
    scatter_gather: bool = True  # Narayanan §4.1 optimisation of cross-node stage transfers
    tp_overlap: bool = True  # asynchronous TP collectives beside the backward GEMMs (Megatron-LM 2022+)
    tp_comm_overlap: bool = True  # with sp, TP collectives chunked beside their GEMMs (TE userbuffers)
    grad_accumulation_fusion: bool = True  # weight-gradient GEMMs accumulate into the main gradient
    loss_bytes_per_logit: float = 16.0  # HBM bytes per logit of the vocab-parallel cross-entropy, fwd
    memory_reserve: float = 2.0 * 2**30  # bytes of each GPU kept for the CUDA context and buffers
    uneven_stages: str = "balanced"  # when the first and last stages hold fewer layers (:mod:`.stages`)
    gemm_input_bytes: float = 2.0  # bytes per saved linear-layer input (1 with FP8, :mod:`.precision`)
    weight_copy_bytes: float = 0.0  # extra bytes per linear weight (FP8 copy and transpose)
    attention: str = "flash"  # the attention core: fused (flash) or unfused (:mod:`.attention`)
    attention_tflops: tuple[float, float] | None = None  # a fused kernel's measured rates (:mod:`.attention`)
    fused_swiglu: bool = True  # Megatron-Core's fused SwiGLU saves its input only (:mod:`.memory`)
    host_bandwidth: float = 64e9  # bytes/s each way between a GPU and host memory (:mod:`.offload`)
    host_memory: float = np.inf  # bytes of host memory per GPU for what it offloads (:mod:`.offload`)
    fsdp_reshard: bool = True  # FSDP gathers each layer's weights again for its backward (:mod:`.sharding`)
    moe_a2a_overlap: bool = False  # expert all-to-alls beside another micro-batch's compute (:mod:`.moe`)
    moe_comm_share: float = 0.0  # share of the SMs an overlapped all-to-all holds (:func:`.moe.comm_share`)
    moe_load_imbalance: float = 1.0  # the busiest expert rank's tokens / the balanced share (:mod:`.moe`)
    moe_dispatcher: str = "alltoall"  # the token dispatcher: alltoall, or deepep / hybridep (:mod:`.moe`)
    fp8_scaling: str = "delayed"  # how the casts scale: delayed, current or block (MXFP8; :mod:`.precision`)
