"""Plugins that need plugins: what each one declares, and which must be left out for want of one.

A plugin declares the plugins it needs with the hook ``optmap_plugin_requires`` (entry-point
names; :mod:`optmap.hookspecs`). A plugin is left out when a plugin it needs is disabled by the
user, failed to load, is not installed, or is left out itself; the reason names both plugins.
"""

from __future__ import annotations

from dataclasses import dataclass

import pluggy

from optmap.registry import describe_exception

DISABLE_HINT = "-p no:{name} or OPTMAP_DISABLE_PLUGINS"


@dataclass(frozen=True)
class LeftOut:
    """Why a plugin is left out; ``chosen`` when it follows from the user disabling a plugin."""

    reason: str
    chosen: bool


def requirements(manager: pluggy.PluginManager) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """Each plugin's declared requirements, and the plugins whose hook raises or answers something
    other than a list of names, with the reason (they are left out like any failed plugin)."""
    needs: dict[str, tuple[str, ...]] = {}
    failures: dict[str, str] = {}
    for impl in manager.hook.optmap_plugin_requires.get_hookimpls():
        plugin = impl.plugin_name
        try:
            names = impl.function()
        except Exception as exc:
            failures[plugin] = f"plugin '{plugin}' raised in optmap_plugin_requires: {describe_exception(exc)}"
            continue
        if isinstance(names, str) or not all(isinstance(n, str) and n.strip() for n in names or ()):
            failures[plugin] = (f"plugin '{plugin}' answered optmap_plugin_requires with {names!r}; return a list "
                                f"of plugin names, e.g. ['transformer']")
            continue
        needs[plugin] = tuple(n for n in dict.fromkeys(names or ()) if n != plugin)
    return needs, failures


def unmet(needs: dict[str, tuple[str, ...]], loaded: set[str], disabled: set[str],
          failed: set[str]) -> dict[str, LeftOut]:
    """The loaded plugins to leave out, each with its reason (transitively: a plugin that needs a
    left-out plugin is left out too)."""
    left: dict[str, LeftOut] = {}
    changed = True
    while changed:
        changed = False
        for plugin, names in needs.items():
            if plugin in left or plugin not in loaded:
                continue
            for name in names:
                if name in loaded and name not in left:
                    continue
                if name in disabled:
                    why, chosen = f"which is disabled ({DISABLE_HINT.format(name=name)})", True
                elif name in failed:
                    why, chosen = "which failed to load", False
                elif name in left:
                    why, chosen = f"which is left out ({left[name].reason})", left[name].chosen
                else:
                    why, chosen = "which is not installed; install it", False
                left[plugin] = LeftOut(f"plugin '{plugin}' needs plugin '{name}', {why}", chosen)
                changed = True
                break
    return left
