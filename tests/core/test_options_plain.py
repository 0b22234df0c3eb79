"""Plainly valid options skip pydantic (issue 14: a tenth of a second per run) with the same
result; anything else, and every error, is still pydantic's (and optmap's) wording."""

from typing import Literal

import pytest

from optmap.bounds import floats, ints
from optmap.errors import OptmapError
from optmap.options import _plain_options, options_model, validate_options


def factory(*, a: int = 1, b: float = 2.0, c: str = "x", d: bool = False, e: Literal["p", "q"] = "p",
            f: floats(0, open_low=True) = 1.0, g: float | None = None, h: list[str] = [], i: ints(1, 10) = 3):
    return locals()


def _pydantic(options: dict) -> dict:
    validated = options_model(factory).model_validate(options)
    return {name: getattr(validated, name) for name in options_model(factory).model_fields}


@pytest.mark.parametrize("options", [{}, {"a": 5}, {"b": 3}, {"b": 2.5}, {"c": "y", "d": True}, {"e": "q"},
                                     {"f": 0.5}, {"g": 2}, {"g": None}, {"i": 10}])
def test_plain_options_equal_pydantic(options):
    plain = _plain_options(factory, 0, options)
    assert plain is not None  # taken without building a pydantic model
    assert plain == _pydantic(options) and [type(v) for v in plain.values()] == [type(v) for v in _pydantic(options).values()]
    assert validate_options("here", factory, options) == plain


def test_a_list_default_is_not_shared():
    first, second = validate_options("here", factory, {}), validate_options("here", factory, {})
    assert first["h"] == [] and first["h"] is not second["h"] and first["h"] is not factory.__kwdefaults__["h"]


@pytest.mark.parametrize("options, words", [
    ({"a": True}, "key 'a' must be a number, got true"),
    ({"b": float("nan")}, "must be finite"),
    ({"f": 0}, "key 'f'"),  # out of its bound (> 0)
    ({"i": 11}, "key 'i'"),
    ({"e": "r"}, "key 'e'"),
    ({"a": 2.0}, "key 'a'"),  # strict TOML types: 2.0 is not an int
    ({"zz": 1}, "unknown key 'zz'"),
])
def test_anything_else_is_judged_and_worded_by_pydantic(options, words):
    assert _plain_options(factory, 0, options) is None
    with pytest.raises(OptmapError, match=words):
        validate_options("here", factory, options)


def test_lists_go_through_pydantic():
    assert _plain_options(factory, 0, {"h": ["x"]}) is None
    assert validate_options("here", factory, {"h": ["x"]})["h"] == ["x"]
