"""The composite ``pipeline`` formulation and its Alpa-style joint engine.

Values are checked against brute force (the exhaustive engine over the whole joint space),
against the inner formulation alone, and against the schedule's arithmetic redone by hand on
inner models built independently of the pipeline.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

import optmap
from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.system.subsystem import sub_system
from optmap.workload.slicing import slice_workload

from conftest import ROOT

SMALL = ROOT / "problems/compose/small.toml"
VGG = ROOT / "problems/compose/hetero-vgg19-pipeline.toml"


@pytest.fixture(scope="module")
def small():
    problem = optmap.load(SMALL)
    return problem, optmap.solve(problem, engine="pipeline")


def test_native_engine_equals_exhaustive_on_the_small_problem(small):
    problem, native = small
    brute = optmap.solve(problem, engine="exhaustive")  # every joint point: stages, cuts, devices, m, plans
    assert brute.extra["complete"]
    assert native.values["time"] == brute.values["time"]
    assert native.extra["predicted_time"] == pytest.approx(native.values["time"], rel=1e-12)


def test_one_stage_is_exactly_the_inner_formulation():
    alone = optmap.solve(optmap.load(ROOT / "problems/accpar/hetero-vgg19.toml"), engine="accpar")
    one = optmap.solve(optmap.load(VGG, overrides=["cost.max_stages=1"]), engine="pipeline")
    assert one.values["time"] == alone.values["time"]  # bit for bit
    assert one.report.metrics["memory_bytes"] == alone.report.metrics["memory_bytes"]


def test_pipeline_time_by_hand_from_independently_built_stage_models(small):
    problem, _ = small
    model, wl, system = problem.cost_model, problem.workload, problem.system
    mapping = problem.space.mapping({"stages": 2, "cut1": 2, "devices1": 2, "microbatches": 2,
                                     **{v.name: v.choices[0] for v in model.space.variables if v.tag("layer")},
                                     "stage1.share[L0:2xtpu-v2]": 1, "stage2.share[L0:2xtpu-v2]": 1})
    report = model.evaluate(mapping)
    cut = wl.order.index("fc1")  # cut1 = 2: the second cut position, before fc1
    assert model.structure.bounds[2] == cut
    host, b = load_host(), wl.batch // 2
    times = []
    for layers, devices in ((range(0, cut), [0, 1]), (range(cut, len(wl.order)), [2, 3])):
        inner = host.build("cost_model", "accpar", slice_workload(wl, layers, batch=b), sub_system(system, devices),
                           options={"ratio_steps": 2})
        x = inner.space.encode({v.name: v.choices[0] for v in inner.space.variables})  # Type-I everywhere
        times.append(float(inner.evaluate_batch(x[None])["time"][0]))
    # stage 1 sends fc1's input forward; stage 2 sends its gradient back: 2 devices each, over the
    # path between devices 1 and 2 (bytes / (2 · per-flow bandwidth) + latency)
    bytes_ = wl.layer(wl.order[cut - 1]).out_elements * b * wl.bytes_per_element
    send = bytes_ / (2 * system.path_bandwidth(1, 2)) + system.path_latency(1, 2)
    stage = [times[0] + send, times[1] + send]
    # Narayanan et al. (SC'21) §2.2: m · slowest + the other stages once (fill and drain)
    assert report.metrics["time"] == pytest.approx(2 * max(stage) + min(stage), rel=1e-12)
    assert [row["seconds"] for row in report.tables["stages"]] == pytest.approx(stage, rel=1e-12)
    assert set(report.children) == {"stage1", "stage2"}
    assert report.children["stage2"].metrics["time"] == pytest.approx(times[1], rel=1e-12)


def test_one_f_one_b_keeps_fewer_micro_batches_in_flight_than_gpipe():
    values = {"stages": 2, "cut1": 2, "devices1": 2, "microbatches": 2,
              "stage1.share[L0:2xtpu-v2]": 1, "stage2.share[L0:2xtpu-v2]": 1}
    reports = {}
    for schedule in ("1f1b", "gpipe"):
        problem = optmap.load(SMALL, overrides=[f"cost.schedule={schedule}"])
        model = problem.cost_model
        full = {**{v.name: v.choices[0] for v in model.space.variables if v.tag("layer")}, **values}
        reports[schedule] = model.evaluate(problem.space.mapping(full))
    wl, b = problem.workload, problem.workload.batch // 2
    cut = wl.order.index("fc1")
    # one micro-batch's stored activations per device, by hand: the stage's layer outputs over 2 devices
    stored = [sum(wl.layer(n).out_elements for n in names) * b * wl.bytes_per_element / 2
              for names in (wl.order[:cut], wl.order[cut:])]
    # in flight (Narayanan §2.2.1): stage 1 holds min(p − 0, m) = 2 under both schedules; stage 2
    # holds min(p − 1, m) = 1 under 1F1B and m = 2 under GPipe
    for schedule, held in (("1f1b", (2, 1)), ("gpipe", (2, 2))):
        inner = [reports[schedule].children[f"stage{k + 1}"].metrics["memory_bytes"] for k in range(2)]
        expected = max(inner[k] + (held[k] - 1) * stored[k] for k in range(2))
        assert reports[schedule].metrics["memory_bytes"] == pytest.approx(expected, rel=1e-12)
    assert reports["gpipe"].metrics["time"] == reports["1f1b"].metrics["time"]  # same schedule length


def test_generic_engines_search_the_joint_space_and_never_beat_the_native_one(small):
    problem, native = small
    for engine in ("ga", "random"):
        result = optmap.solve(problem, engine=engine, seed=0)
        assert result.values["time"] >= native.values["time"]
        assert result.report.plan["inner"] == "accpar"


def test_joint_search_is_never_worse_than_one_stage_and_honours_pins(small):
    problem, native = small
    one = optmap.solve(optmap.load(SMALL, overrides=["cost.max_stages=1"]), engine="pipeline")
    assert native.values["time"] <= one.values["time"]
    pinned = optmap.solve(optmap.load(SMALL, fixes=["stages=1"]), engine="pipeline")
    assert pinned.report.plan["stages"] == 1 and pinned.values["time"] == one.values["time"]


def test_errors_name_the_inner_formulation(tmp_path):
    text = SMALL.read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('model = "accpar"', 'model = "acpar"'))
    with pytest.raises(OptmapError, match="unknown cost model 'acpar'; did you mean 'accpar'"):
        optmap.load(bad)
    bad.write_text(text.replace('model = "accpar"\n', ""))
    with pytest.raises(OptmapError, match=r"\[cost.stage\] needs model"):
        optmap.load(bad)
    bad.write_text(text.replace("ratio_steps = 2", "ratio_stepz = 2"))
    with pytest.raises(OptmapError, match=r"\[cost.stage\] model 'accpar'.*ratio_stepz"):
        optmap.load(bad)


def test_run_saves_the_stage_reports_and_show_reads_them(tmp_path):
    out = tmp_path / "r.json"
    run = subprocess.run([sys.executable, "-m", "optmap.cli", "run", str(SMALL), "--json", str(out), "--quiet"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert set(data["report"]["children"]) == {f"stage{k + 1}" for k in range(data["report"]["plan"]["stages"])}
    show = subprocess.run([sys.executable, "-m", "optmap.cli", "show", str(out)], capture_output=True, text=True,
                          env={"COLUMNS": "200", "PATH": ""})
    assert show.returncode == 0, show.stderr
    assert "stage1: layers" in show.stdout and "stages" in show.stdout
