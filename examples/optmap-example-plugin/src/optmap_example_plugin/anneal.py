"""Simulated annealing over any optmap design space, vectorised across independent chains.

The method (Kirkpatrick, Gelatt and Vecchi, Science 1983; Metropolis et al., J. Chem. Phys. 1953):

* ``chains`` independent Markov chains start at uniformly random points of the space.
* Every step proposes one neighbour per chain, all chains at once, so the cost model scores the
  whole population in one ``evaluator.evaluate`` call. A neighbour changes one variable, chosen
  uniformly among the variables that can change: a categorical or integer variable takes a
  uniformly random *other* value; a real variable takes a Gaussian step of standard deviation
  ``step_size`` x its range, reflected at the bounds.
* Metropolis acceptance: a move that does not worsen the cost is always taken; a worse one with
  probability ``exp(-delta / T)``.
* Geometric schedule: ``T_k = T_0 * cooling**k`` at step ``k``, where
  ``T_0 = initial_temperature * std(cost)`` over the feasible costs seen at the start (the
  initial points, plus the first proposals if fewer than two distinct feasible costs were seen),
  so the option is independent of the cost's unit and scale. By default the schedule is fitted
  to the run: ``steps`` fills the evaluation budget and ``cooling`` brings the temperature down
  to ``final_temperature * T_0`` at the last step, so a larger budget anneals more slowly
  instead of spending its end at zero temperature.

The cost is the problem's first objective. Infeasible points (violation > 0) cost +inf: a chain at
a feasible point never moves to an infeasible one. A chain that starts infeasible moves to any
feasible neighbour, or to an infeasible one whose violation is not larger, so it walks towards
feasibility. For several objectives the chains anneal the first one; the evaluator still keeps
the Pareto front of everything evaluated.

The run stops after ``steps`` steps or when ``evaluator.exhausted`` (budget spent, Ctrl-C); with
an evaluation budget the last step moves only as many chains as the budget has evaluations left,
so the budget is never exceeded. Every random choice comes from ``numpy.random.default_rng(seed)``,
so a seed reproduces the run exactly.
"""

from __future__ import annotations

import numpy as np
from optmap.bounds import Positive, Steps, floats, ints
from optmap.errors import OptmapError
from optmap.search import Evaluator

DEFAULT_STEPS = 500  # steps per chain when neither the options nor an evaluation budget set them


