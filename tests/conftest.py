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



def channel_shuffle(batch: int):
    """An imported channel shuffle between two convolutions (tests of data-movement layers):
    conv1 (4 -> 8 channels, 8x8, no bias) -> reshape (2, 4, 8, 8) -> transpose -> reshape back ->
    slice of the first 4 channels -> conv2, fp16."""
    from optmap.workload import WorkloadBuilder

    b = WorkloadBuilder("shuffle", (4, 8, 8))
    b.conv2d("input", 8, 3, padding=1, bias=False, name="conv1")
    b.op("reshape", "conv1", (2, 4, 8, 8), name="group")
    b.op("transpose", "group", (4, 2, 8, 8), name="shuffle", perm=(0, 2, 1, 3, 4))
    b.op("reshape", "shuffle", (8, 8, 8), name="ungroup")
    b.op("slice", "ungroup", (4, 8, 8), name="half")
    b.conv2d("half", 8, 3, padding=1, bias=False, name="conv2")
    return b.build(batch, "fp16")
