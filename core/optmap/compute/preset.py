"""Accelerator preset files: the keyword arguments of ``Accelerator.from_datasheet``.

A preset file (TOML) is what ``optmap calibrate`` writes and what a problem file can name
(``[accelerators.NAME] file = "mygpu.toml"``)::

    name = "mygpu"                       # optional: defaults to the file's stem
    description = "..."
    peak_tflops = { bf16 = 989.4 }       # a number, or a dtype → TFLOP/s table
    memory_gib = 80
    memory_bandwidth_gBps = 3350         # GB/s (bytes)
    network_gbps = 7200                  # Gb/s (bits)
    power_watts = 700                    # optional

    [attrs.calibration]                  # optional: without it the device is priced at its peak
    dtype = "bf16"
    math_tflops = 730.0                  # ... every key of Calibration.to_table

    [attrs.kernels]                      # optional: measured kernel ceilings (optmap.compute.kernels)
    dtype = "bf16"
    gemm_tflops = 774.2

The keys are exactly the keyword arguments of :meth:`Accelerator.from_datasheet`; the measured
calibration and kernel ceilings ride in ``attrs``. :func:`read_preset` builds the accelerator (and checks the
calibration table), :func:`write_preset` writes one.
"""

from __future__ import annotations

import inspect
import tomllib
from pathlib import Path
from typing import Any, Mapping

from optmap.errors import OptmapError
from optmap.system import Accelerator

from .calibration import Calibration, calibration_of, with_calibration
from .kernels import kernels_of

DATASHEET_KEYS = tuple(p for p in inspect.signature(Accelerator.from_datasheet).parameters if p not in ("cls", "name"))


def accelerator_from_table(table: Mapping[str, Any], name: str, where: str) -> Accelerator:
    """An accelerator from a preset's keys (datasheet fields, optional ``[attrs.calibration]``)."""
    valid = ("name", *DATASHEET_KEYS)
    unknown = sorted(set(table) - set(valid))
    if unknown:
        raise OptmapError(f"{where}: unknown key '{unknown[0]}'; valid keys: {', '.join(valid)}")
    fields = {k: v for k, v in table.items() if k in DATASHEET_KEYS}
    required = [k for k, p in inspect.signature(Accelerator.from_datasheet).parameters.items()
                if k in DATASHEET_KEYS and p.default is inspect.Parameter.empty]
    missing = [k for k in required if k not in fields]
    if missing:
        raise OptmapError(f"{where}: missing key '{missing[0]}' (a preset lists {', '.join(required)})")
    accelerator = Accelerator.from_datasheet(str(table.get("name", name)), **fields)
    calibration = calibration_of(accelerator)  # checks the table once, here
    kernels_of(accelerator, where)  # and the measured kernel ceilings, where the preset is named
    return with_calibration(accelerator, calibration) if calibration is not None else accelerator


def read_preset(path: str | Path) -> Accelerator:
    """The accelerator described by the preset file at ``path``."""
    path = Path(path)
    try:
        table = tomllib.loads(path.read_text())
    except OSError as exc:
        raise OptmapError(f"accelerator file '{path}': cannot read it ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptmapError(f"accelerator file '{path}': not valid TOML ({exc})") from None
    return accelerator_from_table(table, path.stem, f"accelerator file '{path}'")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to TOML")


def preset_text(fields: Mapping[str, Any], calibration: Calibration | None, header: str = "",
                kernels: Mapping[str, Any] | None = None) -> str:
    """The TOML text of a preset: ``fields`` (name + datasheet keys), then ``[attrs.calibration]``
    and ``[attrs.kernels]`` (:mod:`optmap.compute.kernels`)."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()] if header else []
    lines += [f"{k} = {_toml_value(v)}" for k, v in fields.items() if v is not None]
    if calibration is not None:
        lines += ["", "[attrs.calibration]"] + [f"{k} = {_toml_value(v)}" for k, v in calibration.to_table().items()]
    if kernels:
        lines += ["", "[attrs.kernels]"] + [f"{k} = {_toml_value(v)}" for k, v in kernels.items()]
    return "\n".join(lines) + "\n"


def write_preset(path: str | Path, fields: Mapping[str, Any], calibration: Calibration | None, header: str = "",
                 kernels: Mapping[str, Any] | None = None) -> Accelerator:
    """Write a preset file and return the accelerator it describes (read back, so it round-trips)."""
    return save_preset(path, fields, calibration, header, kernels)[1]


def save_preset(path: str | Path, fields: Mapping[str, Any], calibration: Calibration | None,
                header: str = "", kernels: Mapping[str, Any] | None = None) -> tuple[Path, Accelerator]:
    """Write a preset file through :func:`optmap.output.save` (atomic; a fall-back folder when
    ``path`` cannot be written): the path used and the accelerator read back from it."""
    from optmap.output import save

    allowed = {"name", *DATASHEET_KEYS} - {"attrs"}  # the calibration is written as [attrs.calibration]
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise OptmapError(f"preset: unknown datasheet field '{unknown[0]}'; valid: {', '.join(DATASHEET_KEYS)}")
    written = save(path, preset_text(fields, calibration, header, kernels), what="preset")
    return written, read_preset(written)
