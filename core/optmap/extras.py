"""Optional dependencies: which ``pip install`` brings a missing module, said in one line.

A plugin factory that needs a library beyond optmap's own dependencies declares the modules it
imports when used, ``imports = ("onnx",)`` (an engine's ``requires`` names capabilities);
``optmap plugins --check`` and ``make_engine`` (so ``run``, ``compare`` and ``validate``) check
them before anything runs. Everywhere else a missing module becomes :func:`missing_message`'s
line through :func:`needs`.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from optmap.errors import OptmapError

# Top-level module -> the extra of pyproject.toml that installs it (tests/core/test_extras.py
# checks this table against pyproject.toml).
EXTRAS = {
    "matplotlib": "plot",
    "dask": "distributed",
    "distributed": "distributed",
    "onnx": "onnx",
    "torch": "calibrate",
    "scipy": "calibrate",
    "psycopg": "postgres",
}
# Regular dependencies that a plugin imports only when used (missing only from a broken or
# --no-deps install): the hint installs the library itself.
DEPENDENCIES = {"pymoo": "pymoo", "optuna": "optuna", "cmaes": "cmaes"}


def install_command(module: str) -> str:
    """The ``pip install`` that brings ``module`` (a dotted name counts by its top level)."""
    top = module.split(".")[0]
    if top in EXTRAS:
        return f"pip install 'optmap[{EXTRAS[top]}]'"
    return f"pip install {DEPENDENCIES.get(top, top)}"


def missing_message(module: str, what: str) -> str:
    """``what`` needs ``module``, which is not installed, and the command that installs it."""
    return f"{what} needs {module.split('.')[0]}, which is not installed: {install_command(module)}"


def absent(modules) -> list[str]:
    """The modules of ``modules`` that cannot be imported (not installed)."""
    return [m for m in modules if importlib.util.find_spec(m.split(".")[0]) is None]


def requirements(factory: Any) -> tuple[str, ...]:
    """The modules a plugin factory declares it imports when used (its ``imports``)."""
    declared = getattr(factory, "imports", ())
    return tuple(declared) if isinstance(declared, (tuple, list)) else ()


def check(factory: Any, what: str) -> None:
    """Refuse, in one line with the install command, a factory whose required module is missing."""
    missing = absent(requirements(factory))
    if missing:
        raise OptmapError(missing_message(missing[0], what))


def needs(exc: ModuleNotFoundError, what: str) -> OptmapError | None:
    """The one-line error for ``exc`` when it is a known optional or lazily imported dependency
    (None for any other module: a bug, or a plugin's own import, keeps its traceback)."""
    name = (exc.name or "").split(".")[0]
    if name not in EXTRAS and name not in DEPENDENCIES:
        return None
    return OptmapError(missing_message(name, what))
