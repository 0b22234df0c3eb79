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

import copy
import functools
import inspect
import math
import types
import typing
from typing import Any, Callable

from optmap.errors import OptmapError

_ORDER = {"extra_forbidden": 0, "missing": 1}

# Keyword parameters the host fills in itself, never problem-file options: a factory that declares
# ``host`` receives the :class:`~optmap.host.Host` building it (to build another registered
# plugin by name, e.g. a composite cost model's inner formulation).
INJECTED = ("host",)
_NUMBERS = (int, float)


def _signature_target(factory: Callable) -> Callable:
    return factory.__init__ if inspect.isclass(factory) else factory


@functools.lru_cache(maxsize=None)
def option_fields(factory: Callable, skip: int = 0) -> dict[str, tuple[Any, Any]]:
    """``factory``'s options (its parameters after the first ``skip``): name → (annotation,
    default), the default ``...`` when the option is required."""
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
        if parameter.name in INJECTED and parameter.kind == parameter.KEYWORD_ONLY:
            continue
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    return fields


@functools.lru_cache(maxsize=None)
def options_model(factory: Callable, skip: int = 0):
    """A pydantic model of ``factory``'s options (its parameters after the first ``skip``)."""
    import pydantic

    config = pydantic.ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
    name = getattr(factory, "__name__", "Options")
    return pydantic.create_model(f"{name}Options", __config__=config, **option_fields(factory, skip))


_BOUNDS = {"gt": lambda v, b: v > b, "ge": lambda v, b: v >= b, "lt": lambda v, b: v < b, "le": lambda v, b: v <= b}


def _plain_value(annotation: Any, value: Any) -> Any:
    """``value`` as pydantic would accept it for a plain annotation (int, float, str, bool, a
    Literal, ``X | None``, ``Annotated[X, Gt(0)]``...), or ``_UNSURE`` when pydantic must decide."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        checked = _plain_value(base, value)
        for bound in meta:
            limits = [(key, getattr(bound, key, None)) for key in _BOUNDS if getattr(bound, key, None) is not None]
            if not limits or type(bound).__module__ != "annotated_types":
                return _UNSURE
            if checked is not _UNSURE and not all(_BOUNDS[key](checked, limit) for key, limit in limits):
                return _UNSURE  # out of bounds: pydantic words the error
        return checked
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if value is None and type(None) in options:
            return None
        rest = [option for option in options if option is not type(None)]
        return _plain_value(rest[0], value) if len(rest) == 1 else _UNSURE
    if origin is typing.Literal:
        return value if any(value == arg and type(value) is type(arg) for arg in typing.get_args(annotation)) else _UNSURE
    if isinstance(value, bool):
        return value if annotation is bool else _UNSURE
    if annotation is int and type(value) is int or annotation is str and type(value) is str:
        return value
    if annotation is float and type(value) in (int, float) and math.isfinite(value):
        return float(value)
    return _UNSURE


_UNSURE = object()


def _plain_options(factory: Callable, skip: int, options: dict[str, Any]) -> dict[str, Any] | None:
    """The validated options when every given value is plainly right for its annotation (strict
    TOML types, finite, within its bounds), without building a pydantic model (a tenth of a
    second per process); None when pydantic must judge, and word any error."""
    fields = option_fields(factory, skip)
    if any(key not in fields for key in options):
        return None
    out = {}
    for name, (annotation, default) in fields.items():
        if name in options:
            value = _plain_value(annotation, options[name])
            if value is _UNSURE:
                return None
            out[name] = value
        elif default is ...:
            return None
        else:
            out[name] = copy.deepcopy(default)  # as pydantic: a list default is not shared
    return out


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
    try:
        plain = _plain_options(factory, skip, options)
    except Exception:  # an unreadable signature: pydantic's path below reports it
        plain = None
    if plain is not None:
        return plain
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
        # the deepest error of a union first: {bf16 = 0} is a table whose entry is out of range,
        # not "a valid number"
        errors = sorted(exc.errors(), key=lambda e: (_ORDER.get(e["type"], 2), -len(e["loc"])))
        if errors[0]["type"] == "extra_forbidden":  # a misspelt key is also reported missing
            errors = [e for e in errors if e["type"] != "missing"]
        firsts = {}  # one problem per key: a union's branches are one problem
        for error in errors:
            firsts.setdefault(error["loc"][0] if error["loc"] else "", error)
        keys = len(firsts) - 1
        more = f"; {keys} more problem{'s' * (keys > 1)} in this section" if keys else ""
        raise OptmapError(f"{what}: {_describe(errors[0], valid)}{more}",
                          problems=[f"{what}: {_describe(error, valid)}" for error in firsts.values()]) from None
    return {name: getattr(validated, name) for name in model.model_fields}


def options_schema(factory: Callable, skip: int = 0) -> dict:
    """JSON Schema of ``factory``'s options, for `optmap schema` and editor validation."""
    return options_model(factory, skip).model_json_schema()
