"""Mixture-of-experts layers in ``megatron-3d``: expert parallelism as Megatron-Core runs it.

A MoE layer (:mod:`optmap.workload.moe`) keeps the attention block and replaces the MLP by a
router, ``experts`` expert MLPs (``top_k`` per token) and optional shared experts. Megatron-Core
(``megatron/core/transformer/moe``; its MoE README) trains it with:

* **expert parallelism** ``ep`` (decision ``expert_parallel``): the experts are split over ``ep``
  ranks, ``experts/ep`` each; **expert tensor parallelism** ``etp`` (decision
  ``expert_tensor_parallel``, Megatron-Core's ``--expert-tensor-parallel-size``) splits each
  expert's width over ``etp`` ranks: the search tries 1 (the MoE guide's recommendation for
  fine-grained experts) and ``t`` (Megatron-Core's default, ``ModelParallelConfig.__post_init__``),
  :func:`untried_etp`. Expert ranks follow Megatron-Core's "parallel folding"
  (``parallel_state.initialize_model_parallel``: an expert rank generator of order
  ``tp-cp-ep-dp-pp`` with ``tp = etp``): ``etp`` consecutive ranks, the EP group ``ep`` ranks
  ``etp`` apart, the expert-data-parallel group ``edp = t·d/(ep·etp)`` ranks ``etp·ep`` apart,
  all inside one pipeline stage's ``t·d`` ranks. Valid when ``ep·etp`` divides ``t·d`` and ``ep``
  divides ``experts``.
* the **alltoall token dispatcher** (``--moe-token-dispatcher-type alltoall``): each rank routes
  its own tokens (``b·s/t``: Megatron-Core refuses MoE training with t > 1 without sequence
  parallelism, ``moe_layer.py``), permutes the ``top_k`` copies of each token by expert
  (memory-bound: read and write each copy), sends them to the experts' ranks (**dispatch**,
  all-to-all over the EP group), all-gathers them over the ETP group, sorts what arrived by local
  expert when the rank holds more than one ("permutation 2", ``sort_chunks_by_idxs`` in
  ``token_dispatcher.py``: another read and write of every copy), runs the local experts'
  grouped GEMM (``--moe-grouped-gemm``: Transformer Engine's GroupedLinear, one cuBLAS GEMM and,
  with FP8, one cast per local expert), and reverses the path (un-sort, reduce-scatter over ETP,
  **combine** all-to-all, un-permute and weight by the router's probabilities). Backward runs the
  same two all-to-alls on the gradients; full or ``moe`` recomputation runs the forward's again. The flex
  dispatchers' fused kernels deliver the copies grouped by expert, without the sort.
* **balanced routing**: every rank receives ``b·s/t·top_k`` token copies; the busiest rank, which
  every other waits for, gets ``moe_load_imbalance`` (≥ 1, default 1.0) times that (its expert
  GEMMs, all-to-all volume and dispatched activations).
* gradients: expert weights reduce over the expert-data-parallel group, the rest over data
  parallelism as for a dense model (Megatron-Core's ``expert_data_parallel_group``); the
  distributed optimizer shards expert state over ``edp``.

The all-to-all (:func:`all_to_all`) is the pairwise exchange of Thakur et al. 2005 over the EP
group's real links: the ``k`` members in the GPU's node exchange over NVLink, the other
``ep - k`` through the GPU's own network adapter, concurrently; ``k`` is the fewest members in a
node of any EP group (:func:`.cluster.expert_links`). Cost option ``moe_dispatcher`` names the
token dispatcher: ``alltoall`` (``--moe-token-dispatcher-type alltoall``; Megatron-Core's default,
``allgather``, is not modelled) sends every routed copy to its expert's rank; ``deepep`` and ``hybridep``
(``--moe-token-dispatcher-type flex``; ``auto``, the default, picks one by system:
:func:`dispatcher_for`) "remove redundant tokens during cross-node communication" (Megatron-Core MoE guide;
DeepSeek-V3 §3.2.2): a token crosses the network once per other node that holds one of its
experts (fewer with group-limited routing, :func:`remote_nodes`) and is forwarded inside that node
over NVLink (:func:`deduplicated_all_to_all`). Leading dense layers (``dense_layers``) are
priced as the average layer of the model (exact when every layer is MoE, as in Mixtral and Qwen3).

An all-to-all runs as kernels on the GPU's streaming multiprocessors: DeepEP's and HybridEP's take
``moe_flex_dispatcher_num_sms`` of them (Megatron-Core ``transformer_config.py``: "historical
default 20"), NCCL's one per channel. Overlapped with computation (``moe_a2a_overlap``) they leave
the computation beside them the other SMs: cost option ``moe_comm_sms`` (default 20, Megatron-Core's
DeepEP default, assumed alike for NCCL) over the accelerator's SMs (:data:`SMS`; its ``attrs.sms``
first) is the share of each overlapped all-to-all that stays on the critical path (:func:`overlapped`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from optmap import collectives as coll
from optmap.errors import OptmapError
from optmap.workload import moe as moe_mlp
from optmap.workload.transformer import TransformerConfig

from . import memory, precision

ACT_BYTES = 2.0  # 16-bit tokens on the wire and in HBM
DISPATCHERS = ("alltoall", "deepep", "hybridep")  # Megatron-Core's alltoall and flex dispatchers (backends)
ROUTER_BYTES = 4.0  # fp32 router scores (Megatron-Core moe_utils.py: torch.softmax(logits, dtype=torch.float32))


def moe_fraction(cfg: TransformerConfig) -> float:
    """Share of the layers whose MLP is a mixture of experts (0 for a dense model)."""
    return cfg.moe_layers / cfg.layers


def expert_parallel_sizes(cfg: TransformerConfig, gpus: int) -> tuple[int, ...]:
    """Choices of ``expert_parallel``: divisors of the expert count up to the GPUs; 1 when dense."""
    if cfg.moe is None:
        return (1,)
    return tuple(k for k in range(1, min(cfg.moe.experts, gpus) + 1) if cfg.moe.experts % k == 0)


def param_split(cfg: TransformerConfig) -> tuple[float, float]:
    """(non-expert, routed-expert) parameters of the average layer: attention, norms, router, shared
    experts and dense MLPs split over tensor parallelism; routed experts over ``ep·etp`` ranks."""
    if cfg.moe is None:
        return cfg.layer_params, 0.0
    expert = cfg.moe.experts * moe_mlp.mlp_params(cfg.d_model, cfg.moe.d_ff, cfg.gated_mlp, cfg.bias)
    total = (cfg.layers - cfg.moe_layers) * cfg.layer_params + cfg.moe_layers * cfg.moe_layer_params
    return (total - cfg.moe_layers * expert) / cfg.layers, cfg.moe_layers * expert / cfg.layers


def expert_data_parallel(t, d, ep, etp: float) -> np.ndarray:
    """Size of the expert-data-parallel group: ``t·d/(ep·etp)`` (Megatron-Core, context parallel 1)."""
    return np.asarray(t, float) * np.asarray(d, float) / (np.asarray(ep, float) * etp)


def tensor_parallel_mlp_share(cfg: TransformerConfig) -> float:
    """Share of the layers whose MLP is tensor-parallel with Megatron's f/g collectives: dense
    layers, and MoE layers with shared experts (a dense tensor-parallel MLP); routed experts move
    their tokens by all-to-all instead."""
    if cfg.moe is None:
        return 1.0
    return 1.0 - moe_fraction(cfg) * (0.0 if cfg.moe.shared_experts else 1.0)


def local_tokens(cfg: TransformerConfig, b, t, sp) -> np.ndarray:
    """Tokens one GPU routes per micro-batch: its sequence shard ``b·s/t`` (sequence parallel)."""
    return np.asarray(b, float) * cfg.seq_len / np.where(np.asarray(sp, bool), np.asarray(t, float), 1.0)


@dataclasses.dataclass(frozen=True)
class MLPTimes:
    """Seconds of one MoE MLP and micro-batch on one GPU (forward, backward), and two of its parts."""

    forward: np.ndarray
    backward: np.ndarray
    shared_in: np.ndarray  # the shared experts' first GEMM, backward (hides their TP collective; 0 without)
    act: np.ndarray  # the routed experts' activation, forward (what ``norm_act`` redoes, :mod:`.recompute`)


def mlp_times(cfg: TransformerConfig, dev, lin, b, t, sp, ep, etp: float, imbalance: float,
              dispatcher: str = "alltoall", fp8_scaling: str = "delayed") -> MLPTimes:
    """Router, permutation, the local experts' grouped GEMMs and the shared experts (see the module
    docstring); ``lin`` prices the expert GEMMs (FP8 recipes), ``dev`` the router and element-wise work."""
    moe, h = cfg.moe, cfg.d_model
    t, ep = np.asarray(t, float), np.asarray(ep, float)
    tokens = local_tokens(cfg, b, t, sp)
    router = dev.gemm_times(tokens, moe.experts, h)  # logits = x · W_router
    # softmax and top-k over the fp32 logits (read, write), then permute and un-permute every
    # routed copy of [h] (read + write each, 16-bit), the un-permute also scaling by its probability;
    # the alltoall dispatcher also sorts and un-sorts them by local expert (more than one per rank)
    local = moe.experts / ep
    copies = tokens * moe.top_k * imbalance
    route = dev.memory_time(2.0 * ROUTER_BYTES * tokens * moe.experts, kernels=2)
    passes = 2.0 + np.where((local > 1) & (dispatcher == "alltoall"), 2.0, 0.0)
    permute = dev.memory_time(passes * 2.0 * ACT_BYTES * copies * h, kernels=passes)
    # the experts/ep local experts, each on its share of the copies gathered over etp: Transformer
    # Engine's GroupedLinear runs one GEMM per local expert (its grouped GEMM loops cuBLAS over them,
    # ``general_grouped_gemm``), so each is priced, launch included, as its own GEMM
    rows = copies * etp / local
    width_in = (2 if cfg.gated_mlp else 1) * moe.d_ff / etp
    w1, w2 = (tuple(local * x for x in lin.gemm_times(rows, n, k)) for n, k in ((width_in, h), (h, moe.d_ff / etp)))
    act = dev.memory_time(2.0 * ACT_BYTES * copies * etp * width_in, kernels=1)  # SwiGLU / activation in and out
    cast_f = cast_b = 0.0
    if lin is not dev:  # FP8 recipes cast every routed copy's GEMM inputs and output gradients, per expert
        fb, bb, kf, kb = precision.expert_cast_bytes(copies * etp, h, width_in, moe.d_ff / etp, local, fp8_scaling)
        cast_f, cast_b = dev.memory_time(fb, kernels=kf), dev.memory_time(bb, kernels=kb)
    forward = router[0] + w1[0] + w2[0] + route + permute + act + cast_f
    backward = router[1] + w1[1] + w2[1] + 2.0 * (route + permute + act) + cast_b
    shared_in = np.zeros_like(forward)
    if moe.shared_experts:  # a dense tensor-parallel MLP on the whole [b, s, h] (Megatron-Core SharedExpertMLP)
        full = np.asarray(b, float) * cfg.seq_len
        s_in = (2 if cfg.gated_mlp else 1) * moe.shared_width
        s1, s2 = lin.gemm_times(full, s_in / t, h), lin.gemm_times(full, h, moe.shared_width / t)
        s_act = dev.memory_time(2.0 * ACT_BYTES * full * s_in / t, kernels=1)
        forward, backward, shared_in = forward + s1[0] + s2[0] + s_act, backward + s1[1] + s2[1] + 2.0 * s_act, s1[1]
    return MLPTimes(forward, backward, shared_in, act)


def all_to_all(nbytes, ep, members, intra_bw, inter_bw, latency) -> np.ndarray:
    """Pairwise-exchange all-to-all (Thakur et al. 2005) of an ``nbytes`` send buffer over ``ep``
    ranks, ``members`` of them in this GPU's node: ``(members-1)/ep`` of the buffer over NVLink
    and ``(ep-members)/ep`` through the GPU's adapter at once, ``ep - 1`` steps of latency."""
    n, ep, k = (np.asarray(x, float) for x in (nbytes, ep, members))
    return _both_links(ep, latency, (k - 1.0) / ep * n / intra_bw, (ep - k) / ep * n / inter_bw)


