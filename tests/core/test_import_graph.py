"""The repository's import structure: no cycles, and plugins use each other only through the host.

The graph is read from the source (``ast``), not from what happens to be imported at run time:
every ``import`` and ``from ... import`` counts, at module level, inside functions and under
``if TYPE_CHECKING:`` alike, so a cycle cannot hide behind a deferred or type-only import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
# the import package's folders: `optmap` is core/optmap, `optmap.plugins` is plugins/
PACKAGES = {"optmap": ROOT / "core" / "optmap", "optmap.plugins": ROOT / "plugins"}


def _modules() -> dict[str, Path]:
    """Every module of the repository's import package, by dotted name."""
    modules: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted ``name`` that is one of our modules (None: not ours)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _imported(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ours that ``module`` imports anywhere in its text."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from a import b` imports a.b when b is a module, else a name of a
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        targets.update(t for t in (_resolve(n, modules) for n in names) if t and t != module)
    return targets


def import_graph() -> nx.DiGraph:
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        graph.add_edges_from((module, target) for target in _imported(module, path, modules))
    return graph


def _plugin_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["optmap", "plugins"] and len(parts) > 2 else None


def test_the_reader_sees_known_edges():
    # guards the reader itself: a graph with no edges would pass every check below
    graph = import_graph()
    assert graph.has_edge("optmap.host", "optmap.hookspecs")  # `from optmap import hookspecs`
    assert graph.has_edge("optmap.plugins.accpar.engines", "optmap.plugins.accpar.plans")  # `from .plans import`


def test_no_import_cycles():
    graph = import_graph()
    cycles = sorted(sorted(cycle) for cycle in nx.simple_cycles(graph))
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles[:10])


def test_no_plugin_imports_another_plugin():
    # a plugin uses another one by registered name through the host (Host.build), never by import
    graph = import_graph()
    crossing = [(a, b) for a, b in graph.edges
                if _plugin_of(a) and _plugin_of(b) and _plugin_of(a) != _plugin_of(b)]
    assert crossing == []


def test_no_plugin_calls_load_host():
    # a plugin gets the host by declaring a keyword-only `host` parameter (optmap.options.INJECTED)
    calls = []
    for path in sorted(PACKAGES["optmap.plugins"].rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            named = (isinstance(node, ast.Name) and node.id == "load_host") or (
                isinstance(node, ast.Attribute) and node.attr == "load_host") or (
                isinstance(node, ast.alias) and node.name.split(".")[-1] == "load_host")
            if named:
                calls.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}")
    assert calls == []


def test_the_core_imports_no_plugin():
    graph = import_graph()
    assert [(a, b) for a, b in graph.edges if not _plugin_of(a) and _plugin_of(b)] == []


def test_hookspecs_cite_only_what_exists():
    # every `optmap.x.y` the plugin contract's docstrings name is a module, or an attribute of one
    import importlib
    import re

    text = (PACKAGES["optmap"] / "hookspecs.py").read_text()
    cited = sorted(set(re.findall(r"\boptmap(?:\.\w+)+", text)))
    assert "optmap.host.Host" in cited  # the reader finds citations
    for name in cited:
        parts = name.split(".")
        for split in range(len(parts), 0, -1):
            try:
                target = importlib.import_module(".".join(parts[:split]))
                break
            except ModuleNotFoundError:
                continue
        for attribute in parts[split:]:
            assert hasattr(target, attribute) or attribute in getattr(target, "__dataclass_fields__", {}), name
            target = getattr(target, attribute, None)
