"""FPGA accelerators for FPDeep: the resource tuple of note §1.2 / Table 3, and the VC709 board.

Until ``Accelerator.attrs`` lands in the core, the FPGA resources are fields of a subclass of
:class:`optmap.system.Accelerator`, so every core function (topologies, ``System``) treats an
:class:`FPGA` as an ordinary accelerator.

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

from dataclasses import dataclass

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


@dataclass(frozen=True)
class FPGA(Accelerator):
    """An FPGA board: the Accelerator fields plus FPDeep's hardware constraint tuple (Table 3).

    ``bram_bytes`` is the on-chip block RAM; ``memory_bytes`` / ``memory_bandwidth`` are the
    board's DRAM; ``network_bandwidth`` is one link's per-direction rate (``link_ports ×
    port_gbps``). ``peak_flops`` is 2 × DSPs × clock × ``macs_per_dsp``.
    """

    dsp_slices: int = 0
    bram_bytes: float = 0.0
    luts: int = 0
    flip_flops: int = 0
    transceivers: int = 0
    clock_hz: float = 0.0
    macs_per_dsp: int = 1
    link_ports: int = 0
    port_gbps: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = f"FPGA '{self.name}'"
        for name in ("dsp_slices", "bram_bytes", "clock_hz", "macs_per_dsp", "link_ports", "port_gbps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise OptmapError(f"{owner}: {name} must be a number > 0, got {value!r}")

    @property
    def macs_per_second(self) -> float:
        """MACs per second of all DSP slices at full use."""
        return self.dsp_slices * self.macs_per_dsp * self.clock_hz


def vc709(
    *,
    link_ports: int = 3,
    port_gbps: float = 25.0,
    clock_mhz: float = DEFAULT_CLOCK_MHZ,
    macs_per_dsp: int = 1,
    board_watts: float = DEFAULT_BOARD_WATTS,
    name: str | None = None,
) -> FPGA:
    """A Xilinx VC709 board (one XC7VX690T), FPDeep's test platform (§6.1).

    ``link_ports`` transceivers of ``port_gbps`` per link and direction (3 × 25 = the paper's
    150 Gb/s per FPGA on a chain; 5 × 25 = 250 Gb/s); ``clock_mhz`` of the CE arrays (assumed,
    see DEFAULT_CLOCK_MHZ); ``macs_per_dsp`` per cycle (note §5.6); ``board_watts`` measured board
    power (from Table 6, see DEFAULT_BOARD_WATTS).
    """
    for key, value in (("link_ports", link_ports), ("port_gbps", port_gbps), ("clock_mhz", clock_mhz),
                       ("macs_per_dsp", macs_per_dsp), ("board_watts", board_watts)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise OptmapError(f"vc709: {key} must be a number > 0, got {value!r} (a link needs bandwidth)")
    per_link_gbps = link_ports * port_gbps
    clock_hz = clock_mhz * 1e6
    peak = 2.0 * XC7VX690T["dsp_slices"] * macs_per_dsp * clock_hz
    return FPGA(
        name=name or "vc709",
        peak_flops={"default": peak},
        memory_bytes=gib_to_bytes(VC709_DRAM_GIB),
        memory_bandwidth=gBps_to_bytes_per_s(VC709_DRAM_GBPS_BYTES),
        network_bandwidth=gbps_to_bytes_per_s(per_link_gbps),
        power_watts=board_watts,
        description=(
            f"Xilinx VC709 (XC7VX690T: 3600 DSP, 1470 x 36 Kb BRAM) at {clock_mhz:g} MHz; "
            f"{link_ports} x {port_gbps:g} Gb/s = {per_link_gbps:g} Gb/s per link and direction (FPDeep)"
        ),
        dsp_slices=XC7VX690T["dsp_slices"],
        bram_bytes=float(XC7VX690T["bram_blocks"] * BRAM_BLOCK_BYTES),
        luts=XC7VX690T["luts"],
        flip_flops=XC7VX690T["flip_flops"],
        transceivers=XC7VX690T["transceivers"],
        clock_hz=clock_hz,
        macs_per_dsp=macs_per_dsp,
        link_ports=link_ports,
        port_gbps=port_gbps,
    )


# The two link variants of the paper, as presets: 150 Gb/s and 250 Gb/s per FPGA on a chain.
PRESETS = {
    "vc709": vc709(),
    "vc709-250": vc709(link_ports=5, name="vc709-250"),
}
