"""``optmap calibrate``: measure this machine's device and write an accelerator preset file.

Times the families the shipped ``h100-sxm`` preset was fitted to — the GEMM and device-copy
ceilings, the device time of a kernel, GEMMs of several shapes, and VGG-16 / ResNet-50
convolution and linear layers split by batch, input and output channels, forward and forward +
backward — and the kernel ceilings a preset carries in ``[attrs.kernels]`` (an FP8 GEMM, fused
causal attention: :mod:`optmap.commands.calibrate_kernels`) with PyTorch (``pip install 'optmap[calibrate]'``), on CUDA when present and on the
CPU otherwise. Each time is the median of a few repetitions after warm-up, between CUDA events
(or ``perf_counter`` with the CPU), the operation alone. It fits the compute model
(:mod:`optmap.compute.fit`) and writes a preset (:mod:`optmap.compute.preset`) plus the raw
measurements next to it (``<out>.json``), which ``optmap calibrate --refit`` fits again.
``--quick`` takes tiny shapes (seconds on a CPU; a smoke test, not a calibration).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from optmap.errors import OptmapError

GIB = 2**30
MISFIT_PCT = 50.0  # an in-sample median error above this is said: timings no compute model explains


def add_parser(subparsers) -> dict:
    """Register ``optmap calibrate`` on the CLI's subparsers; returns ``{"calibrate": run}``."""
    parser = subparsers.add_parser("calibrate", help="measure this machine's accelerator and write a preset file")
    parser.add_argument("-o", "--output", default="accelerator.toml", metavar="FILE.toml",
                        help="preset file to write (default accelerator.toml; measurements go to FILE.json)")
    parser.add_argument("--device", default="auto", help="cuda, cuda:N, cpu or auto (default: cuda when present)")
    parser.add_argument("--dtype", choices=("bf16", "fp16", "fp32"),
                        help="dtype to measure (default bf16 on CUDA, fp32 on the CPU)")
    parser.add_argument("--quick", action="store_true", help="tiny shapes: a smoke test in seconds, not a calibration")
    parser.add_argument("--repeats", type=int, default=None, metavar="N", help="timed repetitions per shape")
    parser.add_argument("--name", help="accelerator name (default: the output file's stem)")
    parser.add_argument("--peak-tflops", type=float, metavar="X",
                        help="datasheet peak for --dtype (default: the measured GEMM ceiling)")
    parser.add_argument("--network-gbps", type=float, default=100.0, metavar="X",
                        help="injection bandwidth into the network, Gb/s (default 100)")
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help="CPU threads PyTorch may use when --device cpu (default 1: one core is the device)")
    parser.add_argument("--refit", metavar="FILE.json", help="fit measurements written earlier instead of measuring")
    return {"calibrate": run}


