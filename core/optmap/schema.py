"""JSON Schema of problem files, built from the registered plugins' option signatures."""

from __future__ import annotations

from typing import Any

from optmap.host import load_host
from optmap.options import options_schema


def _variants(host, kind: str, key: str, skip: int) -> list[dict[str, Any]]:
    """One object schema per registered name: its options plus ``key = "<name>"``.

    A workload that reads model files (one registered for a suffix) may omit ``model`` when
    ``file`` is given, as :func:`optmap.problem.build_problem` picks the reader by suffix.
    """
    variants = []
    readers = {entry.target for entry in host.registries["workload_reader"].values()}
    for name in host.names(kind):
        entry = host.registries[kind][name]
        factory = entry.resolve()
        schema = options_schema(factory, skip)
        schema.pop("title", None)
        schema.setdefault("properties", {})[key] = {"const": name}
        required = set(schema.get("required", [])) | {key}
        if kind == "workload" and name in readers and "file" in schema["properties"]:
            required.discard(key)
        schema["required"] = sorted(required)
        schema["additionalProperties"] = False
        description = entry.summary
        variants.append({"title": name, **({"description": description} if description else {}), **schema})
    return variants


def problem_schema(plugins: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    """The schema: sections, and for each plugin section one variant per registered plugin."""
    host = load_host(tuple(plugins))
    from optmap.problem.system_section import accelerator_definition, datasheet_overrides

    overrides = options_schema(datasheet_overrides)
    group = {  # an accelerator registered by a plugin or defined in [accelerators]; the other keys are its options
        "type": "object",
        "properties": {"accelerator": {"type": "string", "examples": host.names("accelerator")},
                       "count": {"type": "integer", "minimum": 1}, "name": {"type": "string", "minLength": 1},
                       **overrides.get("properties", {})},
        "required": ["accelerator", "count"],
        "additionalProperties": True,
    }
    definition = options_schema(accelerator_definition)
    definition.pop("title", None)
    definition["additionalProperties"] = False
    systems = _variants(host, "topology", "topology", 1)
    for variant in systems:
        variant["properties"]["groups"] = {"type": "array", "items": group, "minItems": 1}
        variant["required"] = sorted(set(variant["required"]) | {"groups"})
    budget = {
        "type": "object",
        "properties": {"evaluations": {"type": "integer", "minimum": 1}, "seconds": {"type": "number", "exclusiveMinimum": 0}},
        "additionalProperties": False,
    }
    search_properties: dict[str, Any] = {
        "engine": {"enum": host.names("search_engine")},
        "seed": {"type": "integer", "minimum": 0},
        "budget": budget,
    }
    for name in host.names("search_engine"):
        engine_schema = options_schema(host.registries["search_engine"][name].resolve())
        engine_schema.pop("title", None)
        search_properties[name] = {"type": "object", **engine_schema, "additionalProperties": False}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "optmap problem",
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "workload": {"anyOf": _variants(host, "workload", "model", 0)},
            "system": {"anyOf": systems},
            "cost": {"anyOf": _variants(host, "cost_model", "model", 2)},
            "accelerators": {"type": "object", "additionalProperties": definition},
            "fix": {"type": "object", "description": "decisions pinned for every engine (optmap show lists them)"},
            "objective": {
                "type": "object",
                "properties": {"minimize": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                               "maximize": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
                "additionalProperties": False,
            },
            "constraints": {"type": "object", "patternProperties": {"^(max|min)_": {"type": "number"}},
                            "additionalProperties": False},
            "search": {"type": "object", "properties": search_properties, "additionalProperties": False},
        },
        "required": ["workload", "system", "cost"],
        "additionalProperties": False,
    }
