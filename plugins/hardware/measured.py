"""The measured accelerator presets, ``presets/<name>.toml``, each read when a problem first names it.

``h100-sxm`` is calibrated from the H100 measurements in ``measurements/h100-sxm/``
(``examples/calibration_report.py`` writes it); ``a100-sxm`` is the same model moved to A100
datasheet figures. The hardware plugin registers every file by its name without reading it
(reading one loads the compute model: about 10 ms of every start-up otherwise); attribute
``h100_sxm`` of this module is the accelerator of ``presets/h100-sxm.toml``.
"""

from __future__ import annotations

from pathlib import Path

from optmap.errors import OptmapError

PRESET_FILES = Path(__file__).parent / "presets"


def attribute(name: str) -> str:
    """This module's attribute for the preset called ``name`` (file ``presets/<name>.toml``)."""
    return name.replace("-", "_")


def preset_names() -> list[str]:
    """The names of the preset files, without reading them."""
    return sorted(path.stem for path in PRESET_FILES.glob("*.toml"))


def __getattr__(name: str):
    for preset in preset_names():  # (the import system asks for __path__ and the like too)
        if attribute(preset) == name:
            from optmap.compute.preset import read_preset

            accelerator = read_preset(PRESET_FILES / f"{preset}.toml")
            if accelerator.name != preset:
                raise OptmapError(f"{PRESET_FILES / preset}.toml: name = \"{accelerator.name}\" must be the file's "
                                  f"name, \"{preset}\", which the hardware plugin registers without reading it")
            globals()[name] = accelerator
            return accelerator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
