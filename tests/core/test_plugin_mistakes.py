"""A plugin author's mistakes are one line naming the cost model or engine, and what was found is
kept (a plugin-author trial: each of these was a traceback or blamed the engine)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

PLUGIN = textwrap.dedent('''
    import numpy as np
    from optmap.cost import BATCH, CostModel, CostReport
    from optmap.hookspecs import hookimpl
    from optmap.search import SearchEngine
    from optmap.space import DesignSpace, categorical


    class Base(CostModel):
        metrics = ("time",)
        capabilities = frozenset({BATCH})

        def __init__(self, workload, system):
            self.space = DesignSpace(tuple(categorical(f"d{i}", (0, 1)) for i in range(3)))

        def evaluate_batch(self, X):
            return {"time": 1.0 + X.sum(1)}

        def evaluate(self, mapping):
            return CostReport({"time": float(self.evaluate_batch(mapping.array[None])["time"][0])})


    class DictReport(Base):
        def evaluate(self, mapping):
            return {"time": 1.0}


    class WrongLength(Base):
        def evaluate_batch(self, X):
            return {"time": np.ones(len(X) + 1)}


    class NoTime(Base):
        def evaluate_batch(self, X):
            return {"latency": np.ones(len(X))}


    class ShortReport(Base):
        metrics = ("time", "memory")

        def evaluate_batch(self, X):
            return {"time": 1.0 + X.sum(1), "memory": np.ones(len(X))}


    class AllNaN(Base):
        def evaluate_batch(self, X):
            return {"time": np.full(len(X), np.nan)}


    class ReturnsList(SearchEngine):
        def search(self, evaluator, seed):
            evaluator.evaluate(evaluator.space.sample(np.random.default_rng(seed), 4))
            return [1, 2]


    @hookimpl
    def optmap_register_cost_models(register):
        for name, model in (("good", Base), ("dict-report", DictReport), ("wrong-length", WrongLength),
                            ("no-time", NoTime), ("all-nan", AllNaN),
                            ("short-report", ShortReport)):
            register(name, model)


    @hookimpl
    def optmap_register_search_engines(register):
        register("returns-list", ReturnsList)
        register("half-done", "no_such_module_xyz:Engine")  # an import path that cannot be imported
''')

PROBLEM = '''
workload = { model = "lenet", batch = 8, dtype = "bf16" }
system = { topology = "fully-connected", groups = [{ accelerator = "tpu-v3", count = 2 }] }
cost = { model = "good" }
search = { engine = "random", budget = { evaluations = 16 } }
'''


def run(tmp_path, *args):
    (tmp_path / "mistakes.py").write_text(PLUGIN)
    (tmp_path / "p.toml").write_text(PROBLEM)
    return subprocess.run([sys.executable, "-m", "optmap.cli", "--plugin", "mistakes", "run", "p.toml", "--quiet",
                           "--json", "out.json", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("model, message", [
    ("dict-report", "cost model DictReport: evaluate returned dict, not an optmap.cost.CostReport"),
    ("wrong-length", "cost model WrongLength: evaluate_batch's 'time' has shape (17,) for 16 rows"),
    ("no-time", "cost model NoTime: evaluate_batch gave no 'time', which the problem uses; it gave latency"),
    ("all-nan", "the cost model scored all 16 mappings NaN"),
    ("short-report", "cost model ShortReport: evaluate's report has no 'memory', which its metrics declare"),
])
def test_cost_model_mistakes_name_the_model(tmp_path, model, message):
    proc = run(tmp_path, "--set", f'cost.model="{model}"', "--set", 'objective.minimize=["time"]')
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and message in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_report_that_fails_keeps_what_was_found(tmp_path):
    proc = run(tmp_path, "--set", 'cost.model="dict-report"')
    assert proc.returncode == 2 and "partial result written" in proc.stderr
    saved = json.loads((tmp_path / "out.json").read_text())
    assert saved["evaluations"] == 16 and saved["values"]["time"] == 1.0  # the best: every decision 0


def test_an_engine_that_returns_a_list_is_one_line(tmp_path):
    proc = run(tmp_path, "--search", "returns-list")
    assert proc.returncode == 2 and "engine 'returns-list': search() returned list, not a dict of facts or None" \
        in proc.stderr and "Traceback" not in proc.stderr


def test_plugins_check_imports_what_was_registered_by_path(tmp_path):
    (tmp_path / "mistakes.py").write_text(PLUGIN)
    listing = [sys.executable, "-m", "optmap.cli", "--plugin", "mistakes", "plugins"]
    fast = subprocess.run(listing, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert fast.returncode == 0  # listing never imports a path (it stays fast)
    checked = subprocess.run([*listing, "--check"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    errors = [line for line in checked.stderr.splitlines() if line.startswith("error:")]
    assert checked.returncode == 2 and len(errors) == 1, checked.stderr
    assert ("1 registered name is broken; the first: plugin 'mistakes': search engine 'half-done' could not be "
            "imported from 'no_such_module_xyz:Engine'") in errors[0]


def test_every_built_in_name_imports():
    proc = subprocess.run([sys.executable, "-m", "optmap.cli", "plugins", "--check"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