class Timer:
    """Median seconds of a callable: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, torch, device, warmup: int, repeats: int) -> None:
        self.torch, self.device, self.warmup, self.repeats = torch, device, warmup, repeats
        self.cuda = device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def __call__(self, fn) -> float:
        for _ in range(self.warmup):
            fn()
        self.sync()
        times = []
        for _ in range(self.repeats):
            if self.cuda:
                start, end = (self.torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
            else:
                begin = time.perf_counter()
                fn()
                times.append(time.perf_counter() - begin)
        import statistics  # here, not at the top: every optmap command builds this parser

        return statistics.median(times)


def _plan(quick: bool) -> dict:
    """Shapes to time. Full: the shapes of the shipped H100 measurements; quick: tiny ones."""
    if quick:
        return {"gemm": 256, "copy_bytes": 16 * 2**20, "gemms": [(m, n, n) for m in (32, 128) for n in (32, 128)],
                "image": 32, "batch": 4, "splits": (1, 2), "layers": 2}
    return {"gemm": 8192, "copy_bytes": GIB, "gemms": [(m, n, k) for m in (2048, 8192, 16384)
                                                       for n in (1024, 4096, 12288) for k in (1024, 4096, 12288)],
            "image": 224, "batch": 256, "splits": (1, 2, 4, 8, 16, 32), "layers": None}


def _layers(network: str, image: int, limit: int | None):
    """Distinct contraction layers of a registered network (the zoo's torchvision geometry), at most ``limit``."""
    from optmap.host import load_host

    build = load_host().get("workload", network).resolve()  # through the host: the core imports no plugin
    seen, out = set(), []
    for layer in build(batch=1, image_size=image).weighted_layers():
        key = (layer.op, layer.in_shapes, layer.out_shape, layer.attrs)
        if key not in seen:
            seen.add(key)
            out.append(layer)
    return out if limit is None else out[:: max(1, len(out) // limit)][:limit]


def _module(torch, layer, cin: int, cout: int, device, dtype):
    if layer.op == "conv2d":
        module = torch.nn.Conv2d(cin, cout, layer.attr("kernel"), stride=layer.attr("stride"),
                                 padding=layer.attr("padding"), bias=False)
        return module.to(device=device, dtype=dtype, memory_format=torch.channels_last)
    return torch.nn.Linear(cin, cout, bias=False).to(device=device, dtype=dtype)


def _measure_layer(torch, timer, layer, batch: int, cin: int, cout: int, device, dtype):
    """(forward seconds, forward + backward seconds) of one layer shard."""
    module = _module(torch, layer, cin, cout, device, dtype)
    if layer.op == "conv2d":
        _, h, w = layer.in_shapes[0]
        x = torch.randn(batch, cin, h, w, device=device, dtype=dtype).to(memory_format=torch.channels_last)
    else:
        x = torch.randn(batch, cin, device=device, dtype=dtype)
    x.requires_grad_(True)
    with torch.no_grad():
        grad = torch.ones_like(module(x))

    def training():
        module(x).backward(grad)

    with torch.no_grad():
        forward = timer(lambda: module(x))
    return forward, timer(training)


def measure(device_name: str, dtype_name: str, quick: bool, repeats: int | None, progress, threads: int = 1):
    """Time every family on ``device_name``; returns :class:`optmap.compute.Measurements`."""
    try:
        import torch
    except ImportError:
        raise OptmapError("optmap calibrate needs PyTorch: pip install 'optmap[calibrate]'") from None
    from optmap.compute import Measurements, Sample
    from optmap.workload import dtype_bytes

    if device_name == "auto":
        device_name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(device_name)
    except RuntimeError:
        raise OptmapError(f"calibrate: unknown --device '{device_name}'; use cuda, cuda:N, cpu or auto") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise OptmapError("calibrate: --device cuda but PyTorch sees no CUDA device; use --device cpu")
    if device.type not in ("cuda", "cpu"):
        raise OptmapError(f"calibrate: --device '{device_name}' is not supported; use cuda, cuda:N or cpu")
    dtype_name = dtype_name or ("bf16" if device.type == "cuda" else "fp32")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    if device.type == "cpu":
        torch.set_num_threads(threads)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    plan = _plan(quick)
    timer = Timer(torch, device, warmup=1 if quick else 3, repeats=repeats or (3 if quick else 7))
    networks = {n: _layers(n, plan["image"], plan["layers"]) for n in ("vgg16", "resnet50")}
    layer_jobs = [(n, layer, split, k) for n, layers in networks.items() for layer in layers
                  for split in ("batch", "in", "out") for k in plan["splits"] if split == "batch" or k > 1]
    task = progress(len(plan["gemms"]) + len(layer_jobs) + 4)

    n = plan["gemm"]
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    gemm_flops = 2 * n**3 / timer(lambda: a @ b)
    task("GEMM ceiling")
    source = torch.empty(plan["copy_bytes"] // dtype_bytes(dtype_name), device=device, dtype=dtype)
    target = torch.empty_like(source)
    copy_bandwidth = 2 * plan["copy_bytes"] / timer(lambda: target.copy_(source))
    task("copy ceiling")
    kernel_s = _kernel_seconds(torch, timer, device)
    task("kernel launch")
    from optmap.commands.calibrate_kernels import kernel_ceilings

    kernels = kernel_ceilings(torch, timer, device, dtype, quick)
    task("FP8 GEMM and fused attention")
    samples = []
    for m, nn, k in plan["gemms"]:
        x, w = torch.randn(m, k, device=device, dtype=dtype), torch.randn(k, nn, device=device, dtype=dtype)
        samples.append(Sample("gemm", "gemm", f"{m}x{nn}x{k}", "gemm", {"m": m, "n": nn, "k": k}, "forward",
                              timer(lambda: x @ w)))
        task(f"GEMM {m}x{nn}x{k}")
    for network, layer, split, k in layer_jobs:
        batch, cin, cout = plan["batch"], layer.in_channels, layer.out_channels
        batch, cin, cout = (max(1, v // k) if split == s else v for v, s in ((batch, "batch"), (cin, "in"), (cout, "out")))
        forward, training = _measure_layer(torch, timer, layer, batch, cin, cout, device, dtype)
        conv = layer.op == "conv2d"
        shape = {"batch": batch if conv else batch * layer.out_spatial, "cin": cin, "cout": cout,
                 "in_hw": layer.in_spatial if conv else 1, "out_hw": layer.out_spatial if conv else 1,
                 "kernel": layer.kernel_elements if conv else 1, "aligned": layer.in_channels % 8 == 0}
        for passes, seconds in (("forward", forward), ("training", training)):
            samples.append(Sample(f"conv-{split}", network, f"{network} {layer.name} {split}/{k}", "conv2d",
                                  shape, passes, seconds, k))
        task(f"{network} {layer.name} {split}/{k}")
    import platform

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or platform.machine())
    memory = (torch.cuda.get_device_properties(device).total_memory if device.type == "cuda"
              else os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    ceilings = {"gemm_flops": gemm_flops, "copy_bandwidth": copy_bandwidth, "kernel_s": kernel_s,
                "memory_bytes": float(memory), "torch": torch.__version__, "device_type": device.type, **kernels}
    return Measurements(f"{name} ({device.type})", dtype_name, ceilings, samples)


def _kernel_seconds(torch, timer, device) -> float:
    """Device time of one tiny kernel in a busy stream: a CUDA graph of 100 launches, replayed
    (no host in the way); on the CPU, one tiny operation (the CPU is host and device)."""
    x = torch.zeros(1, device=device)
    if device.type != "cuda":
        return timer(lambda: x.add_(1.0))
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(100):
            x.add_(1.0)
    return timer(graph.replay) / 100


def preset_fields(measurements, name: str, peak_tflops: float | None, network_gbps: float) -> dict:
    """The datasheet fields of the preset (measured ceilings stand in for missing datasheet figures)."""
    from optmap.commands.calibrate_kernels import tflops

    c = measurements.ceilings
    peak = peak_tflops or c["gemm_flops"] / 1e12
    peaks = {measurements.dtype: float(f"{peak:.6g}")}
    if "fp8_gemm_flops" in c:  # no datasheet figure here: the measured FP8 ceiling stands in
        peaks["fp8"] = tflops(c["fp8_gemm_flops"])
    return {
        "name": name,
        "description": f"{measurements.device}, calibrated by optmap calibrate (torch {c.get('torch', '?')}); "
                       f"peak = {'given' if peak_tflops else 'measured GEMM ceiling'}"
                       f"{', fp8 peak = measured FP8 GEMM ceiling' if 'fp8' in peaks else ''}, "
                       "memory bandwidth = measured copy",
        "peak_tflops": peaks,
        "memory_gib": float(f"{c['memory_bytes'] / GIB:.6g}"),
        "memory_bandwidth_gBps": float(f"{c['copy_bandwidth'] / 1e9:.6g}"),
        "network_gbps": network_gbps,
    }


def run(args) -> int:
    """Measure (or re-read), fit, and write the preset and its measurements."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from optmap.commands.calibrate_kernels import kernels_table
    from optmap.compute import read_measurements, save_preset
    from optmap.compute.fit import error_rows, fit_calibration, predict

    output = _output(args.output)
    if args.repeats is not None and args.repeats < 1:
        raise OptmapError(f"calibrate: --repeats must be >= 1, got {args.repeats}")
    if args.threads < 1:
        raise OptmapError(f"calibrate: --threads must be >= 1, got {args.threads}")
    import importlib.util

    if importlib.util.find_spec("scipy") is None:  # the fit's least squares
        raise OptmapError("optmap calibrate fits with SciPy: pip install 'optmap[calibrate]'")
    console = Console(stderr=True, highlight=False, markup=False)
    if args.refit:
        measurements, source = read_measurements(args.refit), Path(args.refit)
    else:
        with Progress(TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True) as bar:
            def progress(total):
                task = bar.add_task("measuring", total=total)
                return lambda label: bar.update(task, advance=1, description=label)

            measurements = measure(args.device, args.dtype, args.quick, args.repeats, progress, args.threads)
        source = measurements.write(output.with_suffix(".json"))
    c = measurements.ceilings
    calibration = fit_calibration(measurements.samples, dtype=measurements.dtype, copy_bandwidth=c["copy_bandwidth"],
                                  kernel_s=c["kernel_s"], gemm_flops=c["gemm_flops"], source=f"optmap calibrate on {measurements.device}"
                                  + (" (--quick: tiny shapes)" if args.quick else ""))
    fields = preset_fields(measurements, args.name or output.stem, args.peak_tflops, args.network_gbps)
    header = ("optmap accelerator preset written by `optmap calibrate`: the datasheet fields of\n"
              "Accelerator.from_datasheet, the calibration in [attrs.calibration] (docs/calibration.md). Measurements: "
              + _relative(source, output) + "\nMeasured kernel ceilings in [attrs.kernels] (optmap.compute.kernels).")
    kernels = kernels_table(measurements)
    written, _ = save_preset(output, fields, calibration, header, kernels)
    errors = error_rows(measurements.samples, predict(calibration, measurements.samples), by=lambda s: s.passes)
    fit = ", ".join(f"{r['key']} median {r['median_pct']:.1f} %" for r in errors)
    worst = max((r["median_pct"] for r in errors), default=0.0)
    if not worst <= MISFIT_PCT:
        print(f"warning: the fitted model misses these timings by a median {worst:.3g} % (over {MISFIT_PCT:g} %); "
              f"check the measurements ({source})", file=sys.stderr)
    console.print(f"wrote {written} ({len(measurements.samples)} timings; in-sample error: {fit}); "
                  f"use it with `accelerator = \"{fields['name']}\"` after `file = \"{written.name}\"` "
                  "in the problem's [accelerators] table", markup=False)
    console.print(_kernels_line(kernels), markup=False)
    return 0


def _kernels_line(kernels: dict) -> str:
    """One line of the measured kernel ceilings the preset carries ([attrs.kernels])."""
    parts = [f"{kernels['dtype']} GEMM {kernels['gemm_tflops']:,.4g} TFLOP/s"]
    if "fp8_gemm_tflops" in kernels:
        parts.append(f"FP8 GEMM {kernels['fp8_gemm_tflops']:,.4g}")
    if "attention_tflops" in kernels:
        forward, backward = kernels["attention_tflops"]
        parts.append(f"fused attention ({kernels['attention_kernel']}) {forward:,.4g} forward, {backward:,.4g} backward")
    return "kernel ceilings: " + "; ".join(parts)


def _output(text: str) -> Path:
    """``-o FILE.toml``, checked before anything is measured."""
    output = Path(text)
    if not text.strip() or text.endswith(("/", "\\")) or output.is_dir():
        raise OptmapError(f"calibrate: -o '{text}' is not a file name; give the preset file, e.g. -o mygpu.toml")
    if output.suffix != ".toml":
        raise OptmapError(f"calibrate: --output '{output}' must end in .toml (the preset file)")
    return output


def _relative(measurements: Path, preset: Path) -> str:
    """The measurements file as the preset's header names it: relative to the preset's folder."""
    try:
        return os.path.relpath(measurements.resolve(), preset.resolve().parent)
    except ValueError:  # another drive (Windows)
        return str(measurements.resolve())
