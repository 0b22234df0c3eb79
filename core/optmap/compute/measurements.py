"""Timed operations: the samples a calibration is fitted to and checked against.

A measurement file (JSON, what ``optmap calibrate`` writes) holds the device, the dtype, the
ceilings and one row per timed operation::

    {"device": "...", "dtype": "bf16", "ceilings": {"gemm_tflops": ..., "copy_gBps": ...,
     "kernel_us": ..., "dispatch_us": ...},
     "rows": [{"family": "conv-batch", "group": "vgg16", "label": "features.2 /4", "split": 4,
               "op": "conv2d", "shape": {"batch": 64, "cin": 64, ...}, "passes": "training",
               "seconds": 0.0007}]}

``family`` names what was varied (``gemm``, ``conv-batch``, ``conv-in``, ``conv-out``), ``group``
the unit held out together when checking a fit (a network, a hidden size), ``split`` how many
ways the operation was cut (1: unsplit). ``seconds`` is timed around the operation alone
(:func:`optmap.compute.isolated_time`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1) + "\n")


def read_measurements(path: str | Path) -> Measurements:
    """Read a measurement file written by ``optmap calibrate``."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise OptmapError(f"measurements '{path}': cannot read it ({exc})") from None
    try:
        samples = [Sample(**row) for row in data["rows"]]
        return Measurements(str(data["device"]), str(data["dtype"]), dict(data["ceilings"]), samples)
    except (KeyError, TypeError) as exc:
        raise OptmapError(f"measurements '{path}': not an optmap measurement file ({exc})") from None
