"""The plugin host: broken plugins give one line naming the plugin at fault and exit code 2.

The broken plugin modules live in ``tests/data/test_plugins`` (each docstring says what is wrong);
subprocesses get that folder on PYTHONPATH, in-process tests on ``sys.path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from optmap.errors import OptmapError
from optmap.host import Entry, call_with_options, load_host

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "tests" / "data" / "test_plugins"
BROKEN_DIST = ROOT / "tests" / "data" / "test_plugins_broken_dist"
_SCRIPT = Path(sys.executable).with_name("optmap")  # the console script users run
OPTMAP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "optmap.cli"]

PROBLEM = """\
name = "host test"
[workload]
model = "lenet"
batch = 8
dtype = "bf16"
[system]
topology = "{topology}"
[[system.groups]]
accelerator = "tpu-v3"
count = 2
[cost]
model = "{cost}"
[search]
engine = "exhaustive"
"""


def optmap_cli(*args: str, path: Path = PLUGINS, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(path), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([*OPTMAP, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], f"{needle!r} missing from: {lines[0]}"
    return lines[0]


def write_problem(tmp_path: Path, topology: str = "fully-connected", cost: str = "accpar") -> Path:
    path = tmp_path / "problem.toml"
    path.write_text(PROBLEM.format(topology=topology, cost=cost))
    return path


# loading plugins


def test_duplicate_registration_names_both_plugins():
    proc = optmap_cli("--plugin", "optmap_testplug_duplicate", "plugins")
    assert_one_line_error(proc, "plugin 'optmap_testplug_duplicate'", "workload 'vgg11'", "plugin 'zoo'",
                          "already registered")


def test_plugin_that_does_not_exist():
    proc = optmap_cli("--plugin", "nonexistent.module", "plugins")
    assert_one_line_error(proc, "--plugin 'nonexistent.module' could not be imported", "ModuleNotFoundError")


def test_plugin_that_raises_at_import():
    proc = optmap_cli("--plugin", "optmap_testplug_broken_import", "plugins")
    assert_one_line_error(proc, "--plugin 'optmap_testplug_broken_import'", "RuntimeError",
                          "this plugin is broken on purpose")


def test_plugin_that_raises_at_import_through_validate(tmp_path: Path):
    proc = optmap_cli("--plugin", "optmap_testplug_broken_import", "validate", str(write_problem(tmp_path)))
    assert_one_line_error(proc, "optmap_testplug_broken_import", "RuntimeError")


def test_installed_entry_point_that_does_not_import(tmp_path: Path):
    """A third-party package whose entry point is broken: named with its distribution in one warning
    line, left out, and every other command still works (issue 9: named, not fatal)."""
    proc = optmap_cli("plugins", path=BROKEN_DIST)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: "), proc.stderr
    for needle in ("plugin 'broken-dist'", "optmap-testplug-broken-dist 0.1", "ModuleNotFoundError", "fix or uninstall",
                   "-p no:broken-dist"):
        assert needle in lines[0], needle
    assert "broken-dist" in proc.stdout and "vgg16" in proc.stdout  # listed as failed, the rest as usual
    proc = optmap_cli("validate", str(write_problem(tmp_path)), path=BROKEN_DIST)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr
    # disabled: no warning at all
    proc = optmap_cli("plugins", "-p", "no:broken-dist", path=BROKEN_DIST)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_hook_that_raises_names_the_plugin():
    proc = optmap_cli("--plugin", "optmap_testplug_hook_raises", "plugins")
    assert_one_line_error(proc, "plugin 'optmap_testplug_hook_raises' raised in optmap_register_topologies",
                          "ValueError: cannot read topology catalogue")


def test_misspelt_hook_gets_a_suggestion():
    proc = optmap_cli("--plugin", "optmap_testplug_typo_hook", "plugins")
    assert_one_line_error(proc, "unknown hook 'optmap_register_workload'", "did you mean 'optmap_register_workloads'?")


def test_module_without_hooks():
    proc = optmap_cli("--plugin", "optmap_testplug_no_hooks", "plugins")
    assert_one_line_error(proc, "--plugin 'optmap_testplug_no_hooks'", "defines no optmap hooks",
                          "@optmap.hookspecs.hookimpl")


# using plugins


def test_factory_that_raises_names_section_and_plugin(tmp_path: Path):
    path = write_problem(tmp_path, topology="exploding")
    proc = optmap_cli("--plugin", "optmap_testplug_bad_factory", "validate", str(path))
    assert_one_line_error(proc, str(path), "[system] topology 'exploding'", "plugin 'optmap_testplug_bad_factory'",
                          "ZeroDivisionError: float division by zero with a second line")


def test_factory_that_returns_the_wrong_type(tmp_path: Path):
    path = write_problem(tmp_path, topology="not-a-system")
    proc = optmap_cli("--plugin", "optmap_testplug_bad_factory", "validate", str(path))
    assert_one_line_error(proc, "[system] topology 'not-a-system'", "plugin 'optmap_testplug_bad_factory' returned int",
                          "optmap.system.System")


def test_entry_registered_by_a_path_that_does_not_import(tmp_path: Path):
    path = write_problem(tmp_path, cost="ghost")
    proc = optmap_cli("--plugin", "optmap_testplug_bad_factory", "validate", str(path))
    assert_one_line_error(proc, "[cost] model 'ghost'", "plugin 'optmap_testplug_bad_factory'",
                          "optmap_testplug_bad_factory_missing:GhostCostModel", "ModuleNotFoundError")
    # listing the plugins still works, and says what is wrong with that entry
    proc = optmap_cli("--plugin", "optmap_testplug_bad_factory", "plugins")
    assert proc.returncode == 0, proc.stderr
    assert "ghost" in proc.stdout and "exploding" in proc.stdout


def test_unknown_engine_on_the_command_line_suggests_one():
    host = load_host()
    problem = ROOT / "problems" / "accpar" / "homog-lenet.toml"
    proc = optmap_cli("run", str(problem), "--search", "exhaustiv")
    assert_one_line_error(proc, "unknown search engine 'exhaustiv'", "did you mean 'exhaustive'?")
    proc = optmap_cli("run", str(problem), "--search", "gaa")
    expected = "did you mean 'ga'?" if "ga" in host.registries["search_engine"] else "valid names:"
    assert_one_line_error(proc, "unknown search engine 'gaa'", expected)


# the host in-process


@pytest.fixture
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


def test_load_host_errors_in_process(plugin_path):
    with pytest.raises(OptmapError, match="plugin 'optmap_testplug_duplicate' registers workload 'vgg11'.*'zoo'"):
        load_host(("optmap_testplug_duplicate",))
    with pytest.raises(OptmapError, match="raised in optmap_register_topologies"):
        load_host(("optmap_testplug_hook_raises",))


def test_plugin_loaded_twice_is_registered_once(plugin_path):
    host = load_host(("optmap_testplug_bad_factory", "optmap_testplug_bad_factory", "optmap.plugins.zoo"))
    assert host.registries["topology"]["exploding"].plugin == "optmap_testplug_bad_factory"
    assert host.registries["workload"]["vgg11"].plugin == "zoo"


def test_unknown_name_suggests_or_lists():
    host = load_host()
    with pytest.raises(OptmapError, match=r"unknown topology 'rnig'; did you mean 'ring'\?"):
        host.get("topology", "rnig")
    with pytest.raises(OptmapError, match="unknown cost model 'zzz'; valid names: .*accpar"):
        host.get("cost_model", "zzz")


def test_call_with_options_messages():
    def build(groups, *, bandwidth_gbps: float = 1.0, shape: list[int] | None = None) -> str:
        """A builder."""
        if bandwidth_gbps > 100:
            raise OptmapError("topology 'demo': bandwidth_gbps too high")
        if bandwidth_gbps == 42:
            raise KeyError("multi\nline")
        return "built"

    what = "f.toml: [system] topology 'demo'"
    assert call_with_options(what, build, {"bandwidth_gbps": 2}, []) == "built"
    with pytest.raises(OptmapError, match=r"unknown key 'bandwidth'; did you mean 'bandwidth_gbps'\? "
                                          r"valid keys: bandwidth_gbps, groups, shape, topology$"):
        call_with_options(what, build, {"bandwidth": 2}, [], section_keys=("topology", "groups"))
    with pytest.raises(OptmapError, match=r"key 'shape\[1\]': input should be a valid integer.*got 'x'$"):
        call_with_options(what, build, {"shape": [2, "x"]}, [])
    with pytest.raises(OptmapError, match="key 'bandwidth_gbps' must be a number, got true"):
        call_with_options(what, build, {"bandwidth_gbps": True}, [])
    # the plugin's own prefix is not repeated after the section's
    with pytest.raises(OptmapError) as info:
        call_with_options(what, build, {"bandwidth_gbps": 1000}, [])
    assert str(info.value) == "f.toml: [system] topology 'demo': bandwidth_gbps too high"
    with pytest.raises(OptmapError) as info:
        call_with_options(what, build, {"bandwidth_gbps": 42}, [], plugin="demo-plugin")
    assert str(info.value) == "f.toml: [system] topology 'demo' (plugin 'demo-plugin') raised KeyError: 'multi\\nline'"


def test_summary_reads_docstrings_without_importing():
    """Entries registered by import path get a summary from the source, without an import."""
    code = (
        "import sys\n"
        "from optmap.host import load_host\n"
        "host = load_host()\n"
        "rows = [(e.name, e.summary) for r in host.registries.values() for e in r.values()]\n"
        "assert all(s for _, s in rows), [n for n, s in rows if not s]\n"
        "lazy = [e.target.partition(':')[0] for r in host.registries.values() for e in r.values()\n"
        "        if isinstance(e.target, str)]\n"
        "print(sorted({m for m in lazy if m in sys.modules}))\n"
        "print(sorted(m for m in ('pymoo', 'optuna', 'dask', 'matplotlib', 'pydantic') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    imported, heavy = proc.stdout.splitlines()
    assert heavy == "[]"
    assert imported == "[]"


def test_summary_of_values_and_broken_paths():
    class Preset:
        description = "A preset accelerator\nwith two lines"

    assert Entry("accelerator", "x", "p", "", Preset()).summary == "A preset accelerator with two lines"
    broken = Entry("cost_model", "ghost", "p", "", "optmap_no_such_module:Ghost")
    assert broken.summary.startswith("(cannot import: ModuleNotFoundError")
