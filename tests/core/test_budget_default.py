"""Which budget a run gets when its problem and command line set none (core.search.budget)."""

from optmap.search import Budget
from optmap.search.budget import DEFAULT_EVALUATIONS, DEFAULT_SECONDS


def test_unset_budget_takes_the_engines_default_else_the_finite_one():
    engine_default = Budget(evaluations=None, seconds=DEFAULT_SECONDS)  # an exhaustive engine's (megatron-3d)
    assert Budget().or_default(engine_default) == engine_default
    assert Budget().or_default() == Budget(DEFAULT_EVALUATIONS, DEFAULT_SECONDS) == Budget().or_default(None)
    # a budget the problem or the command line sets always wins, on either axis
    assert Budget(evaluations=500).or_default(engine_default) == Budget(evaluations=500)
    assert Budget(seconds=5.0).or_default(engine_default) == Budget(seconds=5.0)
