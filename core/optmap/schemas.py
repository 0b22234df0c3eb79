"""Schemas of the files optmap writes and later reads back, and the one way to read them.

A saved file is input like any other: a user may edit it, a disk may cut it short, another
version may have written it. :func:`read_json` reads one, :func:`check` validates it against a
pydantic model in strict mode (as the problem file's options are: a string is not a number,
``null`` is not a list, NaN and infinity are not values), and every fault becomes one line that
names the file, the key and what was expected, e.g.
``runs.json: key 'rows[0].engine': missing (expected a string)``.

The models here describe what ``optmap run --json`` (:class:`ResultFile`), ``optmap compare
--json`` (:class:`ComparisonFile`) and ``optmap sweep`` (:class:`SweepStore`) write. Keys a newer
optmap may add are allowed and kept; the keys optmap reads back are typed.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from optmap.errors import OptmapError

SWEEP_FORMAT = "optmap-sweep/1"

# a metric value: a finite number, or null where the model does not report it (strict JSON has no NaN)
Number = Optional[float]
Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0)]


class Saved(BaseModel):
    """Strict types, other keys kept. NaN is accepted where a number is: Python's ``json`` writes
    a value a model does not report as NaN (optmap itself writes null)."""

    model_config = ConfigDict(strict=True, extra="allow")


# --- optmap run --json --------------------------------------------------------------------------

class LayerRow(Saved):
    """One row of a report's per-layer breakdown; its other keys are the layer's decisions."""

    name: str
    compute_s: Number = None
    communication_s: Number = None
    memory_bytes: Number = None


class ReportPart(Saved):
    metrics: dict[str, Number] = {}
    feasible: bool = True
    reason: str = ""
    plan: dict[str, Any] = {}
    layers: list[LayerRow] = []
    tables: dict[str, list[dict[str, Any]]] = {}
    children: dict[str, "ReportPart"] = {}  # the reports of the formulations a composite nests


class FrontEntry(Saved):
    mapping: Optional[dict[str, Any]] = None
    values: dict[str, Number] = {}


class ProblemPart(Saved):
    name: str = ""


# [evaluations, seconds, best value so far]
HistoryEntry = Annotated[list[Number], Field(min_length=3, max_length=3)]


class RunPart(Saved):
    """A run as ``SearchResult.to_json`` writes it (a comparison holds several)."""

    engine: str
    seed: Count
    objectives: Optional[list[str]] = None  # older files: the keys of ``values``
    senses: list[Literal["min", "max"]] = []
    units: dict[str, str] = {}
    values: dict[str, Number]
    mapping: Optional[dict[str, Any]] = None
    report: Optional[ReportPart] = None
    front: list[FrontEntry] = []
    history: list[HistoryEntry] = []
    evaluations: Count = 0
    seconds: Seconds = 0.0
    stopped: str = "?"
    extra: dict[str, Any] = {}

    @pydantic.model_validator(mode="after")
    def _objectives_named(self):
        names = self.objectives if self.objectives is not None else list(self.values)
        if self.senses and len(self.senses) != len(names):
            raise ValueError(f"senses: {len(self.senses)} given for {len(names)} objectives; give one per objective")
        if len(self.front) > 1 and not names:
            raise ValueError("objectives: a front of several plans needs the objectives' names")
        return self


class ResultFile(RunPart):
    """``optmap run --json``: one run and the problem it ran."""

    problem: Optional[ProblemPart] = None


# --- optmap compare --json ----------------------------------------------------------------------

class ComparisonRow(Saved):
    """One engine's row of a comparison table; its other keys are numbers or short texts."""

    engine: str
    runs: Count = 0
    failed: Count = 0
    best_mean: Number = None
    best_min: Number = None
    best_max: Number = None
    gap_percent: Number = None
    within_1pct: Count = 0
    evals_to_1pct: Number = None
    seconds_to_1pct: Number = None
    evaluations: Number = None
    wall_seconds: Number = None
    speedup: Number = None

    @pydantic.model_validator(mode="after")
    def _scalar_columns(self):
        for key, value in (self.model_extra or {}).items():
            if not (value is None or isinstance(value, (str, int, float, bool))):
                raise ValueError(f"{key}: a table cell must be a number, text, true/false or null")
        return self


class ComparisonFile(Saved):
    problem: str
    objective: str
    baseline: Optional[str] = None
    best_known: Number = None
    best_known_source: str = "best"
    rows: list[ComparisonRow]
    runs: list[RunPart]


# --- optmap sweep --out -------------------------------------------------------------------------

class SweepRow(Saved):
    """One point of a sweep (:func:`optmap.sweep.execute.run_point`)."""

    id: Annotated[str, Field(min_length=1)]
    problem: str
    file: str = ""
    variant: Optional[str] = None
    set: dict[str, Any] = {}
    overrides: list[str] = []
    engine: Optional[str]  # None: the point failed before its problem named one
    seed: Optional[Count]
    axes: Optional[list[str]] = None
    error: Optional[str] = None
    objectives: dict[str, Number] = {}
    metrics: dict[str, Number] = {}
    derived: dict[str, Number] = {}
    units: dict[str, str] = {}
    feasible: Optional[bool] = None
    evaluations: Count = 0
    seconds: Optional[Seconds] = 0.0
    stopped: Optional[str] = None


