"""pymoo's operators applied to a DesignSpace, each to the variables it is meant for.

A space mixes categorical, integer and real variables in one float vector. pymoo's mixed-variable
GA handles such spaces with one Python dict per individual and one operator call per categorical
variable, which costs more than scoring a whole population of AccPar plans. Instead the vector is
kept as one numpy array and pymoo's array operators work on column groups:

- categorical: uniform crossover (UX) and random-choice mutation (pymoo's ChoiceRandomMutation,
  vectorised over the columns: pymoo's loops once per variable, a third of a GA's time on a
  150-variable AccPar plan): a choice index has no order, so no arithmetic on it;
- integer, real and random-key (permutation) columns: simulated binary crossover (SBX) and
  polynomial mutation (PM), integers rounded afterwards by the repair;
- sampling: the formulation's own sampler when its space has one; else IntegerRandomSampling for
  discrete columns, FloatRandomSampling for real ones and random keys;
- repair: the space's own (clip to bounds, round the discrete entries, the formulation's repair);
- duplicates: exact rows by hashing (:class:`RowHashElimination`), not pymoo's pairwise distances.

Every operator draws from the ``random_state`` pymoo hands it (the algorithm's seeded
generator), so a run is reproducible for a fixed seed.
"""

from __future__ import annotations

import numpy as np
from optmap.space import DesignSpace
from pymoo.core.crossover import Crossover
from pymoo.core.duplicate import DuplicateElimination
from pymoo.core.mutation import Mutation
from pymoo.core.problem import Problem
from pymoo.core.repair import Repair
from pymoo.core.sampling import Sampling
from pymoo.operators.crossover.sbx import SBX
from pymoo.operators.crossover.ux import UX
from pymoo.operators.mutation.pm import PM
from pymoo.operators.mutation.rm import ChoiceRandomMutation
from pymoo.operators.sampling.rnd import FloatRandomSampling, IntegerRandomSampling


def _columns(space: DesignSpace, kinds: tuple[str, ...]) -> np.ndarray:
    """The columns of the vector whose kind is one of ``kinds`` (a permutation's keys are "key")."""
    return np.array([i for i, kind in enumerate(space.column_kind) if kind in kinds], int)


def _part(space: DesignSpace, columns: np.ndarray) -> Problem:
    """A pymoo problem over some of the space's columns."""
    return Problem(n_var=len(columns), xl=space.lower[columns], xu=space.upper[columns], vtype=float)


class SpaceProblem(Problem):
    """The space as a pymoo problem: bounds, objectives and one constraint (the violation)."""

    def __init__(self, space: DesignSpace, n_obj: int) -> None:
        super().__init__(n_var=space.width, n_obj=n_obj, n_ieq_constr=1, xl=space.lower, xu=space.upper, vtype=float)


class MixedSampling(Sampling):
    """Uniform random points (integers for discrete columns), led by ``seeds`` if given."""

    def __init__(self, space: DesignSpace, seeds: np.ndarray | None = None) -> None:
        super().__init__()
        self.space = space
        self.seeds = np.empty((0, space.width)) if seeds is None else np.asarray(seeds, float)
        self.groups = [(c, op) for c, op in ((_columns(space, ("categorical", "integer")), IntegerRandomSampling()),
                                             (_columns(space, ("real", "key")), FloatRandomSampling())) if len(c)]

    def _do(self, problem, n_samples, *args, random_state=None, **kwargs):
        n = max(0, n_samples - len(self.seeds))
        if self.space.custom_sample is not None:  # the formulation's own sampler
            X = self.space.custom_sample(random_state, n)
        else:
            X = np.zeros((n, self.space.width))
            for columns, op in self.groups:
                X[:, columns] = op._do(_part(self.space, columns), n, random_state=random_state)
        return np.vstack([self.seeds[:n_samples], self.space.repair(X)])


class MixedCrossover(Crossover):
    """UX on categorical columns, SBX on integer and real ones (two parents, two offspring)."""

    def __init__(self, space: DesignSpace, prob: float = 0.9, eta: float = 15.0) -> None:
        super().__init__(2, 2, prob=prob)
        numeric = _columns(space, ("integer", "real", "key"))
        self.groups = [(c, op, _part(space, c)) for c, op in ((_columns(space, ("categorical",)), UX()),
                                                              (numeric, SBX(eta=eta))) if len(c)]

    def _do(self, problem, X, *args, random_state=None, **kwargs):
        Q = np.array(X, float)
        for columns, op, part in self.groups:
            Q[:, :, columns] = op._do(part, X[:, :, columns].astype(float), random_state=random_state)
        return Q


class ChoiceMutation(ChoiceRandomMutation):
    """ChoiceRandomMutation for index-coded categorical columns, one numpy pass for all columns.

    Each entry is redrawn, with probability ``prob_var``, uniformly among its variable's
    choices (possibly the same one), exactly as pymoo's operator does variable by variable.
    """

    def __init__(self, cardinality: np.ndarray, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cardinality = np.asarray(cardinality, float)

    def _do(self, problem, X, random_state=None, **kwargs):
        X = np.array(X, float)
        rate = self.get_prob_var(problem, size=(len(X), 1))
        redraw = random_state.random(X.shape) < rate
        fresh = np.floor(random_state.random(X.shape) * self.cardinality)
        X[redraw] = fresh[redraw]
        return X


class MixedMutation(Mutation):
    """Random-choice mutation on categorical columns, PM on integer and real ones.

    ``rate`` is each variable's mutation probability (pymoo's default 1/n when None).
    """

    def __init__(self, space: DesignSpace, rate: float | None = None, eta: float = 20.0) -> None:
        super().__init__(prob=1.0)
        rate = 1.0 / max(1, space.width) if rate is None else rate
        categorical = _columns(space, ("categorical",))
        numeric = _columns(space, ("integer", "real", "key"))
        self.groups = [
            (c, op, _part(space, c))
            for c, op in ((categorical, ChoiceMutation(space.upper[categorical] + 1,
                                                       prob=1.0, prob_var=rate)),
                          (numeric, PM(prob=1.0, prob_var=rate, eta=eta)))
            if len(c)
        ]

    def _do(self, problem, X, *args, random_state=None, **kwargs):
        X = np.array(X, float)
        for columns, op, part in self.groups:
            X[:, columns] = np.asarray(op._do(part, X[:, columns], random_state=random_state), float)
        return X


class RowHashElimination(DuplicateElimination):
    """Exact duplicate rows, found by hashing each row's bytes: linear in the population, where
    pymoo's default compares every pair by distance (quadratic, most of a GA's time on cheap
    cost models). Repaired vectors are canonical (rounded choices, ranked keys), so equal
    mappings are equal rows."""

    def _do(self, pop, other, is_duplicate):
        keys = [_row_key(individual) for individual in pop]
        if other is None:
            seen: set[bytes] = set()
            for i, key in enumerate(keys):
                is_duplicate[i] = key in seen
                seen.add(key)
        else:
            known = {_row_key(individual) for individual in other}
            is_duplicate |= np.fromiter((key in known for key in keys), bool, len(keys))
        return is_duplicate


def _row_key(individual) -> bytes:
    """An individual's vector as bytes, read straight from it (``Population.get`` costs ten
    times more per individual, and this runs several times per generation)."""
    return np.asarray(individual.X, float).tobytes()


class SpaceRepair(Repair):
    """The space's repair: clip to bounds, round discrete entries."""

    def __init__(self, space: DesignSpace) -> None:
        super().__init__()
        self.space = space

    def _do(self, problem, X, **kwargs):
        return self.space.repair(np.asarray(X, float))