def _both_links(ep, latency, inside, outside) -> np.ndarray:
    """Seconds of an exchange over ``ep`` ranks that moves ``inside`` seconds over NVLink and
    ``outside`` through the adapter at once, after ``ep - 1`` steps of latency (0 without EP)."""
    return np.where(ep > 1, (ep - 1.0) * latency + np.maximum(inside, outside), 0.0)


def remote_nodes(cfg: TransformerConfig, ep, members) -> np.ndarray:
    """Expected number of other nodes of the EP group that hold at least one of a token's
    ``top_k`` experts, the experts spread evenly over the group's ``ep/members`` nodes (consecutive
    experts on consecutive ranks) and routed uniformly (balanced). Plain top-k: each other node,
    holding ``e`` of the ``E`` experts, is missed with probability C(E - e, k) / C(E, k)
    (hypergeometric). Group-limited routing (``groups``, ``group_top_k``: :mod:`optmap.workload.moe`)
    draws the ``k`` experts from the ``group_top_k`` chosen groups' ``N`` experts: a node that holds
    ``t`` whole groups (or part ``h`` of one, ``t = 1``) has ``s`` of them chosen with the
    hypergeometric probability C(t, s)·C(G - t, g - s)/C(G, g) and is then missed with
    C(N - s·h, k) / C(N, k). Where a node's share neither holds whole groups nor divides one, plain
    top-k is priced (more nodes, never fewer)."""
    moe = cfg.moe
    experts, k, g = float(moe.experts), moe.top_k, moe.group_top_k
    ep = np.asarray(ep, float)
    members = np.minimum(np.asarray(members, float), ep)
    held = experts * members / ep  # experts in one node of the group
    missed = _none_of(experts, held, k)  # plain top-k
    if moe.groups > 1:
        width = experts / moe.groups  # experts in one group
        whole = (held >= width) & (np.mod(held, width) == 0)
        part = (held < width) & (np.mod(width, held) == 0)
        t = np.where(whole, held / width, 1.0)  # groups the node holds (some of)
        h = np.where(whole, width, held)  # experts it holds in each
        limited = sum(_choose(t, s) * _choose(moe.groups - t, g - s) / math.comb(moe.groups, g)
                      * _none_of(g * width, s * h, k) for s in range(g + 1))
        missed = np.where(whole | part, limited, missed)
    return (ep / members - 1.0) * (1.0 - missed)


