"""The plugin host: loads entry-point plugins and keeps one name -> factory registry per kind.

Built-in plugins are loaded exactly like third-party ones, through the entry-point group
``optmap``; ``--plugin some.module`` adds a module by import path; ``-p no:NAME`` (or the
environment variable ``OPTMAP_DISABLE_PLUGINS=a,b``) leaves an installed plugin out.

Failures are named, never a bare traceback:
- an *installed* plugin that does not import, whose hook raises, or that registers a name another
  plugin already has is left out with everything it registered; the failure is kept in
  :attr:`Host.failures` (the command line prints it as one warning line), and every other
  command still works. Asking for a name only that plugin would have provided says so.
- a module the user asked for with ``--plugin`` is fatal: an :class:`OptmapError` naming it.
- a plugin that needs another one (hook ``optmap_plugin_requires``) is left out when that one is
  disabled, failed, absent or left out itself (:mod:`optmap.requirements`); the names it would
  have registered are kept in :attr:`Host.withheld`, and asking for one says why, naming both.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import pluggy

from optmap import hookspecs
from optmap.errors import OptmapError, did_you_mean
from optmap.registry import DefaultFor, Entry, describe_exception, one_line
from optmap.requirements import requirements, unmet

__all__ = ["KINDS", "Entry", "Host", "call_with_options", "load_host", "one_line"]

# kind -> the registration hook that fills its registry
KINDS = {
    "workload": "optmap_register_workloads",
    "workload_reader": "optmap_register_workload_readers",
    "op": "optmap_register_ops",
    "dtype": "optmap_register_dtypes",
    "accelerator": "optmap_register_accelerators",
    "topology": "optmap_register_topologies",
    "cost_model": "optmap_register_cost_models",
    "search_engine": "optmap_register_search_engines",
}
DISABLE_ENV = "OPTMAP_DISABLE_PLUGINS"


class PluginFailure(OptmapError):
    """A plugin could not be loaded or registered; ``plugin`` names it."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(message)
        self.plugin = plugin


@dataclass
class Host:
    """A loaded set of plugins and the registries they filled."""

    manager: pluggy.PluginManager
    registries: dict[str, dict[str, Entry]] = field(default_factory=dict)
    plugins: dict[str, str] = field(default_factory=dict)  # plugin name -> package
    failures: dict[str, str] = field(default_factory=dict)  # plugin name -> one-line reason
    disabled: tuple[str, ...] = ()
    installed: set[str] = field(default_factory=set)  # every installed plugin's name, disabled ones too
    requires: dict[str, tuple[str, ...]] = field(default_factory=dict)  # plugin -> the plugins it needs
    left_out: dict[str, str] = field(default_factory=dict)  # plugin -> why (a plugin it needs is missing)
    # kind -> name -> the left-out plugin that would have registered it
    withheld: dict[str, dict[str, str]] = field(default_factory=dict)

    def get(self, kind: str, name: str) -> Entry:
        """The entry registered under ``name``, or a one-line error with a suggestion."""
        registry = self.registries[kind]
        label = kind.replace("_", " ")
        plugin = self.withheld.get(kind, {}).get(name)
        if name not in registry and plugin:
            raise OptmapError(f"{label} '{name}' is unavailable: {self.left_out[plugin]}")
        if name not in registry:
            failed = "".join(f"; note: plugin '{p}' failed to load ({reason})" for p, reason in self.failures.items())
            raise OptmapError(f"unknown {label} '{name}'{did_you_mean(name, registry)}{failed}{self._disabled_note()}")
        return registry[name]

    def _disabled_note(self) -> str:
        """Which disabled plugins other plugins need (so an unknown name may be theirs)."""
        needed = {p: [q for q, reqs in self.requires.items() if p in reqs] for p in self.disabled}
        return "".join(f"; note: plugin '{p}' is disabled (-p no:{p}), and plugin(s) "
                       f"{', '.join(repr(q) for q in users)} that need it are left out"
                       for p, users in needed.items() if users)

    def build(self, kind: str, name: str, *args: Any, options: dict[str, Any] | None = None,
              where: str = "") -> Any:
        """Build the ``kind`` registered as ``name``: ``factory(*args, **options)``, the options
        validated against its signature, this host passed to a factory that declares ``host``.

        This is how one plugin uses another, by its registered name and never by importing it:
        a composite cost model builds its inner formulation (``host.build("cost_model", "accpar",
        workload, system, options={...})``), a plugin builds a workload another plugin registers.
        Errors are one line starting with ``where`` (default: the kind and name).
        """
        entry = self.get(kind, name)
        what = where or f"{kind.replace('_', ' ')} '{name}'"
        try:
            factory = entry.resolve()
        except OptmapError as exc:
            raise OptmapError(f"{what}: {exc}") from exc
        return call_with_options(what, factory, dict(options or {}), *args, plugin=entry.plugin, host=self)

    def names(self, kind: str) -> list[str]:
        return sorted(self.registries[kind])

    def warnings(self) -> list[str]:
        """One line per plugin that failed to load, saying how to fix or silence it."""
        return [f"warning: {reason}; it is left out (fix or uninstall it, or disable it with -p no:{name})"
                for name, reason in self.failures.items()]


