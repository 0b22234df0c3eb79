"""FPGA accelerators for FPDeep: the resource tuple of note §1.2 / Table 3, and the VC709 board.

An FPGA is an :class:`optmap.system.Accelerator` whose ``attrs`` hold FPDeep's hardware
constraint parameters: ``dsp_slices``, ``bram_bytes``, ``luts``, ``flip_flops``,
``transceivers``, ``clock_hz`` and ``macs_per_dsp`` of the CE arrays, and ``link_ports`` /
``port_gbps`` of its links. ``memory_bytes`` / ``memory_bandwidth`` are the board's DRAM.

Links. FPDeep counts inter-FPGA bandwidth in transceiver ports: a link to one neighbour carries
``link_ports × port_gbps`` in **each** direction (full-duplex lanes; forward streams use the
"upper pair", backward streams the "bottom pair", §5.2.1). ``network_bandwidth`` is that per-link,
per-direction rate, so the ``chain`` and ``mesh2d`` topologies give every link exactly it.

* The paper's 150 Gb/s constraint (§6.3.3: 6 transceivers of that generation per FPGA) is per
  FPGA and bidirectional; a chain FPGA has two neighbours, so each link gets 3 ports, 75 Gb/s per
  direction (``port_gbps = 25``: 150 / 6). Note §2.2 checks this reading: the 250 Gb/s variant then
  gives 125 Gb/s per direction and 15 × 125 / 18.6 ≈ 101 FPGAs, the paper's "linearity up to 100".
* The 250 Gb/s variant (abstract, §7): 10 ports of 25 Gb/s, 5 per chain link — also Fig. 9's
  "10 board-to-board ports", where a 1-D device gives each link 5 ports and a 2-D one only 2.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated

from annotated_types import Ge, Gt, Le

from optmap.errors import OptmapError
from optmap.system import Accelerator
from optmap.units import gBps_to_bytes_per_s, gbps_to_bytes_per_s, gib_to_bytes

# Xilinx 7 Series product selection guide, XC7VX690T: 3,600 DSP48E1 slices; 1,470 block RAMs of
# 36 Kb (52,920 Kb); 433,200 LUTs; 866,400 flip-flops; 80 GTH transceivers.
XC7VX690T = {"dsp_slices": 3600, "bram_blocks": 1470, "luts": 433_200, "flip_flops": 866_400, "transceivers": 80}
BRAM_BLOCK_BYTES = 36 * 1024 // 8  # one 36 Kb block RAM = 4,608 bytes

# VC709 user guide (UG887): two DDR3 SODIMMs of 4 GB, 64 bits at up to 1,866 MT/s each
# (1866e6 × 8 B = 14.9 GB/s per SODIMM). FPDeep keeps FC weights there (§7).
VC709_DRAM_GIB = 8.0
VC709_DRAM_GBPS_BYTES = 2 * 1.866 * 8  # GB/s (bytes)

# The paper gives no clock (note §5.6). 200 MHz is our assumption, a usual clock for DSP-based CNN
# engines on Virtex-7; the paper's own Table 6 implies about 200.9 MHz at 1 MAC/DSP/cycle and 80 %
# DSP use (note §2.3), so GOPS per FPGA follows from this assumption and is not a prediction.
DEFAULT_CLOCK_MHZ = 200.0

# Board power. The paper measured it with a power meter but prints only GOPS/J; Table 6 implies
# 1157/37.09 = 31.2 W, 1197/37.88 = 31.6 W and 1220/38.13 = 32.0 W (note §4.5). We take the middle
# value for every network, so our GOPS/J differs from the paper's only through our GOPS.
DEFAULT_BOARD_WATTS = 31.6

Positive = Annotated[float, Gt(0)]


@dataclass(frozen=True)
class FPGAResources:
    """What the fpdeep cost model reads from an FPGA accelerator's ``attrs``."""

    dsp_slices: float
    bram_bytes: float
    clock_hz: float
    macs_per_dsp: float

    @classmethod
    def of(cls, device: Accelerator, index: int) -> "FPGAResources":
        attrs = device.attrs
        values = {}
        for key in ("dsp_slices", "bram_bytes", "clock_hz", "macs_per_dsp"):
            value = attrs.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise OptmapError(
                    f"fpdeep needs FPGA accelerators (e.g. \"vc709\", \"vc709-250\"): device {index} "
                    f"('{device.name}') has no attrs.{key} > 0"
                )
            values[key] = float(value)
        return cls(**values)


