"""FLOPs of one ``megatron-3d`` iteration: model FLOPs (MFU's numerator) and hardware FLOPs."""

from __future__ import annotations

import numpy as np
from optmap.workload import moe as moe_mlp
from optmap.workload.transformer import TransformerConfig

from . import attention as attn
from . import memory
from . import recompute as recomputation


def model_flops(cfg: TransformerConfig, batch: int) -> float:
    """Model FLOPs of one iteration, without recomputation: 3 × forward, the numerator of model
    FLOPs utilisation (Korthikanti et al. 2022 §6; Chowdhery et al. 2022, PaLM, App. B)."""
    return 3.0 * batch * cfg.flops_fwd()


def hardware_flops(cfg: TransformerConfig, batch: int, recompute, attention: str = "unfused") -> np.ndarray:
    """Hardware FLOPs of one iteration: the model FLOPs plus what recomputation runs again, one
    layer forward per layer with ``full`` (Narayanan et al. SC'21 Eq. 3 counts exactly this:
    ``96·B·s·l·h²·(1 + s/6h + V/16lh)``) or the attention core's two batched GEMMs with
    ``selective`` (QKᵀ and ·V, ``4·s²·h`` per sample and layer; Korthikanti §5), the MoE layers'
    router and experts with ``moe``, latent attention's up-projection GEMMs with ``mla_up_proj``, both with
    ``mla_up_proj_moe``
    (``norm_act`` re-runs element-wise kernels only)."""
    layer = (cfg.flops_fwd() - cfg.head_flops_fwd() - cfg.mtp_flops_fwd()) / cfg.layers  # one layer forward
    core = attn.recomputed_core_flops(cfg, attention)
    experts = 0.0 if cfg.moe is None else cfg.moe_layers / cfg.layers * moe_mlp.layer_flops_fwd(
        cfg.moe, cfg.seq_len, cfg.d_model, cfg.gated_mlp)  # ``moe``: the average layer's MoE MLP again
    up = 2.0 * cfg.seq_len * sum(n_in * n_out for n_in, n_out in recomputation.up_projections(cfg))
    rc = np.asarray(recompute)
    again = np.select([rc == memory.FULL, rc == memory.SELECTIVE], [layer, core],
                      np.where(np.isin(rc, memory.REDO_MOE), experts, 0.0) + np.where(np.isin(rc, memory.REDO_UP_PROJ), up, 0.0))
    return model_flops(cfg, batch) + batch * cfg.layers * again
