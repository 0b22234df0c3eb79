"""Design spaces: typed decision variables and their numpy vector encoding.

A point of a space is a float vector with one entry per variable: the choice index of a
categorical variable, the value of an integer or real one. Whole populations are ``(N, n)``
arrays, which is what vectorised cost models and generic engines exchange.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from optmap.errors import OptmapError

KINDS = ("categorical", "integer", "real")


@dataclass(frozen=True)
class Variable:
    """One decision: a categorical choice, an integer in [low, high] or a real in [low, high]."""

    name: str
    kind: str
    choices: tuple = ()
    low: float = 0.0
    high: float = 0.0
    tags: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"variable {self.name}: kind must be one of {KINDS}")
        if self.kind == "categorical" and not self.choices:
            raise ValueError(f"variable {self.name}: a categorical variable needs choices")
        if self.kind != "categorical" and self.high < self.low:
            raise ValueError(f"variable {self.name}: high < low")

    @property
    def lower(self) -> float:
        return 0.0 if self.kind == "categorical" else float(self.low)

    @property
    def upper(self) -> float:
        return float(len(self.choices) - 1) if self.kind == "categorical" else float(self.high)

    @property
    def cardinality(self) -> float:
        if self.kind == "real":
            return math.inf
        return int(self.upper - self.lower) + 1

    def tag(self, key: str, default: Any = None) -> Any:
        return dict(self.tags).get(key, default)

    def value(self, x: float) -> Any:
        """The decision a vector entry stands for."""
        if self.kind == "categorical":
            return self.choices[int(round(x))]
        if self.kind == "integer":
            return int(round(x))
        return float(x)

    def encode(self, value: Any) -> float:
        """The vector entry for a decision."""
        if self.kind == "categorical":
            try:
                return float(self.choices.index(value))
            except ValueError:
                raise OptmapError(
                    f"variable '{self.name}': {value!r} is not one of {list(self.choices)}"
                ) from None
        if not self.low <= value <= self.high:
            raise OptmapError(f"variable '{self.name}': {value} outside [{self.low}, {self.high}]")
        return float(value)


def categorical(name: str, choices: Sequence, **tags: Any) -> Variable:
    return Variable(name, "categorical", choices=tuple(choices), tags=tuple(tags.items()))


def integer(name: str, low: int, high: int, **tags: Any) -> Variable:
    return Variable(name, "integer", low=low, high=high, tags=tuple(tags.items()))


def real(name: str, low: float, high: float, **tags: Any) -> Variable:
    return Variable(name, "real", low=low, high=high, tags=tuple(tags.items()))


@dataclass(frozen=True, eq=False)
class DesignSpace:
    """An ordered set of variables with vector encode/decode, enumeration and sampling."""

    variables: tuple[Variable, ...]
    _index: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", tuple(self.variables))
        index = {v.name: i for i, v in enumerate(self.variables)}
        if len(index) != len(self.variables):
            raise ValueError("design space: duplicate variable names")
        object.__setattr__(self, "_index", index)

    def __len__(self) -> int:
        return len(self.variables)

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variables]

    def index(self, name: str) -> int:
        return self._index[name]

    @property
    def lower(self) -> np.ndarray:
        return np.array([v.lower for v in self.variables])

    @property
    def upper(self) -> np.ndarray:
        return np.array([v.upper for v in self.variables])

    @property
    def discrete(self) -> np.ndarray:
        """Mask of the variables that take whole-number vector entries."""
        return np.array([v.kind != "real" for v in self.variables])

    @property
    def size(self) -> float:
        """Number of distinct points (``math.inf`` when a variable is real)."""
        return math.prod(v.cardinality for v in self.variables)

    def decode(self, x: Sequence[float]) -> "Mapping":
        return Mapping(self, tuple(float(v) for v in self.repair(np.asarray(x, float)[None])[0]))

    def encode(self, values: dict[str, Any]) -> np.ndarray:
        missing = [n for n in self.names if n not in values]
        if missing:
            raise OptmapError(f"mapping lacks a value for {', '.join(missing[:5])}")
        return np.array([v.encode(values[v.name]) for v in self.variables])

    def mapping(self, values: dict[str, Any]) -> "Mapping":
        return Mapping(self, tuple(self.encode(values)))

    def repair(self, X: np.ndarray) -> np.ndarray:
        """Clip to bounds and round the discrete entries."""
        X = np.clip(np.asarray(X, float), self.lower, self.upper)
        mask = self.discrete
        X[:, mask] = np.round(X[:, mask])
        return X

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` uniformly random points."""
        low, high = self.lower, self.upper
        X = rng.uniform(low, high + self.discrete, size=(n, len(self)))
        X[:, self.discrete] = np.floor(X[:, self.discrete])
        return np.minimum(X, high)

    def grid(self, chunk: int = 65536) -> Iterator[np.ndarray]:
        """Every point, in mixed-radix order, as ``(<=chunk, n)`` arrays (discrete spaces only)."""
        if not self.discrete.all():
            raise OptmapError("cannot enumerate a design space with real variables")
        radices = np.array([v.cardinality for v in self.variables], dtype=np.int64)
        strides = np.concatenate([np.cumprod(radices[::-1])[::-1][1:], [1]]).astype(np.int64)
        total = int(np.prod(radices.astype(float)))
        for start in range(0, total, chunk):
            flat = np.arange(start, min(start + chunk, total), dtype=np.int64)
            digits = (flat[:, None] // strides[None, :]) % radices[None, :]
            yield digits + self.lower


@dataclass(frozen=True)
class Mapping:
    """One point of a design space: a decision for every variable."""

    space: DesignSpace = field(compare=False, repr=False)
    vector: tuple[float, ...]

    def __getitem__(self, name: str) -> Any:
        i = self.space.index(name)
        return self.space.variables[i].value(self.vector[i])

    def as_dict(self) -> dict[str, Any]:
        return {v.name: v.value(x) for v, x in zip(self.space.variables, self.vector)}

    @property
    def array(self) -> np.ndarray:
        return np.array(self.vector)
