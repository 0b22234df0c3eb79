"""Fused attention and expert-MLP throughput on this GPU: a check of megatron-3d's pricing (issue 25).

    python examples/measure_attention.py [OUT.json]      # needs PyTorch and a CUDA GPU

megatron-3d prices FlashAttention's products as GEMMs of their shapes on the fitted compute curve
(``plugins/llm/attention.py``) and a MoE layer's local experts as one GEMM each, back to back
(``plugins/llm/moe.py``); ``shared/measurements`` holds neither kernel at these sizes. This times:

* ``attention``: PyTorch's ``scaled_dot_product_attention`` in bf16, head dimension 128, one
  sample, under each of its fused backends (``flash``: FlashAttention-2; ``cudnn``: cuDNN's fused
  attention, the kernel family Transformer Engine runs; ``efficient``: the memory-efficient one),
  causal over 4K to 128K tokens and non-causal on the square blocks of a context-parallel ring;
  forward and forward + backward. Keys and values are expanded to every query head (the FLOPs of
  grouped-query attention are those of its query heads).
* ``experts``: one MoE layer's local experts (gated MLP: ``x·W1`` to ``2·d_ff``, SwiGLU, ``·W2``) on
  ``rows`` routed tokens each, as Transformer Engine's GroupedLinear runs them (one GEMM per expert,
  ``loop``) and as one grouped kernel (``torch._grouped_mm``, ``grouped``), forward and forward +
  backward: the layouts of the held-out Qwen3 runs.

Median of 5 timed runs after 2 warm-ups, CUDA events around the operation alone. The result is a
check, never a fit: the model's constants are fitted on shared/measurements and the Megatron-LM A100
runs only (docs/reproductions/llm-today.md).
"""
import json, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from optmap.commands.calibrate import Timer

dev = torch.device("cuda")
timeit = Timer(torch, dev, warmup=2, repeats=5)  # median seconds between CUDA events
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def backward_s(fn, forward, grad):
    """Seconds of the backward alone (forward + backward less the forward), or None where the
    kernel has no backward."""
    try:
        return timeit(lambda: fn().backward(grad)) - forward
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        print("  no backward:", str(exc).splitlines()[0][:160], flush=True)
        return None


def attention_row(label, heads, sq, sk, causal, backend):
    q = torch.randn(1, heads, sq, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, heads, sk, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, heads, sk, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(1, heads, sq, 128, device=dev, dtype=torch.bfloat16)
    with sdpa_kernel(BACKENDS[backend]):
        fwd = timeit(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        bwd = backward_s(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), fwd, grad)
    # 2 products of 2·sq·sk·128 per head, half the square under a causal mask (sq = sk)
    flops = 4.0 * sq * sk * 128 * heads * (0.5 if causal else 1.0)
    return {"kind": "attention", "label": label, "backend": backend, "heads": heads, "sq": sq, "sk": sk,
            "head_dim": 128, "causal": causal, "forward_s": fwd, "backward_s": bwd,
            "forward_tflops": flops / fwd / 1e12, "backward_tflops": 2.5 * flops / bwd / 1e12 if bwd else None}


def experts_row(label, local, rows, h, f, how):
    x = torch.randn(local * rows, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w1 = torch.randn(local, h, 2 * f, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w2 = torch.randn(local, f, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    offs = torch.arange(1, local + 1, device=dev, dtype=torch.int32) * rows

    def mlp():
        if how == "grouped":
            a = torch._grouped_mm(x, w1, offs=offs)
            g, u = a.chunk(2, dim=-1)
            return torch._grouped_mm(F.silu(g) * u, w2, offs=offs)
        outs = []
        for e, xe in enumerate(x.split(rows)):
            g, u = (xe @ w1[e]).chunk(2, dim=-1)
            outs.append((F.silu(g) * u) @ w2[e])
        return torch.cat(outs)
    grad = torch.randn(local * rows, h, device=dev, dtype=torch.bfloat16)
    fwd = timeit(mlp)
    return {"kind": "experts", "label": label, "how": how, "local_experts": local, "rows": rows, "d_model": h,
            "d_ff": f, "forward_s": fwd, "backward_s": backward_s(mlp, fwd, grad),
            "forward_tflops": 6.0 * local * rows * h * f / fwd / 1e12}


rows = []
attention = [(f"causal {s // 1024}K", 16, s, s, True) for s in (4096, 8192, 16384, 32768, 65536, 131072)]
attention += [("ring block 16K x 16K", 16, 16384, 16384, False), ("ring block 8K x 8K", 16, 8192, 8192, False)]
for shape in attention:
    for backend in BACKENDS:
        try:
            r = attention_row(*shape, backend)
        except Exception as exc:  # a backend that refuses a shape is recorded, not fatal
            r = {"kind": "attention", "label": shape[0], "backend": backend, "error": str(exc).splitlines()[0][:200]}
        rows.append(r)
        rates = {k: v and round(v, 1) for k, v in r.items() if k.endswith("tflops")}
        print(r["label"], backend, rates or r.get("error"), flush=True)
# Qwen3-235B-A22B (h 4096, expert d_ff 1536, 128 experts, top 8) at TP 2 x EP 32 and TP 4 x EP 8
# (4,096-token micro-batch, sequence parallel: 2,048 / 1,024 tokens per rank, 32·2,048·8/128 and
# 8·1,024·8/128 copies per local expert); Qwen3-30B-A3B (h 2048, d_ff 768) at EP 8, TP 1
experts = [("qwen3-235b tp2 ep32", 4, 4096, 4096, 1536), ("qwen3-235b tp4 ep8", 16, 512, 4096, 1536),
           ("qwen3-30b ep8", 16, 2048, 2048, 768)]
for shape in experts:
    for how in ("loop", "grouped"):
        try:
            r = experts_row(*shape, how)
        except Exception as exc:
            r = {"kind": "experts", "label": shape[0], "how": how, "error": str(exc).splitlines()[0][:200]}
        rows.append(r)
        print(r["label"], how, r.get("forward_s"), r.get("backward_s"), r.get("error", ""), flush=True)
out = sys.argv[1] if len(sys.argv) > 1 else "attention.json"
json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "rows": rows}, open(out, "w"), indent=1)