class SweepStore(Saved):
    format: Literal["optmap-sweep/1"]
    title: str = ""
    rows: list[SweepRow]

    @pydantic.model_validator(mode="after")
    def _unique_ids(self):
        ids = [row.id for row in self.rows]
        if len(set(ids)) != len(ids):
            raise ValueError(f"rows: point id '{next(i for i in ids if ids.count(i) > 1)}' is listed twice")
        return self


# --- reading and checking -----------------------------------------------------------------------

def read_json(path: str | Path, what: str = "file") -> Any:
    """The JSON value in ``path``, or one line saying why it cannot be read."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise OptmapError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise OptmapError(f"{path}: is a folder, not a {what}") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else " ".join(str(exc).split())
        raise OptmapError(f"{path}: cannot read it ({reason})") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise OptmapError(f"{path}: cannot read it: not a readable JSON file ({' '.join(str(exc).split())})") from None
    except RecursionError:
        raise OptmapError(f"{path}: cannot read it: not a readable JSON file (nested too deeply)") from None


def check(model: type[BaseModel], data: Any, where: str) -> BaseModel:
    """``data`` validated by ``model``; one line naming ``where``, the key and what was expected."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        raise OptmapError(f"{where}: {describe(model, error)}") from None
    except RecursionError:
        raise OptmapError(f"{where}: nested too deeply") from None


def describe(model: type[BaseModel], error: dict) -> str:
    """A pydantic error as ``key 'rows[0].seconds': expected a number, got 'x'``."""
    loc = tuple(error["loc"])
    key = key_path(loc)
    expected = expectation(model, loc)
    kind = error["type"]
    given = error.get("input")
    if kind == "missing":
        return f"key '{key}' is missing" + (f" (expected {expected})" if expected else "")
    if kind == "value_error":  # a model's own check: "SUBKEY: what is wrong", or just what is wrong
        message = " ".join(str(error.get("ctx", {}).get("error", error["msg"])).split())
        head, sep, rest = message.partition(": ")
        if sep and head.replace(".", "").replace("_", "").isalnum():
            return f"key '{key_path((*loc, head)) if loc else head}': {rest}"
        return f"key '{key}': {message}" if loc else message
    if kind.endswith("_type") or kind in ("literal_error", "finite_number") or not expected:
        what = expected if kind != "finite_number" else "a finite number"
        return f"key '{key}': expected {what or error['msg']}, got {_short(given)}"
    bound = next(((sign, error.get("ctx", {}).get(name)) for name, sign in BOUNDS.items() if kind == BOUND_TYPES[name]),
                 None)
    if bound is not None and isinstance(bound[1], (int, float)):
        return f"key '{key}': expected {expected} {bound[0]} {bound[1]:g}, got {_short(given)}"
    message = " ".join(str(error["msg"]).split())
    return f"key '{key}': {message[:1].lower() + message[1:]}, got {_short(given)}"


BOUNDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
BOUND_TYPES = {"gt": "greater_than", "ge": "greater_than_equal", "lt": "less_than", "le": "less_than_equal"}


def key_path(loc: tuple) -> str:
    """``('rows', 0, 'seconds')`` → ``rows[0].seconds``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def expectation(model: type[BaseModel], loc: tuple) -> str:
    """What the schema expects at ``loc``, in words ("a string", "a list", ...)."""
    annotation: Any = model
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                return ""
            annotation = field.annotation
            continue
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is list and args:
            annotation = args[0]
        elif origin is dict and len(args) == 2:
            annotation = args[1]
        else:
            return ""
    return words(annotation)


def _unwrap(annotation: Any) -> Any:
    """``Annotated[X, ...]`` and ``Optional[X]`` → X."""
    while True:
        if typing.get_origin(annotation) is Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
            annotation = args[0]
            continue
        return annotation


NAMES = {str: "a string", int: "a whole number", float: "a number", bool: "true or false", Any: "any value"}


def words(annotation: Any) -> str:
    nullable = type(None) in typing.get_args(annotation)
    core = _unwrap(annotation)
    origin = typing.get_origin(core)
    if origin is Literal:
        text = "one of " + ", ".join(json.dumps(v) for v in typing.get_args(core))
    elif origin in (typing.Union, types.UnionType):
        text = " or ".join(words(a) for a in typing.get_args(core) if a is not type(None))
    elif origin is list or core is list:
        text = "a list"
    elif origin is dict or core is dict or (isinstance(core, type) and issubclass(core, BaseModel)):
        text = "an object"
    else:
        text = NAMES.get(core, "")
    return f"{text} or null" if text and nullable else text


def _short(value: Any, limit: int = 50) -> str:
    text = " ".join(json.dumps(value, default=str)[: limit + 10].split()) if not isinstance(value, dict) else \
        "an object" if value else "{}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
