"""Generic search engines that work on any formulation's design space.

Both are declared defaults of formulations that name no ``default_engine``: ``exhaustive`` for a
space of at most :data:`EXHAUSTIVE_DEFAULT_LIMIT` points, ``random`` for any space when no
preferred engine fits (``ga`` of the ``search`` plugin is preferred when pymoo is installed).
"""

from optmap.hookspecs import hookimpl

EXHAUSTIVE_DEFAULT_LIMIT = 1_000_000  # points a default exhaustive search may enumerate


@hookimpl
def optmap_register_search_engines(register):
    from optmap.registry import DefaultFor

    register("exhaustive", "optmap.plugins.generic.exhaustive:ExhaustiveSearch",
             default=DefaultFor(max_size=EXHAUSTIVE_DEFAULT_LIMIT, preference=2))
    register("random", "optmap.plugins.generic.random_search:RandomSearch", default=DefaultFor(preference=0))
