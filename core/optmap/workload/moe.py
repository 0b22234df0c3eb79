"""Mixture-of-experts MLPs (Shazeer et al. 2017; Fedus et al. 2022, Switch; Jiang et al. 2024, Mixtral).

An MoE layer replaces the transformer layer's MLP by a **router** (a bias-free linear d_model →
experts, softmax, top-k) and ``experts`` expert MLPs, each of width ``d_ff`` (gated like the
model's dense MLP when the model's ``gated_mlp``); every token runs through ``top_k`` of them
(balanced routing), and through every one of the ``shared_experts`` (dense MLPs of width
``shared_d_ff`` each, DeepSeekMoE's shared experts; Megatron-Core's
``--moe-shared-expert-intermediate-size`` is their summed width). The first ``dense_layers``
layers keep the dense MLP of width ``TransformerConfig.d_ff`` (DeepSeek's ``first_k_dense_replace``;
Megatron-Core's ``--moe-layer-freq``). **Group-limited routing** (DeepSeek-V2 §2.2.2 device-limited,
DeepSeek-V3 §2.1.2 node-limited; Megatron-Core ``--moe-router-num-groups`` /
``--moe-router-group-topk``, ``group_limited_topk`` in ``moe_utils.py``) splits the experts into
``groups`` equal groups of consecutive experts and takes a token's ``top_k`` experts from the
``group_top_k`` groups it scores highest (DeepSeek-V3: 8 groups, 4 per token, "at most M = 4
nodes"); 1 group is plain top-k routing.

Counted as in :mod:`optmap.workload.transformer`: parameters of every linear weight (no biases on
the router; expert biases only with the model's ``bias``), matrix-multiply FLOPs only (2 per
multiply-accumulate). The forward FLOPs of an MoE MLP per token are the router's ``2·d·experts``
plus ``top_k`` experts' and every shared expert's MLP, so a model's FLOPs follow its *active*
parameters (Mixtral: 12.9B of 46.7B).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MoEConfig:
    """The mixture-of-experts MLP of a transformer (see the module docstring)."""

    experts: int  # routed experts per MoE layer
    top_k: int  # experts each token is routed to
    d_ff: int  # width of one routed expert's MLP (Megatron-Core --moe-ffn-hidden-size)
    shared_experts: int = 0  # experts every token runs through
    shared_d_ff: int = 0  # width of one shared expert's MLP
    dense_layers: int = 0  # leading layers that keep the dense MLP
    groups: int = 1  # expert groups of group-limited routing (HF n_group; 1: none)
    group_top_k: int = 1  # groups a token's experts come from (HF topk_group)

    def __post_init__(self):
        if self.experts < 1 or self.top_k < 1 or self.d_ff < 1:
            raise ValueError(f"moe: experts, top_k and d_ff must be positive, got experts = {self.experts}, "
                             f"top_k = {self.top_k}, d_ff = {self.d_ff}")
        if self.top_k > self.experts:
            raise ValueError(f"moe: top_k = {self.top_k} exceeds experts = {self.experts}")
        if self.shared_experts < 0 or self.shared_d_ff < 0 or self.dense_layers < 0:
            raise ValueError("moe: shared_experts, shared_d_ff and dense_layers must be >= 0")
        if (self.shared_experts > 0) != (self.shared_d_ff > 0):
            raise ValueError(f"moe: shared_experts = {self.shared_experts} and shared_d_ff = {self.shared_d_ff} "
                             f"must both be 0 (no shared expert) or both positive")
        if self.groups < 1 or self.experts % self.groups:
            raise ValueError(f"moe: groups = {self.groups} must divide experts = {self.experts}")
        if not 1 <= self.group_top_k <= min(self.groups, self.top_k) or (
                self.group_top_k * (self.experts // self.groups) < self.top_k):
            raise ValueError(f"moe: group_top_k = {self.group_top_k} must be 1 to min(groups, top_k) = "
                             f"{min(self.groups, self.top_k)}, its groups holding the top_k = {self.top_k} experts")

    @property
    def shared_width(self) -> int:
        """Summed width of the shared experts (Megatron-Core's ``moe_shared_expert_intermediate_size``)."""
        return self.shared_experts * self.shared_d_ff


def mlp_params(d_model: int, width: int, gated: bool, bias: bool) -> int:
    """Weights (and biases) of one MLP d_model → width (→ gate and up when gated) → d_model."""
    w_in = (2 if gated else 1) * width
    return d_model * w_in + int(bias) * w_in + width * d_model + int(bias) * d_model


def mlp_flops(tokens: float, d_model: int, width: int, gated: bool) -> float:
    """Forward FLOPs of one MLP on ``tokens`` tokens: its two (three when gated) GEMMs."""
    return 2.0 * tokens * d_model * ((2 if gated else 1) * width + width)


def router_params(moe: MoEConfig, d_model: int) -> int:
    """The router's bias-free linear d_model → experts (Mixtral's ``gate``, Megatron-Core's router weight)."""
    return d_model * moe.experts


def layer_params(moe: MoEConfig, d_model: int, gated: bool, bias: bool) -> int:
    """Parameters of one MoE MLP (router, every routed expert, the shared experts), without its norm."""
    shared = mlp_params(d_model, moe.shared_width, gated, bias) if moe.shared_experts else 0
    return router_params(moe, d_model) + moe.experts * mlp_params(d_model, moe.d_ff, gated, bias) + shared


def inactive_params(moe: MoEConfig, d_model: int, gated: bool, bias: bool) -> int:
    """Parameters of one MoE MLP a token does not use: the ``experts - top_k`` routed experts it skips."""
    return (moe.experts - moe.top_k) * mlp_params(d_model, moe.d_ff, gated, bias)


def layer_flops_fwd(moe: MoEConfig, tokens: float, d_model: int, gated: bool) -> float:
    """Forward FLOPs of one MoE MLP: router GEMM + ``top_k`` routed experts + the shared experts."""
    routed = moe.top_k * mlp_flops(tokens, d_model, moe.d_ff, gated)
    shared = mlp_flops(tokens, d_model, moe.shared_width, gated) if moe.shared_experts else 0.0
    return 2.0 * tokens * d_model * moe.experts + routed + shared
