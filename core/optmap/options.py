"""Plugin options: a factory's annotated keyword parameters are its problem-file keys.

pydantic builds a model from the signature, so a plugin author declares options once, as
ordinary typed parameters with defaults, and gets validation, clear errors and a JSON Schema.

TOML is typed, and its types are taken strictly (pydantic's strict mode): a string is not a
number (``batch = "256"``), a number is not a boolean (``check_memory = 0``), ``32.0`` is not an
``int``; an integer fills a ``float`` and a TOML array fills a ``tuple``. NaN and infinity are
refused everywhere. The first problem is reported as one line: unknown keys first (a misspelt
key also shows up as a missing one), then missing required keys, then wrong values; unknown keys
come with a suggestion and the list of valid keys.
"""

from __future__ import annotations

import functools
import inspect
import math
import typing
from typing import Any, Callable

from optmap.errors import OptmapError

_ORDER = {"extra_forbidden": 0, "missing": 1}
_NUMBERS = (int, float)


def _signature_target(factory: Callable) -> Callable:
    return factory.__init__ if inspect.isclass(factory) else factory


@functools.lru_cache(maxsize=None)
def options_model(factory: Callable, skip: int = 0):
    """A pydantic model of ``factory``'s options (its parameters after the first ``skip``)."""
    import pydantic

    target = _signature_target(factory)
    parameters = list(inspect.signature(target).parameters.values())
    if inspect.isclass(factory):
        parameters = parameters[1:]  # self
    try:
        hints = typing.get_type_hints(target, include_extras=True)  # keep Annotated[..., Field(ge=1)]
    except Exception as exc:
        raise OptmapError(
            f"the options of '{getattr(factory, '__qualname__', factory)}' cannot be read: its type "
            f"hints do not resolve ({type(exc).__name__}: {exc}); fix the plugin's annotations"
        ) from None
    fields: dict[str, Any] = {}
    positional = 0
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if positional < skip and parameter.kind != parameter.KEYWORD_ONLY:
            positional += 1
            continue
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    config = pydantic.ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
    name = getattr(factory, "__name__", "Options")
    return pydantic.create_model(f"{name}Options", __config__=config, **fields)


def _short(value: Any, limit: int = 60) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _location(loc: tuple) -> str:
    """``('shape', 'list[int]', 1)`` → ``shape[1]``: keys and indices, not pydantic's type tags."""
    if not loc:
        return "(section)"
    text = str(loc[0])
    for part in loc[1:]:
        if isinstance(part, int):
            text += f"[{part}]"
        elif str(part).isidentifier():
            text += f".{part}"
    return text


def _valid(valid: list[str]) -> str:
    return f"valid keys: {', '.join(valid)}" if valid else "this section takes no other keys"


def suggestion(key: str, choices) -> str:
    """``"; did you mean 'y'?"`` if one of ``choices`` is close to ``key``, else ``""``."""
    import difflib

    close = difflib.get_close_matches(key, sorted(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def unknown_key(key: str, valid) -> str:
    """``unknown key 'x'; did you mean 'y'? valid keys: ...`` (the suggestion only if one is close)."""
    hint = suggestion(key, valid)
    return f"unknown key '{key}'{hint or ';'} {_valid(sorted(valid))}"


def _describe(error: dict, valid: list[str]) -> str:
    location = _location(error["loc"])
    if error["type"] == "extra_forbidden":
        return unknown_key(location, valid)
    if error["type"] == "missing":
        return f"missing required key '{location}'; {_valid(valid)}"
    given = error.get("input")
    if error["type"] == "greater_than_equal" and error.get("ctx", {}).get("ge") == 1 and isinstance(given, int):
        return f"key '{location}': {location} must be a positive integer, got {_short(given)}"
    message = " ".join(str(error["msg"]).split())
    message = message[:1].lower() + message[1:]
    if isinstance(given, str) and error["type"] in ("int_type", "float_type", "int_parsing", "float_parsing"):
        message += " (a string: write numbers without quotes)"
    return f"key '{location}': {message}, got {_short(given)}"


def _has_tuple(annotation: Any) -> bool:
    """True when ``annotation`` (through Annotated, Optional and unions) is a tuple type."""
    origin = typing.get_origin(annotation)
    if origin is tuple or annotation is tuple:
        return True
    return any(_has_tuple(arg) for arg in typing.get_args(annotation) if arg is not Ellipsis)


def _arrays_as_tuples(value: Any) -> Any:
    return tuple(_arrays_as_tuples(v) for v in value) if isinstance(value, list) else value


def _non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return any(_non_finite(v) for v in value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    return False


def _is_number_annotation(annotation: Any) -> bool:
    if annotation in _NUMBERS:
        return True
    args = typing.get_args(annotation)
    return bool(args) and all(arg in _NUMBERS or arg is type(None) for arg in args)


def validate_options(
    what: str, factory: Callable, options: dict[str, Any], skip: int = 0, section_keys: tuple[str, ...] = ()
) -> dict:
    """``options`` checked and converted for ``factory``; a one-line OptmapError otherwise.

    ``what`` prefixes the message (the file and section); ``section_keys`` are the keys of the
    same section the host consumes itself (``model``, ``topology``, ...), listed among the valid
    keys so a user sees the whole set.
    """
    import pydantic

    try:
        model = options_model(factory, skip)
    except Exception as exc:  # the plugin's signature, not the user's file, is at fault
        message = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise OptmapError(f"{what}: cannot read the factory's options from its signature ({message})") from exc
    valid = sorted(set(model.model_fields) | set(section_keys))
    options = dict(options)
    for key, value in options.items():
        field = model.model_fields.get(key)
        if field is None:
            continue
        if isinstance(value, bool) and _is_number_annotation(field.annotation):
            raise OptmapError(f"{what}: key '{key}' must be a number, got {str(value).lower()}")
        if _non_finite(value):
            raise OptmapError(f"{what}: key '{key}' must be finite, got {_short(value)} (nan and inf are not values)")
        if isinstance(value, list) and _has_tuple(field.annotation):
            options[key] = _arrays_as_tuples(value)
    try:
        validated = model.model_validate(options)
    except pydantic.ValidationError as exc:
        errors = sorted(exc.errors(), key=lambda e: _ORDER.get(e["type"], 2))
        if errors[0]["type"] == "extra_forbidden":  # a misspelt key is also reported missing
            errors = [e for e in errors if e["type"] != "missing"]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise OptmapError(f"{what}: {_describe(errors[0], valid)}{more}") from None
    return {name: getattr(validated, name) for name in model.model_fields}


def options_schema(factory: Callable, skip: int = 0) -> dict:
    """JSON Schema of ``factory``'s options, for `optmap schema` and editor validation."""
    return options_model(factory, skip).model_json_schema()
