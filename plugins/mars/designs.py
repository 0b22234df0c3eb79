"""MARS accelerator designs (Table II) as accelerators that carry a cycle model.

A *design* is one FPGA accelerator architecture with its parameters: how many cycles it needs
for a convolution loop nest. MARS configures every accelerator set with one design (Sec. III).

How designs enter the plugin contract (decision): a design is an **accelerator preset** whose
:class:`Design` (name, cycle model, parameters, clock) travels with it, registered through the
ordinary ``optmap_register_accelerators`` hook. So a third-party plugin adds a design simply by
registering an accelerator that carries a ``Design``: no new hook, and the same object serves as
a fixed device of the H2H system (``[[system.groups]] accelerator = "winograd"``) and as a
candidate configuration of an adaptive one (``[cost] designs = ["superlip", ...]``). The design
rides in the accelerator's ``attrs["mars_design"]`` (:func:`design_of`); the presets are
registered as factories, so ``[[system.groups]] accelerator = "superlip"`` takes ``tm = 32`` etc.

Cycle models (note §3.2; the paper gives none, it cites [14]-[16]). Every model is a replaceable
function ``cycles(dims, stride) -> cycles`` over numpy arrays, ``dims`` = (C_out, C_in, H, W,
K_h, K_w) of the loop nest one accelerator runs (H, W are output extents). Defaults are the
Table II parameters and the plain compute-bound tiling of each cited design:

* SuperLIP [14] (``superlip``): ⌈M/T_m⌉·⌈N/T_n⌉·⌈R/T_r⌉·⌈C/T_c⌉·T_r·T_c·K_h·K_w.
* systolic array [15] (``systolic``): rows ↔ C_out, columns ↔ W, vector ↔ C_in; R, K_h, K_w
  sequential: ⌈M/row⌉·⌈C/col⌉·⌈N/vec⌉·R·K_h·K_w.
* Winograd F(m×m, 3×3) [16] (``winograd``): ⌈N/P_n⌉·⌈M/P_m⌉·⌈R·s/m⌉·⌈C·s/m⌉ with m = n − 2; a
  1×1 kernel is padded to 3×3 (Sec. VI-B: it "makes it impossible to effectively handle 1×1
  convolution") and a stride-s layer is computed at stride 1 and subsampled (note §3.2).
  Kernels larger than 3×3 do not run (``large_kernels = "unsupported"``, default): the datapath's
  transform matrices are built for r = 3, and splitting a K×K kernel into ⌈K/3⌉² 3×3 pieces is a
  later technique (DWM, Huang et al., AAAI 2020), not the cited design's; Table III never puts a
  5×5, 7×7 or 11×11 layer on Design 3. ``"decompose"`` allows it at ⌈K_h/3⌉·⌈K_w/3⌉ passes. It
  cannot run fully connected layers.

Table II's #PEs column is kept as ``pes``; ``macs_per_cycle`` is the peak computed from the
parameters (note §6.3: 438 ≠ T_m·T_n = 448, 572 = row·col·vec/2, Winograd's 576 multipliers
give 2304 effective MAC/cycle). The ``mars`` cost model scales each cycle model to the #PEs peak
by default (``design_peaks = "pes"``: the paper chose the parameters "to make their theoretical
performance comparable", Sec. VI-A).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

import numpy as np

from optmap.bounds import MAX_DIMENSION, Positive, ints
from optmap.errors import OptmapError, did_you_mean
from optmap.host import Host
from optmap.system import Accelerator
from optmap.units import gBps_to_bytes_per_s, gbps_to_bytes_per_s, gib_to_bytes

CycleFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
DIMS = ("C_out", "C_in", "H", "W", "K_h", "K_w")

# F1.16xlarge board facts shared by every design preset (paper Sec. VI-A and AWS F1 datasheet).
CLOCK_MHZ = 200.0  # Sec. VI-A: every design at 200 MHz
DRAM_GIB = 1.0  # Sec. VI-A: 1 GB off-chip DRAM per accelerator
DRAM_GBPS_BYTES = 17.0  # one DDR4-2133 channel, 17 GB/s; metadata, the cycle models are compute-bound
PCIE_GBPS = 126.0  # PCIe 3.0 x16 injection (the topology's links set the real rates)


@dataclass(frozen=True)
class Design:
    """One accelerator design: its cycle model, parameters and clock.

    ``supports`` lists the layer kinds it can run (``"conv2d"``, ``"linear"``); ``macs_per_cycle``
    is its peak from the parameters; ``pes`` the paper's #PEs (metadata).
    """

    name: str
    cycles: CycleFn
    params: tuple[tuple[str, Any], ...]
    clock_hz: float
    macs_per_cycle: float
    supports: frozenset[str] = frozenset({"conv2d", "linear"})
    pes: int | None = None
    reference: str = ""

    def seconds(self, dims: np.ndarray, stride: np.ndarray) -> np.ndarray:
        """Compute time of loop nests ``dims`` (…, 6) at ``stride`` (…) on one accelerator."""
        return self.cycles(np.asarray(dims, float), np.asarray(stride, float)) / self.clock_hz

    @property
    def peak_flops(self) -> float:
        return 2.0 * self.macs_per_cycle * self.clock_hz


def _ceil(a, b):
    return np.ceil(a / b)


def superlip_cycles(tm: int, tn: int, tr: int, tc: int) -> CycleFn:
    """SuperLIP / Zhang-FPGA'15 tiling, compute-bound (note §3.2, design 1)."""

    def cycles(d: np.ndarray, stride: np.ndarray) -> np.ndarray:
        m, n, r, c, kh, kw = np.moveaxis(d, -1, 0)
        return _ceil(m, tm) * _ceil(n, tn) * _ceil(r, tr) * _ceil(c, tc) * (tr * tc * kh * kw)

    return cycles


