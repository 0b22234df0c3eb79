"""Built-in hardware plugin: accelerator presets and topology builders.

Accelerators (sources in :mod:`optmap.plugins.hardware.accelerators`): ``tpu-v2``, ``tpu-v3``
(AccPar Table 7 and Sec. 6.1), ``v100``, ``a100``, ``titan-rtx``, ``h100``, ``b200``, ``gb200`` (NVIDIA datasheets); and
the measured presets in ``presets/*.toml`` (sources in each file): ``h100-sxm``, calibrated from
the H100 measurements in ``measurements/h100-sxm/`` (``examples/calibration_report.py`` writes
it), and ``a100-sxm``, the same model moved to A100 datasheet figures.

Topologies (:mod:`optmap.plugins.hardware.topologies`): ``fully-connected``, ``ring``, ``chain``,
``mesh2d``, ``torus2d``, ``hierarchical``. Problem-file options use Gb/s (``*_gbps``, G = 1e9
bit/s) for bandwidth and µs (``*_us``) for latency.
"""

from pathlib import Path

from optmap.compute.preset import read_preset
from optmap.hookspecs import hookimpl
from optmap.plugins.hardware.accelerators import PRESETS
from optmap.plugins.hardware.topologies import TOPOLOGIES

PRESET_FILES = Path(__file__).parent / "presets"


@hookimpl
def optmap_register_accelerators(register):
    for name, accelerator in PRESETS.items():
        register(name, accelerator)
    for path in sorted(PRESET_FILES.glob("*.toml")):
        accelerator = read_preset(path)
        register(accelerator.name, accelerator)


@hookimpl
def optmap_register_topologies(register):
    for name, build in TOPOLOGIES.items():
        register(name, build)
