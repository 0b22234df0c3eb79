"""Registry entries: one registered name, the plugin that registered it, and its factory.

A factory may be registered as an import path ``"package.module:attribute"``; it is imported on
first use, and its one-line summary for ``optmap plugins`` is read from the module's source
without importing it, so listing plugins never loads pymoo, optuna and the like.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import math
from dataclasses import dataclass
from typing import Any

from optmap.errors import OptmapError


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed to one space."""
    return " ".join(str(text).split())


def describe_exception(exc: BaseException) -> str:
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


@dataclass(frozen=True)
class DefaultFor:
    """Declares a generic engine the default of formulations that name no ``default_engine``.

    Given at registration, ``register("exhaustive", ExhaustiveSearch, default=DefaultFor(...))``,
    so choosing a default imports no engine: the engine fits spaces of at most ``max_size``
    points; of several that fit, the highest ``preference`` wins (ties: the first name).
    """

    max_size: float = math.inf
    preference: int = 0


@dataclass(frozen=True)
class Entry:
    """One registered name: what it is, which plugin registered it, and its factory."""

    kind: str
    name: str
    plugin: str
    package: str
    target: Any  # the factory/value, or an import path "module:attr" resolved on first use
    default: DefaultFor | None = None  # a search engine's declaration as a default, if it makes one

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
                f"imported from '{self.target}': {describe_exception(exc)}"
            ) from exc

    @property
    def summary(self) -> str:
        """One line for `optmap plugins`: the first line of the factory's docstring, or a
        value's ``description``.

        A target registered by import path is not imported: its docstring is read from the
        module's source, so listing plugins never loads pymoo, optuna and the like. Only when the
        source does not define the attribute itself (an alias, a built object) is it imported.
        A workload reader names its workload; a dtype gives its size; an op kind its class's doc.
        """
        if self.kind == "workload_reader":
            return f"'{self.name}' files are read by workload '{self.target}'"
        if self.kind == "dtype":
            return f"{self.target} bytes per element"
        if isinstance(self.target, str):
            module_name, _, attribute = self.target.partition(":")
            docs = _module_docstrings(module_name)
            if docs is not None and attribute in docs:
                return _first_line(docs[attribute])
            try:
                target = self.resolve()
            except OptmapError as exc:
                return f"(cannot import: {describe_exception(exc.__cause__ or exc)})"
        else:
            target = self.target
        if inspect.isclass(target) or inspect.isroutine(target):
            return _first_line(inspect.getdoc(target))
        description = getattr(target, "description", None)
        if isinstance(description, str) and description:
            return _first_line(description)
        return _first_line(inspect.getdoc(type(target))) if type(target).__module__ != "builtins" else ""


