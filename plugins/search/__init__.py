"""Generic population and Bayesian search engines on any formulation: ``ga`` (pymoo) and ``optuna``.

Both search a cost model's :class:`~optmap.space.DesignSpace` through its vector encoding,
score whole batches through the evaluator (the cost model's vectorised ``evaluate_batch`` when it
has one), can start from named plans (other engines' answers), and resume from a checkpoint.
pymoo and Optuna (regular dependencies of optmap) are imported only when an engine runs.
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_search_engines(register):
    register("ga", "optmap.plugins.search.ga:GeneticSearch")
    register("optuna", "optmap.plugins.search.optuna_search:OptunaSearch")
