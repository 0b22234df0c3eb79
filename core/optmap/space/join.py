"""A design space built from named parts: the decisions of a composite formulation.

A composite formulation (a pipeline whose stages another formulation maps) decides some things
itself (the ``head`` variables: stage count, cut points) and carries the decisions of the
formulations inside it, each under a prefix: ``stage1.L0:conv1``. :func:`join` builds one
:class:`~optmap.space.DesignSpace` of them, so every engine, ``[fix]`` / ``--fix`` and
``optmap show --decisions`` work on it as on any other space:

- a part's variables are renamed ``<prefix>.<name>`` (an empty prefix keeps the names), its
  conditions follow the renaming, and ``when`` adds conditions on head variables (a stage's
  decisions are active only when the pipeline has that stage);
- each part's own repair and sampler run on its columns; the composite's ``repair`` runs last
  on whole rows.

:class:`Joined` tells where each part's columns are, to hand a row's part back to the
formulation it belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from optmap.space.design import DesignSpace, Repair
from optmap.space.variables import Variable


@dataclass(frozen=True)
class Part:
    """The space of one inner formulation under ``prefix`` ("" keeps its names), active when
    every condition of ``when`` holds (``((head variable, allowed values), ...)``)."""

    prefix: str
    space: DesignSpace
    when: tuple[tuple[str, tuple], ...] = ()

    def name(self, inner: str) -> str:
        """The joined name of the part's variable ``inner``."""
        return f"{self.prefix}.{inner}" if self.prefix else inner


@dataclass(frozen=True, eq=False)
class Joined:
    """The joined :attr:`space` and, per part prefix, the columns its variables occupy."""

    space: DesignSpace
    parts: tuple[Part, ...]
    spans: dict[str, slice]

    def columns(self, prefix: str) -> slice:
        """The columns of part ``prefix`` in a row of :attr:`space`."""
        return self.spans[prefix]

    def part_rows(self, X: np.ndarray, prefix: str) -> np.ndarray:
        """The rows of ``X`` cut to part ``prefix``: vectors of that part's own space."""
        return np.atleast_2d(X)[:, self.spans[prefix]]


def _renamed(part: Part, v: Variable) -> Variable:
    conditions = tuple((part.name(parent), allowed) for parent, allowed in v.active_if) + part.when
    return replace(v, name=part.name(v.name), active_if=conditions, tags=(*v.tags, ("part", part.prefix)))


@dataclass(frozen=True)
class _Repair:
    """Each part's repair on its columns, then the composite's on whole rows (picklable, so a
    joined space travels to worker processes)."""

    parts: tuple[tuple[slice, Repair], ...]
    composite: Repair | None

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.array(X, float)
        for columns, part_repair in self.parts:
            X[:, columns] = part_repair(X[:, columns])
        return X if self.composite is None else np.array(self.composite(X), float)


@dataclass(frozen=True)
class _Sample:
    """Uniform rows, each part's columns then drawn by its own sampler."""

    plain: DesignSpace
    parts: tuple[tuple[slice, object], ...]

    def __call__(self, rng, n: int) -> np.ndarray:
        X = self.plain.sample(rng, n)
        for columns, part_sample in self.parts:
            X[:, columns] = part_sample(rng, n)
        return X


def join(parts: Sequence[Part], head: Sequence[Variable] = (), repair: Repair | None = None) -> Joined:
    """One space of ``head`` followed by every part's variables (see the module docstring)."""
    variables = list(head)
    spans, start = {}, sum(v.width for v in head)
    for part in parts:
        variables += [_renamed(part, v) for v in part.space.variables]
        spans[part.prefix] = slice(start, start + part.space.width)
        start += part.space.width
    own = tuple((spans[p.prefix], p.space.custom_repair) for p in parts if p.space.custom_repair is not None)
    samplers = tuple((spans[p.prefix], p.space.custom_sample) for p in parts if p.space.custom_sample is not None)
    joined_repair = _Repair(own, repair) if own or repair is not None else None
    joined_sample = _Sample(DesignSpace(variables, repair=joined_repair), samplers) if samplers else None
    space = DesignSpace(variables, repair=joined_repair, sample=joined_sample)
    return Joined(space, tuple(parts), spans)
