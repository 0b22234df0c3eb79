"""The scorecard's claims, one module per seed (and the LLM planner); each module's
``claims(quick)`` computes its rows now, from the models, through the reproduction scripts'
functions (``examples/reproduce_*.py`` must be importable: ``examples/`` on ``sys.path``)."""

from __future__ import annotations

import importlib

SEEDS = ("accpar", "fpdeep", "acctfm", "dsm", "mars", "llm")


def collect(seeds=SEEDS, quick: bool = False, ci_only: bool = False, progress=None) -> list:
    """Every claim of ``seeds`` (a list of :class:`~scorecard_claims.card.Claim`); with ``ci_only``,
    only the rows marked ``ci`` (each module then computes only the groups that hold them)."""
    out = []
    for seed in seeds:
        module = importlib.import_module(f"{__name__}.{seed}")
        rows = module.claims(quick, ci_only=ci_only)
        if ci_only:
            rows = [c for c in rows if c.ci]
        if progress:
            progress(seed, rows)
        out += rows
    return out
