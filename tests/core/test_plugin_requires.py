"""Plugins that need plugins: declared with optmap_plugin_requires, left out (and refused in one
line naming both) when what they need is disabled, failed or absent; default engines declared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.problem import build_problem
from optmap.problem.search_section import default_engine
from optmap.requirements import unmet
from optmap.run import solve
from optmap.space import DesignSpace, integer

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "tests" / "data" / "test_plugins"
_SCRIPT = Path(sys.executable).with_name("optmap")
OPTMAP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "optmap.cli"]


@pytest.fixture
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


def test_unmet_requirements_by_hand():
    # c needs b, b needs a: a disabled leaves b out, and c because of b (a chosen exclusion);
    # d needs e, which failed; f needs g, which nobody installed; h needs a loaded plugin.
    needs = {"b": ("a",), "c": ("b",), "d": ("e",), "f": ("g",), "h": ("c", "x")}
    left = unmet(needs, loaded={"b", "c", "d", "f", "x"}, disabled={"a"}, failed={"e"})
    assert set(left) == {"b", "c", "d", "f"}  # h is not loaded: nothing to leave out
    assert left["b"].reason == ("plugin 'b' needs plugin 'a', which is disabled "
                                "(-p no:a or OPTMAP_DISABLE_PLUGINS)") and left["b"].chosen
    assert left["c"].reason.startswith("plugin 'c' needs plugin 'b', which is left out (plugin 'b' needs")
    assert left["c"].chosen
    assert left["d"].reason == "plugin 'd' needs plugin 'e', which failed to load" and not left["d"].chosen
    assert left["f"].reason == "plugin 'f' needs plugin 'g', which is not installed; install it"


def test_disabling_transformer_leaves_its_dependents_out():
    host = load_host(disabled=("transformer",))
    assert set(host.left_out) == {"acctfm", "llm"}  # the two built-ins that declare it
    assert host.withheld["cost_model"]["acctfm"] == "acctfm"
    assert host.withheld["topology"]["dgx-a100"] == "llm"
    with pytest.raises(OptmapError, match=r"cost model 'acctfm' is unavailable: plugin 'acctfm' needs plugin "
                                          r"'transformer', which is disabled"):
        host.get("cost_model", "acctfm")
    assert "acctfm" not in host.failures and host.warnings() == []  # the user's choice is no warning
    with pytest.raises(OptmapError, match=r"unknown workload 'transformer'.*plugin 'transformer' is disabled "
                                          r"\(-p no:transformer\), and plugin\(s\) 'acctfm', 'llm' that need it"):
        host.get("workload", "transformer")
    assert "acctfm" in load_host().registries["cost_model"]  # and nothing of it sticks to other hosts


def test_a_problem_using_a_left_out_plugin_is_refused_naming_both():
    spec = {"workload": {"model": "transformer", "preset": "TF8", "batch": 8},
            "system": {"topology": "ring", "groups": [{"accelerator": "v100", "count": 2}]},
            "cost": {"model": "acctfm"}}
    with pytest.raises(OptmapError) as info:
        build_problem(spec, disabled=("transformer",))
    message = str(info.value)
    assert message.startswith("problem: [cost] model: cost model 'acctfm' is unavailable")
    assert "'transformer'" in message and "\n" not in message


def test_an_explicit_plugin_that_lacks_a_requirement_is_fatal(plugin_path):
    with pytest.raises(OptmapError, match=r"--plugin 'optmap_testplug_needs': plugin 'optmap_testplug_needs' "
                                          r"needs plugin 'transformer', which is disabled"):
        load_host(("optmap_testplug_needs",), ("transformer",))
    assert "needs-transformer" in load_host(("optmap_testplug_needs",)).registries["cost_model"]
    with pytest.raises(OptmapError, match=r"answered optmap_plugin_requires with 'transformer'; return a list"):
        load_host(("optmap_testplug_bad_requires",))


def test_cli_refuses_acctfm_without_transformer_in_one_line():
    # the check: exit 2, exactly one `error:` line that names transformer, no traceback
    for args, env in ((["-p", "no:transformer"], {}), ([], {"OPTMAP_DISABLE_PLUGINS": "transformer"})):
        proc = subprocess.run([*OPTMAP, *args, "run", "problems/acctfm/tf8.toml"], cwd=ROOT, capture_output=True,
                              text=True, timeout=120, env={**os.environ, **env})
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "'transformer'" in errors[0] and "'acctfm'" in errors[0], proc.stderr


class _Space:
    def __init__(self, size: int) -> None:
        self.space = DesignSpace([integer("x", 0, size - 1)])


def test_default_engine_comes_from_declarations(plugin_path):
    import importlib.util

    host = load_host()
    # generic: exhaustive declares spaces of up to 1,000,000 points, ga (with pymoo) larger ones
    assert default_engine(_Space(1_000_000), host) == "exhaustive"
    large = "ga" if importlib.util.find_spec("pymoo") else "random"
    assert default_engine(_Space(1_000_001), host) == large
    third = load_host(("optmap_testplug_default_engine",))  # preference 5 for up to 100 points
    assert default_engine(_Space(100), third) == "first-point"
    assert default_engine(_Space(101), third) == "exhaustive"
    with pytest.raises(OptmapError, match=r"registered workload 'defaulted' with default=DefaultFor.*only a search "
                                          r"engine declares one"):
        load_host(("optmap_testplug_bad_default",))


def test_resume_lists_the_engines_that_declare_it(tmp_path):
    spec = {"workload": {"model": "lenet", "batch": 8, "dtype": "bf16"},
            "system": {"topology": "fully-connected", "groups": [{"accelerator": "tpu-v3", "count": 2}]},
            "cost": {"model": "accpar"}}
    with pytest.raises(OptmapError, match=r"engine 'exhaustive' cannot resume .*resumable engines: ga, optuna$"):
        solve(build_problem(spec), engine="exhaustive", checkpoint=tmp_path / "c.json", resume=True)
