"""Search: the engine contract, budgets, the evaluator every engine scores through, results.

- :mod:`~optmap.search.engine`: `SearchEngine` (the contract) and the one fit check;
- :mod:`~optmap.search.budget`: `Budget`;
- :mod:`~optmap.search.evaluator`: `Evaluator` (scoring, pins, stopping, checkpoints);
- :mod:`~optmap.search.archive`: best point, Pareto front and history;
- :mod:`~optmap.search.seeding`: `seed_vectors`, the plans named in an engine's ``seed_plans``;
- :mod:`~optmap.search.result`: `SearchResult`.
"""

from optmap.search.archive import Archive, HistoryPoint, pareto_mask
from optmap.search.budget import Budget
from optmap.search.engine import SearchEngine
from optmap.search.evaluator import Evaluator
from optmap.search.result import SearchResult

__all__ = ["Archive", "Budget", "Evaluator", "HistoryPoint", "SearchEngine", "SearchResult", "pareto_mask"]
