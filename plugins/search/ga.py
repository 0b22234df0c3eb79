"""``ga``: pymoo's genetic algorithm on any design space; NSGA-II when there are several objectives.

Decisions:

- pymoo runs the algorithm (selection, crossover, mutation, duplicate elimination, survival);
  optmap drives it through pymoo's ask-and-tell interface so that each generation's offspring
  are scored in one ``evaluator.evaluate(X)`` call — the cost model's vectorised batch
  evaluation — and so that the budget, Ctrl-C and checkpoints are checked between generations.
- Operators are pymoo's, per variable kind (:mod:`.operators`).
- Constraints: the evaluator's violation is pymoo's single inequality constraint (feasible when
  0), so infeasible mappings lose every tournament against feasible ones.
- Several objectives → NSGA-II; the result's front is the Pareto front of every mapping scored
  (the evaluator's archive), which contains the final population's first front.
- Termination: the budget (evaluations, seconds), ``generations``, or ``patience`` generations
  without a better best (one objective) or a changed front (several). The last generation is
  cut to the evaluations the budget leaves.
- Checkpoint: the population (X, F, constraint), the generation and stall counters and the
  random generator's state, as JSON. Resuming rebuilds the population without scoring it again
  and restores the generator, so a single-objective run interrupted and resumed makes the same
  choices as one that never stopped.
"""

from __future__ import annotations

import numpy as np
from optmap.bounds import Probability, Steps, ints
from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine
from optmap.search.seeding import seed_vectors

MATING_TRIES = 10


