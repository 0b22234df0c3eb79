"""The search-engine contract, and the one place that decides whether an engine fits a formulation."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from optmap.search.budget import Budget

if TYPE_CHECKING:  # pragma: no cover
    from optmap.search.evaluator import Evaluator


class SearchEngine(ABC):
    """A search method: explores ``evaluator.space`` by calling the evaluator.

    Required: :meth:`search`. Optional class attributes, with defaults:

    - ``requires``: cost-model capabilities the engine needs (e.g. per-layer cost tables);
    - ``accepts``: the formulations a native engine plans for, as cost-model classes (or
      capability names); empty means any formulation. Both are checked once, when the problem
      is loaded or the engine is chosen, before anything runs;
    - ``exact``: the engine's answer is a proven optimum of the formulation (comparisons report
      the gap to it);
    - ``resumable``: the engine saves its state through ``evaluator.checkpoint`` and continues
      from ``evaluator.checkpoint.engine_state`` (ga, optuna); only such engines take ``--resume``;
    - ``seed_plans``: names of engines, or of plans the cost model names, that the engine starts
      from (an instance attribute set from its options); each is checked when the engine is
      chosen, before anything runs;
    - ``default_budget``: the budget the engine runs under when neither the problem nor the
      command line sets one (``None``: the core's finite default,
      :data:`optmap.search.budget.DEFAULT_EVALUATIONS`); an exhaustive engine that scores every
      plan at once sets no evaluation limit, so its optimum is not cut short by a budget made for
      sampling engines.

    A generic engine is declared the default of formulations without a ``default_engine`` at
    registration, not here (:class:`optmap.registry.DefaultFor`), so choosing one imports none.
    """

    requires: frozenset[str] = frozenset()
    accepts: tuple = ()
    exact: bool = False
    resumable: bool = False
    seed_plans: list[str] | None = None
    default_budget: Budget | None = None

    @abstractmethod
    def search(self, evaluator: Evaluator, seed: int) -> dict | None:
        """Search until ``evaluator.exhausted`` or done; return extra facts for the result (or None)."""


def missing(engine: Any) -> str | None:
    """What ``engine`` lacks to be a search engine (None when it is one)."""
    if not callable(getattr(engine, "search", None)):
        return "a search engine (it has no search(evaluator, seed) method; see optmap.search.SearchEngine)"
    return None


def misfit(engine: Any, cost_model: Any) -> str | None:
    """Why ``engine`` (a class or an instance) cannot search ``cost_model``'s formulation, or None.

    The one capability check: every capability in ``requires`` must be offered, and when
    ``accepts`` is not empty the cost model must be an instance of one of its classes or offer
    one of its capability names.
    """
    offered = set(getattr(cost_model, "capabilities", ()) or ())
    requires = getattr(engine, "requires", ())
    requires = requires if isinstance(requires, (set, frozenset, tuple, list)) else ()
    absent = sorted(set(requires) - offered)
    if absent:
        return f"needs the capability '{absent[0]}', which that model does not offer"
    accepts = getattr(engine, "accepts", ())
    accepts = accepts if isinstance(accepts, (tuple, list, set, frozenset)) else ()
    if accepts and not any(isinstance(cost_model, a) if inspect.isclass(a) else a in offered for a in accepts):
        names = ", ".join(getattr(a, "formulation", a.__name__) if inspect.isclass(a) else
                          f"models that offer the capability '{a}' (accepts lists cost model classes or "
                          f"capability names, not registered names)" for a in accepts)
        return f"plans only for {names}"
    return None
