"""optmap compare stops as a whole on Ctrl-C, keeps what finished, marks what was interrupted;
its figure is the gap to the best known value on a log scale, and a saved comparison is redrawn
(issue 27, part 6)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("pymoo")

from conftest import ROOT
from test_compare import bowl, row

from optmap.comparison import GAP_FLOOR, compare, gap_percent

QUICK = ROOT / "problems" / "quickstart.toml"


def test_a_stop_ends_the_comparison_and_the_table_says_what_was_cut():
    current = {}

    def stop_during_ga_seed_1(evaluator):  # what Ctrl-C does: request a stop from the evaluator
        if current["run"] == ("ga", 1) and evaluator.evaluations >= 40:
            evaluator.stop_requested = True

    table = compare(bowl(evaluations=300), ["random", "ga", "exhaustive"], seeds=[0, 1, 2],
                    progress=stop_during_ga_seed_1, on_start=lambda name, seed: current.update(run=(name, seed)))
    assert table.interrupted
    # random's three runs, ga seed 0, and ga seed 1 cut short; ga seed 2 and exhaustive never started
    assert [(r.engine, r.seed, r.stopped) for r in table.runs] == [
        ("random", 0, "budget"), ("random", 1, "budget"), ("random", 2, "budget"),
        ("ga", 0, "budget"), ("ga", 1, "interrupted")]
    assert table.runs[-1].evaluations < 300
    assert row(table, "random")["interrupted"] == 0 and row(table, "random")["runs"] == 3
    ga = row(table, "ga")
    assert ga["runs"] == 1 and ga["interrupted"] == 2 and ga["failed"] == 0
    assert ga["best_mean"] == table.runs[3].values["cost"]  # the cut run is not in the statistics
    exhaustive = row(table, "exhaustive")
    assert exhaustive["runs"] == 0 and exhaustive["interrupted"] == 3 and math.isnan(exhaustive["best_mean"])
    assert table.to_json()["interrupted"] is True


def test_an_uninterrupted_table_has_no_interrupted_column():
    table = compare(bowl(evaluations=100), ["random"], seeds=[0])
    assert not table.interrupted and "interrupted" not in table.rows[0]


def test_the_gap_is_in_percent_of_the_best_known_value_and_floored_for_the_log_axis():
    # by hand: (2.02 - 2) / 2 = 1 %, (4 - 2) / 2 = 100 %; 2 itself sits on the floor
    assert gap_percent([2.0, 2.02, 4.0], 2.0).tolist() == pytest.approx([GAP_FLOOR, 1.0, 100.0])
    # a maximised objective (throughput): 90 against a best of 100 is 10 % short
    assert gap_percent([90.0, 100.0], 100.0, sign=-1.0).tolist() == pytest.approx([10.0, GAP_FLOOR])


def test_ctrl_c_stops_the_command_keeps_the_finished_runs_and_the_file_redraws(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "cmp.json"
    command = [sys.executable, "-m", "optmap.cli", "compare", str(QUICK), "--search", "accpar,random,ga",
               "--seeds", "0,1", "--set", "search.budget.evaluations=100000000", "--json", str(out)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "COLUMNS": "200"})
    started = time.monotonic()
    for line in process.stderr:  # progress lines: one after a run's first second
        if line.startswith("random (seed 0)"):
            break
        assert time.monotonic() - started < 300, "random never reported progress"
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted after 2 of 6 runs" in stderr  # accpar's two runs finished
    data = json.loads(out.read_text())
    assert data["interrupted"] is True
    assert [(r["engine"], r["seed"], r["stopped"]) for r in data["runs"]] == [
        ("accpar", 0, "complete"), ("accpar", 1, "complete"), ("random", 0, "interrupted")]
    rows = {r["engine"]: r for r in data["rows"]}
    assert rows["accpar"]["interrupted"] == 0 and rows["accpar"]["runs"] == 2
    assert rows["random"]["interrupted"] == 2 and rows["random"]["runs"] == 0
    assert rows["ga"]["interrupted"] == 2
    figure = tmp_path / "again.png"
    shown = subprocess.run([sys.executable, "-m", "optmap.cli", "show", str(out), "--plot", str(figure)],
                           capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 10_000
