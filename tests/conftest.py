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
