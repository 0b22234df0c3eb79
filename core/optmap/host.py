"""The plugin host: loads entry-point plugins and keeps one name -> factory registry per kind.

Built-in plugins are loaded exactly like third-party ones, through the entry-point group
``optmap``; ``--plugin some.module`` adds a module by import path. Every failure (a plugin that
does not import, a hook that raises, a duplicate or unknown name) is an :class:`OptmapError`
naming the plugin at fault.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import pluggy

from optmap import hookspecs
from optmap.errors import OptmapError, did_you_mean


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed to one space."""
    return " ".join(str(text).split())


def _exception(exc: BaseException) -> str:
    """``TypeName: message`` on one line (a SyntaxError also names its file and line)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return one_line(f"{type(exc).__name__}: {exc.msg} ({exc.filename}, line {exc.lineno})")
    return one_line(f"{type(exc).__name__}: {exc}")


@functools.lru_cache(maxsize=None)
def _module_docstrings(module_name: str) -> dict[str, str] | None:
    """Docstrings of a module's top-level classes and functions, read from its source with
    :mod:`ast`, without importing it (and whatever heavy library it imports); None if the
    source cannot be found or parsed."""
    try:
        spec = importlib.util.find_spec(module_name)
    except Exception:
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        with open(spec.origin, encoding="utf-8") as source:
            tree = ast.parse(source.read(), spec.origin)
    except (OSError, SyntaxError, ValueError):
        return None
    docs = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            docs[node.name] = ast.get_docstring(node) or ""
    return docs


def _first_line(doc: str | None, limit: int = 120) -> str:
    """A docstring's first paragraph (its summary, which may wrap) on one line, at most ``limit``."""
    paragraph = one_line((doc or "").strip().split("\n\n")[0])
    return paragraph if len(paragraph) <= limit else paragraph[: limit - 1].rstrip() + "…"


KINDS = {
    "workload": "optmap_register_workloads",
    "accelerator": "optmap_register_accelerators",
    "topology": "optmap_register_topologies",
    "cost_model": "optmap_register_cost_models",
    "search_engine": "optmap_register_search_engines",
}


@dataclass(frozen=True)
class Entry:
    """One registered name: what it is, which plugin registered it, and its factory."""

    kind: str
    name: str
    plugin: str
    package: str
    target: Any  # the factory/value, or an import path "module:attr" resolved on first use

    def resolve(self) -> Any:
        """The factory or value itself, importing it if it was registered by path."""
        if not isinstance(self.target, str):
            return self.target
        module_name, _, attribute = self.target.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attribute)
        except Exception as exc:  # a broken plugin must not look like an optmap bug
            raise OptmapError(
                f"plugin '{self.plugin}': {self.kind.replace('_', ' ')} '{self.name}' could not be "
                f"imported from '{self.target}': {_exception(exc)}"
            ) from exc

    @property
    def summary(self) -> str:
        """One line for `optmap plugins`: the first line of the factory's docstring, or a
        value's ``description``.

        A target registered by import path is not imported: its docstring is read from the
        module's source, so listing plugins never loads pymoo, optuna and the like. Only when the
        source does not define the attribute itself (an alias, a built object) is it imported.
        """
        if isinstance(self.target, str):
            module_name, _, attribute = self.target.partition(":")
            docs = _module_docstrings(module_name)
            if docs is not None and attribute in docs:
                return _first_line(docs[attribute])
            try:
                target = self.resolve()
            except OptmapError as exc:
                return f"(cannot import: {_exception(exc.__cause__ or exc)})"
        else:
            target = self.target
        if inspect.isclass(target) or inspect.isroutine(target):
            return _first_line(inspect.getdoc(target))
        description = getattr(target, "description", None)
        if isinstance(description, str) and description:
            return _first_line(description)
        return ""


@dataclass
class Host:
    """A loaded set of plugins and the registries they filled."""

    manager: pluggy.PluginManager
    registries: dict[str, dict[str, Entry]] = field(default_factory=dict)
    plugins: dict[str, str] = field(default_factory=dict)  # plugin name -> package

    def get(self, kind: str, name: str) -> Entry:
        """The entry registered under ``name``, or a one-line error with a suggestion."""
        registry = self.registries[kind]
        if name not in registry:
            label = kind.replace("_", " ")
            raise OptmapError(f"unknown {label} '{name}'{did_you_mean(name, registry)}")
        return registry[name]

    def names(self, kind: str) -> list[str]:
        return sorted(self.registries[kind])


def _package_of(dist: importlib.metadata.Distribution | None) -> str:
    if dist is None:
        return "(command line)"
    return f"{dist.metadata['Name']} {dist.version}"


def _register(manager: pluggy.PluginManager, module: Any, name: str, label: str) -> None:
    """Register ``module`` as plugin ``name``; pluggy's validation errors become one line."""
    try:
        manager.register(module, name=name)
    except pluggy.PluginValidationError as exc:
        raise OptmapError(f"{label}: {one_line(exc)}") from exc
    hooks = [caller.name for caller in manager.get_hookcallers(module) or ()]
    unknown = [hook for hook in hooks if not getattr(manager.hook, hook).has_spec()]
    if unknown:
        specs = [hook for hook in dir(hookspecs) if hook.startswith("optmap_")]
        raise OptmapError(
            f"{label}: implements unknown hook '{unknown[0]}'{did_you_mean(unknown[0], specs)}"
        )
    if not hooks:
        raise OptmapError(
            f"{label}: defines no optmap hooks; decorate its functions with "
            f"@optmap.hookspecs.hookimpl (e.g. def optmap_register_workloads(register): ...)"
        )