def _choose(n, r) -> np.ndarray:
    """C(n, r) for integer-valued arrays (0 where r > n or r < 0), as a falling factorial."""
    n, r = np.asarray(n, float), np.asarray(r, float)
    out = np.where(r < 0, 0.0, 1.0)
    for i in range(int(np.max(r, initial=0))):
        out = out * np.where(i < r, np.clip(n - i, 0.0, None) / (i + 1.0), 1.0)
    return out


def _none_of(total, held, k: int) -> np.ndarray:
    """C(total - held, k) / C(total, k): a uniform draw of ``k`` of ``total`` misses ``held`` of them."""
    return np.prod([np.clip((total - held - i) / (total - i), 0.0, 1.0) for i in range(k)], axis=0)


def deduplicated_all_to_all(token_bytes, copies, ep, members, intra_bw, inter_bw, latency, nodes) -> np.ndarray:
    """DeepEP / HybridEP dispatch (or combine) of one GPU's tokens: each token (``token_bytes``
    each; ``copies`` of them routed) crosses the adapter once per other node it needs (``nodes``,
    :func:`remote_nodes`), and NVLink carries every copy the node keeps or forwards to another
    GPU, ``(members-1)/members`` of them; both at once, ``ep - 1`` steps of latency."""
    ep, k = np.asarray(ep, float), np.minimum(np.asarray(members, float), np.asarray(ep, float))
    return _both_links(ep, latency, (k - 1.0) / k * copies / intra_bw, token_bytes * nodes / inter_bw)


