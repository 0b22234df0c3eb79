"""Helpers the sections of a problem file share: tables, plugin look-ups, factory calls, short values."""

from __future__ import annotations

import sys
from typing import Any, Callable

from optmap.errors import OptmapError
from optmap.host import Entry, Host, call_with_options
from optmap.registry import one_line

REQUIRED = ("workload", "system", "cost")


def short(value: Any, limit: int = 50) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters."""
    text = one_line(repr(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def section(where: str, spec: dict, key: str, required: bool) -> dict[str, Any]:
    """A copy of the table ``[key]`` (empty if absent and optional)."""
    if key not in spec:
        if required:
            raise OptmapError(
                f"{where}: missing section [{key}]; every problem needs [workload], [system] and [cost] "
                f"(see problems/quickstart.toml or `optmap schema`)"
            )
        return {}
    value = spec[key]
    if not isinstance(value, dict):
        raise OptmapError(f"{where}: '{key}' must be a table [{key}], got {type(value).__name__} {short(value)}")
    return dict(value)


def lookup(at: str, key: str, name: Any, host: Host, kind: str) -> Entry:
    """The registered ``kind`` called ``name``, given as ``key`` at ``at``; one-line errors."""
    label = kind.replace("_", " ")
    article = "an" if label[0] in "aeiou" else "a"
    if not isinstance(name, str):
        raise OptmapError(f"{at} {key} must be a string naming {article} {label}, got {short(name)}")
    try:
        return host.get(kind, name)
    except OptmapError as exc:
        raise OptmapError(f"{at} {key}: {exc}") from None


def pop_name(where: str, section_name: str, table: dict, key: str, host: Host, kind: str) -> Entry:
    """Take ``key`` out of ``table`` and look it up; a missing key lists the choices."""
    if key not in table:
        label = kind.replace("_", " ")
        raise OptmapError(
            f"{where}: [{section_name}] needs {key} = \"<{label}>\"; choices: {', '.join(host.names(kind))}"
        )
    return lookup(f"{where}: [{section_name}]", key, table.pop(key), host, kind)


def resolve(what: str, entry: Entry) -> Any:
    """``entry.resolve()``, with an import failure of the plugin reported at ``what``."""
    try:
        return entry.resolve()
    except OptmapError as exc:
        raise OptmapError(f"{what}: {exc}") from exc


def call(what: str, entry: Entry, table: dict, *args: Any, section_keys: tuple[str, ...],
         host: Host | None = None) -> Any:
    """Build ``entry`` with the options in ``table``, validated against its signature (a factory
    that declares a keyword-only ``host`` gets ``host``)."""
    factory = resolve(what, entry)
    return call_with_options(what, factory, table, *args, plugin=entry.plugin, section_keys=section_keys, host=host)


def public_name(cls: type) -> str:
    """``optmap.system.System`` rather than ``optmap.system.graph.System``: where users import it."""
    module = cls.__module__
    parent = module.rpartition(".")[0]
    if parent and getattr(sys.modules.get(parent), cls.__name__, None) is cls:
        module = parent
    return f"{module}.{cls.__qualname__}"


def check_returned(what: str, entry: Entry, value: Any, expected: type | Callable[[Any], str | None]) -> Any:
    """A factory that returns the wrong kind of object is the plugin's bug: say which one.

    ``expected`` is a class, or a contract check returning what is missing (None when it holds).
    """
    if isinstance(expected, type):
        missing = None if isinstance(value, expected) else public_name(expected)
    else:
        missing = expected(value)
    if missing is not None:
        raise OptmapError(
            f"{what}: plugin '{entry.plugin}' returned {type(value).__name__}, not {missing}; "
            f"report this to the plugin's authors"
        )
    return value
