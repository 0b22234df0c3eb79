"""The claims of Tables III and IV on the problem files themselves, with small GA budgets.

The default-budget numbers are in docs/reproductions/mars.md (examples/reproduce_mars.py). The
claims depend on the full-size workloads (at 64 × 64 images ResNet101 does pick Winograd for its
small late layers), so the sizes stay and only the GA budgets shrink.
"""

from pathlib import Path

import pytest

import optmap
from optmap.run import solve

PROBLEMS = Path(__file__).resolve().parents[3] / "problems" / "mars"
SMALL = [f"search.mars.{k}={v}" for k, v in {"pop1": 8, "gens1": 3, "pop2": 8, "gens2": 3}.items()]


def designs_of(result):
    return [row["design"] for row in result.report.tables["sets"]]


@pytest.fixture(scope="module")
def table_iii():
    runs = {}
    for name in ("alexnet", "vgg16", "resnet34", "resnet101", "wrn50-2"):
        problem = optmap.load(PROBLEMS / f"{name}.toml", SMALL)
        runs[name] = (problem, solve(problem, "mars", seed=0))
    return runs


def test_mars_beats_the_baseline_on_all_five_models(table_iii):
    for name, (problem, result) in table_iii.items():
        assert result.values["time"] < problem.cost_model.baseline_time, name
        assert result.report.metrics["reduction"] > 0


def test_no_winograd_in_resnet101_and_wrn50_2(table_iii):
    # 1×1 bottleneck convolutions padded to 3×3 cost the Winograd design 9× (Sec. VI-B)
    for name in ("resnet101", "wrn50-2"):
        assert not any("winograd" in d for d in designs_of(table_iii[name][1])), name


@pytest.mark.xfail(strict=True, reason="even at Table II's #PEs peaks SuperLIP opens ResNet34 and ResNet101 only; "
                                        "VGG16's 3×3 layers go to Winograd; see docs/reproductions/mars.md")
def test_first_set_runs_design_1(table_iii):
    assert all(designs_of(result)[0] == "superlip" for _, result in table_iii.values())


@pytest.mark.parametrize("name, levels", [("h2h-casia-surf", (1, 2, 10)), ("h2h-facebag", (1, 10))])
def test_mars_beats_h2h_and_both_speed_up_with_bandwidth(name, levels):
    times = []
    for bw in levels:
        problem = optmap.load(PROBLEMS / f"{name}.toml", [f"system.bandwidth_gbps={bw}", *SMALL])
        mars, h2h = solve(problem, "mars", seed=0).values["time"], solve(problem, "h2h").values["time"]
        assert mars < h2h, bw
        times.append((mars, h2h))
    assert all(b[0] < a[0] and b[1] < a[1] for a, b in zip(times, times[1:])), times
