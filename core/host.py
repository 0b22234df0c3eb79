"""The plugin host: loads entry-point plugins and keeps one name -> factory registry per kind.

Built-in plugins are loaded exactly like third-party ones, through the entry-point group
``optmap``; ``--plugin some.module`` adds a module by import path. Every failure (a plugin that
does not import, a hook that raises, a duplicate or unknown name) is an :class:`OptmapError`
naming the plugin at fault.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import pluggy

from optmap import hookspecs
from optmap.errors import OptmapError, did_you_mean

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
                f"plugin '{self.plugin}': {self.kind} '{self.name}' could not be imported "
                f"from '{self.target}': {type(exc).__name__}: {exc}"
            ) from exc

    @property
    def summary(self) -> str:
        """The first line of the factory's docstring, for `optmap plugins`."""
        target = self.target if not isinstance(self.target, str) else None
        doc = inspect.getdoc(target) if target is not None else None
        if doc is None and target is not None and not callable(target):
            doc = getattr(target, "description", None)
        return (doc or "").strip().splitlines()[0] if doc else ""


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


def _load_entry_points(manager: pluggy.PluginManager, packages: dict[str, str]) -> None:
    for entry_point in importlib.metadata.entry_points(group="optmap"):
        if manager.has_plugin(entry_point.name):
            continue
        try:
            module = entry_point.load()
        except Exception as exc:
            raise OptmapError(
                f"plugin '{entry_point.name}' ({entry_point.value}) failed to import: "
                f"{type(exc).__name__}: {exc}; fix or uninstall that package"
            ) from exc
        manager.register(module, name=entry_point.name)
        packages[entry_point.name] = _package_of(entry_point.dist)


def _load_modules(manager: pluggy.PluginManager, modules, packages: dict[str, str]) -> None:
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise OptmapError(
                f"--plugin '{module_name}' could not be imported: {type(exc).__name__}: {exc}"
            ) from exc
        if not manager.has_plugin(module_name):
            manager.register(module, name=module_name)
            packages[module_name] = _package_of(None)


def _fill(host: Host) -> None:
    for kind, hook_name in KINDS.items():
        registry: dict[str, Entry] = {}
        host.registries[kind] = registry
        for impl in getattr(host.manager.hook, hook_name).get_hookimpls():
            plugin = impl.plugin_name

            def register(name: str, target: Any, _plugin: str = plugin, _kind: str = kind) -> None:
                if not isinstance(name, str) or not name:
                    raise OptmapError(f"plugin '{_plugin}' registered a {_kind} with an empty name")
                if name in registry:
                    other = registry[name].plugin
                    raise OptmapError(
                        f"plugin '{_plugin}' registers {_kind.replace('_', ' ')} '{name}', which "
                        f"plugin '{other}' already registered; rename one of them"
                    )
                registry[name] = Entry(_kind, name, _plugin, host.plugins.get(_plugin, ""), target)

            try:
                impl.function(register=register)
            except OptmapError:
                raise
            except Exception as exc:
                raise OptmapError(
                    f"plugin '{plugin}' raised in {hook_name}: {type(exc).__name__}: {exc}"
                ) from exc


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


def call_with_options(what: str, factory: Callable, options: dict[str, Any], *args: Any) -> Any:
    """Call ``factory(*args, **options)`` after validating ``options`` against its signature.

    ``what`` names the place for error messages, e.g. ``"problem.toml: [cost] 'accpar'"``.
    Unknown keys, missing required keys and wrong types become one-line OptmapErrors listing
    the valid keys; an exception raised by the factory is reported naming it.
    """
    from optmap.options import validate_options

    kwargs = validate_options(what, factory, options, skip=len(args))
    try:
        return factory(*args, **kwargs)
    except OptmapError as exc:
        raise OptmapError(f"{what}: {exc}") from exc
    except Exception as exc:
        raise OptmapError(f"{what} raised {type(exc).__name__}: {exc}") from exc