@functools.cache  # entry points of one package share its Distribution; parsing METADATA costs ~3 ms
def _package_of(dist: importlib.metadata.Distribution | None) -> str:
    if dist is None:
        return "(command line)"
    metadata = dist.metadata
    return f"{metadata['Name']} {metadata['Version']}"


def _register(manager: pluggy.PluginManager, module: Any, name: str, label: str) -> None:
    """Register ``module`` as plugin ``name``; pluggy's validation errors become one line."""
    try:
        manager.register(module, name=name)
    except pluggy.PluginValidationError as exc:
        raise PluginFailure(name, f"{label}: {one_line(exc)}") from exc
    hooks = [caller.name for caller in manager.get_hookcallers(module) or ()]
    unknown = [hook for hook in hooks if not getattr(manager.hook, hook).has_spec()]
    if unknown:
        manager.unregister(module)
        specs = [hook for hook in dir(hookspecs) if hook.startswith("optmap_")]
        raise PluginFailure(name, f"{label}: implements unknown hook '{unknown[0]}'{did_you_mean(unknown[0], specs)}")
    if not hooks:
        manager.unregister(module)
        raise PluginFailure(name, f"{label}: defines no optmap hooks; decorate its functions with "
                                  f"@optmap.hookspecs.hookimpl (e.g. def optmap_register_workloads(register): ...)")


def _load_entry_points(host: Host) -> None:
    for entry_point in importlib.metadata.entry_points(group="optmap"):
        name = entry_point.name
        host.installed.add(name)
        if name in host.disabled:
            continue
        package = _package_of(entry_point.dist)
        if host.manager.has_plugin(name):
            if host.plugins.get(name) == package:
                continue
            host.failures[name] = (f"plugin name '{name}' is used by two packages, {host.plugins.get(name)} "
                                   f"and {package}; uninstall one of them")
            continue
        label = f"plugin '{name}' ({entry_point.value}, package {package})"
        try:
            module = entry_point.load()
        except Exception as exc:
            host.failures[name] = f"{label} failed to import: {describe_exception(exc)}"
            continue
        try:
            _register(host.manager, module, name, label)
        except PluginFailure as failure:
            host.failures[name] = str(failure)
            continue
        host.plugins[name] = package


def _load_modules(host: Host, modules) -> set[str]:
    """Register the ``--plugin`` modules (failures are fatal); their plugin names."""
    if modules and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `--plugin mymodule` finds a module in the current directory
    explicit = set()
    for module_name in modules:
        label = f"--plugin '{module_name}'"
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            hint = "; is it on PYTHONPATH?" if isinstance(exc, ModuleNotFoundError) else ""
            raise OptmapError(f"{label} could not be imported: {describe_exception(exc)}{hint}") from exc
        explicit.add(module_name)
        if host.manager.has_plugin(module_name) or host.manager.is_registered(module):
            continue  # already loaded, e.g. through its entry point
        _register(host.manager, module, module_name, label)
        host.plugins[module_name] = _package_of(None)
    return explicit


