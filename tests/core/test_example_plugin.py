"""The third-party example plugin (examples/optmap-example-plugin): installed, listed, and working.

CI installs the package (``pip install ./examples/optmap-example-plugin``) before the tests, so
these tests do not skip when it is missing: a broken install or entry point must fail CI.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import optmap
from optmap.cost import BATCH, CostReport
from optmap.errors import OptmapError
from optmap.problem import build_problem
from optmap.search import Budget, Evaluator
from optmap.space import DesignSpace, categorical, integer, real

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "optmap-example-plugin"
DIST = "optmap-example-plugin"
INSTALL_HINT = f"install it with: pip install {EXAMPLE}"

# Three fully connected layers in the AccPar authors' text format (read by workload 'accpar-text').
MLP3 = """num_layers 3
fc1 FC
in_ch 1024
out_ch 4096
fc2 FC
in_ch 4096
out_ch 4096
fc3 FC
in_ch 4096
out_ch 1000
"""


def test_package_is_installed_with_its_entry_point():
    try:
        dist = importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{DIST} is not installed; {INSTALL_HINT}")
    points = [ep for ep in dist.entry_points if ep.group == "optmap"]
    assert [(ep.name, ep.value) for ep in points] == [("example", "optmap_example_plugin")]
    module = importlib.import_module("optmap_example_plugin")
    assert hasattr(module, "optmap_register_accelerators")
    assert hasattr(module, "optmap_register_search_engines")
    requires = " ".join(dist.requires or [])
    assert "optmap" in requires


def test_optmap_plugins_lists_the_accelerator_and_the_engine():
    out = subprocess.run(
        [sys.executable, "-m", "optmap.cli", "plugins"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    rows = {}
    for line in out.stdout.splitlines():
        cells = [cell.strip() for cell in line.strip("│┃ ").split("│")]
        if len(cells) >= 4:
            rows[(cells[0], cells[1])] = cells
    for kind, name in (("accelerator", "tpu-v4"), ("search engine", "anneal")):
        assert (kind, name) in rows, f"{kind} '{name}' missing from `optmap plugins`:\n{out.stdout}"
        _, _, plugin, package = rows[(kind, name)][:4]
        assert plugin == "example"
        assert package.startswith(DIST + " "), package
    assert "TPU v4" in rows[("accelerator", "tpu-v4")][4]  # the Accelerator's description
    assert rows[("search engine", "anneal")][4].startswith("Simulated annealing")  # its docstring


def test_tpu_v4_numbers():
    from optmap.host import load_host

    tpu = load_host().get("accelerator", "tpu-v4").resolve()
    assert tpu.flops_per_s("bf16") == pytest.approx(275e12)
    assert tpu.flops_per_s("bfloat16") == pytest.approx(275e12)
    assert tpu.memory_bytes == 32 * 2**30
    assert tpu.memory_bandwidth == pytest.approx(1200e9)
    assert tpu.network_bandwidth == pytest.approx(300e9)  # 6 ICI links x 50 GB/s


# ---------------------------------------------------------------------------------------------
# anneal on AccPar problems
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def tiny(tmp_path):
    """3 FC layers on 4 tpu-v4: 2 bisection levels x 3 layers x 3 types = 3^6 = 729 mappings."""
    (tmp_path / "mlp3.txt").write_text(MLP3)

    def make(**extra):
        spec = {
            "workload": {"file": str(tmp_path / "mlp3.txt"), "batch": 512, "dtype": "bf16"},
            "system": {"topology": "hierarchical", "latency_us": 0.0,
                       "groups": [{"accelerator": "tpu-v4", "count": 4}]},
            "cost": {"model": "accpar"},
            "search": {"engine": "anneal", "seed": 0, "budget": {"evaluations": 400}},
            **extra,
        }
        return build_problem(spec)

    return make


def _fingerprint(result):
    return (
        result.best.as_dict(),
        result.values,
        result.evaluations,
        [(h.evaluations, h.best) for h in result.history],
        result.extra,
    )


def test_anneal_reaches_the_exhaustive_optimum_on_a_tiny_space(tiny):
    problem = tiny()
    assert problem.cost_model.space.size == 729
    best = optmap.solve(problem, engine="exhaustive", budget=Budget())
    assert best.evaluations == 729
    for seed in (0, 1, 2):
        result = optmap.solve(problem, engine="anneal", seed=seed)  # 400 evaluations, < 729
        assert result.evaluations == 400
        assert result.values["time"] == pytest.approx(best.values["time"], rel=1e-12)


def test_anneal_is_deterministic_for_a_seed(tiny):
    problem = tiny()
    first = optmap.solve(problem, engine="anneal", seed=7)
    again = optmap.solve(problem, engine="anneal", seed=7)
    assert _fingerprint(first) == _fingerprint(again)


def test_anneal_respects_constraints_and_budget(tiny):
    # Fewer than 1% of the mappings fit in 41 MB per accelerator, and the unconstrained optimum
    # does not: anneal must walk out of infeasible regions and never return an infeasible point.
    problem = tiny(constraints={"max_memory_bytes": 41.0e6})
    best = optmap.solve(problem, engine="exhaustive", budget=Budget())
    unconstrained = optmap.solve(tiny(), engine="exhaustive", budget=Budget())
    assert best.values["time"] > unconstrained.values["time"]
    result = optmap.solve(problem, engine="anneal", seed=0)
    assert result.report.metrics["memory_bytes"] <= 41.0e6
    assert result.values["time"] == pytest.approx(best.values["time"], rel=1e-12)
    # by default the schedule fills the budget: 8 initial points, then ceil(392 / 8) = 49 steps
    assert result.extra["chains"] == 8 and result.extra["steps"] == 49
    assert result.extra["last_temperature"] == pytest.approx(1e-4 * result.extra["initial_temperature"])
    # an evaluation budget that is not a multiple of the chains is met exactly
    short = optmap.solve(problem, engine="anneal", seed=0, budget=Budget(evaluations=100),
                         options={"chains": 16})
    assert short.evaluations == 100


def test_anneal_with_two_objectives(tiny):
    problem = tiny(objective={"minimize": ["time", "memory_bytes"]})
    result = optmap.solve(problem, engine="anneal", seed=0)
    best = optmap.solve(problem, engine="exhaustive", budget=Budget())
    assert result.values["time"] == pytest.approx(best.values["time"], rel=1e-12)  # anneals the first
    assert result.front  # the evaluator keeps the Pareto front of everything evaluated


def test_anneal_options_are_validated(tiny):
    problem = tiny()
    with pytest.raises(OptmapError, match="unknown key 'chainz'.*chains"):
        optmap.solve(problem, engine="anneal", options={"chainz": 4})
    with pytest.raises(OptmapError, match=r"cooling must be in \(0, 1\]"):
        optmap.solve(problem, engine="anneal", options={"cooling": 1.5})
    with pytest.raises(OptmapError, match="steps"):
        optmap.solve(problem, engine="anneal", options={"steps": "many"})


def test_sample_problem_file():
    problem = optmap.load(EXAMPLE / "problem.toml")
    assert problem.search.engine == "anneal"
    assert {g.accelerator.name for g in problem.system.groups} == {"tpu-v4"}
    result = optmap.solve(problem, engine="anneal", seed=0)
    assert result.evaluations <= problem.search.budget.evaluations
    assert result.report.feasible
    native = optmap.solve(problem, engine="accpar", seed=0)  # AccPar's layer-wise DP
    assert result.values["time"] <= 1.01 * native.values["time"]


# ---------------------------------------------------------------------------------------------
# anneal on a mixed categorical / integer / real space (a toy cost model)
# ---------------------------------------------------------------------------------------------


class Bowl:
    """A toy formulation: a separable bowl, minimum 0 at c = 'b', k = 7, x = 1.3, y = 0.25."""

    metrics = ("f",)
    capabilities = frozenset({BATCH})
    offsets = {"a": 0.5, "b": 0.0, "c": 0.2, "d": 1.0}

    def __init__(self):
        self.space = DesignSpace((
            categorical("c", list(self.offsets)),
            integer("k", 0, 20),
            real("x", -2.0, 3.0),
            real("y", 0.0, 1.0),
            integer("fixed", 5, 5),  # a one-value variable: never a move
        ))
        self.seen = []

    def evaluate_batch(self, X):
        self.seen.append(X.copy())
        offset = np.array(list(self.offsets.values()))[X[:, 0].astype(int)]
        f = offset + 0.01 * (X[:, 1] - 7) ** 2 + (X[:, 2] - 1.3) ** 2 + (X[:, 3] - 0.25) ** 2
        return {"f": f}

    def evaluate(self, mapping):
        return CostReport({"f": float(self.evaluate_batch(mapping.array[None])["f"][0])})


def test_anneal_on_a_mixed_space():
    from optmap_example_plugin.anneal import SimulatedAnnealing

    model = Bowl()
    evaluator = Evaluator(model, ("f",), budget=Budget(evaluations=4000))
    extra = SimulatedAnnealing(chains=8, steps=1000).search(evaluator, seed=0)
    assert evaluator.evaluations == 4000
    assert extra["chains"] == 8 and extra["steps"] == 499
    X = np.vstack(model.seen)
    space = model.space
    assert (X >= space.lower).all() and (X <= space.upper).all()
    assert (X[:, space.discrete] == np.round(X[:, space.discrete])).all()
    best = space.decode(evaluator.best_x)
    assert best["c"] == "b" and best["k"] == 7
    assert best["x"] == pytest.approx(1.3, abs=0.05) and best["y"] == pytest.approx(0.25, abs=0.05)
    assert evaluator.best_f[0] < 5e-3


# --- the example's own formulation: pipeline stages with a permutation and a custom repair -----------

TINY_PIPELINE = {
    "workload": {"model": "lenet", "batch": 32, "dtype": "bf16"},
    "system": {"topology": "ring", "groups": [{"accelerator": a, "count": 1} for a in ("tpu-v4", "tpu-v3", "tpu-v2")]},
    "cost": {"model": "stage-pipeline"},
}


def _valid_partition(mapping, layers: int) -> bool:
    cuts = [mapping["cut1"], mapping["cut2"]]
    return 0 < cuts[0] < cuts[1] < layers and sorted(mapping["placement"]) == [0, 1, 2]


def test_stage_pipeline_runs_under_every_generic_engine():
    """No core line names this formulation: its permutation, repair, sampler, maximised metric
    and per-stage table all go through the contracts. The reference is brute force."""
    from optmap.run import solve

    problem = build_problem(TINY_PIPELINE)
    layers = len(problem.workload.layers())  # lenet: 13 layers in topological order
    assert problem.objectives == ("throughput",) and problem.senses == ("max",)  # the primary metric
    best = solve(problem, engine="exhaustive")
    # C(12, 2) = 66 partitions x 3! placements = 396 distinct mappings after the repair
    assert best.evaluations == 66 * 6 and _valid_partition(best.best, layers)
    optimum = best.values["throughput"]
    stages = best.report.tables["stages"]
    assert len(stages) == 3 and optimum == pytest.approx(32 / max(row["stage_s"] for row in stages))
    for engine, evaluations, within in (("random", 1500, 1.0), ("ga", 300, 0.98), ("optuna", 60, 0.8)):
        result = solve(problem, engine=engine, seed=0, budget=Budget(evaluations=evaluations))
        value = result.values["throughput"]
        assert _valid_partition(result.best, layers), engine
        assert within * optimum <= value <= optimum * (1 + 1e-12), (engine, value / optimum)


def test_stage_pipeline_is_listed_and_runs_from_the_command_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "optmap.cli", "run", str(EXAMPLE / "pipeline.toml"), "--search",
                          "random", "--json", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "stages" in out.stdout and "throughput" in out.stdout
    listed = subprocess.run([sys.executable, "-m", "optmap.cli", "plugins"], capture_output=True, text=True, timeout=120)
    assert "stage-pipeline" in listed.stdout
