"""The DSM chip: tiers 1-4 of the architectural template (PE array -> core -> chip), DSM §II-B.

Every Fig. 10 chip and core parameter is a named option of :func:`build_dsm_chip`; the defaults
are the paper's baseline (32 cores of 1024 FP16 MACs at 2 GHz, 1 MB scratchpad at 128 GB/s, a
256 GB/s ring, 8 GB HBM at 256 GB/s and 80 % efficiency). Bandwidths are GB/s (1e9 bytes/s, the
paper's unit); the scratchpad is binary (1 MB = 2**20 B, an SRAM), the HBM decimal (8 GB = 8e9 B).

Open points of the paper (note §7.1) are options with documented defaults: the 1024 MACs per core
are one systolic array of 32 x 32 (``array_rows`` x ``array_cols`` x ``arrays``), whose minimum
work P is a 32 x 32 block of (in, out) and which needs a stream of ``array_rows`` (ij x mb)
vectors per block to hide the loading of the next block (DSM §II-C "P").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from optmap.bounds import Fraction, Positive, ints
from optmap.errors import OptmapError
from optmap.system import Accelerator
from optmap.units import gb_to_bytes, gBps_to_bytes_per_s

MIB = 2**20
MAX_UNITS = 1 << 16  # cores per chip, PE-array rows / columns, arrays per core
FP16 = "fp16"


@dataclass(frozen=True)
class ChipConfig:
    """Chip and core parameters of the DSM template, SI units (bytes, bytes/s, Hz)."""

    cores: int = 32  # Fig. 10: cores per chip
    array_rows: int = 32  # PE-array rows (P_in); 32 x 32 x 1 = Fig. 10's 1024 MACs per core
    array_cols: int = 32  # PE-array columns (P_out)
    arrays: int = 1  # PE arrays per core
    frequency: float = 2e9  # Fig. 10: 2 GHz
    spad_bytes: float = 1 * MIB  # Fig. 10: 1 MB scratchpad per core
    spad_bandwidth: float = 128e9  # Fig. 10: 128 GB/s between a core's scratchpad and the chip
    ring_bandwidth: float = 256e9  # Fig. 10: 256 GB/s core-to-core (per ring link and direction)
    interconnect: str = "ring"  # DSM §II-B: "ring" or "split-bus"
    hbm_bytes: float = 8e9  # Fig. 10: 8 GB external memory
    hbm_bandwidth: float = 256e9  # Fig. 10: 256 GB/s peak
    hbm_efficiency: float = 0.8  # Fig. 10: "@ 80% eff."
    element_bytes: int = 2  # FP16 throughout (DSM §IV "half-precision")

    @property
    def macs_per_core(self) -> int:
        return self.array_rows * self.array_cols * self.arrays

    @property
    def peak_flops(self) -> float:
        """2 FLOP per MAC per cycle (note §1.4): 32 x 1024 x 2 x 2 GHz = 131.072 TFLOP/s."""
        return 2.0 * self.macs_per_core * self.cores * self.frequency

    @property
    def hbm_effective(self) -> float:
        return self.hbm_bandwidth * self.hbm_efficiency


@dataclass(frozen=True)
class DSMChip(Accelerator):
    """An :class:`Accelerator` that also carries the DSM chip's internals (``config``)."""

    config: ChipConfig = field(default_factory=ChipConfig)


def build_dsm_chip(
    *,
    cores: ints(1, MAX_UNITS) = 32,
    array_rows: ints(1, MAX_UNITS) = 32,
    array_cols: ints(1, MAX_UNITS) = 32,
    arrays: ints(1, MAX_UNITS) = 1,
    frequency_ghz: Positive = 2.0,
    spad_mb: Positive = 1.0,
    spad_gBps: Positive = 128.0,  # noqa: N803 - B = bytes, the paper's unit
    ring_gBps: Positive = 256.0,  # noqa: N803
    interconnect: Literal["ring", "split-bus"] = "ring",
    hbm_gb: Positive = 8.0,
    hbm_gBps: Positive = 256.0,  # noqa: N803
    hbm_efficiency: Fraction = 0.8,
    network_gBps: Positive = 160.0,  # noqa: N803 - DSM §IV: 160 GB/s out of each chip
) -> DSMChip:
    """DeepSpatialMatrix chip (Fig. 10): 32 cores x 1024 FP16 MACs at 2 GHz, 1 MB scratchpads, ring, 8 GB HBM."""
    config = ChipConfig(
        cores=cores, array_rows=array_rows, array_cols=array_cols, arrays=arrays,
        frequency=frequency_ghz * 1e9, spad_bytes=spad_mb * MIB, spad_bandwidth=gBps_to_bytes_per_s(spad_gBps),
        ring_bandwidth=gBps_to_bytes_per_s(ring_gBps), interconnect=interconnect, hbm_bytes=gb_to_bytes(hbm_gb),
        hbm_bandwidth=gBps_to_bytes_per_s(hbm_gBps), hbm_efficiency=hbm_efficiency,
    )
    return DSMChip(
        name="dsm-chip",
        peak_flops={FP16: config.peak_flops},
        memory_bytes=config.hbm_bytes,
        memory_bandwidth=config.hbm_bandwidth,
        network_bandwidth=gBps_to_bytes_per_s(network_gBps),
        description=(f"DSM chip (Fig. 10): {cores} cores x {config.macs_per_core} FP16 MACs @ {frequency_ghz:g} GHz, "
                     f"{spad_mb:g} MB scratchpad, {interconnect}, {hbm_gb:g} GB HBM"),
        config=config,
    )


def chip_config(accelerator: Accelerator) -> ChipConfig:
    """The DSM internals of ``accelerator``, or a one-line error for any other accelerator."""
    config = getattr(accelerator, "config", None)
    if not isinstance(config, ChipConfig):
        raise OptmapError(f"the dsm cost model needs DSM chips (cores, PE arrays, scratchpads); accelerator "
                          f"'{accelerator.name}' has none; use accelerator = \"dsm-chip\"")
    return config
