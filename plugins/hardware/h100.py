"""The H100 SXM measurements (``measurements/h100-sxm/``, see its README) as calibration samples.

* ``gemm-shards.json`` → family ``gemm``, one sample per Megatron shard GEMM, grouped by hidden
  size (the unit held out when checking a fit);
* ``cnn-layers.json`` → families ``conv-batch`` / ``conv-in`` / ``conv-out`` (by what was split),
  forward and forward + backward, grouped by network; the convolution geometry (kernel, stride,
  output size) is torchvision's, read by layer name from the ``vgg16`` and ``resnet50`` workloads
  that the host's plugins register (the zoo's);
* ``transformer-blocks.json`` → never fitted: :func:`gpt_block_seconds` predicts each whole
  block from the kernels it runs, a check of how the model composes. The blocks are the one
  measured sequence of element-wise kernels (layer norms, GELU, residual adds, their gradients):
  :func:`memory_bound_factors` asks them what those kernels reach against the copy ceiling.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from optmap.compute import Calibration, Sample
from optmap.compute.lowering import Kernel, lower
from optmap.compute.model import isolated_seconds, kernel_seconds
from optmap.units import gBps_to_bytes_per_s, tflops_to_flops

MEASUREMENTS = Path(__file__).parent / "measurements" / "h100-sxm"
DTYPE, ELEMENT_BYTES = "bf16", 2
# Device time of one kernel in a busy stream. Isolated timings cannot separate it from the host
# dispatch that precedes every kernel (both add up there; docs/calibration.md), so it is an
# assumption here, a few microseconds per back-to-back launch; `optmap calibrate` measures it.
KERNEL_S = 2e-6
DEVICE_BOUND = 0.05  # a block sequence whose predicted host wait is under 5 % of its predicted time


def _read(name: str) -> dict:
    return json.loads((MEASUREMENTS / name).read_text())


def ceilings() -> dict[str, float]:
    """The measured ceilings in SI: ``gemm_flops`` (bf16 8192³) and ``copy_bandwidth`` (read + write)."""
    c = _read("ceilings.json")["ceilings"]
    return {"gemm_flops": tflops_to_flops(c["bf16_gemm_tflops"]),
            "copy_bandwidth": gBps_to_bytes_per_s(c["d2d_copy_GBps_read_plus_write"])}


def gemm_samples() -> list[Sample]:
    """Megatron shard GEMMs (forward): ``M`` tokens, ``K x N`` the local weight."""
    return [
        Sample("gemm", f"h{r['h']}", f"h{r['h']} tp{r['tp']} mb{r['mb']} {r['gemm']}", "gemm",
               {"m": r["M"], "n": r["N"], "k": r["K"]}, "forward", r["s"], r["tp"])
        for r in _read("gemm-shards.json")["rows"]
    ]


def _geometry(network: str, host) -> dict[str, tuple[int, int, int, int]]:
    """Layer name → (in spatial, out spatial, kernel elements, whole-layer input channels)."""
    workload = host.build("workload", network, options={"batch": 1, "dtype": DTYPE})
    return {layer.name: (layer.in_spatial, layer.out_spatial, layer.kernel_elements, layer.in_channels)
            for layer in workload.weighted_layers()}


def cnn_samples(host) -> list[Sample]:
    """VGG-16 and ResNet-50 layers split by batch / in / out channels, forward and forward + backward
    (their geometry from the workloads ``host`` registers)."""
    rows = _read("cnn-layers.json")["rows"]
    geometry = {model: _geometry(model, host) for model in dict.fromkeys(r["model"] for r in rows)}
    samples = []
    for r in rows:
        in_hw, out_hw, kernel, channels = geometry[r["model"]][r["layer"]]
        shape = {"batch": r["batch"], "cin": r["cin"], "cout": r["cout"], "in_hw": in_hw, "out_hw": out_hw,
                 "kernel": kernel, "aligned": channels % 8 == 0}
        label = f"{r['model']} {r['layer']} {r['split']}/{r['k']}"
        for passes, seconds in (("forward", r["fwd_s"]), ("training", r["fwd_bwd_s"])):
            samples.append(Sample(f"conv-{r['split']}", r["model"], label, "conv2d", shape, passes, seconds, r["k"]))
    return samples


def samples(host) -> list[Sample]:
    """Every single-operation sample (GEMM shards and CNN layers; ``host`` builds the CNNs)."""
    return gemm_samples() + cnn_samples(host)


def gpt_block_kernels(h: int, heads: int, tp: int, mb: int, seq: int, passes: str) -> list[Kernel]:
    """Kernels of one GPT block's tensor-parallel shard in launch order (the measured block:
    pre-norm, QKV, causal flash attention, projection, GELU MLP of width 4h, two residuals)."""
    tokens, size = mb * seq, ELEMENT_BYTES
    act = tokens * h * size  # one (tokens, h) activation in bytes

    def gemm(n, k, which):
        return lower("gemm", {"m": tokens, "n": n, "k": k}, which, 8, size)

    def memory(passes_of_bytes, kernels=1):
        return lower("memory", {"bytes": passes_of_bytes, "kernels": kernels}, "forward", 8, size)

    attention = {"batch": mb, "heads": heads // tp, "seq": seq, "head_dim": h // heads, "causal": True}
    forward = (memory(3 * act) + gemm(3 * h // tp, h, "forward")  # layer norm: read twice, write
               + lower("attention", attention, "forward", 8, size) + gemm(h, h // tp, "forward")
               + memory(3 * act)  # residual add
               + memory(3 * act) + gemm(4 * h // tp, h, "forward") + memory(2 * 4 * act / tp)  # GELU
               + gemm(h, 4 * h // tp, "forward") + memory(3 * act))
    if passes == "forward":
        return forward
    backward = []
    for n, k in ((h, 4 * h // tp), (4 * h // tp, h), (h, h // tp), (3 * h // tp, h)):  # reverse order
        backward += gemm(n, k, "backward")
        if n == h and k == 4 * h // tp:
            backward += [_backward(q) for q in memory(3 * 4 * act / tp)]  # GELU backward
        if n == 4 * h // tp:
            backward += [_backward(q) for q in memory(5 * act) + memory(3 * act)]  # norm 2, residual grad
        if n == h and k == h // tp:
            backward += lower("attention", attention, "backward_data", 8, size)
    backward += [_backward(q) for q in memory(5 * act) + memory(3 * act)]  # norm 1, residual grad
    return forward + backward


def _backward(kernel: Kernel) -> Kernel:
    return replace(kernel, backward=True)


def block_rows() -> list[dict]:
    """The transformer-block measurements (each row: h, heads, tp, mb, seq, fwd_s, fwd_bwd_s)."""
    return [r for r in _read("transformer-blocks.json")["rows"] if "oom" not in r and r.get("fwd_s")]


def gpt_block_seconds(calibration: Calibration, row: dict, passes: str) -> float:
    """Predicted isolated time of a measured block (forward or forward + backward)."""
    kernels = gpt_block_kernels(row["h"], row["heads"], row["tp"], row["mb"], row["seq"], passes)
    return float(isolated_seconds(calibration, kernels))


def block_errors(calibration: Calibration) -> dict[str, np.ndarray]:
    """Relative errors predicted/measured - 1 of every block, per pass."""
    rows = block_rows()
    return {
        passes: np.array([gpt_block_seconds(calibration, r, passes) / r[key] - 1 for r in rows])
        for passes, key in (("forward", "fwd_s"), ("training", "fwd_bwd_s"))
    }


def _scaled(kernels: list[Kernel], forward_memory: float, backward_memory: float, attention: float) -> list[Kernel]:
    """The block's kernels with memory-bound kernels (no FLOPs) at ``*_memory`` x the copy ceiling
    and the attention backward (FLOPs, no gathered operand) at ``attention`` x its ceiling."""
    out = []
    for k in kernels:
        if np.all(np.asarray(k.flops) == 0):
            out.append(replace(k, moved=np.asarray(k.moved) / (backward_memory if k.backward else forward_memory)))
        elif k.backward and np.all(np.asarray(k.gathered) == 0):
            out.append(replace(k, flops=np.asarray(k.flops) / attention))
        else:
            out.append(k)
    return out


def memory_bound_factors(calibration: Calibration) -> dict[str, float]:
    """Factors on the copy ceiling for the forward and backward memory-bound kernels, and on the
    backward ceiling for flash-attention's backward, that best fit the device-bound GPT-block
    sequences (forward and forward + backward; robust soft-L1 least squares on log-ratios, every
    other parameter of ``calibration`` kept). 1 means the ceiling as priced. Needs scipy."""
    from scipy.optimize import least_squares

    data = []
    for row in block_rows():
        for passes, key in (("forward", "fwd_s"), ("training", "fwd_bwd_s")):
            kernels = gpt_block_kernels(row["h"], row["heads"], row["tp"], row["mb"], row["seq"], passes)
            seconds = float(isolated_seconds(calibration, kernels))
            device = sum(float(kernel_seconds(calibration, k)) for k in kernels)
            if seconds - device < DEVICE_BOUND * seconds:
                data.append((kernels, row[key]))

    def residuals(x):
        return [np.log(float(isolated_seconds(calibration, _scaled(k, *x))) / measured) for k, measured in data]

    fit = least_squares(residuals, np.ones(3), bounds=(0.05, 5.0), loss="soft_l1", f_scale=0.1)
    return {"sequences": len(data), **dict(zip(("forward_memory", "backward_memory", "attention_backward"),
                                               map(float, fit.x)))}
