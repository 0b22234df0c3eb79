"""Reading a problem file and overriding its keys: TOML in, a plain table out, errors in one line."""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any

from optmap.errors import OptmapError, did_you_mean
from optmap.registry import one_line

SECTIONS = ("name", "description", "workload", "system", "cost", "objective", "constraints", "search",
            "accelerators", "fix")


def _value(raw: str) -> Any:
    """A command-line value read as TOML (numbers, booleans, strings, arrays), else as a plain string."""
    try:
        return tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        return raw.strip()


def parse_override(text: str) -> tuple[list[str], Any]:
    """``section.key=value`` → (key path, value); the value is read as TOML, else as a string."""
    key, sep, raw = text.partition("=")
    path = [part.strip() for part in key.split(".")]
    if not sep or not all(path):
        raise OptmapError(f"--set '{text}': expected SECTION.KEY=VALUE, e.g. --set workload.batch=256")
    if not raw.strip():
        raise OptmapError(f"--set '{text}': no value after '='; e.g. --set {key.strip()}=256")
    return path, _value(raw)


def parse_fix(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` (a decision and its value) from ``--fix``."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip() or not raw.strip():
        raise OptmapError(f"--fix '{text}': expected DECISION=VALUE, e.g. --fix tensor_parallel=8 "
                          f"(`optmap show PROBLEM --decisions` lists the decisions)")
    return name.strip(), _value(raw)


def _kind(value: Any) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}
    return kinds.get(type(value), f"a {type(value).__name__}")


def apply_overrides(spec: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``spec`` with each ``section.key=value`` of ``overrides`` set (missing tables are created).

    A part of the path that is a whole number indexes a list: ``system.groups.0.count=4``.
    """
    spec = copy.deepcopy(spec)
    for text in overrides:
        path, value = parse_override(text)
        if path[0] not in SECTIONS:
            raise OptmapError(f"--set '{text}': unknown section '{path[0]}'{did_you_mean(path[0], SECTIONS)}")
        node: Any = spec
        for depth, part in enumerate(path):
            last = depth == len(path) - 1
            where = ".".join(path[:depth])
            if isinstance(node, list):
                index = part.lstrip("-")
                if index.isdigit():  # an index, but out of range (negative indexes count nothing here)
                    if not part.isdigit() or int(part) >= len(node):
                        valid = f"0 to {len(node) - 1}" if node else "none: the list is empty"
                        raise OptmapError(f"--set '{text}': '{where}' has {len(node)} entries; index {part} is out "
                                          f"of range (valid: {valid})")
                else:
                    example = ".".join([where, "0", *path[depth:]])
                    raise OptmapError(f"--set '{text}': '{where}' is a list, not a table: it has {len(node)} "
                                      f"entries, address one by its index, e.g. --set {example}=...")
                index = int(part)
                if last:
                    node[index] = value
                else:
                    node = node[index]
                continue
            if not isinstance(node, dict):
                raise OptmapError(f"--set '{text}': '{where}' is {_kind(node)}, not a table; edit the file instead")
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
    return spec


MAX_DEPTH = 64  # levels of nested tables and arrays a problem file may hold


def _depth(value: Any, level: int = 0) -> int:
    """How deeply ``value`` nests tables and arrays (stops counting past MAX_DEPTH)."""
    if level > MAX_DEPTH or not isinstance(value, (dict, list)):
        return level
    children = value.values() if isinstance(value, dict) else value
    return max((_depth(child, level + 1) for child in children), default=level + 1)


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def read_spec(path: str | Path) -> dict[str, Any]:
    """The raw TOML table of a problem file, with syntax errors as one line (line, column, text)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise OptmapError(f"{path}: no such problem file") from None
    except IsADirectoryError:
        raise OptmapError(f"{path}: is a folder, not a problem file") from None
    except OSError as exc:
        raise OptmapError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise OptmapError(
            f"{path}: not UTF-8 text at line {line} (byte {data[exc.start]:#04x}); save the file as UTF-8"
        ) from None
    return parse_toml(text, str(path))


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """``text`` as a TOML table, or a one-line OptmapError naming ``where``, the line and column."""
    text = text.removeprefix("\ufeff")  # a byte-order mark is not part of the document
    try:
        table = tomllib.loads(text)
        if _depth(table) > MAX_DEPTH:
            raise OptmapError(f"{where}: tables and arrays are nested more than {MAX_DEPTH} levels deep; "
                              f"a problem file needs a few")
        return table
    except RecursionError:
        raise OptmapError(f"{where}: invalid TOML: nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_POSITION.search(message)
        if match is None:
            raise OptmapError(f"{where}: invalid TOML: {one_line(message)}") from None
        line, column = int(match.group(1)), int(match.group(2))
        lines = text.splitlines()
        source = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        shown = f" in `{source[:80]}`" if source else ""
        reason = one_line(message[: match.start()])
        if reason == "Illegal character '\\n'" and (source.count('"') % 2 or source.count("'") % 2):
            reason = "a string is not closed before the end of the line"
        raise OptmapError(f"{where}: invalid TOML at line {line}, column {column}: {reason}{shown}") from None
