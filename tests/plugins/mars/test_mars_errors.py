"""Bad input gets one clear line and exit code 2; a third-party plugin adds a design by registering an accelerator."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from optmap.cli import main
from optmap.errors import OptmapError
from optmap.problem import build_problem

ROOT = Path(__file__).resolve().parents[3]
VGG = ROOT / "problems" / "mars" / "vgg16.toml"


def spec(workload="lenet", **cost):
    return {
        "workload": {"model": workload, "batch": 1, "dtype": "fp16", "phase": "inference"},
        "system": {"topology": "f1-16xlarge", "groups": [{"accelerator": "f1-fpga", "count": 8}]},
        "cost": {"model": "mars", **cost},
        "search": {"engine": "mars-baseline"},
    }


def one_line_exit_2(capsys, args, *needles):
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    for needle in needles:
        assert needle in err[0], (needle, err[0])


def test_unknown_design_name(capsys):
    with pytest.raises(OptmapError, match=r"unknown design 'superlp'; did you mean 'superlip'\?"):
        build_problem(spec(designs=["superlp", "systolic"]))
    one_line_exit_2(capsys, ["run", str(VGG), "--set", 'cost.designs=["winograd", "tpu-v3"]'],
                    "[cost] model 'mars'", "unknown design 'tpu-v3'")


def test_layer_no_design_can_run(capsys):
    with pytest.raises(OptmapError, match=r"layer 'fc1' \(linear\) cannot run on any design \(winograd\)"):
        build_problem(spec(designs=["winograd"], include_fc=True))
    one_line_exit_2(capsys, ["run", str(VGG), "--set", "cost.include_fc=true", "--set", 'cost.designs=["winograd"]'],
                    "layer 'classifier.0' (linear) cannot run on any design")


def test_fixed_mode_needs_designed_devices():
    with pytest.raises(OptmapError, match=r"device 0 is 'f1-fpga', which carries no MARS design"):
        build_problem(spec(adaptive=False))


def test_topology_with_an_isolated_device(tmp_path, capsys, monkeypatch):
    (tmp_path / "mars_lonely_topology.py").write_text(textwrap.dedent('''
        from optmap.hookspecs import hookimpl
        from optmap.plugins.mars.topology import f1_16xlarge

        def lonely(groups):
            """F1 with device 7 unplugged."""
            system = f1_16xlarge(groups)
            graph = system.graph.copy()
            graph.remove_edges_from(list(graph.edges(7)))
            return type(system)(system.devices, system.groups, graph, "lonely")

        @hookimpl
        def optmap_register_topologies(register):
            register("lonely", lonely)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    one_line_exit_2(capsys, ["--plugin", "mars_lonely_topology", "run", str(VGG), "--set", "system.topology=lonely"],
                    "topology 'lonely'", "device 7 cannot reach device 0")


def test_a_third_party_package_adds_a_design(tmp_path):
    # an installed distribution (entry point in group "optmap") registering an accelerator with a Design
    (tmp_path / "optmap_mars_tinyarray.py").write_text(textwrap.dedent('''
        from optmap.hookspecs import hookimpl
        from optmap.plugins.mars.designs import Design, design_accelerator

        def cycles(dims, stride):  # a 16 x 16 output-stationary array: C_out x W in parallel
            import numpy as np
            m, n, r, c, kh, kw = np.moveaxis(dims, -1, 0)
            return np.ceil(m / 16) * np.ceil(c / 16) * n * r * kh * kw

        @hookimpl
        def optmap_register_accelerators(register):
            register("tiny-array", design_accelerator(Design("tiny-array", cycles, (), 200e6, 256)))
    '''))
    dist = tmp_path / "optmap_mars_tinyarray-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: optmap-mars-tinyarray\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[optmap]\ntinyarray = optmap_mars_tinyarray\n")
    out = tmp_path / "result.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "optmap.cli", "run", str(VGG), "--search", "mars-baseline",
                           "--set", 'cost.designs=["tiny-array"]', "--json", str(out), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [row for row in json.loads(out.read_text())["report"]["layers"] if "design" in row]
    assert {row["design"] for row in rows} == {"tiny-array"}
    # conv1 (64, 3, 224, 224, 3, 3) on 4 devices, ES {H, W}: ⌈64/16⌉·⌈112/16⌉·3·112·9 cycles at 200 MHz
    assert rows[0]["compute_s"] == pytest.approx(4 * 7 * 3 * 112 * 9 / 200e6)


@pytest.mark.parametrize("workload", [{"batch": 4}, {"phase": "training"}])
def test_anything_but_one_inference_is_refused(workload):
    """MARS prices the latency of one image (Sec. VI); a batch or training would be silently
    priced as batch-1 inference, so it is refused."""
    bad = spec()
    bad["workload"].update(workload)
    with pytest.raises(OptmapError, match=r"mars prices the latency of one inference \(Sec. VI, batch 1\)"):
        build_problem(bad)
