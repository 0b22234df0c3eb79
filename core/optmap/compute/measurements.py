"""Timed operations: the samples a calibration is fitted to and checked against.

A measurement file (JSON, what ``optmap calibrate`` writes) holds the device, the dtype, the
ceilings and one row per timed operation::

    {"device": "...", "dtype": "bf16", "ceilings": {"gemm_flops": ..., "copy_bandwidth": ...,
     "kernel_s": ..., "memory_bytes": ..., "torch": "2.5.1"},
     "rows": [{"family": "conv-batch", "group": "vgg16", "label": "features.2 /4", "split": 4,
               "op": "conv2d", "shape": {"batch": 64, "cin": 64, ...}, "passes": "training",
               "seconds": 0.0007}]}

``family`` names what was varied (``gemm``, ``conv-batch``, ``conv-in``, ``conv-out``), ``group``
the unit held out together when checking a fit (a network, a hidden size), ``split`` how many
ways the operation was cut (1: unsplit). ``seconds`` is timed around the operation alone
(:func:`optmap.compute.isolated_time`). :func:`read_measurements` checks the whole file against
:class:`MeasurementFile` before anything is fitted.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from optmap.errors import OptmapError


@dataclass(frozen=True)
class Sample:
    """One timed operation."""

    family: str
    group: str
    label: str
    op: str
    shape: dict[str, Any] = field(hash=False)
    passes: str
    seconds: float
    split: int = 1


@dataclass
class Measurements:
    """A device's ceilings and timed operations."""

    device: str
    dtype: str
    ceilings: dict[str, float]
    samples: list[Sample]

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "dtype": self.dtype, "ceilings": self.ceilings,
                "rows": [asdict(s) for s in self.samples]}

    def write(self, path: str | Path) -> Path:
        """Write the file through :func:`optmap.output.save` (atomic, a fall-back folder); the path used."""
        from optmap.output import json_text, save

        return save(path, json_text(self.to_json()) + "\n", what="measurements")


# Plausibility bounds, so a typo (0, 1e300, 1e-300) is refused rather than fitted: the ceilings
# within the ranges the fit searches (optmap.compute.fit.FITTED: 1e6 to 1e17 FLOP/s, 1e6 to 1e15
# B/s), a kernel's time 1 ns to 1 s, a timing 1 ns to 1e6 s, a size at most 1e15 elements.
MAX_SIZE, MIN_SECONDS, MAX_SECONDS = 1e15, 1e-9, 1e6
SHAPE_FLAGS = ("aligned", "causal")  # true/false entries of a shape; every other entry is a size > 0


def _between(least: float, most: float):
    return Annotated[float, Field(ge=least, le=most)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class CeilingsPart(BaseModel):
    """The measured ceilings a fit starts from (other entries, such as the torch version, kept)."""

    model_config = ConfigDict(strict=True, extra="allow")
    gemm_flops: _between(1e6, 1e17)
    copy_bandwidth: _between(1e6, 1e15)
    kernel_s: _between(MIN_SECONDS, 1.0)
    memory_bytes: _between(1e6, 1e18)


class SamplePart(_Strict):
    family: str
    group: str
    label: str
    op: str
    shape: dict[str, Any]
    passes: str
    seconds: _between(MIN_SECONDS, MAX_SECONDS)
    split: Annotated[int, Field(ge=1)] = 1

    @pydantic.model_validator(mode="after")
    def _shape_prices(self):
        """Sizes where sizes go, and an op, passes and shape keys the compute model prices."""
        for key, value in self.shape.items():
            flag = key in SHAPE_FLAGS
            size = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MAX_SIZE
            if (flag and not isinstance(value, bool)) or (not flag and not size):
                want = "true or false" if flag else f"a size > 0 and <= {MAX_SIZE:g}"
                raise ValueError(f"shape.{key}: expected {want}, got {json.dumps(value)}")
        from optmap.compute.lowering import lower

        try:
            lower(self.op, self.shape, self.passes)
        except OptmapError as exc:
            raise ValueError(" ".join(str(exc).removeprefix("compute: ").split())) from None
        return self


class MeasurementFile(_Strict):
    """What ``optmap calibrate`` writes next to its preset (module docstring)."""

    device: str
    dtype: Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
    ceilings: CeilingsPart
    rows: Annotated[list[SamplePart], Field(min_length=1)]


def read_measurements(path: str | Path) -> Measurements:
    """Read a measurement file written by ``optmap calibrate``, validated whole
    (:class:`MeasurementFile`): one line naming the file, the key and what was expected."""
    from optmap.schemas import check, read_json

    where = f"measurements '{path}'"
    data = read_json(path, "measurement file")
    check(MeasurementFile, data, where)
    samples = [Sample(**row) for row in data["rows"]]
    return Measurements(data["device"], data["dtype"], dict(data["ceilings"]), samples)
