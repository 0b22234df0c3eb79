"""Generic population and Bayesian search engines on any formulation: ``ga`` (pymoo) and ``optuna``.

Both search a cost model's :class:`~optmap.space.DesignSpace` through its vector encoding,
score whole batches through the evaluator (the cost model's vectorised ``evaluate_batch`` when it
has one), can start from named plans (other engines' answers), and resume from a checkpoint.
pymoo and Optuna (regular dependencies of optmap) are imported only when an engine runs.
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_search_engines(register):
    import importlib.util

    from optmap.registry import DefaultFor

    # the default of large spaces when pymoo is installed (preferred over random, not over exhaustive)
    pymoo = importlib.util.find_spec("pymoo") is not None
    register("ga", "optmap.plugins.search.ga:GeneticSearch", default=DefaultFor(preference=1) if pymoo else None)
    register("optuna", "optmap.plugins.search.optuna_search:OptunaSearch")
