"""``optuna``: an Optuna study over any design space, driven by ask-and-tell in batches.

Decisions:

- One Optuna parameter per variable, named like the variable: categorical → its choices (their
  labels when those are plain values, else indices), integer → IntDistribution, real →
  FloatDistribution. Trials are asked ``batch`` at a time and the batch is scored in one
  ``evaluator.evaluate(X)`` call (the cost model's vectorised evaluation); the study learns of
  them by ``tell``. Each trial keeps its objective values and constraint violation as user
  attributes and the violation as an Optuna constraint, which TPE and NSGA-II respect.
- Samplers: ``tpe`` (multivariate with constant liar, Optuna 5's defaults), ``cmaes`` (numeric
  variables; categorical ones are sampled at random by Optuna), ``random``, ``qmc`` (scrambled
  Sobol), ``nsga2`` (Optuna's genetic sampler). ``auto`` (the default) is NSGA-II for several
  objectives or more than ``MANY_CATEGORICAL`` categorical decisions (TPE learns little there,
  and costs more per trial), TPE otherwise.
- Optuna proposes every parameter of every trial in Python, so a trial costs time in proportion
  to the parameters (TPE also reads every past trial for each new one). ``max_trials = "auto"``
  (the default) caps a run at :func:`auto_trials`: ``SUGGESTIONS[sampler]`` parameter
  proposals, between ``AUTO_TRIALS`` trials, so every shipped problem ends in well under a
  minute; an integer sets the cap, None (from Python) spends the whole budget.
- Storage: in memory by default. With ``storage`` (any database URL Optuna accepts, e.g.
  ``sqlite:///study.db`` or ``postgresql://user@host/db``) the study lives in the database
  under ``study`` (default ``optmap-<problem name>``) and several optmap processes, on several
  machines, work on it together. Each process asks its trials from a local in-memory study
  that holds every finished trial of the shared one (fetched before each batch) and writes each
  finished trial to the database in one insert: asking against a database directly writes every
  parameter separately, 0.1-0.3 s per trial of a 150-variable plan. Other processes' trials
  also count in this process's evaluator, so the budget and the best are study-wide. Joining a
  study that already has trials needs ``--resume``; a study made for another problem is refused.
- Interruption and resume: in memory, the checkpoint holds every trial (parameters as space
  vectors, values, violation) and the study is rebuilt from it; with a storage, the database is
  the state and the checkpoint only adds the evaluator's history. A resumed sampler is seeded
  from (seed, trials so far), so a resumed run is reproducible, though not the same as one that
  never stopped.
- Named plans are enqueued as the first trials: by default every plan the cost model names
  (its ``plans()``), or those given in ``seed_plans`` (engine or plan names; ``[]`` for none).
- TPE, CMA-ES (which samples categorical parameters at random), random and QMC sampling learn
  little from many categorical decisions: with more than ``MANY_CATEGORICAL`` of them the run
  starts with a one-line note naming a better engine (``ga``, seeded with the same plans).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import logging
import math
import sys
import time
import uuid
import warnings
from typing import Any, Literal

import numpy as np
from optmap import extras
from optmap.bounds import ints
from optmap.checkpoint import digest
from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine
from optmap.search.seeding import seed_vectors
from optmap.space import DesignSpace

from .optuna_defaults import MANY_CATEGORICAL, _weak_sampler_note, auto_trials, categorical_decisions

PLAIN = (str, int, float, bool, type(None))
SCHEMA_TRIES = 5  # attempts to open a storage whose tables another worker may be creating


class Codec:
    """Space vectors ↔ Optuna parameters, one parameter per column of the vector.

    A categorical column is a categorical parameter over its choices (or their indices when the
    choices are not plain values); integer and real columns are int / float ranges; a
    permutation's random keys are float parameters ``name[item]`` in [0, 1]. Pinned decisions
    keep a one-value distribution, so Optuna only ever proposes the pinned value.
    """

    def __init__(self, space: DesignSpace) -> None:
        from optuna.distributions import (
            CategoricalDistribution,
            FloatDistribution,
            IntDistribution,
        )

        self.space = space
        self.names: list[str] = []
        self.labels: list[tuple | None] = []  # per column: the categorical labels, by choice index
        self.distributions: dict[str, Any] = {}
        low, high = space.lower, space.upper
        for i, v in enumerate(space.variables):
            for k in range(v.width):
                column = int(space.offsets[i]) + k
                name = v.name if v.width == 1 else f"{v.name}[{v.choices[k]}]"
                labels = None
                if v.kind == "categorical":
                    plain = all(isinstance(c, PLAIN) for c in v.choices) and len(set(v.choices)) == len(v.choices)
                    labels = tuple(v.choices) if plain else tuple(range(len(v.choices)))
                    allowed = labels[int(low[column]):int(high[column]) + 1]
                    distribution = CategoricalDistribution(allowed)
                elif v.kind == "integer":
                    distribution = IntDistribution(int(low[column]), int(high[column]))
                else:
                    distribution = FloatDistribution(float(low[column]), float(high[column]))
                self.names.append(name)
                self.labels.append(labels)
                self.distributions[name] = distribution

    def vectors(self, params: list[dict[str, Any]]) -> np.ndarray:
        X = np.empty((len(params), self.space.width))
        for j, (name, labels) in enumerate(zip(self.names, self.labels)):
            column = [p[name] for p in params]
            X[:, j] = [labels.index(c) for c in column] if labels is not None else column
        return X

    def params(self, x: np.ndarray) -> dict[str, Any]:
        out = {}
        for name, labels, kind, value in zip(self.names, self.labels, self.space.column_kind, x):
            out[name] = labels[int(round(value))] if labels is not None else (
                int(round(value)) if kind == "integer" else float(value))
        return out


def _attributes(f: np.ndarray, v: float) -> dict[str, Any]:
    return {"objectives": [float(x) if math.isfinite(x) else None for x in f], "violation": float(v)}


def _values(attrs: dict[str, Any]) -> np.ndarray:
    return np.array([math.inf if x is None else x for x in attrs["objectives"]], float)


@contextlib.contextmanager
def _quiet():
    """No per-trial log lines and no experimental-feature warnings while the study runs."""
    import optuna

    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        optuna.logging.set_verbosity(level)


class OptunaSearch(SearchEngine):
    """Optuna study (TPE, CMA-ES, random, QMC, NSGA-II) with batched ask-and-tell; storage, resume."""

    exact = False
    resumable = True
    imports = ("optuna",)  # checked before a run (optmap.extras)

    def __init__(
        self,
        *,
        sampler: Literal["auto", "tpe", "cmaes", "random", "qmc", "nsga2"] = "auto",
        batch: ints(1, 100_000) = 32,
        max_trials: ints(1, 10**9) | Literal["auto"] | None = "auto",
        seed_plans: list[str] | None = None,
        storage: str | None = None,
        study: str | None = None,
    ) -> None:
        """``sampler``: "auto" is NSGA-II for several objectives or many categorical decisions, else
        TPE; ``batch`` trials are asked and scored together; ``max_trials`` caps the evaluations
        below the budget ("auto": :func:`auto_trials`; None: the budget alone); ``seed_plans``
        names engines (or cost-model plans) enqueued as first trials (default: every plan the
        cost model names); ``storage`` a database URL to keep and share the study, named ``study``."""
        if batch < 1:
            raise OptmapError(f"batch must be >= 1, got {batch}")
        if isinstance(max_trials, int) and max_trials < 1:
            raise OptmapError(f"max_trials must be >= 1 or none, got {max_trials}")
        self.sampler = sampler
        self.batch = batch
        self.max_trials = max_trials
        self.seed_plans = None if seed_plans is None else list(seed_plans)
        self.storage = storage
        self.study = study

    # --- set-up ---------------------------------------------------------------------------
    def _sampler_name(self, space: DesignSpace, n_obj: int) -> str:
        """The sampler ``sampler`` names; ``auto``: NSGA-II for several objectives or many
        categorical decisions, else TPE."""
        if self.sampler != "auto":
            return self.sampler
        return "nsga2" if n_obj > 1 or categorical_decisions(space) > MANY_CATEGORICAL else "tpe"

    def _sampler(self, name: str, seed: int, n_obj: int):
        import optuna

        if name == "cmaes" and n_obj > 1:
            raise OptmapError("sampler 'cmaes' handles one objective; use tpe or nsga2 for several")
        if name == "cmaes" and importlib.util.find_spec("cmaes") is None:
            raise OptmapError(extras.missing_message("cmaes", "sampler 'cmaes'"))
        samplers = {
            "tpe": lambda: optuna.samplers.TPESampler(seed=seed),
            "cmaes": lambda: optuna.samplers.CmaEsSampler(seed=seed, with_margin=True, warn_independent_sampling=False),
            "random": lambda: optuna.samplers.RandomSampler(seed=seed),
            "qmc": lambda: optuna.samplers.QMCSampler(seed=seed, scramble=True, warn_independent_sampling=False),
            "nsga2": lambda: optuna.samplers.NSGAIISampler(seed=seed),
        }
        return samplers[name]()

    def _shared(self, evaluator: Evaluator, problem_digest: str):
        """The study in the storage (created, or joined), or None without a storage."""
        import optuna

        if self.storage is None:
            return None
        name = self.study or f"optmap-{evaluator.checkpoint.name}"
        directions = ["minimize"] * len(evaluator.objectives)
        storage = self.storage
        if "://" not in storage:
            from optuna.storages import JournalStorage
            from optuna.storages.journal import JournalFileBackend
            storage = JournalStorage(JournalFileBackend(storage))
        for attempt in range(SCHEMA_TRIES):
            try:
                study = optuna.create_study(storage=storage, study_name=name, directions=directions,
                                            load_if_exists=True)
                break
            except ValueError as exc:  # e.g. a stored study with other directions
                raise OptmapError(f"Optuna study '{name}' in {self.storage}: {exc}") from None
            except ImportError as exc:  # the storage's database driver, e.g. psycopg (Optuna wraps its error)
                cause = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__
                known = extras.needs(cause, f"Optuna storage {self.storage}") \
                    if isinstance(cause, ModuleNotFoundError) else None
                if known is None:
                    raise
                raise known from None
            except Exception as exc:
                # workers started together on an empty database race to create Optuna's tables
                # (optuna/optuna#1092): the loser sees a database error and finds the tables made
                if attempt + 1 == SCHEMA_TRIES or not type(exc).__module__.startswith("sqlalchemy"):
                    message = " ".join(f"{type(exc).__name__}: {exc}".split())
                    raise OptmapError(f"cannot open Optuna storage {self.storage}: {message}") from None
                time.sleep(0.1 * (attempt + 1))
        stored = study.user_attrs.get("optmap_problem")
        if stored is None:
            study.set_user_attr("optmap_problem", problem_digest)
        elif stored != problem_digest:
            raise OptmapError(f"Optuna study '{name}' in {self.storage} was made for another problem; "
                              "choose another --study name")
        return study

    # --- the run --------------------------------------------------------------------------
    def search(self, evaluator: Evaluator, seed: int) -> dict:
        import optuna

        self._cap(evaluator, self._sampler_name(evaluator.space, len(evaluator.objectives)))
        codec = Codec(evaluator.space)
        checkpoint = evaluator.checkpoint
        state = checkpoint.engine_state
        done = evaluator.evaluations  # trials already behind this run (a resumed checkpoint)
        sampler_seed = seed if done == 0 else int(np.random.SeedSequence([seed, done]).generate_state(1)[0])
        worker = uuid.uuid4().hex[:12]
        with _quiet():
            sampler_name = self._sampler_name(evaluator.space, len(evaluator.objectives))
            sampler = self._sampler(sampler_name, sampler_seed, len(evaluator.objectives))
            note = _weak_sampler_note(sampler_name, evaluator.space)
            if note and not state:
                print(f"note: {note}", file=sys.stderr)
            study = optuna.create_study(directions=["minimize"] * len(evaluator.objectives), sampler=sampler)
            shared = self._shared(evaluator, digest(checkpoint.fingerprint.get("problem")))
            told: list[dict[str, Any]] = []  # every trial, for an in-memory study's checkpoint
            known: set[str] = set()  # shared trials already in the local study
            recorded: set[str] = set(state.get("seen", [])) if state else set()  # ... and in the evaluator
            if shared is None and state:
                try:
                    told = list(state["trials"])
                    study.add_trials([_frozen(codec, t) for t in told])
                except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                    raise OptmapError(f"the checkpoint's optuna state is damaged ({type(exc).__name__}: {exc}); delete "
                                      f"the checkpoint or run without --resume") from None
            if shared is not None:
                if not state and not checkpoint.resume and shared.trials:
                    raise OptmapError(
                        f"Optuna study '{shared.study_name}' in {self.storage} already has {len(shared.trials)} "
                        "trials; pass --resume to continue it (also how further machines join), or choose --study NAME"
                    )
                self._sync(shared, study, codec, evaluator, known, recorded)
            seeds = self._seed_names(evaluator)
            if not state and seeds and not study.trials:
                for x in seed_vectors(evaluator, seeds, seed):
                    study.enqueue_trial(codec.params(x), skip_if_exists=True)

            def snapshot() -> dict:
                if shared is None:
                    return {"sampler": sampler_name, "trials": told}
                return {"sampler": sampler_name, "study": shared.study_name, "seen": sorted(recorded)}

            while True:
                if shared is not None:
                    self._sync(shared, study, codec, evaluator, known, recorded)
                left = self._left(evaluator)
                if evaluator.exhausted or left <= 0:
                    break
                trials = [study.ask(codec.distributions) for _ in range(min(self.batch, left))]
                X = codec.vectors([t.params for t in trials])
                F, violation = evaluator.evaluate(X)
                finished = []
                for trial, x, f, v in zip(trials, X, F, violation):
                    attrs = {**_attributes(f, v), "optmap_id": f"{worker}:{trial.number}"}
                    for key, value in attrs.items():
                        trial.set_user_attr(key, value)
                    trial.set_constraint("violation", float(v))
                    if np.isfinite(f).all():
                        study.tell(trial, [float(value) for value in f])
                    else:
                        study.tell(trial, state=optuna.trial.TrialState.FAIL)
                    known.add(attrs["optmap_id"])
                    recorded.add(attrs["optmap_id"])
                    finished.append({"x": x.tolist(), **attrs})
                if shared is not None:
                    shared.add_trials([_frozen(codec, t) for t in finished])
                else:
                    told.extend(finished)
                checkpoint.maybe_save(evaluator, snapshot)
            checkpoint.save(evaluator, snapshot())
        extra = {"sampler": sampler_name, "trials": len(study.trials)}
        if note:
            extra["note"] = note
        if shared is not None:
            extra["study"] = shared.study_name
        return extra

    def _seed_names(self, evaluator: Evaluator) -> list[str]:
        """``seed_plans``, or by default every plan the cost model names."""
        if self.seed_plans is not None:
            return self.seed_plans
        plans = getattr(evaluator.cost_model, "plans", None)
        return list(plans()) if callable(plans) else []

    def _cap(self, evaluator: Evaluator, sampler: str) -> None:
        """``max_trials`` tightens the run's budget (so progress, stop reason and resume agree)."""
        budget = evaluator.budget
        cap = auto_trials(sampler, evaluator.space) if self.max_trials == "auto" else self.max_trials
        if cap is not None and (budget.evaluations is None or budget.evaluations > cap):
            evaluator.budget = dataclasses.replace(budget, evaluations=cap)
            how = "auto: " if self.max_trials == "auto" else ""
            evaluator.budget_note = f"optuna max_trials={how}{cap:,}"

    def _left(self, evaluator: Evaluator) -> int:
        left = evaluator.remaining_evaluations
        return self.batch if left is None else left

    @staticmethod
    def _sync(shared, study, codec: Codec, evaluator: Evaluator, known: set[str], recorded: set[str]) -> None:
        """Bring trials that other processes finished in the shared study into this one.

        They join the local study (so the sampler learns from them) and, unless a checkpoint
        already counted them, the evaluator (so the budget and the best are study-wide).
        """
        import optuna

        states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
        new = [t for t in shared.get_trials(deepcopy=False, states=states)
               if t.user_attrs.get("optmap_id") not in known and "violation" in t.user_attrs
               and set(t.params) == set(codec.distributions)]
        if not new:
            return
        stored = [{"x": x.tolist(), **t.user_attrs} for t, x in zip(new, codec.vectors([t.params for t in new]))]
        study.add_trials([_frozen(codec, t) for t in stored])
        known.update(t["optmap_id"] for t in stored)
        fresh = [t for t in stored if t["optmap_id"] not in recorded]
        if fresh:
            evaluator.record(np.array([t["x"] for t in fresh]), np.array([_values(t) for t in fresh]),
                             np.array([t["violation"] for t in fresh], float))
            recorded.update(t["optmap_id"] for t in fresh)


def _frozen(codec: Codec, t: dict[str, Any]):
    """A stored trial (space vector, objectives, violation) as a finished Optuna trial."""
    import optuna

    f = _values(t)
    complete = bool(np.isfinite(f).all())
    return optuna.trial.create_trial(
        state=optuna.trial.TrialState.COMPLETE if complete else optuna.trial.TrialState.FAIL,
        values=[float(v) for v in f] if complete else None,
        params=codec.params(np.array(t["x"])),
        distributions=codec.distributions,
        user_attrs={key: value for key, value in t.items() if key != "x"},
        constraints={"violation": float(t["violation"])},
    )
