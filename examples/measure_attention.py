"""Fused attention, expert-MLP and output-layer throughput on this GPU: a check of megatron-3d's pricing (issue 25).

    python examples/measure_attention.py [OUT.json]                  # needs PyTorch and a CUDA GPU
    python examples/measure_attention.py --set gpt-oss [OUT.json]    # GPT-OSS-120B's shapes
    python examples/measure_attention.py --set deepseek [OUT.json]   # DeepSeek-V3's latent attention

megatron-3d prices FlashAttention's products as GEMMs of their shapes on the fitted compute curve
(``plugins/llm/attention.py``), a MoE layer's local experts as one GEMM each, back to back
(``plugins/llm/moe.py``), and the output layer as one GEMM plus the cross-entropy's traffic
(``plugins/llm/timing.py``); ``shared/measurements`` holds none of these kernels at these sizes.
This times:

* ``attention``: PyTorch's ``scaled_dot_product_attention`` in bf16, one sample, under each of its
  fused backends (``flash``: FlashAttention-2; ``cudnn``: cuDNN's fused attention, the kernel family
  Transformer Engine runs; ``efficient``: the memory-efficient one), forward and forward + backward.
  Keys and values are expanded to every query head (the FLOPs of grouped-query attention are those
  of its query heads). Set ``qwen3``: head dimension 128, causal over 4K to 128K tokens and
  non-causal on the square blocks of a context-parallel ring. Set ``gpt-oss``: head dimension 64,
  64 heads, causal at 4K and 8K tokens (its learned attention sinks and 128-token window are not
  expressible here: every layer is timed as a full causal one). Set ``deepseek``: DeepSeek-V3's
  latent attention after its up-projections at tensor-parallel size 2 (64 heads, query and key
  head dimension 192, value 128), causal at 4K tokens.
* ``experts``: one MoE layer's local experts (gated MLP: ``x·W1`` to ``2·d_ff``, SwiGLU, ``·W2``) on
  ``rows`` routed tokens each, as Transformer Engine's GroupedLinear runs them (one GEMM per expert,
  ``loop``) and as one grouped kernel (``torch._grouped_mm``, ``grouped``), forward and forward +
  backward: the layouts of the held-out Qwen3 runs, or of GPT-OSS-120B on H100 (EP 8, micro-batch
  1), DGX B200 (EP 8, micro-batch 4) and GB200 (EP 64, micro-batch 4).
* ``output`` (set ``gpt-oss``): the output layer and loss of one micro-batch at tensor-parallel size 1,
  ``x·Wᵀ`` to the 201,088-token vocabulary and ``F.cross_entropy``, forward and forward + backward.

Median of 5 timed runs after 2 warm-ups, CUDA events around the operation alone. The result is a
check, never a fit: the model's constants are fitted on shared/measurements and the Megatron-LM A100
runs only (docs/reproductions/llm-today.md).
"""
import argparse, json, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from optmap.commands.calibrate import Timer

dev = torch.device("cuda")
timeit = Timer(torch, dev, warmup=2, repeats=5)  # median seconds between CUDA events
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}
BF16 = dict(device=dev, dtype=torch.bfloat16)


def backward_s(fn, forward, grad):
    """Seconds of the backward alone (forward + backward less the forward), or None where the
    kernel has no backward."""
    try:
        return timeit(lambda: fn().backward(grad)) - forward
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        print("  no backward:", str(exc).splitlines()[0][:160], flush=True)
        return None


def attention_row(label, heads, sq, sk, causal, backend, head_dim=128, v_dim=None):
    v_dim = v_dim or head_dim
    q, k, v = (torch.randn(1, heads, n, d, **BF16, requires_grad=True) for n, d in ((sq, head_dim), (sk, head_dim), (sk, v_dim)))
    grad = torch.randn(1, heads, sq, v_dim, **BF16)
    with sdpa_kernel(BACKENDS[backend]):
        fwd = timeit(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        bwd = backward_s(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), fwd, grad)
    # QKᵀ and PV: 2·sq·sk·(head_dim + v_dim) per head, half the square under a causal mask (sq = sk)
    flops = 2.0 * sq * sk * (head_dim + v_dim) * heads * (0.5 if causal else 1.0)
    return {"kind": "attention", "label": label, "backend": backend, "heads": heads, "sq": sq, "sk": sk,
            "head_dim": head_dim, **({"v_dim": v_dim} if v_dim != head_dim else {}), "causal": causal,
            "forward_s": fwd, "backward_s": bwd,
            "forward_tflops": flops / fwd / 1e12, "backward_tflops": 2.5 * flops / bwd / 1e12 if bwd else None}


