"""Sweeps: grids, ranges and keys, sweep files, the atomic store, reruns, speedups and references."""

from __future__ import annotations

import json
import os
from pathlib import Path

import optmap
import pytest
from conftest import two_kinds_problem
from optmap.errors import OptmapError
from optmap.sweep import plan, run, sweep
from optmap.sweep.design import expand_key, expand_range, parse_vary, points, split_values
from optmap.sweep.execute import run_tasks
from optmap.sweep.store import Store
from optmap.sweep.summary import axes, pivot
from optmap.sweep.sweepfile import read_sweep_file

ROOT = Path(__file__).resolve().parents[2]
HETERO = two_kinds_problem("lenet on tpu-v2 + tpu-v3", "lenet-caffe", 64, evaluations=200)


@pytest.fixture
def problem(tmp_path):
    path = tmp_path / "hetero.toml"
    path.write_text(HETERO)
    return str(path)


def test_ranges_and_value_lists():
    # by hand: 5, 10, ..., 100 is 20 values; 2 to 256 doubling is 2^1..2^8
    assert parse_vary("system.groups.0.count=5:100:5")[1] == [str(v) for v in range(5, 101, 5)]
    assert parse_vary("k=2:256:*2")[1] == [str(2 ** i) for i in range(1, 9)]
    assert expand_range("0.1:0.5:0.1", "t") == ["0.1", "0.2", "0.3", "0.4", "0.5"]  # no 0.30000000000000004
    assert expand_range("1:4", "t") == ["1", "2", "3", "4"]
    assert expand_range('"a:b"', "t") is None  # a quoted string is a value, not a range
    assert split_values('[1, 2], [3, 4], "x,y", 7') == ["[1, 2]", "[3, 4]", '"x,y"', "7"]
    assert parse_vary("k=1,2:4,8")[1] == ["1", "2", "3", "4", "8"]
    for bad in ("k=5:1:1", "k=1:9:0", "k=1:9:*1", "k=a:9", "k=", "nokey"):
        with pytest.raises(OptmapError):
            parse_vary(bad)
    with pytest.raises(OptmapError, match="more than"):
        parse_vary("k=1:1e9:1")


def test_star_and_plus_keys_expand_against_the_problem():
    spec = {"system": {"bandwidth_gbps": 10, "groups": [{"count": 1}, {"count": 2}, {"count": 3}]}}
    assert expand_key("system.groups.*.count", spec, "t") == [f"system.groups.{i}.count" for i in range(3)]
    assert expand_key("system.bandwidth_gbps+system.groups.1.network_gbps", spec, "t") == [
        "system.bandwidth_gbps", "system.groups.1.network_gbps"]
    with pytest.raises(OptmapError, match="not a list"):
        expand_key("system.bandwidth_gbps.*", spec, "t")


def test_grid_is_the_product_and_a_ladder_accumulates(problem):
    from optmap.sweep.design import Variant

    grid = points([problem], [("workload.batch", ["32", "64"]), ("system.groups.*.count", ["2", "4", "8"])],
                  [], ["dp", "accpar"], [0, 1])
    assert len(grid) == 2 * 3 * 2 * 2 == len({p.id for p in grid})
    last = grid[-1]
    assert last.coords == {"problem": "lenet on tpu-v2 + tpu-v3", "variant": None, "workload.batch": 64,
                           "system.groups.*.count": 8, "engine": "accpar", "seed": 1}
    assert [g["count"] for g in last.spec["system"]["groups"]] == [8, 8]
    ladder = [Variant("a", ("cost.share_scaling=\"linear\"",)), Variant("b", ("workload.batch=16",))]
    stepped = points([problem], [], ladder, [None], [None], cumulative=True)
    assert stepped[1].spec["cost"]["share_scaling"] == "linear" and stepped[1].spec["workload"]["batch"] == 16
    alone = points([problem], [], ladder, [None], [None])
    assert "share_scaling" not in alone[1].spec["cost"]


