"""Issue 10: every number a problem file can set has a range (TOML typed strictly, bounds named).

The audit walks every built-in plugin's options: a float needs a lower bound, an int a lower
and an upper one (integers size the work: an unbounded one is a hang or an overflow waiting).
"""

import inspect
import typing

import pytest

from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.options import options_model, validate_options

SKIP = {"workload": 0, "topology": 1, "cost_model": 2, "search_engine": 0, "accelerator": 0}


def _leaves(annotation, metadata=()):
    """(type, bound markers) for every number type inside an annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        yield from _leaves(base, (*metadata, *extra))
    elif annotation in (int, float):
        yield annotation, {type(m).__name__ for m in metadata}
    elif origin is typing.Literal:
        return
    else:
        for arg in typing.get_args(annotation):
            if arg is not Ellipsis and arg is not type(None):
                yield from _leaves(arg, metadata if origin in (typing.Union, type(int | None)) else ())


def _unbounded():
    host = load_host()
    found = []
    for kind, skip in SKIP.items():
        for name, entry in host.registries[kind].items():
            if not host.plugins.get(entry.plugin, "").startswith("optmap "):
                continue  # a third-party plugin's options are its authors' to bound
            factory = entry.resolve()
            if kind == "accelerator" and not inspect.isroutine(factory) and not inspect.isclass(factory):
                continue  # a preset value: its group keys are the core's datasheet overrides, bounded there
            for option, field in options_model(factory, skip).model_fields.items():
                metadata = tuple(field.metadata)
                for number, bounds in _leaves(field.annotation, metadata):
                    low = bounds & {"Ge", "Gt"}
                    high = bounds & {"Le", "Lt"}
                    if not low or (number is int and not high):
                        found.append(f"{kind} {name}: {option}")
    return found


def test_every_numeric_option_is_bounded():
    assert _unbounded() == []


def test_toml_types_are_taken_strictly():
    def build(*, batch: int = 1, share: float = 0.5, check: bool = True, sizes: tuple[int, ...] = ()):
        """Options of every kind."""

    what = "f.toml: [workload] model 'x'"
    with pytest.raises(OptmapError, match=r"key 'batch': input should be a valid integer.*got '256'"):
        validate_options(what, build, {"batch": "256"})  # a string is not a number
    with pytest.raises(OptmapError, match=r"key 'check': input should be a valid boolean.*got 0"):
        validate_options(what, build, {"check": 0})  # a number is not a boolean
    with pytest.raises(OptmapError, match=r"key 'share' must be finite, got nan"):
        validate_options(what, build, {"share": float("nan")})
    with pytest.raises(OptmapError, match=r"key 'batch': input should be a valid integer.*got 2.5"):
        validate_options(what, build, {"batch": 2.5})
    # an integer fills a float, a TOML array a tuple
    assert validate_options(what, build, {"share": 1, "sizes": [1, 2]})["sizes"] == (1, 2)