def systolic_cycles(row: int, col: int, vec: int) -> CycleFn:
    """Systolic array: rows ↔ C_out, columns ↔ W, vector ↔ C_in (note §3.2, design 2)."""

    def cycles(d: np.ndarray, stride: np.ndarray) -> np.ndarray:
        m, n, r, c, kh, kw = np.moveaxis(d, -1, 0)
        return _ceil(m, row) * _ceil(c, col) * _ceil(n, vec) * r * kh * kw

    return cycles


def winograd_cycles(n: int, pn: int, pm: int, r: int = 3, decompose: bool = False) -> CycleFn:
    """Winograd F(m×m, r×r), m = n − r + 1; strides computed at 1; kernels above r×r infinite
    (unsupported) unless ``decompose`` tiles them by r (module docstring)."""
    m_out = n - r + 1

    def cycles(d: np.ndarray, stride: np.ndarray) -> np.ndarray:
        m, nn, rr, c, kh, kw = np.moveaxis(d, -1, 0)
        tiles = _ceil(rr * stride, m_out) * _ceil(c * stride, m_out)  # stride-s: compute at 1, subsample
        passes = _ceil(kh, r) * _ceil(kw, r)  # 1×1 padded to r×r: one pass
        if not decompose:
            passes = np.where((kh > r) | (kw > r), np.inf, passes)
        return _ceil(nn, pn) * _ceil(m, pm) * tiles * passes

    return cycles


def design_of(accelerator: Accelerator) -> Design | None:
    """The :class:`Design` an accelerator carries in ``attrs["mars_design"]``, or None."""
    design = (getattr(accelerator, "attrs", None) or {}).get("mars_design")
    return design if isinstance(design, Design) else None


def design_accelerator(design: Design, *, memory_gib: Positive = DRAM_GIB, description: str = "") -> Accelerator:
    """An F1 FPGA (1 GB DRAM, PCIe 3.0 x16) configured with ``design``."""
    return Accelerator(
        name=design.name,
        peak_flops=design.peak_flops,
        memory_bytes=gib_to_bytes(memory_gib),
        memory_bandwidth=gBps_to_bytes_per_s(DRAM_GBPS_BYTES),
        network_bandwidth=gbps_to_bytes_per_s(PCIE_GBPS),
        description=description or f"MARS design {design.name} ({design.reference})",
        attrs={"mars_design": design, "clock_hz": design.clock_hz, "design_parameters": dict(design.params)},
    )


Size = ints(1, MAX_DIMENSION)  # a design parameter: PEs along one loop dimension


def _positive(name: str, **values: float) -> None:
    for key, value in values.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise OptmapError(f"design '{name}': {key} must be a number > 0, got {value!r}")


def superlip(*, tm: Size = 64, tn: Size = 7, tr: Size = 7, tc: Size = 14, clock_mhz: Positive = CLOCK_MHZ,
             memory_gib: Positive = DRAM_GIB) -> Accelerator:
    """Design 1, SuperLIP (Jiang et al., TECS 2019): T_m, T_n, T_r, T_c = 64, 7, 7, 14 (Table II)."""
    _positive("superlip", tm=tm, tn=tn, tr=tr, tc=tc, clock_mhz=clock_mhz)
    design = Design("superlip", superlip_cycles(tm, tn, tr, tc), (("tm", tm), ("tn", tn), ("tr", tr), ("tc", tc)),
                    clock_mhz * 1e6, tm * tn, pes=438, reference="[14] SuperLIP, Table II design 1")
    return design_accelerator(design, memory_gib=memory_gib)


