"""Level 2 (Sec. V, Fig. 3 green/blue boxes): the ES/SS strategy of every layer of one sub-problem.

Every solver returns the best latency, its strategies and how many strategy rows it scored.
The genes are the random keys of :mod:`.strategies` (14 per layer: "individual genes decide the
ES and SS sets"); a row is scored by one gather over the cost tables (note §4.3b).

* ``ga`` (default, ``level2_backend = "numpy"``): a generational GA written on numpy arrays:
  binary tournament (feasible first, then latency), two-point crossover at layer boundaries
  (whole 14-gene layer blocks, the note's segment-aware crossover, so a child inherits runs of
  consistent layouts), a layer's genes redrawn with probability 1 / layers, and elitist (μ + λ)
  survival without duplicate strategy rows. Why not pymoo here: pymoo's Population bookkeeping
  costs ~8 ms a generation on this machine, 20-50 times the gather it scores, and a ResNet101
  search runs tens of thousands of level-2 generations.
* ``ga_pymoo`` (``level2_backend = "pymoo"``): pymoo's GA with the note §4.3 operators (SBX
  η = 15, polynomial mutation η = 20, binary tournament, elitist survival, duplicates removed).
* ``dp``: the exact DP of note §4.6 (:mod:`.exact`).

Initial population (a reconstruction; the paper gives no level-2 initialisation): with
``init = "seeded"`` it holds the greedy strategies (each layer's cheapest ignoring re-layout) and
the ``uniform_seeds`` best *uniform* assignments (every layer the same strategy where valid: the
consistent-layout plans that avoid re-layout), the rest random keys, and every member is then
polished by coordinate descent (:meth:`SubProblem.improve`: each layer in turn takes its best
strategy given its neighbours); ``init = "random"``: random keys, unpolished. The seeded start is what keeps the GA
within a few per cent of the exact DP at 32 × 20 (measured in ``docs/reproductions/mars.md``);
from random keys alone it is not. The memory rule is a constraint: feasible rows beat infeasible
ones (note §6.21).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .strategies import GENES
from .subproblem import SubProblem


@dataclass(frozen=True)
class Level2Result:
    latency: float
    strategies: np.ndarray
    feasible: bool
    evaluations: int


def seed_rows(sub: SubProblem, uniform: int) -> np.ndarray:
    """Greedy strategies and the ``uniform`` best distinct uniform assignments, (k, size)."""
    rows = sub.greedy[None]
    if uniform > 0:
        s = len(sub.strategies)
        valid = np.isfinite(sub.node)
        same = np.unique(np.where(valid, np.arange(s)[None, :], sub.greedy[:, None]).T, axis=0)  # (≤ S, size)
        latency, excess = sub.cost(same)
        rows = np.concatenate([rows, same[np.lexsort((latency, excess))[:uniform]]])
    return np.unique(rows, axis=0)


def _initial(sub: SubProblem, pop: int, rng: np.random.Generator, init: str, uniform: int) -> np.ndarray:
    keys = rng.random((pop, sub.size, GENES))
    if init == "seeded":
        seeds = seed_rows(sub, uniform)[:pop]
        states = np.concatenate([seeds, sub.decode(keys[len(seeds):])])
        keys = sub.strategies.encode(sub.improve(states))
    return keys


def _better(lat_a, exc_a, lat_b, exc_b) -> np.ndarray:
    return (exc_a < exc_b) | ((exc_a == exc_b) & (lat_a <= lat_b))


def ga(sub: SubProblem, *, pop: int, generations: int, seed: int, init: str = "seeded", uniform: int = 8,
       crossover_prob: float = 0.9) -> Level2Result:
    """The level-2 GA on numpy arrays (module docstring)."""
    rng = np.random.default_rng(seed)
    n_layers = sub.size
    keys = _initial(sub, pop, rng, init, uniform)
    states = sub.decode(keys)
    latency, excess = sub.cost(states)
    evaluations = pop
    layer = np.arange(n_layers)[None, :]
    hashes = np.random.default_rng(0).integers(1, 2**40, size=n_layers)  # row fingerprints
    for _ in range(generations):
        def tournament() -> np.ndarray:
            a, b = rng.integers(pop, size=(2, pop))
            return np.where(_better(latency[a], excess[a], latency[b], excess[b]), a, b)

        first, second = tournament(), tournament()
        cut = np.sort(rng.integers(0, n_layers + 1, size=(pop, 2)), axis=1)
        swap = (layer >= cut[:, :1]) & (layer < cut[:, 1:]) & (rng.random((pop, 1)) < crossover_prob)
        child = np.where(swap[..., None], keys[second], keys[first])
        redraw = rng.random((pop, n_layers)) < 1.0 / n_layers
        child = np.where(redraw[..., None], rng.random(child.shape), child)
        child_states = sub.decode(child)
        child_latency, child_excess = sub.cost(child_states)
        evaluations += pop
        keys, states = np.concatenate([keys, child]), np.concatenate([states, child_states])
        latency, excess = np.concatenate([latency, child_latency]), np.concatenate([excess, child_excess])
        _, unique = np.unique(states @ hashes, return_index=True)  # duplicate strategy rows
        keep = unique[np.lexsort((latency[unique], excess[unique]))][:pop]
        if len(keep) < pop:  # fewer distinct rows than the population: refill with copies
            keep = np.concatenate([keep, keep[rng.integers(len(keep), size=pop - len(keep))]])
        keys, states, latency, excess = keys[keep], states[keep], latency[keep], excess[keep]
    return Level2Result(float(latency[0]), states[0].copy(), bool(excess[0] == 0), evaluations)


def ga_pymoo(sub: SubProblem, *, pop: int, generations: int, seed: int, init: str = "seeded", uniform: int = 8,
             crossover_prob: float = 0.9, eta_c: float = 15.0, eta_m: float = 20.0) -> Level2Result:
    """pymoo's GA with SBX and polynomial mutation on the same keys (module docstring)."""
    from pymoo.algorithms.soo.nonconvex.ga import GA
    from pymoo.core.evaluator import Evaluator
    from pymoo.core.problem import Problem
    from pymoo.core.termination import NoTermination
    from pymoo.operators.crossover.sbx import SBX
    from pymoo.operators.mutation.pm import PM
    from pymoo.problems.static import StaticProblem

    n_var = sub.size * GENES
    start = _initial(sub, pop, np.random.default_rng(seed), init, uniform).reshape(pop, n_var)
    problem = Problem(n_var=n_var, n_obj=1, n_ieq_constr=1, xl=0.0, xu=1.0, vtype=float)
    algorithm = GA(pop_size=pop, sampling=start, crossover=SBX(prob=crossover_prob, eta=eta_c),
                   mutation=PM(eta=eta_m), eliminate_duplicates=True)
    algorithm.setup(problem, seed=seed, termination=NoTermination())
    best = (np.inf, np.inf, None)  # (excess, latency, strategies)
    evaluations = 0
    for _ in range(generations + 1):  # the first ask returns the initial population
        infills = algorithm.ask()
        if infills is None or len(infills) == 0:
            break
        states = sub.decode(infills.get("X").reshape(len(infills), sub.size, GENES))
        latency, excess = sub.cost(states)
        evaluations += len(states)
        i = int(np.lexsort((latency, excess))[0])
        if (excess[i], latency[i]) < best[:2]:
            best = (float(excess[i]), float(latency[i]), states[i].copy())
        F = np.nan_to_num(latency, nan=1e300, posinf=1e300)[:, None]
        Evaluator().eval(StaticProblem(problem, F=F, G=excess[:, None]), infills)
        algorithm.tell(infills=infills)
    return Level2Result(best[1], best[2], best[0] == 0.0, evaluations)


def dp(sub: SubProblem) -> Level2Result:
    """The exact level 2 (note §4.6); ``feasible`` False when its optimum breaks the memory rule."""
    latency, states, feasible = sub.exact()
    return Level2Result(latency, states, feasible, 0)