def experts_row(label, local, rows, h, f, how):
    x = torch.randn(local * rows, h, **BF16, requires_grad=True)
    w1 = torch.randn(local, h, 2 * f, **BF16, requires_grad=True)
    w2 = torch.randn(local, f, h, **BF16, requires_grad=True)
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
    grad = torch.randn(local * rows, h, **BF16)
    fwd = timeit(mlp)
    return {"kind": "experts", "label": label, "how": how, "local_experts": local, "rows": rows, "d_model": h,
            "d_ff": f, "forward_s": fwd, "backward_s": backward_s(mlp, fwd, grad),
            "forward_tflops": 6.0 * local * rows * h * f / fwd / 1e12}


def output_row(label, rows, h, vocab):
    x = torch.randn(rows, h, **BF16, requires_grad=True)
    w = (0.02 * torch.randn(vocab, h, **BF16)).requires_grad_()
    target = torch.randint(0, vocab, (rows,), device=dev)
    gemm = timeit(lambda: F.linear(x, w))
    fwd = timeit(lambda: F.cross_entropy(F.linear(x, w), target))
    bwd = timeit(lambda: F.cross_entropy(F.linear(x, w), target).backward()) - fwd
    return {"kind": "output", "label": label, "rows": rows, "d_model": h, "vocab": vocab, "gemm_s": gemm,
            "forward_s": fwd, "backward_s": bwd}


def attention_shapes(shape_set):
    if shape_set == "gpt-oss":
        return [(f"gpt-oss causal {s // 1024}K", 64, s, s, True, 64) for s in (4096, 8192)]
    if shape_set == "deepseek":
        return [("deepseek-v3 mla tp2 causal 4K", 64, 4096, 4096, True, 192, 128)]
    shapes = [(f"causal {s // 1024}K", 16, s, s, True) for s in (4096, 8192, 16384, 32768, 65536, 131072)]
    return shapes + [("ring block 16K x 16K", 16, 16384, 16384, False), ("ring block 8K x 8K", 16, 8192, 8192, False)]


def expert_shapes(shape_set):
    if shape_set == "deepseek":
        return []
    if shape_set == "gpt-oss":
        # GPT-OSS-120B (h 2880, expert d_ff 2880, 128 experts, top 4), TP 1, 4,096-token samples:
        # EP 8 holds 16 experts, each fed 8·4,096·mb·4/128 copies; EP 64 holds 2, each 64·4,096·4·4/128
        return [("gpt-oss h100 ep8 mb1", 16, 1024, 2880, 2880), ("gpt-oss b200 ep8 mb4", 16, 4096, 2880, 2880),
                ("gpt-oss gb200 ep64 mb4", 2, 32768, 2880, 2880)]
    # Qwen3-235B-A22B (h 4096, expert d_ff 1536, 128 experts, top 8) at TP 2 x EP 32 and TP 4 x EP 8
    # (4,096-token micro-batch, sequence parallel: 2,048 / 1,024 tokens per rank, 32·2,048·8/128 and
    # 8·1,024·8/128 copies per local expert); Qwen3-30B-A3B (h 2048, d_ff 768) at EP 8, TP 1
    return [("qwen3-235b tp2 ep32", 4, 4096, 4096, 1536), ("qwen3-235b tp4 ep8", 16, 512, 4096, 1536),
            ("qwen3-30b ep8", 16, 2048, 2048, 768)]


def measure(shape_set):
    rows = []
    for shape in attention_shapes(shape_set):
        for backend in BACKENDS:
            try:
                r = attention_row(*shape[:5], backend, *shape[5:])
            except Exception as exc:  # a backend that refuses a shape is recorded, not fatal
                r = {"kind": "attention", "label": shape[0], "backend": backend, "error": str(exc).splitlines()[0][:200]}
            rows.append(r)
            rates = {k: v and round(v, 1) for k, v in r.items() if k.endswith("tflops")}
            print(r["label"], backend, rates or r.get("error"), flush=True)
    for shape in expert_shapes(shape_set):
        for how in ("loop", "grouped"):
            try:
                r = experts_row(*shape, how)
            except Exception as exc:
                r = {"kind": "experts", "label": shape[0], "how": how, "error": str(exc).splitlines()[0][:200]}
            rows.append(r)
            print(r["label"], how, r.get("forward_s"), r.get("backward_s"), r.get("error", ""), flush=True)
    if shape_set == "gpt-oss":  # the output layer of a 4,096-token micro-batch of 1 (H100) and of 4 (Blackwell)
        for label, tokens in (("gpt-oss output mb1", 4096), ("gpt-oss output mb4", 16384)):
            rows.append(output_row(label, tokens, 2880, 201088))
            print(rows[-1], flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="attention.json")
    parser.add_argument("--set", dest="shape_set", choices=("qwen3", "gpt-oss", "deepseek"), default="qwen3")
    args = parser.parse_args()
    rows = measure(args.shape_set)
    json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "cudnn": torch.backends.cudnn.version(), "set": args.shape_set, "rows": rows},
              open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
