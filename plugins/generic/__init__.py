"""Generic search engines that work on any formulation's design space."""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_search_engines(register):
    register("exhaustive", "optmap.plugins.generic.exhaustive:ExhaustiveSearch")
    register("random", "optmap.plugins.generic.random_search:RandomSearch")