def test_rows_equal_single_runs_and_a_rerun_runs_only_missing_points(problem, tmp_path):
    out = tmp_path / "scaling"
    first = sweep([problem], vary=["system.groups.*.count=2,4"], out=out)
    assert first.complete and len(first.rows) == 2
    for row, count in zip(first.rows, (2, 4)):
        # independently: the same problem through optmap.solve
        alone = optmap.solve(optmap.load(problem, [f"system.groups.0.count={count}", f"system.groups.1.count={count}"]))
        assert row["objectives"]["time"] == pytest.approx(alone.values["time"], rel=1e-12)
        assert row["metrics"] == pytest.approx(alone.report.metrics, rel=1e-12)
        assert row["engine"] == "accpar" and row["seed"] == 0 and row["stopped"] == "complete"
    ran = []
    study = plan([problem], ["system.groups.*.count=2,4,8"], out=out)
    assert [p.coords["system.groups.*.count"] for p in study.todo] == [8]
    run(study, on_row=ran.append)
    assert len(ran) == 1 and len(study.rows) == 3
    assert study.rows[:2] == first.rows  # the earlier rows, untouched (same seconds too)
    csv_lines = (tmp_path / "scaling.csv").read_text().splitlines()
    assert csv_lines[0].startswith("problem,system.groups.*.count,engine,seed,time,")
    assert len(csv_lines) == 4
    smaller = plan([problem], ["system.groups.*.count=2"], out=out)
    assert smaller.todo == [] and smaller.foreign == 2  # other rows are kept, not shown


def test_interrupted_points_are_not_recorded(problem, tmp_path, monkeypatch):
    from optmap.sweep import execute

    study = plan([problem], ["system.groups.*.count=2,4,8"], out=tmp_path / "cut")
    calls = []

    def fake(job):  # the second point's search is stopped by Ctrl-C
        calls.append(job)
        row = {**job["row"], "engine": "accpar", "seed": 0, "objectives": {"time": 1.0}, "metrics": {},
               "stopped": "interrupted" if len(calls) == 2 else "complete", "error": None}
        return row

    monkeypatch.setattr(execute, "run_point", fake)
    recorded = []
    assert run_tasks([execute.task(p) for p in study.points], recorded.append) is False
    assert len(calls) == 2 and len(recorded) == 1  # stopped at the interrupted point; the third never started


def test_the_files_list_rows_in_grid_order_whatever_order_they_finish_in(problem, tmp_path, monkeypatch):
    from optmap import sweep as sweep_module
    from optmap.sweep import execute

    def fake(job):
        return {**job["row"], "engine": "accpar", "seed": 0, "objectives": {"time": 1.0}, "metrics": {},
                "stopped": "complete", "error": None}

    def backwards(jobs, on_row, workers=None, scheduler=None, on_stop=None):  # as parallel workers may finish
        for job in reversed(jobs):
            on_row(fake(job))
        return True

    monkeypatch.setattr(sweep_module, "run_tasks", backwards)
    Store(tmp_path / "grid").add({**fake(execute.task(plan([problem], ["workload.batch=32"], out=tmp_path / "x").points[0])),
                                  "id": "an-older-sweep"})
    study = run(plan([problem], ["system.groups.*.count=2,4,8"], out=tmp_path / "grid"))
    rows = json.loads((tmp_path / "grid.json").read_text())["rows"]
    assert [row["set"]["system.groups.*.count"] for row in rows[:3]] == [2, 4, 8]
    assert rows[3]["id"] == "an-older-sweep"  # a row of another sweep is kept, after this one's
    assert [row["id"] for row in rows[:3]] == [row["id"] for row in study.rows]


