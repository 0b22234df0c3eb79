"""MARS's native engines: the two-level GA (Sec. V, Fig. 3) and the baseline of Sec. VI-A.

``mars`` (two-level GA). Level 1 runs on pymoo (GA: binary tournament, SBX η = 15, polynomial
mutation η = 20, elitist survival, duplicates removed; note §4.3) over random keys: per AccSet
candidate a selection key, one key per design (the highest wins, note §4.2 ``des[c, d]``) and an
order key; one cut key per gap between layers (:mod:`.level1`). The first population's design
keys are drawn as ``perf[d] · U(0.5, 1)`` from each design's normalised performance on the
workload (Sec. V: "initialized according to the normalized performance"; ``design_init``), and
it holds the plans named in ``seed_plans`` (default: the baseline). Each individual's sub-problems
(set class, design, first and last layer) go to level 2 (:mod:`.level2`) unless cached; the
assembled mapping (level-1 keys + the best level-2 genes) is scored by the problem's evaluator,
i.e. the ``mars`` cost model, and that latency is the level-1 fitness. Level-2 runs are seeded
from (seed, sub-problem), so a result never depends on the order sub-problems are met in.
"""

from __future__ import annotations

import zlib
from typing import Literal

import numpy as np

from optmap.bounds import MAX_STEPS, NonNegative, Probability, Steps, ints
from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine
from optmap.search.seeding import seed_vectors

from . import level1, level2
from .level1 import Plan
from .model import MARS_TABLES, MarsCostModel


def mars_model(evaluator: Evaluator) -> MarsCostModel:
    model = evaluator.cost_model
    if not isinstance(model, MarsCostModel):
        raise OptmapError("this engine plans MARS's formulation; use [cost] model = \"mars\"")
    return model


class MarsBaseline(SearchEngine):
    """The baseline of MARS Table III: two groups, halves of the layers, ES on the two longest dims."""

    requires = frozenset({MARS_TABLES})
    accepts = (MarsCostModel,)

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = mars_model(evaluator)
        evaluator.evaluate(model.plan_vector(model.baseline_plan)[None])
        return {}


