"""Shared helpers: build problems from dicts without writing files."""

from pathlib import Path

import pytest

from optmap.problem import build_problem

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


def make_problem(spec: dict, path: Path | None = None):
    return build_problem(spec, path)


@pytest.fixture
def problem_from():
    return make_problem


def two_kinds_problem(name: str, model: str, batch: int, evaluations: int | None = None) -> str:
    """A problem file's text: ``model`` on 2 TPU-v2 + 2 TPU-v3 (hierarchical, no latency) with
    AccPar's cost model and engine, seed 0 (and an evaluation budget when given)."""
    budget = f"budget = {{ evaluations = {evaluations} }}\n" if evaluations is not None else ""
    return f"""\
name = "{name}"
[workload]
model = "{model}"
batch = {batch}
dtype = "bf16"
[system]
topology = "hierarchical"
latency_us = 0.0
[[system.groups]]
accelerator = "tpu-v2"
count = 2
[[system.groups]]
accelerator = "tpu-v3"
count = 2
[cost]
model = "accpar"
[search]
engine = "accpar"
seed = 0
{budget}"""

