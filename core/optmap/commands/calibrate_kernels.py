"""``optmap calibrate``'s kernel ceilings: the rates a preset carries in ``[attrs.kernels]``.

Beside the families the compute model is fitted to, two kernels that an LLM training step leans on
and that no GEMM curve describes (:mod:`optmap.compute.kernels`):

* **FP8 GEMM**: ``n³`` in FP8 E4M3 with per-tensor scales (``torch._scaled_mm`` to 16-bit, as
  Transformer Engine's per-tensor recipes run it), where the GPU has FP8 tensor cores (compute
  capability 8.9 and up); FLOPs ``2n³``.
* **Fused causal attention**: ``scaled_dot_product_attention`` in the calibration's dtype, one
  sample of ``HEADS`` heads of ``HEAD_DIM`` over ``seq`` tokens, forward and forward + backward.
  On Hopper and later the cuDNN kernel is tried first, as Transformer Engine prefers it there
  (``get_attention_backend``: "FusedAttention preference on Hopper+"), then FlashAttention; before
  Hopper FlashAttention first. FLOPs: ``QKᵀ`` and ``PV``, ``4·seq²·HEAD_DIM`` per head, half under
  the causal mask; the backward five products (FlashAttention-2, Algorithm 2), 2.5 times.

Each is the median of the calibration's timer; a kernel the device or PyTorch lacks is left out.
"""

from __future__ import annotations

HEADS, HEAD_DIM = 16, 128


def fp8_gemm_flops(torch, timer, device, n: int) -> float | None:
    """FLOP/s of an ``n³`` FP8 GEMM, or None where the device has no FP8 GEMM."""
    if device.type != "cuda" or torch.cuda.get_device_capability(device) < (8, 9) or not hasattr(torch, "_scaled_mm"):
        return None
    a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt's FP8 wants
    one = torch.ones((), device=device, dtype=torch.float32)
    try:
        seconds = timer(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    except RuntimeError:
        return None
    return 2.0 * n**3 / seconds


def _backends(torch, device, SDPBackend) -> list:
    """SDPA backends in Transformer Engine's order of preference for the device (module docstring)."""
    if device.type != "cuda":
        return [None]
    flash, cudnn = SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION
    hopper = torch.cuda.get_device_capability(device) >= (9, 0)
    return [cudnn, flash, None] if hopper else [flash, cudnn, None]


def attention_flops(torch, timer, device, dtype, seq: int) -> tuple[float, float, str] | None:
    """(forward FLOP/s, backward FLOP/s, kernel name) of fused causal attention, or None (also where
    PyTorch predates ``torch.nn.attention``, 2.3)."""
    import torch.nn.functional as F

    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return None

    q, k, v = (torch.randn(1, HEADS, seq, HEAD_DIM, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
    grad = torch.randn(1, HEADS, seq, HEAD_DIM, device=device, dtype=dtype)
    flops = 4.0 * seq * seq * HEAD_DIM * HEADS * 0.5

    def forward():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    for backend in _backends(torch, device, SDPBackend):
        try:
            if backend is None:  # PyTorch's own choice
                fwd, both = timer(forward), timer(lambda: forward().backward(grad))
            else:
                with sdpa_kernel(backend):
                    fwd, both = timer(forward), timer(lambda: forward().backward(grad))
        except RuntimeError:  # no kernel of this backend for the device or dtype
            continue
        name = "default" if backend is None else backend.name.lower().removesuffix("_attention")
        return flops / fwd, 2.5 * flops / max(both - fwd, 1e-9), name
    return None


def kernel_ceilings(torch, timer, device, dtype, quick: bool) -> dict:
    """The ceilings :func:`optmap.commands.calibrate.measure` adds (FLOP/s; absent where unmeasured)."""
    out = {}
    fp8 = fp8_gemm_flops(torch, timer, device, 256 if quick else 8192)
    if fp8 is not None:
        out["fp8_gemm_flops"] = fp8
    attention = attention_flops(torch, timer, device, dtype, 256 if quick else 8192)
    if attention is not None:
        out["attention_flops"], out["attention_backward_flops"], out["attention_kernel"] = attention
    return out


def tflops(flops: float) -> float:
    """A FLOP/s ceiling as a preset writes it: TFLOP/s to six significant digits."""
    return float(f"{flops / 1e12:.6g}")


def kernels_table(measurements) -> dict:
    """The preset's ``[attrs.kernels]`` from a calibration's ceilings (TFLOP/s)."""
    c = measurements.ceilings
    table = {"dtype": measurements.dtype, "gemm_tflops": tflops(c["gemm_flops"])}
    if "fp8_gemm_flops" in c:
        table["fp8_gemm_tflops"] = tflops(c["fp8_gemm_flops"])
    if "attention_flops" in c:
        table["attention_tflops"] = [tflops(c[k]) for k in ("attention_flops", "attention_backward_flops")]
        table["attention_kernel"] = str(c.get("attention_kernel", "default"))
    return table
