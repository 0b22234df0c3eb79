"""The Google Cloud TPU v4 chip as an optmap accelerator (SI inside, datasheet units at the edge).

Sources:

* Google Cloud, "TPU v4" (https://cloud.google.com/tpu/docs/v4), key specifications: peak
  compute per chip 275 TFLOP/s (bf16 or int8); HBM2 32 GiB at 1200 GB/s; measured power
  min/mean/max 90/170/192 W.
* Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with
  Hardware Support for Embeddings", ISCA 2023: each chip has 6 inter-chip-interconnect (ICI)
  links (a 3-D torus: two per dimension) of 50 GB/s (400 Gb/s) per direction each, so
  300 GB/s = 2400 Gb/s of injection bandwidth per chip.

One optmap accelerator is one chip (two TensorCores), unlike the built-in ``tpu-v2``/``tpu-v3``
presets, which are AccPar's 4-chip boards.
"""

from __future__ import annotations

from optmap.system import Accelerator

ICI_LINKS = 6  # Jouppi et al. ISCA 2023: 3-D torus, two links per dimension
ICI_LINK_GBPS = 400  # per link and direction (50 GB/s)

TPU_V4 = Accelerator.from_datasheet(
    "tpu-v4",
    peak_tflops={"bf16": 275, "int8": 275},  # cloud.google.com/tpu/docs/v4
    memory_gib=32,  # HBM2, cloud.google.com/tpu/docs/v4
    memory_bandwidth_gBps=1200,  # cloud.google.com/tpu/docs/v4
    network_gbps=ICI_LINKS * ICI_LINK_GBPS,  # 2400 Gb/s = 300 GB/s of ICI per chip
    power_watts=192,  # measured maximum; the mean is 170 W (cloud.google.com/tpu/docs/v4)
    description=(
        "Google TPU v4 chip: 275 TFLOP/s bf16, 32 GiB HBM2 at 1200 GB/s (Cloud TPU docs); "
        "6 ICI links x 50 GB/s = 300 GB/s (Jouppi et al., ISCA 2023)"
    ),
)