class SimulatedAnnealing:
    """Simulated annealing: parallel Metropolis chains with a geometric temperature schedule."""

    requires = frozenset()  # needs no cost-model capability: works on every formulation
    exact = False  # a heuristic: its answer is not a proven optimum

    def __init__(
        self,
        *,
        chains: ints(1, 100_000) = 8,
        steps: Steps | None = None,
        initial_temperature: Positive = 0.3,
        cooling: float | None = None,
        final_temperature: Positive = 1e-4,
        step_size: floats(0, 1, open_low=True) = 0.1,
    ) -> None:
        """Options (``[search.anneal]`` keys).

        ``chains``: chains run side by side (the population scored per evaluator call).
        ``steps``: proposals per chain; a run costs at most ``chains * (steps + 1)`` evaluations.
        Default: as many steps as the evaluation budget allows, or ``DEFAULT_STEPS`` without one.
        ``initial_temperature``: ``T_0`` as a multiple of the standard deviation of the initial
        feasible costs (0 = greedy descent). ``cooling``: the geometric factor in (0, 1] applied
        each step; default: the factor that brings the temperature down to
        ``final_temperature * T_0`` at the last step, so the schedule always fits the run.
        ``step_size``: the Gaussian step of real variables, as a fraction of their range.
        """
        if chains < 1:
            raise OptmapError(f"chains must be >= 1, got {chains}")
        if steps is not None and steps < 1:
            raise OptmapError(f"steps must be >= 1, got {steps}")
        if not initial_temperature >= 0:
            raise OptmapError(f"initial_temperature must be >= 0, got {initial_temperature}")
        if cooling is not None and not 0 < cooling <= 1:
            raise OptmapError(f"cooling must be in (0, 1], got {cooling}")
        if not 0 < final_temperature <= 1:
            raise OptmapError(f"final_temperature must be in (0, 1], got {final_temperature}")
        if not step_size > 0:
            raise OptmapError(f"step_size must be > 0, got {step_size}")
        self.chains = chains
        self.steps = steps
        self.initial_temperature = initial_temperature
        self.cooling = cooling
        self.final_temperature = final_temperature
        self.step_size = step_size

    # -- the search ---------------------------------------------------------------------------

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        rng = np.random.default_rng(seed)
        space = evaluator.space
        lower, upper, discrete = space.lower, space.upper, space.discrete
        movable = np.flatnonzero(upper > lower)

        n = self._movers(evaluator, self.chains)
        if n == 0:
            return {"chains": 0, "steps": 0}
        X = space.sample(rng, n)
        cost, violation = self._score(evaluator, X)
        if movable.size == 0:  # a one-point space: nothing to anneal
            return {"chains": n, "steps": 0}

        steps, cooling = self._schedule(evaluator, n)
        t0 = self._calibrate(cost)
        temperature = None  # of the last step taken
        proposed = accepted = 0
        step = 0
        while step < steps and not evaluator.exhausted:
            m = self._movers(evaluator, n)  # all chains, unless the budget is nearly spent
            if m == 0:
                break
            Y = self._neighbours(rng, X[:m], lower, upper, discrete, movable)
            cost_y, violation_y = self._score(evaluator, Y)
            if t0 is None:
                t0 = self._calibrate(np.concatenate([cost, cost_y]))
            temperature = (t0 or 0.0) * cooling**step
            take = np.flatnonzero(self._accept(rng, cost[:m], violation[:m], cost_y, violation_y, temperature))
            X[take], cost[take], violation[take] = Y[take], cost_y[take], violation_y[take]
            proposed += m
            accepted += take.size
            step += 1
        return {
            "chains": n,
            "steps": step,
            "cooling": cooling,
            "initial_temperature": float(t0 or 0.0),
            "last_temperature": temperature,
            "acceptance_rate": accepted / proposed if proposed else 0.0,
        }

    # -- pieces -------------------------------------------------------------------------------

    def _schedule(self, evaluator: Evaluator, chains: int) -> tuple[int, float]:
        """The number of steps and the cooling factor of this run."""
        steps = self.steps
        if steps is None:
            remaining = evaluator.remaining_evaluations
            steps = DEFAULT_STEPS if remaining is None else -(-remaining // chains)  # ceil
        cooling = self.cooling
        if cooling is None:  # T at the last step (k = steps - 1) is final_temperature * T_0
            cooling = self.final_temperature ** (1.0 / max(steps - 1, 1))
        return steps, cooling

    @staticmethod
    def _movers(evaluator: Evaluator, n: int) -> int:
        """How many chains may propose now without exceeding an evaluation budget."""
        remaining = evaluator.remaining_evaluations
        return n if remaining is None else min(n, remaining)

    @staticmethod
    def _score(evaluator: Evaluator, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first objective (+inf where infeasible) and the constraint violation of each row."""
        F, violation = evaluator.evaluate(X)
        cost = np.where(violation > 0, np.inf, F[:, 0])
        return cost, violation.astype(float)

    def _calibrate(self, cost: np.ndarray) -> float | None:
        """``T_0`` from the spread of the feasible costs; None until two of them differ."""
        finite = cost[np.isfinite(cost)]
        if finite.size < 2 or np.ptp(finite) <= 0:
            return None
        return self.initial_temperature * float(np.std(finite))

    def _neighbours(self, rng, X, lower, upper, discrete, movable) -> np.ndarray:
        """One neighbour per row of ``X``: one random movable variable changed per row."""
        m = len(X)
        rows = np.arange(m)
        j = movable[rng.integers(movable.size, size=m)]
        lo, hi, is_discrete = lower[j], upper[j], discrete[j]
        x = X[rows, j]
        # categorical / integer: a uniformly random other value of the variable
        cardinality = np.where(is_discrete, hi - lo + 1, 2).astype(np.int64)
        offset = rng.integers(1, cardinality)
        other = lo + np.mod(x - lo + offset, cardinality)
        # real: a Gaussian step, reflected back into [lo, hi]
        width = hi - lo
        t = np.mod(x + rng.normal(size=m) * self.step_size * width - lo, 2 * width)
        stepped = lo + np.where(t > width, 2 * width - t, t)
        Y = X.copy()
        Y[rows, j] = np.where(is_discrete, other, stepped)
        return Y

    @staticmethod
    def _accept(rng, cost, violation, cost_y, violation_y, temperature: float) -> np.ndarray:
        """Metropolis acceptance for feasible chains; feasibility-first for infeasible ones."""
        u = rng.random(len(cost))
        here, there = np.isfinite(cost), np.isfinite(cost_y)
        delta = np.where(there, cost_y, 0.0) - np.where(here, cost, 0.0)
        if temperature > 0:
            metropolis = (delta <= 0) | (u < np.exp(-np.maximum(delta, 0.0) / temperature))
        else:
            metropolis = delta <= 0
        return np.where(here, there & metropolis, there | (violation_y <= violation))
