"""Accelerator presets with sourced numbers (SI inside; conversions named in optmap.units).

Capacities are binary (GiB): HBM/GDDR parts marketed as "32 GB" hold 32 GiB. Bandwidths follow the
datasheet's unit: memory and NVLink in GB/s (bytes), networks in Gb/s (bits, G = 1e9).
"""

from __future__ import annotations

from optmap.system import Accelerator
from optmap.units import (
    gBps_to_bytes_per_s,
    gbps_to_bytes_per_s,
    gib_to_bytes,
    tflops_to_flops,
)

# AccPar (Song et al., HPCA 2020) Table 7, "TPU-v2" column: 180 TFLOPS, 64 GB HBM, 2400 GB/s; one
# accelerator is a board of 4 chips x 2 cores. Network: Sec. 6.1 sets 8 Gb/s per TPU-v2 (= 1e9 B/s).
# Data format bfloat16, so the peak is listed for bf16 only. No power figure is given.
TPU_V2 = Accelerator(
    name="tpu-v2",
    peak_flops={"bf16": tflops_to_flops(180)},
    memory_bytes=gib_to_bytes(64),
    memory_bandwidth=gBps_to_bytes_per_s(2400),
    network_bandwidth=gbps_to_bytes_per_s(8),
    description="TPU-v2 board (4 chips x 2 cores), AccPar Table 7; network 8 Gb/s (AccPar Sec. 6.1)",
)

# AccPar Table 7, "TPU-v3" column: 420 TFLOPS, 128 GB HBM. The memory bandwidth 4800 GB/s is the
# paper's own assumption (Table 7 marks the real figure "not available"). Network: Sec. 6.1 sets
# 16 Gb/s per TPU-v3 (= 2e9 B/s).
TPU_V3 = Accelerator(
    name="tpu-v3",
    peak_flops={"bf16": tflops_to_flops(420)},
    memory_bytes=gib_to_bytes(128),
    memory_bandwidth=gBps_to_bytes_per_s(4800),
    network_bandwidth=gbps_to_bytes_per_s(16),
    description=(
        "TPU-v3 board (4 chips x 2 cores), AccPar Table 7; memory bandwidth 4800 GB/s is AccPar's "
        "assumption; network 16 Gb/s (AccPar Sec. 6.1)"
    ),
)

# NVIDIA Tesla V100 datasheet (SXM2, 32 GB): 125 TFLOPS fp16 tensor, 15.7 TFLOPS fp32,
# 7.8 TFLOPS fp64, 32 GB HBM2 at 900 GB/s, NVLink 300 GB/s (aggregate per GPU), 300 W.
V100 = Accelerator(
    name="v100",
    peak_flops={
        "fp16": tflops_to_flops(125),
        "fp32": tflops_to_flops(15.7),
        "fp64": tflops_to_flops(7.8),
    },
    memory_bytes=gib_to_bytes(32),
    memory_bandwidth=gBps_to_bytes_per_s(900),
    network_bandwidth=gBps_to_bytes_per_s(300),
    power_watts=300,
    description="NVIDIA V100 SXM2 32 GB (datasheet); network = NVLink 300 GB/s aggregate",
)

# NVIDIA A100 datasheet (80 GB SXM): 312 TFLOPS bf16/fp16 tensor (dense), 156 TFLOPS tf32 tensor,
# 19.5 TFLOPS fp32, 19.5 TFLOPS fp64 tensor, 80 GB HBM2e at 2039 GB/s, NVLink 600 GB/s, 400 W.
A100 = Accelerator(
    name="a100",
    peak_flops={
        "bf16": tflops_to_flops(312),
        "fp16": tflops_to_flops(312),
        "tf32": tflops_to_flops(156),
        "fp32": tflops_to_flops(19.5),
        "fp64": tflops_to_flops(19.5),
    },
    memory_bytes=gib_to_bytes(80),
    memory_bandwidth=gBps_to_bytes_per_s(2039),
    network_bandwidth=gBps_to_bytes_per_s(600),
    power_watts=400,
    description="NVIDIA A100 SXM 80 GB (datasheet, dense); network = NVLink 600 GB/s aggregate",
)

