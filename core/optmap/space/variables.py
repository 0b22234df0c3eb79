"""Decision variables: categorical, integer, real and permutation, with conditions and pins."""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from optmap.errors import OptmapError

KINDS = ("categorical", "integer", "real", "permutation")


@dataclass(frozen=True)
class Variable:
    """One decision: a categorical choice, an integer or real in [low, high], or a permutation."""

    name: str
    kind: str
    choices: tuple = ()  # categorical: the choices; permutation: the items
    low: float = 0.0
    high: float = 0.0
    tags: tuple[tuple[str, Any], ...] = ()
    active_if: tuple[tuple[str, tuple], ...] = ()  # ((parent, allowed values), ...): all must hold
    pinned: Any = None  # the value this variable is fixed to (see DesignSpace.pin)
    default: Any = None  # the value a mapping that leaves this variable out takes (None: it must name one)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"variable {self.name}: kind must be one of {KINDS}")
        if self.kind in ("categorical", "permutation") and not self.choices:
            raise ValueError(f"variable {self.name}: a {self.kind} variable needs choices")
        if self.kind == "permutation" and len(set(self.choices)) != len(self.choices):
            raise ValueError(f"variable {self.name}: a permutation's items must be distinct")
        if self.kind in ("integer", "real") and self.high < self.low:
            raise ValueError(f"variable {self.name}: high < low")

    @property
    def width(self) -> int:
        """Columns this variable takes in a vector."""
        return len(self.choices) if self.kind == "permutation" else 1

    @property
    def is_pinned(self) -> bool:
        return self.pinned is not None

    @property
    def lower(self) -> np.ndarray:
        """Lower bound of each of its columns."""
        if self.is_pinned:
            return self.encode(self.pinned)
        if self.kind == "permutation":
            return np.zeros(self.width)
        return np.array([0.0 if self.kind == "categorical" else float(self.low)])

    @property
    def upper(self) -> np.ndarray:
        """Upper bound of each of its columns."""
        if self.is_pinned:
            return self.encode(self.pinned)
        if self.kind == "permutation":
            return np.ones(self.width)
        return np.array([float(len(self.choices) - 1) if self.kind == "categorical" else float(self.high)])

    @property
    def cardinality(self) -> float:
        """Distinct values (1 when pinned, ``math.inf`` for a real range)."""
        if self.is_pinned:
            return 1
        if self.kind == "permutation":
            return math.factorial(self.width)
        if self.kind == "real":
            return math.inf if self.high > self.low else 1
        return int(self.upper[0] - self.lower[0]) + 1

    def tag(self, key: str, default: Any = None) -> Any:
        return dict(self.tags).get(key, default)

    def value(self, x: Sequence[float] | float) -> Any:
        """The decision that this variable's columns of a vector stand for."""
        if self.kind == "permutation":
            return tuple(self.choices[i] for i in np.argsort(np.asarray(x, float), kind="stable"))
        x = float(np.asarray(x).reshape(-1)[0])
        if self.kind == "categorical":
            return self.choices[int(round(x))]
        if self.kind == "integer":
            return int(round(x))
        return x

    def parse(self, value: Any) -> Any:
        """``value`` as one of this variable's values; a string from the command line matches a
        choice by its text. An integer tagged ``step`` (the quantity one unit stands for, e.g.
        AccPar's share grid, 1/60) also takes that quantity, as results print it: to four
        significant digits (:meth:`_from_step`). An OptmapError names the domain otherwise."""
        if self.kind == "categorical":
            same_type = [c for c in self.choices if type(c) is type(value) and c == value]
            numbers = [c for c in self.choices if _number(c) and _number(value) and c == value]
            text = [c for c in self.choices if str(c) == str(value)]  # e.g. --fix x=I from the command line
            for found in (same_type, numbers, text):
                if found:
                    return found[0]
            raise OptmapError(f"decision '{self.name}': {value!r} is not one of {list(self.choices)}")
        if self.kind == "permutation":
            items = list(value) if isinstance(value, (list, tuple)) else None
            if items is None or sorted(map(str, items)) != sorted(map(str, self.choices)) or len(items) != self.width:
                raise OptmapError(f"decision '{self.name}': {value!r} is not an ordering of {list(self.choices)}")
            by_text = {str(c): c for c in self.choices}
            return tuple(by_text[str(i)] for i in items)
        if not _number(value) or not math.isfinite(value):
            raise OptmapError(f"decision '{self.name}': {value!r} is not a number in [{self.low:g}, {self.high:g}]")
        if self.kind == "integer" and value != int(value) and self.tag("step"):
            return self._from_step(value)
        if self.kind == "integer" and value != int(value):
            raise OptmapError(f"decision '{self.name}': {value!r} is not a whole number in "
                              f"[{self.low:g}, {self.high:g}]")
        if not self.low <= value <= self.high:
            raise OptmapError(f"decision '{self.name}': {value!r} is outside [{self.low:g}, {self.high:g}]")
        return int(value) if self.kind == "integer" else float(value)

    def _from_step(self, quantity: float) -> int:
        """The whole number whose quantity (``value × step``) is ``quantity`` as printed to four
        significant digits (a result's 0.3333 is step 20 of 1/60), or an OptmapError naming the
        nearest ones."""
        step = float(self.tag("step"))
        nearest = int(round(quantity / step))
        if self.low <= nearest <= self.high and abs(nearest * step - quantity) <= 5e-4 * max(abs(quantity), step):
            return nearest
        around = [k for k in (math.floor(quantity / step), math.ceil(quantity / step)) if self.low <= k <= self.high]
        options = " or ".join(f"{k * step:.4g} ({k})" for k in dict.fromkeys(around)) or "none in range"
        raise OptmapError(f"decision '{self.name}': {quantity!r} is not on its grid of {self.low:g}..{self.high:g} "
                          f"steps of {step:.4g}; nearest: {options}")

    def encode(self, value: Any) -> np.ndarray:
        """The vector columns for a decision."""
        value = self.parse(value)
        if self.kind == "categorical":
            return np.array([float(self.choices.index(value))])
        if self.kind == "permutation":
            rank = {item: position for position, item in enumerate(value)}
            return np.array([(rank[item] + 0.5) / self.width for item in self.choices])
        return np.array([float(value)])

    def values(self) -> np.ndarray:
        """Every value of a discrete variable as rows of its columns, in order."""
        if self.is_pinned:
            return self.lower[None]
        if self.kind == "real":
            raise OptmapError(f"variable '{self.name}' is real-valued and cannot be enumerated")
        if self.kind == "permutation":
            return np.array([self.encode(tuple(self.choices[i] for i in order))
                             for order in itertools.permutations(range(self.width))])
        return np.arange(self.lower[0], self.upper[0] + 1)[:, None]


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _conditions(active_if: dict[str, Any] | None) -> tuple[tuple[str, tuple], ...]:
    if not active_if:
        return ()
    return tuple((parent, tuple(v if isinstance(v, (list, tuple)) else [v])) for parent, v in active_if.items())