def fpga(
    name: str,
    *,
    dsp_slices: int,
    bram_bytes: float,
    clock_hz: float,
    link_ports: int,
    port_gbps: float,
    dram_bytes: float,
    dram_bandwidth: float,
    board_watts: float | None = None,
    macs_per_dsp: int = 1,
    description: str = "",
    **resources: int,
) -> Accelerator:
    """An FPGA accelerator, SI units: its CE arrays' peak is 2 × DSPs × clock × ``macs_per_dsp``."""
    for key, value in (("dsp_slices", dsp_slices), ("bram_bytes", bram_bytes), ("clock_hz", clock_hz),
                       ("link_ports", link_ports), ("port_gbps", port_gbps), ("macs_per_dsp", macs_per_dsp)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise OptmapError(f"FPGA '{name}': {key} must be a number > 0, got {value!r} (a link needs bandwidth)")
    return Accelerator(
        name=name,
        peak_flops={"default": 2.0 * dsp_slices * clock_hz * macs_per_dsp},
        memory_bytes=dram_bytes,
        memory_bandwidth=dram_bandwidth,
        network_bandwidth=gbps_to_bytes_per_s(link_ports * port_gbps),
        power_watts=board_watts,
        description=description,
        attrs={"dsp_slices": dsp_slices, "bram_bytes": float(bram_bytes), "clock_hz": float(clock_hz),
               "macs_per_dsp": macs_per_dsp, "link_ports": link_ports, "port_gbps": float(port_gbps), **resources},
    )


def vc709(
    *,
    link_ports: Annotated[int, Ge(1), Le(XC7VX690T["transceivers"])] = 3,
    port_gbps: Positive = 25.0,
    clock_mhz: Positive = DEFAULT_CLOCK_MHZ,
    macs_per_dsp: Annotated[int, Ge(1), Le(4)] = 1,
    board_watts: Positive = DEFAULT_BOARD_WATTS,
) -> Accelerator:
    """Xilinx VC709 board (one XC7VX690T), FPDeep's test platform; 3 x 25 Gb/s per link and direction.

    Options: ``link_ports`` transceivers of ``port_gbps`` per link and direction (3 × 25 = the
    paper's 150 Gb/s per FPGA on a chain; 5 × 25 = its 250 Gb/s); ``clock_mhz`` of the CE arrays
    (assumed, see DEFAULT_CLOCK_MHZ); ``macs_per_dsp`` per cycle (note §5.6); ``board_watts``
    measured board power (from Table 6, see DEFAULT_BOARD_WATTS).
    """
    if isinstance(board_watts, bool) or not isinstance(board_watts, (int, float)) or not board_watts > 0:
        raise OptmapError(f"vc709: board_watts must be a number > 0, got {board_watts!r}")
    if isinstance(clock_mhz, bool) or not isinstance(clock_mhz, (int, float)) or not clock_mhz > 0:
        raise OptmapError(f"vc709: clock_mhz must be a number > 0, got {clock_mhz!r}")
    return fpga(
        "vc709",
        dsp_slices=XC7VX690T["dsp_slices"],
        bram_bytes=XC7VX690T["bram_blocks"] * BRAM_BLOCK_BYTES,
        clock_hz=clock_mhz * 1e6,
        link_ports=link_ports,
        port_gbps=port_gbps,
        dram_bytes=gib_to_bytes(VC709_DRAM_GIB),
        dram_bandwidth=gBps_to_bytes_per_s(VC709_DRAM_GBPS_BYTES),
        board_watts=board_watts,
        macs_per_dsp=macs_per_dsp,
        description=(f"Xilinx VC709 (XC7VX690T: 3600 DSP, 1470 x 36 Kb BRAM) at {clock_mhz:g} MHz; "
                     f"{link_ports} x {port_gbps} Gb/s per link and direction (FPDeep)"),
        luts=XC7VX690T["luts"],
        flip_flops=XC7VX690T["flip_flops"],
        transceivers=XC7VX690T["transceivers"],
    )


def vc709_250() -> Accelerator:
    """Xilinx VC709 with FPDeep's 250 Gb/s per FPGA: 5 x 25 Gb/s per chain link and direction."""
    return dataclasses.replace(vc709(link_ports=5), name="vc709-250")
