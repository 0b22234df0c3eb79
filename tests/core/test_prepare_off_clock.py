"""A cost model's one-off set-up (AccPar loading its compiled kernel) happens before a search's
clock starts, and the result says how long it took (issue 27: the kernel's load fell on the run,
so random's whole-run rate was 8-10x below the kernel's)."""

import time

import numpy as np

from optmap.run import solve

from test_compare import Bowl, bowl


class SlowToPrepare(Bowl):
    """The bowl, with a set-up of 0.3 s that records what it was told."""

    def __init__(self):
        super().__init__()
        self.prepared = []

    def prepare(self, rows):
        self.prepared.append(rows)
        time.sleep(0.3)


def test_set_up_is_off_the_clock_and_reported():
    problem = bowl(evaluations=500)
    problem.cost_model = model = SlowToPrepare()
    result = solve(problem, "random", seed=0)
    assert model.prepared == [500]  # random asks for its whole run's evaluations
    assert result.extra["setup_seconds"] >= 0.3
    assert result.seconds < 0.3 + result.extra["setup_seconds"] and result.seconds < 0.29
    assert result.history[0].seconds < 0.29  # the first batch's time excludes the set-up


def test_a_model_without_prepare_reports_no_set_up():
    result = solve(bowl(evaluations=200), "random", seed=0)
    assert "setup_seconds" not in result.extra and np.isfinite(result.seconds)
