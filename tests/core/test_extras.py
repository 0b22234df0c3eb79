"""A missing dependency is one ``error:`` line with the ``pip install`` to run (exit 2), and
``optmap plugins --check`` flags the plugins that need it (issue 27, part 2).

A module is made missing the way Python sees an uninstalled one: ``sys.modules[name] = None``
makes ``import name`` raise ModuleNotFoundError and ``importlib.util.find_spec(name)`` return None.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from optmap.cli import main
from optmap.extras import DEPENDENCIES, EXTRAS, install_command

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "problems" / "quickstart.toml")


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def test_the_install_table_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # each module's extra installs a distribution of that name (dask's scheduler: dask[distributed])
    for module, extra in EXTRAS.items():
        assert any(module in requirement for requirement in project["optional-dependencies"][extra]), module
    # the search engines are part of the install, not an extra (issue 27)
    for module in DEPENDENCIES:
        assert any(requirement.startswith(module) for requirement in project["dependencies"]), module
    assert install_command("matplotlib.pyplot") == "pip install 'optmap[plot]'"
    assert install_command("psycopg") == "pip install 'optmap[postgres]'"


def test_a_missing_pymoo_is_one_line_before_the_run_starts(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "pymoo", None)
    code = main(["run", QUICKSTART, "--search", "ga", "--json", str(tmp_path / "r.json")])
    assert code == 2
    assert _error_lines(capsys) == ["error: engine 'ga' needs pymoo, which is not installed: pip install pymoo"]
    assert not (tmp_path / "r.json").exists()  # refused before scoring anything


def test_plugins_check_flags_the_plugins_whose_dependency_is_missing(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnx", None)
    monkeypatch.setitem(sys.modules, "pymoo", None)
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line, unwrapped
    assert main(["plugins", "--check"]) == 2
    out = capsys.readouterr()
    failed = [line for line in out.out.splitlines() if "failed" in line]
    # ga and mars need pymoo, the onnx workload reader needs onnx; nothing else is flagged
    assert sorted(line.split("│")[2].strip() for line in failed) == ["ga", "mars", "onnx"]
    assert any("pip install 'optmap[onnx]'" in line for line in failed)
    assert "3 registered names are broken" in out.err


def test_a_missing_matplotlib_names_the_plot_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code = main(["run", QUICKSTART, "--json", str(tmp_path / "r.json"), "--plot", str(tmp_path / "r.png")])
    assert code == 2
    [line] = _error_lines(capsys)
    assert line.endswith("pip install 'optmap[plot]'")


def test_a_missing_psycopg_names_the_postgres_extra(monkeypatch, capsys, tmp_path):
    pytest.importorskip("optuna")
    pytest.importorskip("sqlalchemy")
    for name in [n for n in sys.modules if n == "psycopg" or n.startswith("psycopg.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    code = main(["run", QUICKSTART, "--search", "optuna", "--json", str(tmp_path / "r.json"),
                 "--storage", "postgresql+psycopg://nobody@127.0.0.1:1/none"])
    assert code == 2
    [line] = _error_lines(capsys)
    assert line.endswith("needs psycopg, which is not installed: pip install 'optmap[postgres]'")


def test_an_unknown_missing_module_keeps_its_traceback(monkeypatch):
    # a module no extra installs is a bug (or a plugin's own import): not dressed up as an install hint
    import optmap.commands.info as info

    def broken(args):
        raise ModuleNotFoundError("No module named 'nosuchthing'", name="nosuchthing")

    monkeypatch.setattr(info, "plugins", broken)
    with pytest.raises(ModuleNotFoundError):
        main(["plugins"])


def test_a_known_missing_module_anywhere_is_one_line_with_its_extra(monkeypatch, capsys):
    # e.g. SciPy, imported by optmap calibrate's fit only when it fits: whatever command meets it
    import optmap.commands.info as info

    def needs_scipy(args):
        raise ModuleNotFoundError("No module named 'scipy'", name="scipy")

    monkeypatch.setattr(info, "plugins", needs_scipy)
    assert main(["plugins"]) == 2
    assert _error_lines(capsys) == [
        "error: optmap plugins needs scipy, which is not installed: pip install 'optmap[calibrate]'"]