def _collect(host: Host, plugin: str, impls: dict[str, Callable]) -> dict[str, dict[str, Entry]]:
    """Everything one plugin registers, by kind; a PluginFailure if a hook raises or misregisters."""
    collected: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
    for kind, function in impls.items():
        label = kind.replace("_", " ")

        def register(name: str, target: Any, _kind: str = kind, _label: str = label, *, default: Any = None) -> None:
            if not isinstance(name, str) or not name.strip():
                raise PluginFailure(plugin, f"plugin '{plugin}' registered a {_label} with an invalid name {name!r}")
            by_name = _kind == "workload_reader"  # a reader names a registered workload
            if target is None or (isinstance(target, str) and ":" not in target and not by_name):
                raise PluginFailure(plugin, f"plugin '{plugin}' registered {_label} '{name}' with {target!r}; pass "
                                            f"the factory itself or an import path 'package.module:attribute'")
            if name in collected[_kind]:
                raise PluginFailure(plugin, f"plugin '{plugin}' registers {_label} '{name}' twice")
            if default is not None and (_kind != "search_engine" or not isinstance(default, DefaultFor)):
                raise PluginFailure(plugin, f"plugin '{plugin}' registered {_label} '{name}' with default={default!r}; "
                                            f"only a search engine declares one, an optmap.registry.DefaultFor")
            collected[_kind][name] = Entry(_kind, name, plugin, host.plugins.get(plugin, ""), target, default)

        try:
            function(register=register)
        except PluginFailure:
            raise
        except OptmapError as exc:
            raise PluginFailure(plugin, f"plugin '{plugin}' raised in {KINDS[kind]}: {one_line(exc)}") from exc
        except Exception as exc:
            raise PluginFailure(plugin, f"plugin '{plugin}' raised in {KINDS[kind]}: {describe_exception(exc)}") from exc
    return collected


def _install_vocabulary(entries: dict[str, dict[str, Entry]]) -> None:
    """Make a plugin's op kinds and dtypes known to the workload IR."""
    from optmap.workload import register_dtype, register_op

    for suffix, entry in entries["workload_reader"].items():
        if not suffix.startswith(".") or not isinstance(entry.target, str):
            raise PluginFailure(entry.plugin, f"plugin '{entry.plugin}' registered workload reader {suffix!r} -> "
                                              f"{entry.target!r}; register a suffix and a workload name, "
                                              f"e.g. register('.onnx', 'onnx')")

    for name, entry in entries["op"].items():
        kind = entry.resolve()
        if getattr(kind, "name", None) != name:
            raise PluginFailure(entry.plugin, f"plugin '{entry.plugin}' registered op '{name}' with a kind named "
                                              f"{getattr(kind, 'name', None)!r}; the names must agree")
        register_op(kind)
    for name, entry in entries["dtype"].items():
        register_dtype(name, entry.resolve())


def _fill(host: Host, explicit: set[str]) -> None:
    host.registries = {kind: {} for kind in KINDS}
    plugins: dict[str, dict[str, Callable]] = {name: {} for name, _ in host.manager.list_name_plugin()}
    for kind, hook_name in KINDS.items():
        for impl in getattr(host.manager.hook, hook_name).get_hookimpls():
            plugins[impl.plugin_name][kind] = impl.function
    host.requires, broken = requirements(host.manager)
    for plugin in sorted(explicit & set(broken)):  # its requirements hook failed: fatal when asked for
        raise OptmapError(broken[plugin])
    host.failures.update(broken)
    loaded = set(plugins) - set(broken)
    left_out = unmet(host.requires, loaded=loaded, disabled=set(host.disabled), failed=set(host.failures) - loaded)
    host.left_out = {plugin: why.reason for plugin, why in left_out.items()}
    host.failures.update({plugin: why.reason for plugin, why in left_out.items() if not why.chosen})
    host.withheld = {kind: {} for kind in KINDS}
    for plugin, impls in plugins.items():
        if plugin in host.left_out:
            if plugin in explicit:  # asked for with --plugin: what it lacks is fatal
                raise OptmapError(f"--plugin '{plugin}': {host.left_out[plugin]}")
            _withhold(host, plugin, impls)
            continue
        if plugin in broken:  # its requirements hook raised
            continue
        try:
            collected = _collect(host, plugin, impls)
            for kind, entries in collected.items():
                for name in entries:
                    if name in host.registries[kind]:
                        other = host.registries[kind][name].plugin
                        raise PluginFailure(plugin, f"plugin '{plugin}' registers {kind.replace('_', ' ')} '{name}', "
                                                    f"which plugin '{other}' already registered; rename one of them "
                                                    f"or uninstall one plugin")
            _install_vocabulary(collected)
        except (PluginFailure, OptmapError) as failure:
            if plugin in explicit:
                raise OptmapError(str(failure)) from failure
            host.failures[plugin] = str(failure)
            continue
        for kind, entries in collected.items():
            host.registries[kind].update(entries)


