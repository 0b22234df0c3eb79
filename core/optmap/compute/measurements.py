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
    fields = ("family", "group", "label", "op", "shape", "passes", "seconds")
    where = f"measurements '{path}': not an optmap measurement file"
    if not isinstance(data, dict):
        raise OptmapError(f"{where} (expected a JSON object)")
    missing = [key for key in ("device", "dtype", "ceilings", "rows") if key not in data]
    if missing:
        raise OptmapError(f"{where} (no '{missing[0]}' entry)")
    if not isinstance(data["rows"], list) or not isinstance(data["ceilings"], dict):
        raise OptmapError(f"{where} ('rows' must be a list and 'ceilings' an object)")
    samples = []
    for i, row in enumerate(data["rows"]):
        bad = not isinstance(row, dict) or [k for k in fields if k not in row] or \
            [k for k in row if k not in (*fields, "split")]
        if bad:
            what = "not an object" if not isinstance(row, dict) else f"entry '{bad[0]}' missing or unknown"
            raise OptmapError(f"{where} (row {i}: {what}; a row has {', '.join(fields)} and optionally split)")
        samples.append(Sample(**row))
    return Measurements(str(data["device"]), str(data["dtype"]), dict(data["ceilings"]), samples)
