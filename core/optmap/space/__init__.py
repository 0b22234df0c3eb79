"""Design spaces: typed decision variables and their numpy vector encoding.

A point of a space is a float vector. A categorical variable takes one column (its choice
index), an integer or a real one column (its value), a permutation of ``n`` items ``n`` columns
of random keys in [0, 1] (the items in the order of their keys, Bean's random-key encoding, so
every vector is a valid permutation and array operators apply). Whole populations are
``(N, columns)`` arrays: what vectorised cost models and generic engines exchange.

Three things make a space fit a formulation without engine changes:
- ``active_if={"parent": [values]}`` on a variable: it matters only when ``parent`` takes one of
  ``values`` (and is itself active). An inactive variable is canonicalised (lowest value,
  identity permutation) by :meth:`DesignSpace.repair`, left out of the mapping's values and of
  the space's size, so no engine wastes evaluations on it.
- ``DesignSpace(variables, repair=fn, sample=fn)``: a formulation's own repair ``fn(X) -> X``
  (after the clip-and-round) and sampler ``fn(rng, n) -> X``; every generic engine uses them.
- :meth:`DesignSpace.pin`: a narrowed space where some decisions are fixed, the model being
  Optuna's ``PartialFixedSampler``: a pinned variable keeps its choices but its bounds close
  on the pinned value, so every engine, generic or native, can only produce that value.

:func:`join` builds a composite formulation's space from named parts (``stage1.L0:conv1``).
"""

from optmap.space.design import DesignSpace, Mapping, Repair, Sampler
from optmap.space.join import Joined, Part, join
from optmap.space.variables import (
           KINDS,
           Variable,
           categorical,
           integer,
           permutation,
           real,
)

__all__ = ["KINDS", "DesignSpace", "Joined", "Mapping", "Part", "Repair", "Sampler", "Variable", "categorical",
           "integer", "join", "permutation", "real"]