def _load_entry_points(manager: pluggy.PluginManager, packages: dict[str, str]) -> None:
    for entry_point in importlib.metadata.entry_points(group="optmap"):
        package = _package_of(entry_point.dist)
        if manager.has_plugin(entry_point.name):
            if packages.get(entry_point.name) == package:
                continue
            raise OptmapError(
                f"plugin name '{entry_point.name}' is used by two packages, {packages.get(entry_point.name)} "
                f"and {package}; uninstall one of them"
            )
        label = f"plugin '{entry_point.name}' ({entry_point.value}, package {package})"
        try:
            module = entry_point.load()
        except Exception as exc:
            raise OptmapError(
                f"{label} failed to import: {_exception(exc)}; fix or uninstall that package"
            ) from exc
        _register(manager, module, entry_point.name, label)
        packages[entry_point.name] = package


def _load_modules(manager: pluggy.PluginManager, modules, packages: dict[str, str]) -> None:
    if modules and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `--plugin mymodule` finds a module in the current directory
    for module_name in modules:
        label = f"--plugin '{module_name}'"
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            hint = "; is it on PYTHONPATH?" if isinstance(exc, ModuleNotFoundError) else ""
            raise OptmapError(f"{label} could not be imported: {_exception(exc)}{hint}") from exc
        if manager.has_plugin(module_name) or manager.is_registered(module):
            continue  # already loaded, e.g. through its entry point
        _register(manager, module, module_name, label)
        packages[module_name] = _package_of(None)


def _fill(host: Host) -> None:
    for kind, hook_name in KINDS.items():
        registry: dict[str, Entry] = {}
        host.registries[kind] = registry
        label = kind.replace("_", " ")
        for impl in getattr(host.manager.hook, hook_name).get_hookimpls():
            plugin = impl.plugin_name

            def register(name: str, target: Any, _plugin: str = plugin, _kind: str = kind) -> None:
                if not isinstance(name, str) or not name.strip():
                    raise OptmapError(f"plugin '{_plugin}' registered a {label} with an invalid name {name!r}")
                if target is None or (isinstance(target, str) and ":" not in target):
                    raise OptmapError(
                        f"plugin '{_plugin}' registered {label} '{name}' with {target!r}; pass the "
                        f"factory itself or an import path 'package.module:attribute'"
                    )
                if name in registry:
                    other = registry[name].plugin
                    raise OptmapError(
                        f"plugin '{_plugin}' registers {label} '{name}', which plugin '{other}' "
                        f"already registered; rename one of them or uninstall one plugin"
                    )
                registry[name] = Entry(_kind, name, _plugin, host.plugins.get(_plugin, ""), target)

            try:
                impl.function(register=register)
            except OptmapError:
                raise
            except Exception as exc:
                raise OptmapError(f"plugin '{plugin}' raised in {hook_name}: {_exception(exc)}") from exc


_CACHE: dict[tuple[str, ...], Host] = {}


def load_host(extra_modules: tuple[str, ...] | list[str] = ()) -> Host:
    """Load every installed optmap plugin plus ``extra_modules`` (import paths); cached."""
    key = tuple(extra_modules)
    if key in _CACHE:
        return _CACHE[key]
    manager = pluggy.PluginManager("optmap")
    manager.add_hookspecs(hookspecs)
    packages: dict[str, str] = {}
    _load_entry_points(manager, packages)
    _load_modules(manager, extra_modules, packages)
    host = Host(manager=manager, plugins=packages)
    _fill(host)
    _CACHE[key] = host
    return host


def _without_echo(what: str, message: str) -> str:
    """Drop a leading ``topology 'ring': `` from a plugin's message when ``what`` already says it."""
    names = re.findall(r"'([^']+)'", what)
    if names:
        message = re.sub(rf"^[\w][\w\- ]* '{re.escape(names[-1])}': ", "", message, count=1)
    return message


def call_with_options(
    what: str,
    factory: Callable,
    options: dict[str, Any],
    *args: Any,
    plugin: str | None = None,
    section_keys: tuple[str, ...] = (),
) -> Any:
    """Call ``factory(*args, **options)`` after validating ``options`` against its signature.

    ``what`` names the place for error messages, e.g. ``"problem.toml: [cost] model 'accpar'"``;
    ``plugin`` (the plugin that registered the factory) is named when the factory fails in an
    unexpected way; ``section_keys`` are the section's other keys, listed among the valid ones.
    Unknown keys, missing required keys and wrong types become one-line OptmapErrors listing
    the valid keys; an exception raised by the factory is reported on one line naming it.
    """
    from optmap.options import validate_options

    kwargs = validate_options(what, factory, options, skip=len(args), section_keys=section_keys)
    try:
        return factory(*args, **kwargs)
    except OptmapError as exc:
        raise OptmapError(f"{what}: {_without_echo(what, one_line(exc))}") from exc
    except Exception as exc:
        by = f" (plugin '{plugin}')" if plugin else ""
        raise OptmapError(f"{what}{by} raised {_exception(exc)}") from exc
