"""Fit the compute model to the H100 SXM measurements, write the h100-sxm and a100-sxm presets,
and report held-out errors and a predicted-vs-measured plot (docs/calibration.md).

    python examples/calibration_report.py            # presets, error tables, docs/calibration-h100.png

Held out by group: fold A fits VGG-16 and the GEMM shards of hidden sizes 4096 and 12288, and
predicts ResNet-50 and the GEMMs of hidden sizes 2048 and 8192; fold B the other way round. The
transformer blocks are never fitted. The shipped preset is fitted to every sample.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from optmap.compute import calibration_of, read_preset, write_preset
from optmap.compute.fit import cross_validate, error_rows, fit_calibration, predict
from optmap.compute.step import training_step
from optmap.host import load_host
from optmap.plugins.hardware import PRESET_FILES, h100
from optmap.plugins.zoo.models import MODELS

ROOT = Path(__file__).resolve().parents[1]
FOLDS = ({"vgg16", "h4096", "h12288"}, {"resnet50", "h2048", "h8192"})  # held out together

H100_FIELDS = {  # NVIDIA H100 Tensor Core GPU datasheet, SXM5 80 GB column (dense, no sparsity)
    "name": "h100-sxm",
    "description": "NVIDIA H100 SXM 80 GB: datasheet peaks; compute model fitted to measured bf16 GEMMs "
                   "and CNN layers (optmap measurements/h100-sxm, PyTorch 2.11, CUDA 13)",
    "peak_tflops": {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9, "fp64": 66.9, "fp8": 1978.9},
    "memory_gib": 80,
    "memory_bandwidth_gBps": 3350,
    "network_gbps": 7200,  # NVLink 4: 900 GB/s per GPU
    "power_watts": 700,
}
A100_FIELDS = {  # NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column (dense)
    "name": "a100-sxm",
    "description": "NVIDIA A100 SXM 80 GB: datasheet peaks; compute model = the h100-sxm fit with math "
                   "ceilings x 312/989.4 and bandwidths x 2039/3350 (datasheet ratios), host times kept",
    "peak_tflops": {"bf16": 312, "fp16": 312, "tf32": 156, "fp32": 19.5, "fp64": 19.5},
    "memory_gib": 80,
    "memory_bandwidth_gBps": 2039,
    "network_gbps": 4800,  # NVLink 3: 600 GB/s per GPU
    "power_watts": 400,
}
HEADER = """optmap accelerator preset: the datasheet fields of Accelerator.from_datasheet, the calibration in [attrs.calibration].
Written by examples/calibration_report.py; see docs/calibration.md for the model and its errors.
{extra}"""


def fit_all():
    samples, ceilings = h100.samples(load_host()), h100.ceilings()
    options = {"dtype": h100.DTYPE, "copy_bandwidth": ceilings["copy_bandwidth"], "kernel_s": h100.KERNEL_S,
               "gemm_flops": ceilings["gemm_flops"],
               "source": "fit to optmap measurements/h100-sxm (1376 GEMM and CNN-layer timings)"}
    return samples, options, fit_calibration(samples, **options)


def write_presets(calibration) -> None:
    write_preset(PRESET_FILES / "h100-sxm.toml", H100_FIELDS, calibration, HEADER.format(
        extra="Sources: NVIDIA H100 datasheet (SXM5: 989.4 TFLOPS bf16 dense, 80 GB HBM3 at 3.35 TB/s, NVLink\n"
              "900 GB/s, 700 W); calibration fitted to the measured timings (copy ceiling measured directly)."))
    scaled = calibration.scaled(math=312 / 989.4, memory=2039 / 3350,
                                source="h100-sxm fit scaled by A100/H100 datasheet ratios (not measured)")
    write_preset(PRESET_FILES / "a100-sxm.toml", A100_FIELDS, scaled, HEADER.format(
        extra="Sources: NVIDIA A100 datasheet (80GB SXM: 312 TFLOPS bf16 dense, HBM2e at 2039 GB/s, NVLink\n"
              "600 GB/s, 400 W). Not measured: run `optmap calibrate` on an A100 to replace [attrs.calibration]."))


def markdown(rows, title: str) -> str:
    lines = [f"| {title} | n | median abs. error | mean | 90th pct | median signed |", "|---|---|---|---|---|---|"]
    for r in rows:
        key = " ".join(map(str, r["key"])) if isinstance(r["key"], tuple) else str(r["key"])
        lines.append(f"| {key} | {r['n']} | {r['median_pct']:.1f} % | {r['mean_pct']:.1f} % | "
                     f"{r['p90_pct']:.1f} % | {r['bias_pct']:+.1f} % |")
    return "\n".join(lines)


def plot(samples, held_out, calibration, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 6.5))
    families = sorted({s.family for s in samples})
    for family in families:
        for passes, marker in (("forward", "o"), ("training", "^")):
            pick = [i for i, s in enumerate(samples) if s.family == family and s.passes == passes]
            if pick:
                ax.scatter([samples[i].seconds * 1e3 for i in pick], held_out[pick] * 1e3, s=9, marker=marker,
                           alpha=0.6, label=f"{family} {passes}")
    for passes, key, marker in (("forward", "fwd_s", "s"), ("training", "fwd_bwd_s", "D")):
        rows = h100.block_rows()
        ax.scatter([r[key] * 1e3 for r in rows], [h100.gpt_block_seconds(calibration, r, passes) * 1e3 for r in rows],
                   s=14, marker=marker, color="black", label=f"GPT block {passes} (never fitted)")
    ax.plot([0.01, 200], [0.01, 200], color="grey", lw=1)
    for factor in (0.8, 1.25):
        ax.plot([0.01, 200], [0.01 * factor, 200 * factor], color="grey", lw=0.5, ls="--")
    ax.set(xscale="log", yscale="log", xlabel="measured (ms)", ylabel="predicted, held out (ms)",
           title="H100 SXM: predicted vs measured (dashed: ±20/25 %)")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


STEP_NETWORKS = ("alexnet", "vgg16", "vgg19", "resnet18", "resnet50", "resnet101", "resnet152")
FAMILIES = ("contractions", "layout transforms", "element-wise", "weight casts", "update")


def step_table(accelerator) -> str:
    """Whole training steps (NCHW, as torchvision builds them; channels-last beside), ms, with the
    device / host split and the device time by kind of work."""
    lines = ["| network | batch | step | channels-last step | device | host | "
             + " | ".join(FAMILIES) + " | TFLOP/s |", "|---" * (7 + len(FAMILIES)) + "|"]
    for name in STEP_NETWORKS:
        for batch in (32, 64, 128, 256):
            workload = MODELS[name](batch=batch, dtype="bf16")
            step = training_step(accelerator, workload)
            nhwc = training_step(accelerator, workload, memory_format="channels_last")["time"]
            ms = [step["time"], nhwc, step["device"], step["host"]] + [step["families"][f] for f in FAMILIES]
            rate = workload.flops().total / step["time"] / 1e12
            lines.append(f"| {name} | {batch} | " + " | ".join(f"{1e3 * t:.2f}" for t in ms) + f" | {rate:.0f} |")
    return "\n".join(lines)


def main() -> int:
    samples, options, calibration = fit_all()
    write_presets(calibration)
    h100_preset = read_preset(PRESET_FILES / "h100-sxm.toml")
    calibration = calibration_of(h100_preset)  # as written (6 significant digits)
    held_out = cross_validate(samples, FOLDS, **options)
    print("## Fitted parameters (all samples)\n")
    for key, value in calibration.to_table().items():
        print(f"- `{key}` = {value}")
    print("\n## Held-out error (each sample predicted by the fold that did not see its group)\n")
    print(markdown(error_rows(samples, held_out), "family, passes"))
    print()
    unsplit = [i for i, s in enumerate(samples) if s.split == 1]
    print(markdown(error_rows([samples[i] for i in unsplit], held_out[unsplit]), "unsplit (k = 1), family, passes"))
    print()
    in_sample = predict(calibration, samples)
    print(markdown(error_rows(samples, in_sample), "in-sample (for comparison), family, passes"))
    print("\n## GPT blocks (never fitted; shipped calibration)\n")
    errors = h100.block_errors(calibration)
    for passes, e in errors.items():
        print(f"- {passes}: n = {len(e)}, median abs. error {100 * np.median(np.abs(e)):.1f} %, "
              f"90th pct {100 * np.percentile(np.abs(e), 90):.1f} %, median signed {100 * np.median(e):+.1f} %")
    factors = h100.memory_bound_factors(calibration)
    print(f"- what the {factors['sequences']} device-bound block sequences ask of the ceilings (1 = as priced): "
          f"forward memory-bound kernels {factors['forward_memory']:.2f} x the copy ceiling, backward "
          f"{factors['backward_memory']:.2f} x, flash-attention backward {factors['attention_backward']:.2f} x "
          "the backward ceiling")
    print("\n## Predicted whole training steps on one h100-sxm (no measurement to compare with)\n")
    print(step_table(h100_preset))
    plot(samples, held_out, calibration, ROOT / "docs" / "calibration-h100.png")
    print("\nplot: docs/calibration-h100.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