def dispatch_combine(cfg: TransformerConfig, b, t, sp, ep, links, etp: float, imbalance: float,
                     dispatcher: str = "alltoall") -> np.ndarray:
    """Seconds of one MoE layer's forward token exchange per micro-batch: the dispatch and combine
    all-to-alls over EP (node-deduplicated with a flex ``dispatcher``), each with its all-gather /
    reduce-scatter over the ETP group. The backward runs it once more, a recomputed forward once
    more again (:func:`exchange_passes`)."""
    tokens = ACT_BYTES * local_tokens(cfg, b, t, sp) * imbalance * cfg.d_model
    n = tokens * cfg.moe.top_k
    if dispatcher == "alltoall":
        a2a = all_to_all(n, ep, links.ep_members, links.ep_intra_bw, links.ep_inter_bw, links.ep_lat)
    else:
        a2a = deduplicated_all_to_all(tokens, n, ep, links.ep_members, links.ep_intra_bw, links.ep_inter_bw,
                                      links.ep_lat, remote_nodes(cfg, ep, links.ep_members))
    etp = np.asarray(etp, float)
    gather = np.where(etp > 1, coll.allgather(n * etp, etp, links.etp_bw, links.etp_lat), 0.0)
    scatter = np.where(etp > 1, coll.reduce_scatter(n * etp, etp, links.etp_bw, links.etp_lat), 0.0)
    return 2.0 * a2a + gather + scatter  # dispatch (+ gather) and combine (+ scatter)


