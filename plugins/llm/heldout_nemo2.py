"""NVIDIA NeMo Framework performance summary pages of NeMo 2 (containers 25.02 and 25.04): held-out rows.

From NeMo 24.12 on, the performance summary lives in the NeMo Framework user guide
(docs.nvidia.com/nemo-framework/user-guide, ``performance/performance_summary.html`` and
``performance/archive/25.04-performance-summary.html``), not in the NeMo repository. The copies read
here hold each page's first tables whole:

* ``nemo-25.02``: "Container: NeMo 25.02", pre-training "at FP8 precision (using NeMo 2.0)": every
  DGX-B200 row, and the first DGX-H100 row (GPT3-175B on 512 GPUs), where the copy read ends;
* ``nemo-25.04``: "Container: NeMo 25.04", "System: DGX-GB200", FP8 "per-tensor ... scaling factors
  computed in the current step": every row up to Mixtral-8x22B, whose TFLOP/s the copy cuts off.

Printed as the tables print them, with one exception: both tables print Mixtral-8x22B's GBS as 1 and
its MBS as 64, while their own GA column (16 = GBS / (MBS × DP), DP = 256 / (2 × 4 × 8) = 4) and NeMo
25.02's recipe table (``scripts/llm/performance/recommended_model_configs/model_configs_b200.csv`` at
v2.2.0: ``mbs`` 1, ``gbs`` 64) say GBS 64 and MBS 1: the columns are swapped, and the row keeps 64 and 1.
"LLAMA3-405B" is Llama 3.1 405B (the scripts' ``pretrain_llama31_405b.py``), "Nemotron-15B" is
Nemotron-4 15B (``pretrain_nemotron4_15b.py``).

Each row's recipe, from NeMo's ``scripts/performance`` at the release (v2.2.0 for 25.02, v2.3.0 for 25.04):

* gradients reduced in bf16 (``grad_bytes = 2``): the FP8 path sets ``plugins.grad_reduce_in_fp32 =
  False`` (``pretrain_*.py`` at v2.2.0; ``set_primary_perf_configs`` at v2.3.0), as :mod:`.heldout_dgxc`
  cites for the same scripts;
* FP8 delayed scaling in 25.02 (``bf16_with_fp8_mixed()``, the model's default) and current scaling in
  25.04, as its page states (``fp8_scaling = "current"``; the script's ``--fp8_recipe cs``);
* no FSDP in 25.02 (no column; NeMo 2's ``MegatronStrategy`` has none unless asked), and in 25.04 where
  its FSDP column says 0; its "1" is Megatron-FSDP over every data-parallel rank
  (``strategy.fsdp = "megatron"``, ``optim_grads_params``), with the 16-bit parameters gathered
  (``plugins.fp8_param_gather = False``: "FSDP does not support FP8 param gather");
* Mixtral: Megatron-Core's all-to-all dispatcher (``MixtralConfig``: ``moe_token_dispatcher_type =
  "alltoall"``), with the performance recipe's token dropping at capacity 1 (``MegatronTokenDropCallback``);
  expert tensor parallelism 1 for Mixtral-8x22B in 25.02 (``etp_size`` 1 in its recipe table); in 25.04
  no GB200 recipe row has it, so the script passes none and the planner chooses.

Not priced: the CUDA graphs of NeMo's B200 and GB200 recipes (``enable_cuda_graph`` for Mixtral-8x7B on
B200 at v2.2.0; ``cuda_graphs`` 1 for GPT3-175B, Llama 3 8B, Mixtral-8x7B, Nemotron-4 15B and 340B in
v2.3.0's ``model_configs_gb200.csv``).
"""

from __future__ import annotations

from .heldout import BF16_GRADS, EXPERT_TP_1, HeldOutRun

_ALLTOALL = (("moe_dispatcher", "alltoall"),)
_CURRENT = (("fp8_scaling", "current"),)
_MEGATRON_FSDP = (("fp8_param_gather", False),)


def _rows(source: str, system: str, recipe: tuple, table: list[tuple]) -> list[HeldOutRun]:
    """Rows of (model, GPUs, GBS, MBS, seq, TP, PP, CP, VP, EP, FSDP, tokens/s/GPU, TFLOP/s[, recipe])."""
    return [HeldOutRun(source, row[0], system, "FP8", *row[1:13],
                       recipe=BF16_GRADS + recipe + (row[13] if len(row) > 13 else ())) for row in table]


NEMO_25_02 = _rows("nemo-25.02", "DGX-B200", (), [
    ("GPT3-175B", 512, 2048, 2, 2048, 4, 4, 1, 6, 1, 0, 1600, None),
    ("LLAMA3-8B", 8, 128, 2, 8192, 1, 1, 1, 1, 1, 0, 26006, 1506),
    ("LLAMA3-70B", 64, 128, 1, 8192, 2, 4, 2, 5, 1, 0, 3062, 1474),
    ("LLAMA3-405B", 128, 64, 1, 8192, 4, 8, 2, 8, 1, 0, 625, 1658),
    ("Nemotron-15B", 64, 256, 2, 4096, 1, 1, 1, 1, 1, 0, 14760, 1387),
    ("Nemotron-340B", 128, 32, 1, 4096, 8, 4, 1, 12, 1, 0, 602, 1268),
    ("Mixtral-8x7B", 64, 256, 2, 4096, 1, 1, 1, 1, 8, 0, 15457, 1282, _ALLTOALL),
    ("Mixtral-8x22B", 256, 64, 1, 65536, 2, 4, 8, 14, 8, 0, 2232, 824, _ALLTOALL + EXPERT_TP_1),
]) + _rows("nemo-25.02", "DGX-H100", (), [
    ("GPT3-175B", 512, 2048, 2, 2048, 4, 8, 1, 6, 1, 0, 866, 932),
])

NEMO_25_04 = _rows("nemo-25.04", "DGX-GB200", _CURRENT, [
    ("GPT3-175B", 128, 256, 2, 2048, 4, 4, 1, 12, 1, 0, 1804, 1942),
    ("LLAMA3-8B", 8, 128, 2, 8192, 1, 1, 1, 1, 1, 0, 33099, 1917),
    ("LLAMA3-70B", 64, 128, 1, 8192, 1, 1, 1, 1, 1, 64, 4035, 1943, _MEGATRON_FSDP),
    ("LLAMA3-405B", 128, 64, 1, 8192, 4, 8, 2, 8, 1, 0, 665, 1763),
    ("Nemotron-15B", 64, 256, 2, 4096, 1, 1, 1, 1, 1, 0, 17809, 1674),
    ("Nemotron-340B", 128, 32, 1, 4096, 8, 4, 1, 12, 1, 0, 737, 1551),
    ("Mixtral-8x7B", 64, 256, 2, 4096, 1, 1, 1, 1, 8, 0, 19275, 1598, _ALLTOALL),
    ("Mixtral-8x22B", 256, 64, 1, 65536, 2, 4, 8, 14, 8, 0, 2731, None, _ALLTOALL),
])


def runs() -> list[HeldOutRun]:
    """The NeMo 2 performance summary rows, oldest release first."""
    return NEMO_25_02 + NEMO_25_04
