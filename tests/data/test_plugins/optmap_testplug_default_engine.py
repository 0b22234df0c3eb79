"""A plugin whose search engine declares itself the preferred default for spaces of up to 100 points,
and one that declares a default on something that is not a search engine."""

from optmap.hookspecs import hookimpl
from optmap.search import SearchEngine
from optmap.registry import DefaultFor


class FirstPoint(SearchEngine):
    """Scores the space's first point only."""

    def search(self, evaluator, seed):
        evaluator.evaluate(evaluator.space.grid(1).__next__())


@hookimpl
def optmap_register_search_engines(register):
    register("first-point", FirstPoint, default=DefaultFor(max_size=100, preference=5))