def exchange_passes(recompute) -> np.ndarray:
    """How many times a layer's forward token exchange runs per micro-batch: forward and backward,
    and the forward again with full, ``moe`` or ``mla_up_proj_moe`` recomputation (``norm_act`` repeats none)."""
    return 2.0 + np.isin(recompute, memory.REDO_EXCHANGE)


# streaming multiprocessors per GPU (NVIDIA whitepapers: A100 108, H100 SXM5 132, Blackwell B200 148)
SMS = {"a100": 108, "a100-sxm": 108, "h100": 132, "h100-sxm": 132, "b200": 148, "gb200": 148}


def comm_share(accelerator, comm_sms: int) -> float:
    """Share of the GPU's SMs an overlapped all-to-all holds: ``comm_sms`` over the accelerator's SMs
    (``attrs["sms"]``, else :data:`SMS`); 0 for an accelerator whose SM count is unknown."""
    sms = accelerator.attrs.get("sms", SMS.get(accelerator.name))
    return min(1.0, comm_sms / float(sms)) if sms else 0.0


def overlapped(exchange, once, attention, mlp, p, v, m, share: float = 0.0) -> np.ndarray:
    """Exposed seconds of a layer's token exchange with Megatron-Core's expert-parallel all-to-all
    overlap (cost option ``moe_a2a_overlap``, ``--overlap-moe-expert-parallel-comm``; Megatron-Core
    MoE guide: "merging FWD-BWD passes of adjacent micro-batches"). In the schedule's steady state
    a layer's forward of one micro-batch runs beside its backward of another, each all-to-all on
    the communication stream beside one computation (``TransformerLayerSchedulePlan.run``,
    ``model_chunk_schedule_plan.py``): the backward's combine beside the forward's attention
    (``attention``: forward, backward seconds), the forward's dispatch beside the backward's expert
    MLP, the backward's dispatch beside the forward's expert MLP (``mlp``), the forward's combine
    beside the backward's attention; each hides up to its partner, less the ``share`` of the SMs it
    holds: the partner runs on the rest while they overlap, so at least ``share`` of each all-to-all
    stays exposed (hidden = min(all-to-all · (1 − share), partner)). ``exchange`` is the layer's four
    all-to-alls (and a recomputed forward's two, which stay exposed: Megatron-Core refuses such plans,
    :func:`overlap_invalid`, which are priced all the same), ``once`` one of the four. The
    warm-up chunks run alone (Megatron-Core
    ``schedules.py``, first stage: ``(p-1)·2 + (v-1)·p`` interleaved, ``p-1`` otherwise, at least
    the first forward)."""
    p, v = np.asarray(p, float), np.asarray(v, float)
    chunks = np.asarray(m, float) * v
    warm = np.where(v > 1, (p - 1.0) * 2.0 + (v - 1.0) * p, np.maximum(p - 1.0, 1.0))
    paired = np.maximum(0.0, chunks - warm) / chunks
    hidden = sum(np.minimum(once * (1.0 - share), partner) for partner in (*attention, *mlp))
    return exchange - paired * hidden


