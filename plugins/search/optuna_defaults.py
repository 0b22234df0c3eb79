"""The optuna engine's defaults: which sampler suits a space, and how many trials a run gets.

Optuna proposes every parameter of every trial in Python, so its cost per trial grows with the
parameters (and TPE's also with the trials); :func:`auto_trials` sizes ``max_trials = "auto"``
from that, and :func:`_weak_sampler_note` says when a chosen sampler is known to do poorly.
"""

from __future__ import annotations

from optmap.space import DesignSpace

# max_trials = "auto": trials x free parameters <= SUGGESTIONS[sampler], clipped to AUTO_TRIALS.
# Measured on this shared 2-core AMD EPYC (quickstart, 65 parameters, 1,000 trials, load 1-2):
# NSGA-II 8 s, TPE 83 s (its per-trial cost grows with the trials); random and QMC cost like
# NSGA-II. The budgets keep a run near 5 s when the machine is quiet, so it ends within a minute
# when it is shared (NSGA-II: 1,000 trials took 30 s at load average 7).
SUGGESTIONS = {"tpe": 5_000, "cmaes": 30_000, "random": 30_000, "qmc": 30_000, "nsga2": 30_000}
AUTO_TRIALS = (100, 1_000)
# Categorical decisions above which the samplers below are known to do poorly (the README's
# study: TPE on AccPar's 153 decisions ends far behind ga; NSGA-II gets within 2 %).
MANY_CATEGORICAL = 50
WEAK_ON_CATEGORICAL = ("tpe", "cmaes", "random", "qmc")


def categorical_decisions(space: DesignSpace) -> int:
    """The categorical decisions left to search (pinned ones are not proposed)."""
    return sum(1 for v in space.variables if v.kind == "categorical" and not v.is_pinned)


def auto_trials(sampler: str, space: DesignSpace) -> int:
    """``max_trials = "auto"``: as many trials as ``SUGGESTIONS[sampler]`` parameter proposals
    allow for the space's free parameters, within ``AUTO_TRIALS``."""
    parameters = max(1, sum(v.width for v in space.variables if not v.is_pinned))
    low, high = AUTO_TRIALS
    return int(min(high, max(low, SUGGESTIONS[sampler] // parameters)))


def _weak_sampler_note(sampler: str, space: DesignSpace) -> str:
    """One line when ``sampler`` is known to do poorly on ``space`` (many categorical decisions)."""
    categorical = categorical_decisions(space)
    if sampler not in WEAK_ON_CATEGORICAL or categorical <= MANY_CATEGORICAL:
        return ""
    return (f"optuna's {sampler} sampler learns little from {categorical} categorical decisions; "
            f"--search ga or sampler = \"nsga2\" usually ends closer to the best plan")
