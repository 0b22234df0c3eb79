"""Standard metric names that composition relies on: every built-in formulation that reports
per-device memory reports it as ``memory_bytes`` too (its own names stay)."""

from pathlib import Path

import pytest

from optmap.cost import MEMORY, STANDARD_METRICS, TIME
from optmap.problem import load

ROOT = Path(__file__).resolve().parents[2]


def _plan_metrics(problem_file: str, plan: str) -> dict[str, float]:
    model = load(ROOT / "problems" / problem_file).cost_model
    assert MEMORY in model.metrics
    return model.evaluate(model.plans()[plan]).metrics


def test_the_standard_names():
    assert (TIME, MEMORY) == ("time", "memory_bytes") and set(STANDARD_METRICS) == {TIME, MEMORY}


def test_dsm_memory_is_the_hbm_footprint_per_chip_by_hand():
    # problems/dsm/small.toml, data parallel on 4 chips (training, FP16): every chip holds all
    # weights and their gradients, plus a quarter of each layer's stored outputs (16 samples),
    # the same hand count as tests/plugins/dsm/test_dsm_costmodel.py::test_hbm_capacity_is_checked
    weights = 16 * 32 * 9 + 32 * 64 * 9 + 4096 * 256
    outputs = 32 * 16 * 16 + 64 * 8 * 8 + 256
    metrics = _plan_metrics("dsm/small.toml", "data-parallel")
    assert metrics[MEMORY] == pytest.approx(2 * 2 * weights + outputs * 16 * 2 / 4)


def test_llm_memory_bytes_is_its_gib_per_gpu():
    metrics = _plan_metrics("llm/megatron-22b.toml", "megatron")
    assert metrics[MEMORY] == pytest.approx(metrics["memory_gib"] * 2**30)


def test_mars_memory_bytes_is_the_largest_footprint():
    # memory_fraction = footprint / DRAM, and an F1 FPGA has 1 GiB of DRAM (MARS Sec. VI-A)
    metrics = _plan_metrics("mars/alexnet.toml", "baseline")
    assert metrics[MEMORY] == pytest.approx(metrics["memory_fraction"] * 2**30) and metrics[MEMORY] > 0


def test_fpdeep_memory_bytes_is_its_per_device_storage():
    metrics = _plan_metrics("fpdeep/alexnet-15.toml", "coarse")
    assert metrics[MEMORY] == metrics["storage_bytes"] > 0
