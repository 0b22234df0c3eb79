"""The progress bar of `optmap run` / `compare`: what it counts to."""

from __future__ import annotations

from types import SimpleNamespace

from optmap.commands.progress import Progress
from optmap.search import Budget


def test_the_bar_counts_to_what_the_engine_announces_even_when_it_announces_late():
    # mars announces its generations only after scoring its seed plans: the bar, already shown
    # with the budget's 20,000, must switch to the announced count
    evaluator = SimpleNamespace(evaluations=1, expected=None, budget=Budget(evaluations=20_000), best_f=[1.0],
                                best_value=1.0, elapsed=2.0)
    progress = Progress("mars")
    progress.plain, progress.started = False, progress.started - 2.0  # a terminal, after the first second
    try:
        progress(evaluator)
        assert progress.bar.tasks[0].total == 20_000
        evaluator.expected, evaluator.evaluations = 41, 9
        progress(evaluator)
        assert progress.bar.tasks[0].total == 41 and progress.bar.tasks[0].completed == 9
    finally:
        progress.close()