def systolic(*, row: Size = 11, col: Size = 13, vec: Size = 8, clock_mhz: Positive = CLOCK_MHZ,
             memory_gib: Positive = DRAM_GIB) -> Accelerator:
    """Design 2, systolic array (Wei et al., DAC 2017): row, col, vec = 11, 13, 8 (Table II)."""
    _positive("systolic", row=row, col=col, vec=vec, clock_mhz=clock_mhz)
    design = Design("systolic", systolic_cycles(row, col, vec), (("row", row), ("col", col), ("vec", vec)),
                    clock_mhz * 1e6, row * col * vec, pes=572, reference="[15] systolic array, Table II design 2")
    return design_accelerator(design, memory_gib=memory_gib)


def winograd(*, n: ints(3, MAX_DIMENSION) = 6, pn: Size = 2, pm: Size = 8, clock_mhz: Positive = CLOCK_MHZ,
             memory_gib: Positive = DRAM_GIB,
             large_kernels: Literal["unsupported", "decompose"] = "unsupported") -> Accelerator:
    """Design 3, Winograd F(4×4, 3×3) (Lu et al., FCCM 2017): n, P_n, P_m = 6, 2, 8 (Table II);
    ``large_kernels`` whether kernels above 3×3 run as ⌈K/3⌉² 3×3 pieces (module docstring)."""
    _positive("winograd", n=n, pn=pn, pm=pm, clock_mhz=clock_mhz)
    if n < 3:
        raise OptmapError(f"design 'winograd': n must be >= 3 (tile of a 3×3 kernel), got {n}")
    m = n - 2
    if large_kernels not in ("unsupported", "decompose"):
        raise OptmapError(f"design 'winograd': large_kernels must be \"unsupported\" or \"decompose\", "
                          f"got {large_kernels!r}")
    design = Design("winograd", winograd_cycles(n, pn, pm, decompose=large_kernels == "decompose"),
                    (("n", n), ("pn", pn), ("pm", pm), ("large_kernels", large_kernels)), clock_mhz * 1e6,
                    m * m * 9 * pn * pm, supports=frozenset({"conv2d"}), pes=576,
                    reference="[16] Winograd, Table II design 3")
    return design_accelerator(design, memory_gib=memory_gib)


def f1_fpga(*, memory_gib: Positive = DRAM_GIB) -> Accelerator:
    """An unconfigured F1 FPGA (Xilinx VU9P): the adaptive device MARS configures with a design.

    Peak = 6,840 DSPs × 2 FLOP × 200 MHz (metadata; MARS times layers by the chosen design).
    """
    return Accelerator(
        name="f1-fpga",
        peak_flops=6840 * 2 * CLOCK_MHZ * 1e6,
        memory_bytes=gib_to_bytes(memory_gib),
        memory_bandwidth=gBps_to_bytes_per_s(DRAM_GBPS_BYTES),
        network_bandwidth=gbps_to_bytes_per_s(PCIE_GBPS),
        description="AWS F1 FPGA (VU9P), 1 GB DRAM as in MARS Sec. VI-A, configured by MARS with a design",
    )


BUILT_IN = {"superlip": superlip, "systolic": systolic, "winograd": winograd}  # registered in __init__.py


def registered_designs(host: Host | None) -> dict[str, Design]:
    """Every accelerator of ``host`` that carries a MARS design, by name (third-party ones
    included); without a host (a model built directly in Python), this plugin's Table II designs."""
    if host is None:
        return {name: design_of(build()) for name, build in BUILT_IN.items()}
    found = {}
    for name in host.names("accelerator"):
        try:
            target = host.get("accelerator", name).resolve()
            design = design_of(target if isinstance(target, Accelerator) else target())
        except OptmapError:
            continue
        if design is not None:
            found[name] = design
    return found


def lookup_designs(names: list[str], host: Host | None) -> tuple[Design, ...]:
    """The designs called ``names`` among ``host``'s accelerators (:func:`registered_designs`), or
    one line naming the unknown one and the known ones."""
    known = registered_designs(host)
    if not names:
        raise OptmapError(f"designs is empty; list at least one of {', '.join(sorted(known))}")
    for name in names:
        if name not in known:
            raise OptmapError(f"designs: unknown design '{name}'{did_you_mean(name, known)} "
                              f"(a design is an accelerator that carries a MARS cycle model)")
    if len(set(names)) != len(names):
        raise OptmapError(f"designs lists a design twice: {names}")
    return tuple(known[name] for name in names)
