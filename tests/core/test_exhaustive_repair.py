"""exhaustive on formulations with their own repair: every distinct mapping exactly once, complete.

The references are brute force: every raw point of the grid (itertools.product over each
variable's values), repaired by the space, scored, and its distinct rows counted. Small chunks
make points that the repair merges fall into different chunks.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from optmap.comparison import compare
from optmap.plugins.generic.exhaustive import ExhaustiveSearch
from optmap.problem import build_problem
from optmap.search import Evaluator

PLUGINS = ROOT / "tests" / "data" / "test_plugins"
EXAMPLE = ROOT / "examples" / "optmap-example-plugin"

# lenet (13 layers) in 3 stages on 3 devices: cut1, cut2 in 1..12 and 3! placements = 864 raw points,
# C(12, 2) = 66 partitions x 6 placements = 396 distinct mappings after the repair
PIPELINE = {
    "workload": {"model": "lenet", "batch": 32, "dtype": "bf16"},
    "system": {"topology": "ring", "groups": [{"accelerator": a, "count": 1} for a in ("tpu-v4", "tpu-v3", "tpu-v2")]},
    "cost": {"model": "stage-pipeline"},
    "search": {"engine": "exhaustive", "exhaustive": {"chunk": 50}},
}


def raw_points(space) -> np.ndarray:
    """Every raw point of the grid, by brute force."""
    return np.array([np.concatenate(row) for row in itertools.product(*(v.values() for v in space.variables))])


def recording(model) -> list[np.ndarray]:
    """Keep every batch ``model`` scores (the rows the evaluator hands it, already repaired)."""
    scored: list[np.ndarray] = []
    score = model.evaluate_batch
    model.evaluate_batch = lambda X: (scored.append(np.array(X)), score(X))[1]
    return scored


def test_the_example_plugins_pipeline_is_enumerated_once_per_mapping():
    import optmap_example_plugin  # installed from examples/, outside the optmap package

    problem = build_problem(PIPELINE)
    model = problem.cost_model
    assert type(model).__module__.startswith(optmap_example_plugin.__name__)
    space = model.space
    raw = raw_points(space)
    assert len(raw) == 864 == space.size
    repaired = space.repair(raw)
    distinct = np.unique(repaired, axis=0)
    assert len(distinct) == 66 * 6
    brute = model.evaluate_batch(distinct)["throughput"].max()

    scored = recording(model)
    evaluator = Evaluator(model, ("throughput",), senses=("max",))
    extra = ExhaustiveSearch(chunk=50).search(evaluator, seed=0)
    rows = np.vstack(scored)
    assert extra["complete"] is True and evaluator.evaluations == 396
    assert len(np.unique(rows, axis=0)) == len(rows) == 396  # no mapping scored twice
    assert {r.tobytes() for r in rows} == {r.tobytes() for r in distinct}
    assert -evaluator.best_f[0] == brute


def test_compare_calls_the_complete_search_the_exact_optimum():
    problem = build_problem(PIPELINE)
    table = compare(problem, engines=["exhaustive", "random"], seeds=[0])
    run = next(r for r in table.runs if r.engine == "exhaustive")
    assert run.extra["complete"] is True and run.stopped == "complete" and run.evaluations == 396
    assert table.best_known_source == "exact optimum" and table.best_known == run.values["throughput"]


@pytest.fixture()
def lumpy(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    from optmap_testplug_lumpy_repair import LumpyRepair

    return LumpyRepair(None, None)


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_a_repair_off_the_grid_and_not_idempotent_is_enumerated_once_per_mapping(lumpy, chunk):
    space = lumpy.space
    mappings = np.unique(space.repair(raw_points(space)), axis=0)  # what the evaluator scores per raw point
    assert len(mappings) == 4 * 10 * 3  # a in 4 bins, b shifted, c: see the plugin's docstring
    brute = lumpy.evaluate_batch(mappings)["f"].min()
    lumpy.scored.clear()
    evaluator = Evaluator(lumpy, ("f",))
    extra = ExhaustiveSearch(chunk=chunk).search(evaluator, seed=0)
    rows = np.vstack(lumpy.scored)
    assert extra["complete"] is True and evaluator.evaluations == 120
    assert {r.tobytes() for r in rows} == {r.tobytes() for r in mappings} and len(rows) == 120
    assert evaluator.best_f[0] == brute


def test_a_plugin_formulation_from_the_command_line_is_complete(tmp_path, lumpy):
    problem = tmp_path / "lumpy.toml"
    problem.write_text('name = "lumpy"\n[workload]\nmodel = "lenet"\nbatch = 8\n[system]\ntopology = "ring"\n'
                       '[[system.groups]]\naccelerator = "tpu-v3"\ncount = 2\n[cost]\nmodel = "lumpy-repair"\n'
                       '[search]\nengine = "exhaustive"\n[search.exhaustive]\nchunk = 7\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-m", "optmap.cli", "--plugin", "optmap_testplug_lumpy_repair", "run",
                          str(problem), "--quiet", "--json", str(tmp_path / "r.json")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    saved = json.loads((tmp_path / "r.json").read_text())
    space = lumpy.space
    brute = lumpy.evaluate_batch(np.unique(space.repair(raw_points(space)), axis=0))["f"].min()
    assert saved["extra"]["complete"] is True and saved["evaluations"] == 120
    assert saved["values"]["f"] == pytest.approx(brute, rel=1e-12)


def test_the_seen_set_holds_only_mappings_the_grid_cannot_yield(monkeypatch, lumpy):
    """Memory: an idempotent repair onto the grid (stage-pipeline) keeps nothing; one off the grid
    keeps at most one row per distinct mapping (lumpy-repair: 120)."""
    from optmap.space.design import DesignSpace

    sizes = []
    first_seen = DesignSpace._first_seen

    def spy(self, raw, repaired, tables, seen):
        rows = first_seen(self, raw, repaired, tables, seen)
        sizes.append(len(seen))
        return rows

    monkeypatch.setattr(DesignSpace, "_first_seen", spy)
    for space, most in ((build_problem(PIPELINE).cost_model.space, 0), (lumpy.space, 120)):
        sizes.clear()
        assert sum(len(X) for X in space.grid(7)) == (396 if most == 0 else 120)
        assert sizes and max(sizes) == most