def routed_activations(cfg: TransformerConfig, b, t, sp, imbalance: float, gemm_input_bytes: float,
                       fused_swiglu: bool = False) -> np.ndarray:
    """Bytes one MoE layer keeps per micro-batch for its routed experts: the router's fp32
    probabilities over every expert, and per dispatched copy its permuted input (the first GEMM's
    input), the MLP-in output, the MLP-out input and the gated product (as a dense MLP,
    :func:`.memory.layer_terms`); widths are 1/etp of the expert's on etp times the rows."""
    moe = cfg.moe
    tokens = local_tokens(cfg, b, t, sp)
    copies = tokens * moe.top_k * imbalance
    per_copy = gemm_input_bytes * cfg.d_model + memory.mlp_bytes(cfg, moe.d_ff, 1.0, gemm_input_bytes, 1.0, fused_swiglu)
    return ROUTER_BYTES * tokens * moe.experts + copies * per_copy


def blend(cfg: TransformerConfig, dense, sparse):
    """The average layer from a dense layer's and a MoE layer's values (dataclasses of arrays or arrays)."""
    f = moe_fraction(cfg)
    if dataclasses.is_dataclass(dense):
        return type(dense)(**{k.name: (1.0 - f) * getattr(dense, k.name) + f * getattr(sparse, k.name)
                              for k in dataclasses.fields(dense)})
    return (1.0 - f) * dense + f * sparse


def dispatcher_for(name: str, topology: str) -> str:
    """The token dispatcher a ``moe_dispatcher`` name stands for: ``auto`` (the default) is the flex
    dispatcher, which Megatron-Core's MoE guide lists among the "general performance flags [for] almost
    all workloads" (``--moe-token-dispatcher-type flex``), with the backend its dispatcher table names
    for the system: HybridEP for multi-node NVLink (``gb200-nvl72``), DeepEP for cross-node EP over
    InfiniBand or Ethernet; any other name is itself."""
    if name != "auto":
        return name
    return "hybridep" if topology == "gb200-nvl72" else "deepep"


def check_options(cfg: TransformerConfig, etp: int | None, imbalance: float, dispatcher: str = "alltoall") -> None:
    """Refuse, in one line, MoE cost options that cannot hold for ``cfg``."""
    if dispatcher not in DISPATCHERS:
        raise OptmapError(f"[cost] moe_dispatcher must be one of {list(DISPATCHERS)}, got {dispatcher!r}")
    if imbalance < 1.0:
        raise OptmapError(f"[cost] moe_load_imbalance must be >= 1 (the busiest rank's tokens over the balanced "
                          f"share), got {imbalance}")
    if etp is None:
        return
    if etp < 1:
        raise OptmapError(f"[cost] expert_tensor_parallel must be >= 1, got {etp}")
    if cfg.moe is None and etp != 1:
        raise OptmapError(f"[cost] expert_tensor_parallel = {etp} needs a mixture-of-experts model ([workload.moe])")
    if cfg.moe is not None and cfg.moe.d_ff % etp:
        raise OptmapError(f"[cost] expert_tensor_parallel = {etp} must divide the experts' d_ff = {cfg.moe.d_ff}")


