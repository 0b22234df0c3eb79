"""`Accelerator`: one device kind, in SI units, with free-form attributes for formulations."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from optmap.errors import OptmapError
from optmap.units import (
    bytes_per_s_to_gBps,
    bytes_per_s_to_gbps,
    bytes_to_gib,
    flops_to_tflops,
    gBps_to_bytes_per_s,
    gbps_to_bytes_per_s,
    gib_to_bytes,
    tflops_to_flops,
)

# Spellings of the same number format; peak FLOP/s keys and lookups are normalised through this.
_DTYPE_ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "single": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "float8": "fp8",
    "tensorfloat32": "tf32",
}

DEFAULT_DTYPE_KEY = "default"

def canonical_dtype(dtype: str) -> str:
    """The canonical spelling of a dtype name: ``"bfloat16" → "bf16"``, ``"float32" → "fp32"``."""
    if not isinstance(dtype, str) or not dtype.strip():
        raise OptmapError(f"dtype must be a non-empty string, got {dtype!r}")
    key = dtype.strip().lower()
    return _DTYPE_ALIASES.get(key, key)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_positive(owner: str, name: str, value: Any, *, allow_zero: bool = False) -> float:
    """``value`` as a float, or an OptmapError naming the owner and the field."""
    bound = ">= 0" if allow_zero else "> 0"
    if not _is_number(value) or math.isnan(value) or math.isinf(value):
        raise OptmapError(f"{owner}: {name} must be a finite number {bound}, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise OptmapError(f"{owner}: {name} must be {bound}, got {value!r}")
    return float(value)


# ---------------------------------------------------------------------------------------------
# Accelerators
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accelerator:
    """One accelerator kind. All quantities SI.

    ``peak_flops`` is the peak rate per dtype in FLOP/s. Pass a mapping (``{"bf16": 180e12}``), an
    iterable of ``(dtype, value)`` pairs, or a single number (stored under ``"default"``); it is
    stored as a tuple of pairs so the accelerator stays hashable. A ``"default"`` entry answers
    any dtype without its own entry. ``network_bandwidth`` is the injection bandwidth of one
    accelerator into the network (B/s); ``memory_bandwidth`` is its local memory bandwidth (B/s).

    ``attrs`` holds whatever else a formulation needs to know about the device, free-form and
    read-only by convention: FPGA resources (``dsp``, ``bram_bytes``, ``clock_hz``), a design
    name and its cycle model, measured efficiency tables. Plugins may also subclass
    ``Accelerator`` for typed extra fields.
    """

    name: str
    peak_flops: tuple[tuple[str, float], ...]
    memory_bytes: float
    memory_bandwidth: float
    network_bandwidth: float
    power_watts: float | None = None
    description: str = ""
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise OptmapError(f"accelerator name must be a non-empty string, got {self.name!r}")
        owner = f"accelerator '{self.name}'"
        set_ = object.__setattr__
        set_(self, "peak_flops", self._normalise_peak(owner, self.peak_flops))
        for name in ("memory_bytes", "memory_bandwidth", "network_bandwidth"):
            set_(self, name, _check_positive(owner, name, getattr(self, name)))
        if self.power_watts is not None:
            set_(self, "power_watts", _check_positive(owner, "power_watts", self.power_watts))
        if not isinstance(self.description, str):
            raise OptmapError(f"{owner}: description must be a string")
        if not isinstance(self.attrs, Mapping) or not all(isinstance(k, str) for k in self.attrs):
            raise OptmapError(f"{owner}: attrs must be a table with string keys, got {self.attrs!r}")
        set_(self, "attrs", dict(self.attrs))

    @staticmethod
    def _normalise_peak(owner: str, peak: Any) -> tuple[tuple[str, float], ...]:
        if _is_number(peak):
            pairs: Iterable = [(DEFAULT_DTYPE_KEY, peak)]
        elif isinstance(peak, Mapping):
            pairs = peak.items()
        else:
            try:
                pairs = [tuple(p) for p in peak]
            except TypeError:
                raise OptmapError(
                    f"{owner}: peak_flops must be a number, a dtype → FLOP/s mapping or "
                    f"(dtype, FLOP/s) pairs, got {peak!r}"
                ) from None
        out: dict[str, float] = {}
        for pair in pairs:
            if len(pair) != 2:
                raise OptmapError(f"{owner}: peak_flops entry {pair!r} is not a (dtype, FLOP/s) pair")
            dtype, value = pair
            key = canonical_dtype(dtype)
            if key in out:
                raise OptmapError(f"{owner}: peak_flops lists dtype '{key}' twice")
            out[key] = _check_positive(owner, f"peak_flops['{key}']", value)
        if not out:
            raise OptmapError(f"{owner}: peak_flops must list at least one dtype")
        return tuple(out.items())

    @classmethod
    def from_datasheet(
        cls,
        name: str,
        *,
        peak_tflops: float | Mapping[str, float],
        memory_gib: float,
        memory_bandwidth_gBps: float,  # noqa: N803 - B = bytes
        network_gbps: float,
        power_watts: float | None = None,
        description: str = "",
        attrs: Mapping[str, Any] | None = None,
    ) -> "Accelerator":
        """Build from datasheet units: TFLOP/s, GiB, GB/s (bytes) memory, Gb/s (bits) network."""
        owner = f"accelerator '{name}'"
        if _is_number(peak_tflops):
            peak: Any = tflops_to_flops(_check_positive(owner, "peak_tflops", peak_tflops))
        elif isinstance(peak_tflops, Mapping):
            peak = {
                k: tflops_to_flops(_check_positive(owner, f"peak_tflops['{k}']", v))
                for k, v in peak_tflops.items()
            }
        else:
            raise OptmapError(f"{owner}: peak_tflops must be a number or a dtype → TFLOP/s table")
        return cls(
            name=name,
            peak_flops=peak,
            memory_bytes=gib_to_bytes(_check_positive(owner, "memory_gib", memory_gib)),
            memory_bandwidth=gBps_to_bytes_per_s(
                _check_positive(owner, "memory_bandwidth_gBps", memory_bandwidth_gBps)
            ),
            network_bandwidth=gbps_to_bytes_per_s(_check_positive(owner, "network_gbps", network_gbps)),
            power_watts=power_watts,
            description=description,
            attrs=attrs or {},
        )

    def datasheet(self) -> dict[str, Any]:
        """This accelerator in datasheet units: the keyword arguments of :meth:`from_datasheet`."""
        sheet: dict[str, Any] = {
            "peak_tflops": {k: flops_to_tflops(v) for k, v in self.peak_flops},
            "memory_gib": bytes_to_gib(self.memory_bytes),
            "memory_bandwidth_gBps": bytes_per_s_to_gBps(self.memory_bandwidth),
            "network_gbps": bytes_per_s_to_gbps(self.network_bandwidth),
            "description": self.description,
        }
        if self.power_watts is not None:
            sheet["power_watts"] = self.power_watts
        if self.attrs:
            sheet["attrs"] = dict(self.attrs)
        return sheet

    def with_datasheet(self, **changes: Any) -> "Accelerator":
        """A copy with some datasheet figures changed (``memory_gib=40``); ``attrs`` are merged."""
        sheet = self.datasheet()
        attrs = {**sheet.pop("attrs", {}), **(changes.pop("attrs", None) or {})}
        name = changes.pop("name", self.name)
        sheet.update({k: v for k, v in changes.items() if v is not None})
        built = Accelerator.from_datasheet(name, **sheet, attrs=attrs)
        return dataclasses.replace(self, **{f: getattr(built, f) for f in _BASE_FIELDS})  # subclass fields kept

    @property
    def peak_flops_by_dtype(self) -> Mapping[str, float]:
        """Read-only ``dtype → FLOP/s`` view of :attr:`peak_flops`."""
        return MappingProxyType(dict(self.peak_flops))

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes with a peak rate (``"default"`` included if present)."""
        return tuple(k for k, _ in self.peak_flops)

    def flops_per_s(self, dtype: str = DEFAULT_DTYPE_KEY) -> float:
        """Peak FLOP/s for ``dtype`` (aliases such as ``bfloat16`` accepted), falling back to the
        ``"default"`` entry; an OptmapError listing the available dtypes otherwise."""
        key = canonical_dtype(dtype)
        table = dict(self.peak_flops)
        if key in table:
            return table[key]
        if DEFAULT_DTYPE_KEY in table:
            return table[DEFAULT_DTYPE_KEY]
        raise OptmapError(
            f"accelerator '{self.name}' has no peak FLOP/s for dtype '{key}'; available: "
            f"{', '.join(table)} (choose one of those, or give the accelerator a 'default' entry)"
        )




_BASE_FIELDS = tuple(f.name for f in fields(Accelerator))