class MarsSearch(SearchEngine):
    """MARS two-level genetic algorithm: sets, designs and layer ranges (pymoo), then ES/SS per layer."""

    requires = frozenset({MARS_TABLES})
    accepts = (MarsCostModel,)
    imports = ("pymoo",)  # level 1 (optmap.extras checks it before a run)

    def __init__(
        self,
        *,
        pop1: ints(2, MAX_STEPS) = 32,
        gens1: Steps = 30,
        pop2: ints(2, MAX_STEPS) = 32,
        gens2: Steps = 20,
        inner: Literal["ga", "dp"] = "ga",
        level2_backend: Literal["numpy", "pymoo"] = "numpy",
        level2_init: Literal["seeded", "random"] = "seeded",
        uniform_seeds: ints(0, MAX_STEPS) = 8,
        design_init: Literal["performance", "uniform"] = "performance",
        seed_plans: list[str] = ["baseline"],
        crossover_prob: Probability = 0.9,
        eta_c: NonNegative = 15.0,
        eta_m: NonNegative = 20.0,
    ) -> None:
        """Options (the paper gives no GA setting; defaults are note §4.3's "paper-scale" budgets):

        ``pop1`` × ``gens1`` level-1 individuals and generations; ``pop2`` × ``gens2`` per level-2
        sub-problem; ``inner`` "ga" or "dp" (the exact level 2, note §4.6);
        ``level2_backend`` "numpy" (layer-block GA) or "pymoo" (SBX/PM), see :mod:`.level2`;
        ``level2_init`` "seeded" (greedy + ``uniform_seeds`` uniform plans) or "random";
        ``design_init`` "performance" (Sec. V) or "uniform"; ``seed_plans`` cost-model plans or
        engines whose mappings join the first level-1 population and are scored as they are;
        ``crossover_prob``, ``eta_c``, ``eta_m`` the level-1 SBX / PM settings.
        """
        for name, value in (("pop1", pop1), ("pop2", pop2)):
            if value < 2:
                raise OptmapError(f"{name} must be >= 2, got {value}")
        for name, value in (("gens1", gens1), ("gens2", gens2), ("uniform_seeds", uniform_seeds + 1)):
            if value < 1:
                raise OptmapError(f"{name} must be >= {1 if name != 'uniform_seeds' else 0}, got {value}")
        if not 0 <= crossover_prob <= 1:
            raise OptmapError(f"crossover_prob must lie in [0, 1], got {crossover_prob}")
        self.pop1, self.gens1, self.pop2, self.gens2 = pop1, gens1, pop2, gens2
        self.inner, self.backend, self.level2_init, self.uniform_seeds = inner, level2_backend, level2_init, uniform_seeds
        self.design_init, self.seed_plans = design_init, list(seed_plans)
        self.crossover_prob, self.eta_c, self.eta_m = crossover_prob, eta_c, eta_m

    # --- level 2 -----------------------------------------------------------------------------------
    def _level2(self, model: MarsCostModel, key: tuple, c: int, d: int, a: int, b: int, seed: int):
        sub = model.subproblem(c, d, a, b)
        if self.inner == "dp":
            return level2.dp(sub)
        run = level2.ga if self.backend == "numpy" else level2.ga_pymoo
        sub_seed = zlib.crc32(repr((seed, key)).encode()) & 0x7FFFFFFF
        return run(sub, pop=self.pop2, generations=self.gens2, seed=sub_seed, init=self.level2_init,
                   uniform=self.uniform_seeds)

    def _complete(self, model: MarsCostModel, plan: Plan, seed: int, evaluator: Evaluator) -> np.ndarray:
        """The space vector of ``plan`` with every set's strategies from level 2 (cached).

        Decisions the user pinned (``[fix]``, ``--fix``) override the level-1 keys before level 2
        runs, so the strategies are solved for the sets and ranges actually scored.
        """
        if evaluator.space.pinned:
            plan = model.level1_plan(evaluator.space.repair(model.plan_vector(plan)[None])[0])
        strategies = np.zeros(len(model.layers), dtype=np.int64)
        for c, d, (a, b) in zip(plan.sets, plan.designs, plan.bounds):
            key = model.subproblem_key(c, d, a, b)
            result = self.cache.get(key)
            if result is None:
                result = self.cache[key] = self._level2(model, key, c, d, a, b, seed)
                self.misses += 1
                self.level2_evaluations += result.evaluations
            else:
                self.hits += 1
            strategies[a:b + 1] = result.strategies
        return model.plan_vector(Plan(plan.sets, plan.designs, plan.bounds, tuple(int(s) for s in strategies)))

    # --- level 1 -----------------------------------------------------------------------------------
    def _layout(self, model: MarsCostModel) -> dict[str, slice]:
        c, nd, n = len(model.candidates), max(len(model.designs), 1), len(model.layers)
        widths = (("sel", c), ("des", c * nd if model.adaptive else 0), ("ord", c), ("cut", n - 1))
        out, start = {}, 0
        for name, width in widths:
            out[name] = slice(start, start + width)
            start += width
        return out

    def _decode(self, model: MarsCostModel, y: np.ndarray) -> Plan:
        cols = self.cols
        designs = None
        if model.adaptive:
            designs = y[cols["des"]].reshape(len(model.candidates), len(model.designs)).argmax(1)
        return level1.decode(y[cols["sel"]], y[cols["ord"]], y[cols["cut"]], designs, model.candidates,
                             model.system.count, len(model.layers))

    def _encode(self, model: MarsCostModel, plan: Plan) -> np.ndarray:
        y = np.zeros(self.n1)
        sel, order, cut = level1.encode(plan, len(model.candidates), len(model.layers))
        y[self.cols["sel"]], y[self.cols["ord"]], y[self.cols["cut"]] = sel, order, cut
        if model.adaptive:
            des = np.zeros((len(model.candidates), len(model.designs)))
            des[list(plan.sets), list(plan.designs)] = 1.0
            y[self.cols["des"]] = des.ravel()
        return y

    def _initial(self, model: MarsCostModel, rng: np.random.Generator, seeds: list[Plan]) -> np.ndarray:
        Y = rng.random((self.pop1, self.n1))
        if model.adaptive and self.design_init == "performance":  # Sec. V: normalised performance
            c, nd = len(model.candidates), len(model.designs)
            Y[:, self.cols["des"]] = (model.design_performance[None, None, :]
                                      * rng.uniform(0.5, 1.0, (self.pop1, c, nd))).reshape(self.pop1, -1)
        for i, plan in enumerate(seeds[: self.pop1]):
            Y[i] = self._encode(model, plan)
        return Y

    def _seed_plans(self, evaluator: Evaluator, model: MarsCostModel, seed: int) -> list[Plan]:
        """The plans named in ``seed_plans`` (optmap's seeding, as ga and optuna), each scored as it is."""
        vectors = seed_vectors(evaluator, self.seed_plans, seed)
        if len(vectors):
            evaluator.evaluate(vectors)
        return [model.plan_of(x) for x in vectors]

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        from pymoo.algorithms.soo.nonconvex.ga import GA
        from pymoo.core.evaluator import Evaluator as PymooEvaluator
        from pymoo.core.problem import Problem
        from pymoo.core.termination import NoTermination
        from pymoo.operators.crossover.sbx import SBX
        from pymoo.operators.mutation.pm import PM
        from pymoo.problems.static import StaticProblem

        model = mars_model(evaluator)
        self.cache, self.hits, self.misses, self.level2_evaluations = {}, 0, 0, 0
        self.cols = self._layout(model)
        self.n1 = self.cols["cut"].stop
        rng = np.random.default_rng(seed)
        seeds = self._seed_plans(evaluator, model, seed)
        problem = Problem(n_var=self.n1, n_obj=1, n_ieq_constr=1, xl=0.0, xu=1.0, vtype=float)
        algorithm = GA(pop_size=self.pop1, sampling=self._initial(model, rng, seeds),
                       crossover=SBX(prob=self.crossover_prob, eta=self.eta_c), mutation=PM(eta=self.eta_m),
                       eliminate_duplicates=True)
        algorithm.setup(problem, seed=seed, termination=NoTermination())
        # progress counts to generations 0..gens1 (within the budget), not to the whole budget
        ga, left = self.pop1 * (self.gens1 + 1), evaluator.remaining_evaluations
        evaluator.expected = evaluator.evaluations + (ga if left is None else min(left, ga))
        generation = 0
        while generation <= self.gens1 and not evaluator.exhausted:  # generation 0: the first population
            infills = algorithm.ask()
            if infills is None or len(infills) == 0:
                break
            Y = infills.get("X")
            left = evaluator.remaining_evaluations
            if left is not None and len(Y) > left:
                infills, Y = infills[:left], Y[:left]
            F, violation = evaluator.evaluate(np.array([self._complete(model, self._decode(model, y), seed, evaluator)
                                                        for y in Y]))
            F = np.nan_to_num(F, nan=1e300, posinf=1e300)
            PymooEvaluator().eval(StaticProblem(problem, F=F, G=violation[:, None]), infills)
            algorithm.tell(infills=infills)
            generation += 1
        lookups = self.hits + self.misses
        return {"generations": generation - 1, "inner": self.inner, "level2_solved": self.misses,
                "level2_cache_hits": self.hits, "cache_hit_rate": self.hits / lookups if lookups else 0.0,
                "level2_evaluations": self.level2_evaluations}