def expert_tensor_sizes(cfg: TransformerConfig, tensor_sizes, pinned: int | None) -> tuple[int, ...]:
    """Choices of decision ``expert_tensor_parallel``: the ``pinned`` size (cost option); else 1 and each
    tensor-parallel size that divides the experts' ``d_ff`` (1 or ``t`` per plan); 1 for a dense model."""
    if pinned is not None:
        return (int(pinned),)
    if cfg.moe is None:
        return (1,)
    return (1, *(int(t) for t in tensor_sizes if t > 1 and cfg.moe.d_ff % t == 0))


def invalid(cfg: TransformerConfig, t, d, ep, sp, etp, pinned: bool = False) -> np.ndarray:
    """True where a plan breaks Megatron-Core's MoE rules: ``ep·etp`` must divide ``t·d`` (``d``: data ×
    context parallel; and ``ep`` the experts, by its choices), and tensor parallelism needs sequence
    parallelism (``moe_layer.py``); unless ``pinned`` (cost option), ``etp`` is 1 or ``t``."""
    t, d, ep, etp = (np.asarray(x, float) for x in (t, d, ep, etp))
    if cfg.moe is None:
        return ep != 1
    return (np.mod(t * d, ep * etp) != 0) | ((t > 1) & ~np.asarray(sp, bool)) | untried_etp(t, etp, pinned)


def untried_etp(t, etp, pinned: bool) -> np.ndarray:
    """True where ``etp`` is neither 1 nor ``t``, the sizes the search tries, and the cost option does not pin it."""
    t, etp = np.asarray(t, float), np.asarray(etp, float)
    return (etp != 1) & (etp != t) & (not pinned)


def overlap_invalid(cfg: TransformerConfig, p, v, ep, recompute) -> np.ndarray:
    """True where Megatron-Core refuses ``--overlap-moe-expert-parallel-comm`` (``transformer_config.py``,
    ``__post_init__``): without expert parallelism, with a pipeline that is not interleaved (its
    1F1B overlap runs in the interleaved schedule; ``arguments.py`` drops a virtual size of 1), or
    with full or MoE recomputation."""
    if cfg.moe is None:
        return np.zeros(np.shape(ep), bool)
    p, v, ep = (np.asarray(x, float) for x in (p, v, ep))
    return (ep == 1) | ((p > 1) & (v == 1)) | np.isin(recompute, memory.REDO_EXCHANGE)


def reason(cfg: TransformerConfig, plan: dict, pinned: bool = False, overlap: bool = False) -> str:
    """Why a plan breaks :func:`invalid` (empty when it does not)."""
    t, d, ep = plan["tensor_parallel"], plan["data_parallel"], plan.get("expert_parallel", 1)
    etp = plan.get("expert_tensor_parallel", 1)
    if cfg.moe is None:
        return "" if ep == 1 else f"expert_parallel = {ep} needs a mixture-of-experts model ([workload.moe])"
    if (t * d) % (ep * etp):
        return (f"expert_parallel × expert_tensor_parallel = {ep * etp} must divide tensor × data × context = "
                f"{t * d} (Megatron-Core carves expert ranks out of each stage's GPUs)")
    if t > 1 and not plan["sequence_parallel"]:
        return "a mixture-of-experts model with tensor_parallel > 1 needs sequence_parallel (Megatron-Core)"
    if untried_etp(t, etp, pinned):
        return (f"expert_tensor_parallel = {etp} is neither 1 nor tensor_parallel = {t}, the sizes the search "
                f"tries; [cost] expert_tensor_parallel = {etp} pins another size")
    if overlap and overlap_invalid(cfg, plan["pipeline_parallel"], plan["interleaving"], ep,
                                   memory.RECOMPUTE.index(plan["recompute"])):
        return (f"moe_a2a_overlap (--overlap-moe-expert-parallel-comm) needs expert_parallel > 1, interleaving > 1 "
                f"when pipeline_parallel > 1, and no full or moe recomputation (Megatron-Core); this plan has "
                f"expert_parallel {ep}, pipeline {plan['pipeline_parallel']} × interleaving {plan['interleaving']}, "
                f"recompute {plan['recompute']}")
    return ""