def categorical(name: str, choices: Sequence, *, active_if: dict | None = None, default: Any = None,
                **tags: Any) -> Variable:
    """A choice among ``choices``; ``default`` (one of them) is taken where a mapping leaves it out
    (a decision added to a formulation later, so that plans written before it still name one)."""
    if default is not None and default not in tuple(choices):
        raise ValueError(f"variable {name}: default {default!r} is not one of its choices")
    return Variable(name, "categorical", choices=tuple(choices), tags=tuple(tags.items()),
                    active_if=_conditions(active_if), default=default)


def integer(name: str, low: int, high: int, *, active_if: dict | None = None, **tags: Any) -> Variable:
    return Variable(name, "integer", low=low, high=high, tags=tuple(tags.items()), active_if=_conditions(active_if))


def real(name: str, low: float, high: float, *, active_if: dict | None = None, **tags: Any) -> Variable:
    return Variable(name, "real", low=low, high=high, tags=tuple(tags.items()), active_if=_conditions(active_if))


def permutation(name: str, items: Sequence, *, active_if: dict | None = None, **tags: Any) -> Variable:
    """An ordering of ``items`` (random-key encoded: one column per item)."""
    return Variable(name, "permutation", choices=tuple(items), tags=tuple(tags.items()),
                    active_if=_conditions(active_if))