def test_store_writes_atomically_and_refuses_foreign_files(tmp_path, monkeypatch):
    store = Store(tmp_path / "out")
    store.add({"id": "a", "problem": "p", "engine": "e", "seed": 0, "objectives": {"time": 1.0}})
    before = (tmp_path / "out.json").read_text()

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OptmapError, match="No space left on device.*intact"):
        store.add({"id": "b", "problem": "p", "engine": "e", "seed": 1, "objectives": {"time": float("nan")}})
    monkeypatch.undo()
    assert (tmp_path / "out.json").read_text() == before  # a failed write leaves the previous file whole
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    store.write()
    again = Store(tmp_path / "out.csv")  # NaN is stored as null and read back
    assert again.rows["b"]["objectives"] == {"time": None} and again.done("a")
    (tmp_path / "x.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(OptmapError, match="not an optmap sweep"):
        Store(tmp_path / "x")
    (tmp_path / "y.json").write_text("{")
    with pytest.raises(OptmapError, match="cannot read"):
        Store(tmp_path / "y.csv")


def test_speedup_over_a_baseline_engine(problem, tmp_path):
    study = sweep([problem], vary=["system.groups.*.count=2,4"], engines=["dp", "accpar"], out=tmp_path / "s",
                  baseline={"engine": "dp"})
    assert study.derived == "speedup_over_dp"
    loaded = {c: optmap.load(problem, [f"system.groups.*.count={c}".replace("*", str(i)) for i in (0, 1)])
              for c in (2, 4)}
    for row in study.rows:
        count = row["set"]["system.groups.*.count"]
        dp = optmap.solve(loaded[count], engine="dp").values["time"]
        mine = optmap.solve(loaded[count], engine=row["engine"]).values["time"]
        assert row["derived"]["speedup_over_dp"] == pytest.approx(dp / mine, rel=1e-12)
    assert {row["derived"]["speedup_over_dp"] for row in study.rows if row["engine"] == "dp"} == {1.0}
    assert axes(study.rows) == ("system.groups.*.count", ["engine"], True)


SWEEP_FILE = """\
title = "ladder"
cumulative = true
search = "accpar"
baseline = { variant = "base" }
[[variants]]
name = "base"
[[variants]]
name = "linear"
set = { cost = { share_scaling = "linear" } }
reference = { speedup_over_base = 1.5 }
[[variants]]
name = "linear, batch 16"
set = ["workload.batch=16"]
[[reference]]
variant = "base"
time = 0.5
source = "made up"
[plot]
y = "speedup_over_base"
"""


def test_sweep_file_variants_references_and_pivot(problem, tmp_path):
    path = tmp_path / "ladder.toml"
    path.write_text(SWEEP_FILE)
    config = read_sweep_file(str(path))
    assert [v.overrides for v in config.variants] == [(), ('cost.share_scaling="linear"',), ("workload.batch=16",)]
    assert len(config.references) == 2
    study = sweep([problem], variants=str(path), out=tmp_path / "ladder")
    base, linear, small = study.rows
    assert small["overrides"] == ['cost.share_scaling="linear"', "workload.batch=16"]  # cumulative
    expected = optmap.solve(optmap.load(problem, ['cost.share_scaling="linear"', "workload.batch=16"]))
    assert small["objectives"]["time"] == pytest.approx(expected.values["time"], rel=1e-12)
    speedup = base["objectives"]["time"] / linear["objectives"]["time"]
    assert linear["derived"]["speedup_over_base"] == pytest.approx(speedup)
    x, series, numeric, ys = study.figure()
    assert (x, series, numeric, ys) == ("variant", [], False, ["speedup_over_base"])
    table = pivot(study.rows, x, series, ys[0], config.references)
    assert table[1]["variant"] == "linear" and table[1]["accpar"].endswith(" / 1.5")
    png = study.plot(tmp_path / "ladder.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("text, message", [
    ("colour = 1", "unknown key 'colour'"),
    ("[[variants]]\nset = {}", "needs name"),
    ("[[variants]]\nname = 'a'\n[[variants]]\nname = 'a'", "two variants"),
    ("baseline = { engine = 'dp', seed = 0 }", "baseline must name one coordinate"),
    ("[vary]\nk = []", "non-empty list"),
    ("[[reference]]\nvariant = 'a'", "gives no value"),
    ("[plot]\nxx = 'a'", "unknown key 'xx'"),
])
def test_sweep_file_errors_are_one_line(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(OptmapError, match=message):
        read_sweep_file(str(path))


def test_a_point_that_fails_is_recorded_with_its_error_and_tried_again(problem, tmp_path):
    # a memory cap of 1 byte: no mapping is feasible, the engine fails at that point only
    study = sweep([problem], vary=["constraints.max_memory_bytes=1e15,1"], out=tmp_path / "f")
    good, bad = study.rows
    assert good["error"] is None and bad["error"] and bad["stopped"] == "error"
    assert "no feasible mapping" in bad["error"] and bad["objectives"] == {}
    again = plan([problem], ["constraints.max_memory_bytes=1e15,1"], out=tmp_path / "f")
    assert [p.coords["constraints.max_memory_bytes"] for p in again.todo] == [1]


def test_an_engine_chosen_by_a_variant_is_not_an_axis(problem, tmp_path):
    path = tmp_path / "engines.toml"
    path.write_text('baseline = { variant = "DP" }\n[[variants]]\nname = "DP"\nset = { "search.engine" = "dp" }\n'
                    '[[variants]]\nname = "AccPar"\nset = { "search.engine" = "accpar" }\n')
    study = sweep([problem], vary=["workload.batch=32,64"], variants=str(path), out=tmp_path / "e")
    assert [row["engine"] for row in study.rows] == ["dp", "dp", "accpar", "accpar"]
    for row in study.rows:  # the DP row of the same batch is the baseline, though its engine differs
        loaded = optmap.load(problem, [f"workload.batch={row['set']['workload.batch']}"])
        dp, mine = (optmap.solve(loaded, engine=e).values["time"] for e in ("dp", row["engine"]))
        assert row["derived"]["speedup_over_DP"] == pytest.approx(dp / mine, rel=1e-12)
    assert axes(study.rows) == ("workload.batch", ["variant"], True)


@pytest.mark.parametrize("name, problems, count", [
    ("accpar/fig8.sweep.toml", ["accpar/hetero-vgg19.toml"], 8 * 5),
    ("acctfm/ablation.sweep.toml", [f"acctfm/tf{n}.toml" for n in (8, 16, 32, 64)], 4 * 5),
    ("acctfm/bandwidth.sweep.toml", [f"acctfm/tf{n}.toml" for n in (8, 16, 32, 64)], 4 * 2 * 8),
    ("dsm/sensitivity-latency.sweep.toml", [f"dsm/{n}-train.toml" for n in ("vgg16", "resnet50", "gnmt")], 3 * 2 * 4),
    ("mars/sensitivity-halo.sweep.toml",
     [f"mars/{n}.toml" for n in ("alexnet", "vgg16", "resnet34", "resnet101", "wrn50-2")], 5 * 2 * 2),
    ("mars/sensitivity-sets.sweep.toml",
     [f"mars/{n}.toml" for n in ("alexnet", "vgg16", "resnet34", "resnet101", "wrn50-2")], 5 * 2 * 5),
    ("fpdeep/sensitivity-dsp.sweep.toml", [f"fpdeep/{n}-15.toml" for n in ("alexnet", "vgg16", "vgg19")], 3 * 5),
])
def test_shipped_sweep_files_plan(tmp_path, name, problems, count):
    study = plan([str(ROOT / "problems" / p) for p in problems], variants=str(ROOT / "problems" / name),
                 out=tmp_path / "x")
    assert len(study.points) == count


def test_ablation_sweep_file_runs_the_variants_of_the_reproduction(tmp_path):
    # the four variants as docs/reproductions/acctfm.md defines them, run directly on TF8
    tf8 = str(ROOT / "problems" / "acctfm" / "tf8.toml")
    study = sweep([tf8], variants=str(ROOT / "problems" / "acctfm" / "ablation.sweep.toml"), out=tmp_path / "a")
    problem = optmap.load(tf8)
    base = optmap.solve(problem, "megatron").values["time"]
    direct = {
        "Megatron-LM": base,
        "pipeline only": optmap.solve(problem, "acctfm", options={"compression": "off"}).values["time"],
        "compression only": optmap.solve(problem, "megatron", options={"compression": "on"}).values["time"],
        "AccTFM": optmap.solve(problem, "acctfm").values["time"],
        "AccTFM, Alg. 1 as printed": optmap.solve(problem, "acctfm", options={"exact": False}).values["time"],
    }
    for row in study.rows:
        assert row["objectives"]["time"] == pytest.approx(direct[row["variant"]], rel=1e-12)
        assert row["metrics"]["speedup"] == pytest.approx(base / direct[row["variant"]], rel=1e-12)


def test_a_search_stopped_before_its_first_mapping_is_interrupted_not_failed(problem, tmp_path, monkeypatch):
    # Ctrl-C at a search's first check: no mapping yet, so solve raises SearchFailed; the point
    # must stay to do (interrupted), not be recorded as failed
    import optmap.run
    from optmap.search import SearchResult
    from optmap.sweep import execute

    def stopped(problem, engine=None, seed=None, **options):
        empty = SearchResult(engine, seed, ("time",), None, {}, None, [], [], 0, 0.0, "interrupted")
        raise optmap.run.SearchFailed("found no feasible mapping in 0 evaluations", empty)

    monkeypatch.setattr(optmap.run, "solve", stopped)
    study = plan([problem], ["workload.batch=32"], out=tmp_path / "i")
    row = execute.run_point(execute.task(study.points[0]))
    assert row["stopped"] == "interrupted" and row["error"] is None
    recorded = []
    assert run_tasks([execute.task(study.points[0])], recorded.append) is False and recorded == []