class GeneticSearch(SearchEngine):
    """Genetic algorithm (pymoo GA; NSGA-II for several objectives) on any design space."""

    exact = False
    resumable = True
    imports = ("pymoo",)  # checked before a run (optmap.extras)

    def __init__(
        self,
        *,
        pop_size: ints(2, 100_000) = 100,
        generations: Steps | None = None,
        patience: Steps | None = None,
        seed_plans: list[str] = [],
        crossover_prob: Probability = 0.9,
        mutation_rate: Probability | None = None,
    ) -> None:
        """``pop_size`` individuals per generation; stop after ``generations`` or after
        ``patience`` generations without improvement (None: only the budget stops it);
        ``seed_plans`` names engines (or cost-model plans) whose answers join the first
        population, e.g. ["dp", "owt", "accpar"]; ``crossover_prob`` per mating;
        ``mutation_rate`` per variable (default 1 / number of variables)."""
        if pop_size < 2:
            raise OptmapError(f"pop_size must be >= 2, got {pop_size}")
        for key, value in (("generations", generations), ("patience", patience)):
            if value is not None and value < 1:
                raise OptmapError(f"{key} must be >= 1, got {value}")
        if not 0 <= crossover_prob <= 1 or (mutation_rate is not None and not 0 <= mutation_rate <= 1):
            raise OptmapError("crossover_prob and mutation_rate must lie in [0, 1]")
        self.pop_size = pop_size
        self.generations = generations
        self.patience = patience
        self.seed_plans = list(seed_plans)
        self.crossover_prob = crossover_prob
        self.mutation_rate = mutation_rate

    # --- pymoo set-up ---------------------------------------------------------------------
    def _algorithm(self, space, n_obj: int, sampling):
        from .operators import MixedCrossover, MixedMutation, RowHashElimination, SpaceRepair

        if n_obj > 1:  # NSGA-II's module takes longer to import than a small GA run
            from pymoo.algorithms.moo.nsga2 import NSGA2 as kind
        else:
            from pymoo.algorithms.soo.nonconvex.ga import GA as kind

        class Algorithm(kind):
            def _set_optimum(self) -> None:
                # pymoo filters the whole population for its own record of the optimum after every
                # generation; optmap's evaluator keeps the best and the front, so that is skipped
                self.opt = None

        algorithm = Algorithm(
            pop_size=self.pop_size,
            sampling=sampling,
            crossover=MixedCrossover(space, prob=self.crossover_prob),
            mutation=MixedMutation(space, rate=self.mutation_rate),
            repair=SpaceRepair(space),
            eliminate_duplicates=RowHashElimination(),
        )
        # pymoo retries mating up to 100 times to fill a generation with unseen offspring; in a
        # small or mostly explored space that is all the time a run takes. Ten tries, then the
        # generation goes on with the unseen offspring it has (none: the GA has converged).
        algorithm.mating.n_max_iterations = MATING_TRIES
        return algorithm

    @staticmethod
    def _tell_values(problem, pop, F: np.ndarray, violation: np.ndarray) -> None:
        """Attach scores to ``pop`` the way pymoo's ask-and-tell interface expects."""
        from pymoo.core.evaluator import Evaluator as PymooEvaluator
        from pymoo.problems.static import StaticProblem

        finite = np.nan_to_num(np.asarray(F, float), nan=1e300, posinf=1e300, neginf=-1e300)
        PymooEvaluator().eval(StaticProblem(problem, F=finite, G=np.asarray(violation, float)[:, None]), pop)

    def _restored(self, problem, state: dict):
        from pymoo.core.population import Population

        pop = Population.new(X=np.array(state["X"], float))
        self._tell_values(problem, pop, np.array(state["F"], float), np.array(state["G"], float))
        return pop

    # --- the run --------------------------------------------------------------------------
    def search(self, evaluator: Evaluator, seed: int) -> dict:
        from pymoo.core.termination import NoTermination

        from .operators import MixedSampling, SpaceProblem

        evaluator.prepare()  # e.g. AccPar's compiled kernel, which then scores every generation
        space, n_obj = evaluator.space, len(evaluator.objectives)
        problem = SpaceProblem(space, n_obj)
        checkpoint = evaluator.checkpoint
        state = checkpoint.engine_state
        if state is not None:
            try:
                sampling, generation, stall = self._restored(problem, state), int(state["generation"]), int(state["stall"])
                seeds = int(state.get("seeds", 0))
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                raise OptmapError(f"the checkpoint's ga state is damaged ({type(exc).__name__}: {exc}); delete the "
                                  f"checkpoint or run without --resume") from None
        else:
            plans = seed_vectors(evaluator, self.seed_plans, seed) if self.seed_plans else None
            sampling, generation, stall = MixedSampling(space, plans), 0, 0
            seeds = 0 if plans is None else len(plans)
        algorithm = self._algorithm(space, n_obj, sampling)
        algorithm.setup(problem, seed=seed, termination=NoTermination())
        if state is not None:
            algorithm.random_state.bit_generator.state = state["rng"]
        marker = self._progress_marker(evaluator)
        stopped_by = "budget"

        def snapshot() -> dict:
            pop = algorithm.pop
            return {
                "generation": generation, "stall": stall, "seeds": seeds,
                "rng": algorithm.random_state.bit_generator.state,
                "X": pop.get("X").tolist(), "F": pop.get("F").tolist(), "G": pop.get("G").ravel().tolist(),
            }

        restoring = state is not None
        while not evaluator.exhausted:
            infills = algorithm.ask()
            if infills is None or len(infills) == 0:
                stopped_by = "converged"  # mating produced no new (unique) offspring
                break
            if not restoring:
                left = evaluator.remaining_evaluations
                if left is not None and len(infills) > left:
                    infills = infills[:left]
                F, violation = evaluator.evaluate(infills.get("X"))
                self._tell_values(problem, infills, F, violation)
                generation += 1
            algorithm.tell(infills=infills)
            if not restoring:
                now = self._progress_marker(evaluator)
                stall = 0 if now != marker else stall + 1
                marker = now
            restoring = False
            checkpoint.maybe_save(evaluator, snapshot)
            if self.generations is not None and generation >= self.generations:
                stopped_by = "generations"
                break
            if self.patience is not None and stall >= self.patience:
                stopped_by = "patience"
                break
        if evaluator.stop_requested:
            stopped_by = "interrupted"
        if algorithm.pop is not None and len(algorithm.pop):
            checkpoint.save(evaluator, snapshot())
        return {"algorithm": "NSGA-II" if n_obj > 1 else "GA", "generations": generation,
                "population": self.pop_size, "seed_plans": seeds, "ga_stop": stopped_by}

    @staticmethod
    def _progress_marker(evaluator: Evaluator):
        """What counts as improvement: a better best (one objective), a changed front (several)."""
        if len(evaluator.objectives) > 1:
            return evaluator.front_f.round(12).tobytes()
        return None if evaluator.best_f is None else float(evaluator.best_f[0])
