"""Published, measured Megatron-LM training runs on DGX A100 clusters (the calibration data).

Each run: the model (GPT presets of the ``transformer`` workload, Megatron's 51,200 vocabulary and
2,048-token sequences), the GPU count, the global batch, the decisions the paper reports (the
rest are left to the planner) and the measured iteration time in seconds.

Sources:

* ``korthikanti-t5``: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
  Models", 2022 (arXiv:2205.05198), Table 5 end-to-end iteration times with full recomputation and
  with selective recomputation + sequence parallelism; configurations from its Table 3 (tensor 8,
  the pipeline sizes, batch = GPU count, micro-batch 1; 22B: batch 4, micro-batch 4) with the
  interleaving degrees that its Figure 1 activation memories imply (175B and 530B: 3; 22B and 1T:
  none; the same degrees Calculon's validation set encodes, Isaev et al. SC'23).
* ``narayanan-t1``: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM", SC'21 (arXiv:2104.04473), Table 1 (weak scaling, full
  recomputation, interleaved schedule with scatter/gather: §5.1 "we use the interleaved pipeline
  schedule with the scatter/gather optimization enabled"). The table gives achieved teraFLOP/s
  per GPU ``X`` in hardware FLOPs; the iteration time is ``F / (n·X)`` with the paper's Eq. 3
  ``F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))``. Micro-batch and interleaving degree are not
  reported: the planner chooses both (an interleaved schedule needs p > 1, so the runs without
  pipeline parallelism have none).
* ``narayanan-t2``: the same paper's Table 2, PTD-P rows (micro-batch 1, model-parallel size 96
  = tensor 8 × pipeline 12 for 175B and 280 = 8 × 35 for 530B).
* ``mt-nlg``: Smith et al., "Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B",
  2022 (arXiv:2201.11990) §2.4: 280, 350 and 420 DGX A100 nodes, batch 1,920, tensor 8 ×
  pipeline 35, iteration 60.1 / 50.2 / 44.4 s. DeepSpeed's pipeline engine, not Megatron-LM's:
  reported beside the others, never fitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optmap.workload.transformer import TransformerConfig, megatron_gpt


@dataclass(frozen=True)
class Run:
    source: str
    label: str
    config: TransformerConfig
    gpus: int
    batch: int
    fixed: dict = field(default_factory=dict)  # decisions the paper reports
    measured_s: float = 0.0
    options: dict = field(default_factory=dict)  # cost-model options of the run's software

    def __post_init__(self):
        # none of these runs used context parallelism, FSDP or offloading (not in Megatron-LM then)
        object.__setattr__(self, "fixed", {**NOT_YET, **self.fixed})


# decisions Megatron-LM of 2021-2022 did not have: pinned off for every run
NOT_YET = {"context_parallel": 1, "fsdp": False, "offload": "none"}
# Megatron-LM of 2021-2022 ran the attention core unfused (its scale-mask-softmax kernels, the
# scores stored: Korthikanti et al. 2022 Eq. 1's 5as/h term); fused flash attention came later, as
# did Transformer Engine's userbuffers that chunk the tensor-parallel collectives beside their GEMMs
SOFTWARE_2022 = {"attention": "unfused", "tp_comm_overlap": False}


def eq3_flops(cfg: TransformerConfig, batch: int) -> float:
    """Narayanan et al. Eq. 3: FLOPs of one iteration with full recomputation."""
    s, layers, h, v = cfg.seq_len, cfg.layers, cfg.d_model, cfg.vocab
    return 96.0 * batch * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))


def _korthikanti() -> list[Run]:
    models = [("22B", megatron_gpt("megatron-22b", 48, 6144, 64), 1, 4, 4, 1, 1.42, 1.10),
              ("175B", megatron_gpt("gpt3-175b", 96, 12288, 96), 8, 64, 1, 3, 18.13, 13.75),
              ("530B", megatron_gpt("turing-530b", 105, 20480, 128), 35, 280, 1, 3, 49.05, 37.83),
              ("1T", megatron_gpt("megatron-1t", 128, 25600, 160), 64, 512, 1, 1, 94.42, 71.49)]
    runs = []
    for label, cfg, p, batch, mb, v, full_s, seqsel_s in models:
        base = {"tensor_parallel": 8, "pipeline_parallel": p, "data_parallel": 1, "microbatch_size": mb,
                "interleaving": v, "optimizer_sharding": False, "dp_overlap": False}
        runs.append(Run("korthikanti-t5", f"{label} full", cfg, 8 * p, batch,
                        {**base, "recompute": "full", "sequence_parallel": False}, full_s, SOFTWARE_2022))
        runs.append(Run("korthikanti-t5", f"{label} sel+sp", cfg, 8 * p, batch,
                        {**base, "recompute": "selective", "sequence_parallel": True}, seqsel_s, SOFTWARE_2022))
    return runs


# Narayanan Table 1: (billions, heads, hidden, layers, tensor, pipeline, GPUs, batch, TFLOP/s per GPU)
TABLE1 = [(1.7, 24, 2304, 24, 1, 1, 32, 512, 137), (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
          (7.5, 32, 4096, 36, 4, 1, 128, 512, 142), (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
          (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138), (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
          (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148), (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
          (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163), (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163)]

# Narayanan Table 2, PTD-P rows: (model, pipeline, batch, GPUs, TFLOP/s per GPU); micro-batch 1
TABLE2 = [("gpt3-175b", 12, 1536, 384, 153), ("gpt3-175b", 12, 1536, 768, 149), ("gpt3-175b", 12, 1536, 1536, 141),
          ("turing-530b", 35, 2240, 560, 171), ("turing-530b", 35, 2240, 1120, 167),
          ("turing-530b", 35, 2240, 2240, 159)]

_GPT = {"gpt3-175b": (96, 12288, 96), "turing-530b": (105, 20480, 128)}
# 2021 runs: full recomputation, no sequence parallelism, ZeRO or overlap (not yet in Megatron-LM)
_RECOMPUTE_2021 = {"recompute": "full", "sequence_parallel": False, "optimizer_sharding": False, "dp_overlap": False}
# and Megatron-LM's default schedule (no interleaving) where the paper does not say it interleaved
_FULL_2021 = {**_RECOMPUTE_2021, "interleaving": 1}
# Megatron-LM of 2021 (v2): synchronous tensor-parallel collectives, weight gradients added into the
# main-gradient buffer by a separate kernel (both changed in 2022; ``--no-async-tensor-model-parallel-allreduce``
# and ``--no-gradient-accumulation-fusion`` restore the old behaviour)
SOFTWARE_2021 = {"tp_overlap": False, "grad_accumulation_fusion": False, **SOFTWARE_2022}


def _narayanan() -> list[Run]:
    runs = []
    for billions, heads, h, layers, t, p, n, batch, tflops in TABLE1:
        cfg = megatron_gpt(f"gpt-{billions}b", layers, h, heads)
        # §5.1: the interleaved schedule (degree left to the planner) wherever there is a pipeline
        fixed = {"tensor_parallel": t, "pipeline_parallel": p, "data_parallel": n // (t * p),
                 **(_RECOMPUTE_2021 if p > 1 else _FULL_2021)}
        runs.append(Run("narayanan-t1", f"{billions}B / {n}", cfg, n, batch, fixed,
                        eq3_flops(cfg, batch) / (n * tflops * 1e12), SOFTWARE_2021))
    for name, p, batch, n, tflops in TABLE2:
        cfg = megatron_gpt(name, *_GPT[name])
        fixed = {"tensor_parallel": 8, "pipeline_parallel": p, "data_parallel": n // (8 * p), "microbatch_size": 1,
                 **_FULL_2021}
        runs.append(Run("narayanan-t2", f"{name} / {n}", cfg, n, batch, fixed,
                        eq3_flops(cfg, batch) / (n * tflops * 1e12), SOFTWARE_2021))
    return runs


def _mt_nlg() -> list[Run]:
    cfg = megatron_gpt("turing-530b", 105, 20480, 128)
    return [Run("mt-nlg", f"530B / {8 * nodes}", cfg, 8 * nodes, 1920,
                {"tensor_parallel": 8, "pipeline_parallel": 35, "data_parallel": nodes // 35, "microbatch_size": 1,
                 **_FULL_2021}, seconds, SOFTWARE_2021)
            for nodes, seconds in ((280, 60.1), (350, 50.2), (420, 44.4))]


MEGATRON_SOURCES = ("korthikanti-t5", "narayanan-t1", "narayanan-t2")  # Megatron-LM runs: fitted


def runs() -> list[Run]:
    return _korthikanti() + _narayanan() + _mt_nlg()
