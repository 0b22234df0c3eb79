"""optmap: find how to map deep-learning work onto systems of many accelerators.

The Python API: ``optmap.load("problem.toml")`` → Problem; ``optmap.solve(problem, engine="ga",
seed=0)`` → SearchResult; ``optmap.compare(problem, engines=[...], seeds=[0, 1, 2])`` → Comparison;
``optmap.read_saved("result.json")`` → (kind, validated contents) of a file optmap wrote.
Submodules are imported on first use so that the command line starts fast.
"""

__version__ = "0.1.0"

_API = {
    "load": "optmap.problem",
    "build_problem": "optmap.problem",
    "solve": "optmap.run",
    "compare": "optmap.comparison",
    "read_saved": "optmap.saved",
    "Budget": "optmap.search",
    "OptmapError": "optmap.errors",
}

__all__ = sorted(_API)


def __getattr__(name):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'optmap' has no attribute {name!r}")