def _withhold(host: Host, plugin: str, impls: dict[str, Callable]) -> None:
    """Remember the names a left-out plugin registers, to say why each is unavailable."""
    try:
        collected = _collect(host, plugin, impls)
    except (PluginFailure, OptmapError):
        return  # it is left out anyway; its own defect shows once what it needs is back
    for kind, entries in collected.items():
        host.withheld[kind].update(dict.fromkeys(entries, plugin))


_CACHE: dict[tuple, Host] = {}


def _disabled(disabled) -> tuple[str, ...]:
    names = [*disabled, *os.environ.get(DISABLE_ENV, "").split(",")]
    return tuple(sorted({name.strip() for name in names if name.strip()}))


def load_host(extra_modules: tuple[str, ...] | list[str] = (), disabled: tuple[str, ...] | list[str] = ()) -> Host:
    """Load every installed optmap plugin (except ``disabled``) plus ``extra_modules``; cached."""
    off = _disabled(disabled)
    key = (tuple(extra_modules), off)
    if key in _CACHE:
        return _CACHE[key]
    manager = pluggy.PluginManager("optmap")
    manager.add_hookspecs(hookspecs)
    host = Host(manager=manager, disabled=off)
    _load_entry_points(host)
    explicit = _load_modules(host, extra_modules)
    _fill(host, explicit)
    _CACHE[key] = host
    return host


def _without_echo(what: str, message: str) -> str:
    """Drop a leading ``topology 'ring': `` from a plugin's message when ``what`` already says it."""
    names = re.findall(r"'([^']+)'", what)
    if names:
        message = re.sub(rf"^[\w][\w\- ]* '{re.escape(names[-1])}': ", "", message, count=1)
    return message


def _takes_keyword(factory: Callable, name: str) -> bool:
    import inspect

    try:
        target = factory.__init__ if inspect.isclass(factory) else factory
        parameter = inspect.signature(target).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.kind == parameter.KEYWORD_ONLY


def call_with_options(
    what: str,
    factory: Callable,
    options: dict[str, Any],
    *args: Any,
    plugin: str | None = None,
    section_keys: tuple[str, ...] = (),
    host: Host | None = None,
) -> Any:
    """Call ``factory(*args, **options)`` after validating ``options`` against its signature.

    A factory with a keyword-only parameter ``host`` also gets ``host`` (the host building it;
    :data:`optmap.options.INJECTED`); it is never a problem-file key.

    ``what`` names the place for error messages, e.g. ``"problem.toml: [cost] model 'accpar'"``;
    ``plugin`` (the plugin that registered the factory) is named when the factory fails in an
    unexpected way; ``section_keys`` are the section's other keys, listed among the valid ones.
    Unknown keys, missing required keys and wrong types become one-line OptmapErrors listing
    the valid keys; an exception raised by the factory is reported on one line naming it.
    """
    from optmap.options import validate_options

    from optmap.options import INJECTED

    kwargs = validate_options(what, factory, options, skip=len(args), section_keys=section_keys)
    kwargs.update({name: host for name in INJECTED if host is not None and _takes_keyword(factory, name)})
    try:
        return factory(*args, **kwargs)
    except OptmapError as exc:
        raise OptmapError(f"{what}: {_without_echo(what, one_line(exc))}") from exc
    except Exception as exc:
        by = f" (plugin '{plugin}')" if plugin else ""
        raise OptmapError(f"{what}{by} raised {describe_exception(exc)}") from exc