# NVIDIA TITAN RTX specifications: 130 TFLOPS fp16 tensor, 16.3 TFLOPS fp32, 24 GB GDDR6 at
# 672 GB/s, 280 W. A workstation card has no system network: the 10 Gb/s Ethernet default is an
# assumption (override with a custom accelerator or a topology bandwidth option).
TITAN_RTX = Accelerator(
    name="titan-rtx",
    peak_flops={"fp16": tflops_to_flops(130), "fp32": tflops_to_flops(16.3)},
    memory_bytes=gib_to_bytes(24),
    memory_bandwidth=gBps_to_bytes_per_s(672),
    network_bandwidth=gbps_to_bytes_per_s(10),
    power_watts=280,
    description="NVIDIA TITAN RTX (spec sheet); network 10 Gb/s Ethernet (assumption)",
)

# NVIDIA H100 SXM5 80 GB datasheet (dense tensor-core rates, without sparsity): 989.4 TFLOPS
# bf16/fp16, 1,978.9 fp8, 494.7 tf32, 66.9 fp32 and fp64 tensor; 80 GB HBM3 at 3.35 TB/s; NVLink
# 900 GB/s bidirectional; up to 700 W.
H100 = Accelerator(
    name="h100",
    peak_flops={"bf16": tflops_to_flops(989.4), "fp16": tflops_to_flops(989.4), "fp8": tflops_to_flops(1978.9),
                "tf32": tflops_to_flops(494.7), "fp32": tflops_to_flops(66.9), "fp64": tflops_to_flops(66.9)},
    memory_bytes=gib_to_bytes(80),
    memory_bandwidth=gBps_to_bytes_per_s(3350),
    network_bandwidth=gBps_to_bytes_per_s(900),
    power_watts=700,
    description="NVIDIA H100 SXM5 80 GB (datasheet, dense); network = NVLink 900 GB/s aggregate",
)

# NVIDIA HGX B200 / DGX B200 datasheets (2024), per GPU, dense tensor-core rates (the datasheets
# quote sparse ones, twice these): 2.25 PFLOPS bf16/fp16, 4.5 fp8 (MXFP8 at the FP8 rate: Blackwell
# tensor cores scale MX blocks natively), 9 fp4, 1.1 tf32; fp64 tensor 40 TFLOPS; 180 GB HBM3e at
# 8 TB/s (DGX B200: 1,440 GB and 64 TB/s for 8 GPUs); fifth-generation NVLink 1.8 TB/s
# bidirectional; 1,000 W.
B200 = Accelerator(
    name="b200",
    peak_flops={"bf16": tflops_to_flops(2250), "fp16": tflops_to_flops(2250), "fp8": tflops_to_flops(4500),
                "mxfp8": tflops_to_flops(4500), "fp4": tflops_to_flops(9000), "tf32": tflops_to_flops(1100),
                "fp64": tflops_to_flops(40)},
    memory_bytes=gib_to_bytes(180),
    memory_bandwidth=gBps_to_bytes_per_s(8000),
    network_bandwidth=gBps_to_bytes_per_s(1800),
    power_watts=1000,
    description="NVIDIA B200 SXM 180 GB (HGX/DGX B200 datasheets, dense); network = NVLink 1.8 TB/s aggregate",
)

# NVIDIA GB200 NVL72 datasheet (2024), rack figures over its 72 Blackwell GPUs, dense (the sheet
# quotes sparse rates, twice these): 360 PFLOPS bf16 -> 2.5 PFLOPS per GPU, fp8/fp6 5, fp4 10,
# tf32 1.25; fp64 3,240 TFLOPS -> 45; 13.4 TB HBM3e at 576 TB/s -> 186 GB at 8 TB/s per GPU;
# NVLink 130 TB/s -> 1.8 TB/s per GPU. Power: a GB200 superchip (2 GPUs, 1 Grace CPU) is up to
# 2,700 W; 1,200 W per GPU is an assumption of its share.
GB200 = Accelerator(
    name="gb200",
    peak_flops={"bf16": tflops_to_flops(2500), "fp16": tflops_to_flops(2500), "fp8": tflops_to_flops(5000),
                "mxfp8": tflops_to_flops(5000), "fp4": tflops_to_flops(10000), "tf32": tflops_to_flops(1250),
                "fp64": tflops_to_flops(45)},
    memory_bytes=gib_to_bytes(186),
    memory_bandwidth=gBps_to_bytes_per_s(8000),
    network_bandwidth=gBps_to_bytes_per_s(1800),
    power_watts=1200,
    description="NVIDIA GB200 (Blackwell GPU of a GB200 NVL72 rack, datasheet / 72, dense); NVLink 1.8 TB/s",
)

PRESETS: dict[str, Accelerator] = {a.name: a for a in (TPU_V2, TPU_V3, V100, A100, TITAN_RTX, H100, B200, GB200)}
