"""Plugin options: a factory's annotated keyword parameters are its problem-file keys.

pydantic builds a strict model from the signature, so a plugin author declares options once, as
ordinary typed parameters with defaults, and gets validation, clear errors and a JSON Schema.
"""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any, Callable

from optmap.errors import OptmapError, did_you_mean


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
        hints = typing.get_type_hints(target)
    except Exception:
        hints = {}
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
    config = pydantic.ConfigDict(extra="forbid", strict=False, arbitrary_types_allowed=True)
    name = getattr(factory, "__name__", "Options")
    return pydantic.create_model(f"{name}Options", __config__=config, **fields)


def _describe(error: dict, valid: list[str]) -> str:
    location = ".".join(str(part) for part in error["loc"]) or "(section)"
    if error["type"] == "extra_forbidden":
        key = str(error["loc"][0])
        return f"unknown key '{location}'{did_you_mean(key, valid).replace('valid names', 'valid keys')}"
    if error["type"] == "missing":
        return f"missing required key '{location}'"
    return f"key '{location}': {error['msg']} (got {error.get('input')!r})"


def validate_options(what: str, factory: Callable, options: dict[str, Any], skip: int = 0) -> dict:
    """``options`` checked and converted for ``factory``; an OptmapError otherwise."""
    import pydantic

    model = options_model(factory, skip)
    try:
        validated = model.model_validate(options)
    except pydantic.ValidationError as exc:
        raise OptmapError(f"{what}: {_describe(exc.errors()[0], sorted(model.model_fields))}") from None
    return {name: getattr(validated, name) for name in model.model_fields}


def options_schema(factory: Callable, skip: int = 0) -> dict:
    """JSON Schema of ``factory``'s options, for `optmap schema` and editor validation."""
    return options_model(factory, skip).model_json_schema()
