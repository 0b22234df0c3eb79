"""What-if: the held-out H100 runs priced at the kernel rates measured on one H100 SXM (issue 25).

    python examples/kernel_whatif.py [--fp8-only | --attention-only]

A what-if, not the validation: the model's constants are fitted on shared/measurements and the
Megatron-LM A100 runs only, and these rates come from this project's own checks
(docs/reproductions/data/), which are in neither. Two cost options change per run:

* ``fp8_gemm_efficiency``: the FP8 8192³ GEMM's measured fraction of the FP8 peak
  (``h100-fp8-gemms.json``, ``torch._scaled_mm``, per-tensor scales), for every run;
* ``attention_tflops``: cuDNN's fused attention (``h100-attention.json``), the kernel Transformer
  Engine prefers on Hopper, at the measured causal rate of the sequence length nearest the run's,
  or, with context parallelism, of the ring block nearest ``seq_len / cp``; not for the runs of
  NeMo-Launcher 24.03 and 24.07, whose ``launcher_scripts/conf/config.yaml`` sets
  ``NVTE_FUSED_ATTN: 0`` (FlashAttention-2, which the default pricing matches).

Prints each H100 group's mean and worst |error| before and after, and the worst runs after.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import validate_llm
from optmap.plugins.llm import heldout_runs

DATA = Path(__file__).resolve().parents[1] / "docs" / "reproductions" / "data"
FP8_PEAK_TFLOPS = 1978.9  # h100-sxm's FP8 dense datasheet peak
FLASH_ATTENTION_SOURCES = ("nemo-24.07", "nemo-long-24.03")  # NVTE_FUSED_ATTN: 0 in their launcher


def measured_rates() -> tuple[float, dict, dict]:
    """(FP8 GEMM fraction of the peak, cuDNN causal rates by sequence, cuDNN ring-block rates by block)."""
    fp8 = {r["shape"]: r for r in json.loads((DATA / "h100-fp8-gemms.json").read_text())["rows"]}
    fraction = fp8["cube"]["fp8_tflops"] / FP8_PEAK_TFLOPS
    cudnn = [r for r in json.loads((DATA / "h100-attention.json").read_text())["rows"]
             if r["kind"] == "attention" and r["backend"] == "cudnn"]
    causal = {r["sq"]: [r["forward_tflops"], r["backward_tflops"]] for r in cudnn if r["causal"]}
    ring = {r["sq"]: [r["forward_tflops"], r["backward_tflops"]] for r in cudnn if not r["causal"]}
    return fraction, causal, ring


def nearest(rates: dict, tokens: float) -> list[float]:
    return rates[min(rates, key=lambda k: abs(np.log(k / tokens)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--fp8-only", action="store_true", help="change the FP8 GEMM rate alone")
    only.add_argument("--attention-only", action="store_true", help="change the fused attention rate alone")
    args = parser.parse_args()
    fraction, causal, ring = measured_rates()
    rows = []
    for run in (r for r in heldout_runs.runs() if r.system == "DGX-H100"):
        extra = {} if args.attention_only else {"fp8_gemm_efficiency": fraction}
        if not args.fp8_only and run.source not in FLASH_ATTENTION_SOURCES:
            cp = run.cp or 1
            extra["attention_tflops"] = nearest(ring, run.seq_len / cp) if cp > 1 else nearest(causal, run.seq_len)
        before, after = validate_llm.predict(run), validate_llm.predict(run, extra=extra)
        rows.append((run.group, run.label, before["error_percent"], after["error_percent"]))
    print(f"FP8 GEMM fraction {fraction:.3f}" + ("" if args.attention_only else " (applied)")
          + ("" if args.fp8_only else "; cuDNN attention at the measured rates"))
    for group in ("H100 dense", "H100 MoE"):
        was, now = (np.abs([r[i] for r in rows if r[0] == group]) for i in (2, 3))
        print(f"{group:11s} mean / max |error|: {was.mean():.1f} / {was.max():.1f} % -> {now.mean():.1f} / {now.max():.1f} %")
    for group, label, was, now in sorted(rows, key=lambda r: -abs(r[3]))[:6]:
        print(f"  {was:+6.1f} -> {now:+6.1f} %  {label}")


if __name__ == "__main__":
    main()
