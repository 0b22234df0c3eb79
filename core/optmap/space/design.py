"""`DesignSpace` (variables, their vector encoding, repair, sampling, enumeration, pins) and `Mapping`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from optmap.errors import OptmapError, did_you_mean
from optmap.space.variables import Variable

Repair = Callable[[np.ndarray], np.ndarray]
Sampler = Callable[["np.random.Generator", int], np.ndarray]  # a string: numpy.random loads on first use (25 ms)


@dataclass(frozen=True, eq=False)
class DesignSpace:
    """An ordered set of variables with vector encode/decode, repair, sampling and enumeration."""

    variables: tuple[Variable, ...]
    custom_repair: Repair | None = field(default=None, repr=False)
    custom_sample: Sampler | None = field(default=None, repr=False)

    def __init__(self, variables: Sequence[Variable], repair: Repair | None = None,
                 sample: Sampler | None = None) -> None:
        object.__setattr__(self, "variables", tuple(variables))
        object.__setattr__(self, "custom_repair", repair)
        object.__setattr__(self, "custom_sample", sample)
        index = {v.name: i for i, v in enumerate(self.variables)}
        if len(index) != len(self.variables):
            raise ValueError("design space: duplicate variable names")
        for v in self.variables:
            for parent, _ in v.active_if:
                if parent not in index or index[parent] >= index[v.name]:
                    raise ValueError(f"variable {v.name}: active_if names '{parent}', which must be an earlier variable")
                if self.variables[index[parent]].kind not in ("categorical", "integer"):
                    raise ValueError(f"variable {v.name}: active_if needs a categorical or integer parent")

    def __len__(self) -> int:
        return len(self.variables)

    def __getstate__(self) -> dict:
        return {"variables": self.variables, "custom_repair": self.custom_repair, "custom_sample": self.custom_sample}

    def __setstate__(self, state: dict) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {v.name: i for i, v in enumerate(self.variables)}

    @cached_property
    def offsets(self) -> np.ndarray:
        """First column of each variable (one more entry: the total width)."""
        return np.concatenate([[0], np.cumsum([v.width for v in self.variables])]).astype(int)

    @property
    def width(self) -> int:
        """Columns of a vector."""
        return int(self.offsets[-1])

    def columns(self, name: str) -> slice:
        """The columns of variable ``name``."""
        i = self.index(name)
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variables]

    def index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise OptmapError(f"no decision '{name}'{did_you_mean(str(name), self._index)}") from None

    @cached_property
    def column_kind(self) -> tuple[str, ...]:
        """Per column: categorical, integer, real, or key (a permutation's random key)."""
        return tuple(("key" if v.kind == "permutation" else v.kind) for v in self.variables for _ in range(v.width))

    @cached_property
    def lower(self) -> np.ndarray:
        return np.concatenate([v.lower for v in self.variables]) if self.variables else np.zeros(0)

    @cached_property
    def upper(self) -> np.ndarray:
        return np.concatenate([v.upper for v in self.variables]) if self.variables else np.zeros(0)

    @cached_property
    def discrete(self) -> np.ndarray:
        """Mask of the columns that take whole-number entries."""
        return np.array([kind in ("categorical", "integer") for kind in self.column_kind], bool)

    @cached_property
    def pinned(self) -> dict[str, Any]:
        """The pinned decisions, by name."""
        return {v.name: v.pinned for v in self.variables if v.is_pinned}

    @cached_property
    def _pinned_columns(self) -> np.ndarray:
        return np.concatenate([np.arange(self.offsets[i], self.offsets[i + 1])
                               for i, v in enumerate(self.variables) if v.is_pinned] or [np.zeros(0, int)]).astype(int)

    # --- conditions -------------------------------------------------------------------------
    @cached_property
    def conditional(self) -> bool:
        return any(v.active_if for v in self.variables)

    def active(self, X: np.ndarray) -> np.ndarray:
        """(N, variables) mask of the variables active in each row of ``X``."""
        X = np.atleast_2d(X)
        mask = np.ones((len(X), len(self.variables)), bool)
        for i, v in enumerate(self.variables):
            for parent, allowed in v.active_if:
                p = self.index(parent)
                codes = [self.variables[p].encode(a)[0] for a in allowed]
                mask[:, i] &= mask[:, p] & np.isin(np.round(X[:, self.offsets[p]]), codes)
        return mask

    # --- points -----------------------------------------------------------------------------
    @property
    def size(self) -> float:
        """Number of distinct points (``math.inf`` when a real variable is free; an upper bound
        when a variable depends on several parents)."""
        children: dict[str, list[Variable]] = {}
        for v in self.variables:
            if len(v.active_if) == 1:
                children.setdefault(v.active_if[0][0], []).append(v)

        def count(v: Variable) -> float:
            kids = children.get(v.name, [])
            if not kids:
                return float(v.cardinality)  # floats: a huge space is inf, not an overflow
            total = 0.0
            for row in v.values():
                value = v.value(row)
                total += math.prod(count(k) for k in kids if value in k.active_if[0][1])
            return total

        return math.prod(count(v) for v in self.variables if len(v.active_if) != 1)

    def repair(self, X: np.ndarray) -> np.ndarray:
        """Clip to bounds, round discrete entries, canonicalise inactive variables, apply the
        formulation's own repair, set each permutation's keys to their ranks (one vector per
        order); pinned columns always end at their pinned value."""
        X = np.array(X, float, ndmin=2)  # a copy: the caller's rows stay as they were
        np.clip(X, self.lower, self.upper, out=X)
        np.rint(X, out=X, where=self.discrete)  # in place, no gathered copy: a hot path of every engine
        if self.conditional:
            inactive = ~self.active(X)
            for i, v in enumerate(self.variables):
                rows = inactive[:, i]
                if rows.any():
                    X[np.ix_(rows, range(self.offsets[i], self.offsets[i + 1]))] = self._canonical(v)
        if self.custom_repair is not None:
            X = np.array(self.custom_repair(X), float)
        for i, v in enumerate(self.variables):
            if v.kind == "permutation" and not v.is_pinned:  # one vector per order: keys at their ranks
                block = X[:, self.offsets[i]:self.offsets[i + 1]]
                ranks = np.argsort(np.argsort(block, axis=1, kind="stable"), axis=1, kind="stable")
                X[:, self.offsets[i]:self.offsets[i + 1]] = (ranks + 0.5) / v.width
        if len(self._pinned_columns):
            X[:, self._pinned_columns] = self.lower[self._pinned_columns]
        return X

    @staticmethod
    def _canonical(v: Variable) -> np.ndarray:
        if v.kind == "permutation" and not v.is_pinned:
            return (np.arange(v.width) + 0.5) / v.width  # the identity order
        return v.lower

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` random points (the formulation's sampler when it has one, else uniform), repaired."""
        if self.custom_sample is not None:
            return self.repair(self.custom_sample(rng, n))
        low, high = self.lower, self.upper
        X = rng.random((n, self.width))
        X *= high + self.discrete - low  # uniform on [low, high + 1) for a discrete column
        X += low
        np.floor(X, out=X, where=self.discrete)
        return self.repair(np.minimum(X, high, out=X))

    def grid(self, chunk: int = 65536) -> Iterator[np.ndarray]:
        """Rows whose repairs are every distinct mapping exactly once, in mixed-radix order, as
        ``(<=chunk, width)`` arrays (no real variables).

        A repair merges points (inactive variables, a formulation's own repair). A grid point is
        kept when it is its own repair (a canonical point), which needs no memory; that alone is
        exact when the repair is idempotent and lands on grid points, as the built-in one does.
        A formulation's repair need be neither, so the repair ``r`` of every other point is
        checked: a grid point that is its own repair is yielded where the grid meets it;
        otherwise ``r`` is yielded the first time it appears (tracked across the whole space in a
        set of such rows, as bytes: empty for an idempotent repair onto the grid, never more rows
        than distinct mappings), or, when repairing ``r`` again would change it, the raw point
        whose repair it is (evaluators repair what they are given). Every yielded row is a
        repaired point unless the repair is not idempotent. ``size`` does not know a
        formulation's repair and stays an upper bound then.
        """
        tables = [v.values() for v in self.variables]
        radices = np.array([len(t) for t in tables], dtype=np.int64)
        strides = np.concatenate([np.cumprod(radices[::-1])[::-1][1:], [1]]).astype(np.int64)
        total = int(np.prod(radices.astype(float)))
        seen: set[bytes] = set()  # repaired rows that no canonical grid point stands for
        for start in range(0, total, chunk):
            flat = np.arange(start, min(start + chunk, total), dtype=np.int64)
            digits = (flat[:, None] // strides[None, :]) % radices[None, :]
            X = np.hstack([t[d] for t, d in zip(tables, digits.T)]) if tables else np.zeros((len(flat), 0))
            if self.custom_repair is not None or self.conditional:
                repaired = self.repair(X)
                canonical = (repaired == X).all(1)
                rest = (X[~canonical], repaired[~canonical])
                X = X[canonical]  # each distinct point once
                if self.custom_repair is not None:  # the formulation's repair: maybe not idempotent
                    X = np.vstack([X, self._first_seen(*rest, tables, seen)])
            if len(X):
                yield X

    def _first_seen(self, raw: np.ndarray, repaired: np.ndarray, tables: list[np.ndarray],
                    seen: set[bytes]) -> np.ndarray:
        """One row per mapping in ``repaired`` that no canonical grid point stands for and that
        was not met before: the mapping, or its raw point when the repair is not stable on it."""
        stable = (self.repair(repaired) == repaired).all(1)
        elsewhere = stable & self._on_grid(repaired, tables)  # the grid yields it as it is
        rows = []
        for i in np.flatnonzero(~elsewhere):
            key = repaired[i].tobytes()
            if key not in seen:
                seen.add(key)
                rows.append(repaired[i] if stable[i] else raw[i])
        return np.array(rows).reshape(len(rows), self.width)

    def _on_grid(self, X: np.ndarray, tables: list[np.ndarray]) -> np.ndarray:
        """Mask of the rows of ``X`` whose every variable holds one of its enumerated values."""
        inside = np.ones(len(X), bool)
        for i, (v, table) in enumerate(zip(self.variables, tables)):
            block = X[:, self.offsets[i]:self.offsets[i + 1]]
            if v.kind == "permutation" and not v.is_pinned:  # every order of the same keys is a value
                inside &= (np.sort(block, axis=1) == np.sort(table[0])).all(1)
            elif table.shape[1] == 1:
                inside &= np.isin(block[:, 0], table[:, 0])
            else:  # a pinned permutation: its one order
                inside &= (block == table[0]).all(1)
        return inside

    # --- mappings ---------------------------------------------------------------------------
    def decode(self, x: Sequence[float]) -> Mapping:
        return Mapping(self, tuple(float(v) for v in self.repair(np.asarray(x, float)[None])[0]))

    def encode(self, values: dict[str, Any]) -> np.ndarray:
        """A vector from decisions by name; inactive variables, those with one value (pinned, or a
        single choice) and those with a default may be left out."""
        x = self._canonical_vector()
        values = {**{v.name: v.default for v in self.variables if v.default is not None and not v.is_pinned}, **values}
        for i, v in enumerate(self.variables):
            if v.name in values:
                x[self.offsets[i]:self.offsets[i + 1]] = v.encode(values[v.name])
        active = self.active(x[None])[0]
        missing = [v.name for i, v in enumerate(self.variables) if active[i] and v.name not in values and v.cardinality > 1]
        if missing:
            raise OptmapError(f"mapping lacks a value for {', '.join(missing[:5])}")
        return self.repair(x[None])[0]

    def _canonical_vector(self) -> np.ndarray:
        return np.concatenate([self._canonical(v) for v in self.variables]) if self.variables else np.zeros(0)

    def mapping(self, values: dict[str, Any]) -> Mapping:
        return Mapping(self, tuple(self.encode(values)))

    def pin(self, values: dict[str, Any]) -> DesignSpace:
        """This space with the decisions in ``values`` fixed (unknown names and values outside
        their domain are one-line errors). Pinning every decision leaves one point."""
        pinned = {}
        for name, value in values.items():
            variable = self.variables[self.index(name)]
            pinned[name] = variable.parse(value)
        variables = [replace(v, pinned=pinned[v.name]) if v.name in pinned else v for v in self.variables]
        return DesignSpace(variables, repair=self.custom_repair, sample=self.custom_sample)


@dataclass(frozen=True)
class Mapping:
    """One point of a design space: a decision for every (active) variable."""

    space: DesignSpace = field(compare=False, repr=False)
    vector: tuple[float, ...]

    def __getitem__(self, name: str) -> Any:
        i = self.space.index(name)
        if not self.space.active(self.array[None])[0, i]:
            return None
        return self.space.variables[i].value(self.vector[self.space.offsets[i]:self.space.offsets[i + 1]])

    def as_dict(self) -> dict[str, Any]:
        """Every active decision by name (permutations as lists, for JSON)."""
        active = self.space.active(self.array[None])[0]
        out = {}
        for i, v in enumerate(self.space.variables):
            if active[i]:
                value = v.value(self.vector[self.space.offsets[i]:self.space.offsets[i + 1]])
                out[v.name] = list(value) if isinstance(value, tuple) else value
        return out

    @property
    def array(self) -> np.ndarray:
        return np.array(self.vector)
