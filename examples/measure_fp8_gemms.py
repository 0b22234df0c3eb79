"""BF16 against FP8 GEMM throughput on this GPU: a check of megatron-3d's FP8 assumption (issue 25).

    python examples/measure_fp8_gemms.py [OUT.json]      # needs PyTorch and an FP8 GPU (H100, B200)

megatron-3d prices FP8 linear layers at the FP8 datasheet peak times the 16-bit GEMM fraction
(cost option ``fp8_gemm_efficiency``; ``plugins/llm/precision.py``), since no FP8 GEMM is in
``shared/measurements``. This times the same GEMMs in bf16 (``x @ w.T``) and in FP8 (E4M3
operands, per-tensor scales, ``torch._scaled_mm`` to bf16): 8192³ and the linear layers of
GPT-3 5B, Llama 3 8B, Qwen3-30B-A3B's experts, and Qwen3-235B-A22B's experts and attention linears
(TP 2 × EP 32, its Megatron-Bridge H100 layout). Median of 20 timed runs after 5 warm-ups, CUDA
events around the GEMM alone. The result is a check, never a fit: the model's constants are fitted
on shared/measurements and the Megatron-LM A100 runs only (docs/reproductions/llm-today.md).
"""
import json, sys, torch
from optmap.commands.calibrate import Timer
dev = torch.device("cuda")
name = torch.cuda.get_device_name(0)
timeit = Timer(torch, dev, warmup=5, repeats=20)  # median seconds between CUDA events
# (label, M tokens, N out, K in): 8192^3 and the linear layers of GPT-3 5B (h 4096, mb 4 x 2048 tokens),
# Llama 3 8B (h 4096, 8192 tokens, GQA qkv 6144, gated 2 x 14336), Qwen3-30B experts (rows 2048 / 4096)
shapes = [("cube", 8192, 8192, 8192),
          ("gpt3-5b qkv", 8192, 12288, 4096), ("gpt3-5b proj", 8192, 4096, 4096),
          ("gpt3-5b fc1", 8192, 16384, 4096), ("gpt3-5b fc2", 8192, 4096, 16384),
          ("llama3-8b qkv", 8192, 6144, 4096), ("llama3-8b fc1", 8192, 28672, 4096), ("llama3-8b fc2", 8192, 4096, 14336),
          ("qwen3-30b expert fc1 r2048", 2048, 1536, 2048), ("qwen3-30b expert fc1 r4096", 4096, 1536, 2048),
          ("qwen3-30b expert fc2 r4096", 4096, 2048, 768),
          # Qwen3-235B-A22B (h 4096, 64 query and 4 key-value heads of 128, expert d_ff 1536) at TP 2 x EP 32:
          # a 4,096-token micro-batch's QKV and projection shards, and a local expert's 32·2,048·8/128 rows
          ("qwen3-235b qkv tp2", 4096, 4608, 4096), ("qwen3-235b proj tp2", 4096, 4096, 4096),
          ("qwen3-235b expert fc1 r4096", 4096, 3072, 4096), ("qwen3-235b expert fc2 r4096", 4096, 4096, 1536)]
rows = []
for label, m, n, k in shapes:
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
    t16 = timeit(lambda: x @ w.t())
    x8, w8 = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
    one = torch.ones((), device=dev, dtype=torch.float32)
    t8 = timeit(lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    f = 2.0 * m * n * k
    rows.append({"shape": label, "M": m, "N": n, "K": k, "bf16_s": t16, "fp8_s": t8,
                 "bf16_tflops": f / t16 / 1e12, "fp8_tflops": f / t8 / 1e12})
    print(f"{label:28s} bf16 {f/t16/1e12:7.1f}  fp8 {f/t8/1e12:7.1f} TFLOP/s  ratio {t16/t8:4.2f}", flush=True)
out = sys.argv[1] if len(sys.argv) > 1 else "gemm_fp8.json"
json.dump({"device": name, "torch": torch.__version__, "rows": rows}, open(out, "w"), indent=1)
