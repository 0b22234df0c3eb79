"""Reports out (issue 27, part 5): the HTML page, the pipeline timeline, the provenance of files."""

import base64
import json
import re
from datetime import datetime, timezone

import pytest

from optmap import __version__
from optmap.cli import main
from optmap.schedule import pipeline_time
from optmap.timeline import Stage, _order, operations

PNG = b"\x89PNG\r\n\x1a\n"
QUICKSTART = "problems/quickstart.toml"


@pytest.fixture(scope="module")
def quickstart_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("q") / "result.json"
    assert main(["run", QUICKSTART, "--json", str(out), "--quiet"]) == 0
    return out


def test_a_saved_result_records_version_command_date_and_plugins(quickstart_result):
    made = json.loads(quickstart_result.read_text())["provenance"]
    assert made["optmap_version"] == __version__
    assert made["command"] == f"optmap run {QUICKSTART} --json {quickstart_result} --quiet"
    assert abs((datetime.now(timezone.utc) - datetime.fromisoformat(made["date"])).total_seconds()) < 600
    assert made["plugins"]["accpar"] == f"optmap {__version__}"  # a built-in plugin: optmap's own package


def test_comparisons_and_sweeps_record_their_provenance(tmp_path):
    assert main(["compare", QUICKSTART, "--search", "dp,owt", "--json", str(tmp_path / "c.json")]) == 0
    assert json.loads((tmp_path / "c.json").read_text())["provenance"]["command"].startswith("optmap compare ")
    assert main(["sweep", QUICKSTART, "--search", "dp", "--vary", "workload.batch=64,128",
                 "--out", str(tmp_path / "s")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["provenance"]["command"].startswith("optmap sweep ")


def test_report_writes_one_html_page_with_its_figures_and_tables(quickstart_result, tmp_path):
    page = tmp_path / "report.html"
    assert main(["report", str(quickstart_result), "-o", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(images) >= 2 and all(base64.b64decode(image).startswith(PNG) for image in images)
    saved = json.loads(quickstart_result.read_text())
    assert "<caption>per-layer mapping</caption>" in text and "<caption>plan</caption>" in text
    assert all(f">{key}<" in text for key in saved["report"]["plan"]["shares"])  # AccPar's share per level
    assert all(f">{row['name']}<" in text for row in saved["report"]["layers"])  # every layer's row
    assert 'src="http' not in text and "<link" not in text  # self-contained: nothing fetched


def test_report_refuses_what_is_not_a_result(tmp_path, capsys):
    (tmp_path / "c.json").write_text(json.dumps({"rows": [], "runs": [], "objective": "time"}))
    assert main(["report", str(tmp_path / "c.json")]) == 2
    assert "a saved comparison" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "c.json"), "-o", str(tmp_path / "page.pdf")]) == 2


@pytest.mark.parametrize("problem", ["problems/fpdeep/alexnet-15.toml", "problems/llm/megatron-22b.toml"])
def test_show_plot_draws_the_pipeline_timeline(problem, tmp_path):
    result, figure = tmp_path / "r.json", tmp_path / "timeline.png"
    assert main(["run", problem, "--json", str(result), "--quiet"]) == 0
    stages = json.loads(result.read_text())["report"]["tables"]["stages"]
    assert stages and {"stage", "seconds"} <= set(stages[0])
    assert main(["show", str(result), "--plot", str(figure)]) == 0
    assert figure.stat().st_size > 10_000 and figure.read_bytes().startswith(PNG)


def test_the_llm_stages_add_up_to_its_iteration_time(tmp_path):
    """timing.evaluate charges m times each micro-batch's stage work, then the bubble, the
    data-parallel reduction and the optimizer once: m × stage seconds + those = time."""
    result = tmp_path / "r.json"
    assert main(["run", "problems/llm/megatron-22b.toml", "--json", str(result), "--quiet"]) == 0
    report = json.loads(result.read_text())["report"]
    m, parts = report["plan"]["micro_batches"], {row["part"]: row["seconds"] for row in report["tables"]["time_breakdown"]}
    once = sum(parts.get(k, 0.0) for k in ("pipeline bubble", "data-parallel reduction", "optimizer step"))
    stage = report["tables"]["stages"][0]
    assert len(report["tables"]["stages"]) == report["plan"]["pipeline_parallel"]
    assert m * stage["seconds"] + once == pytest.approx(report["metrics"]["time"], rel=1e-9)
    assert stage["forward_s"] + stage["backward_s"] == pytest.approx(stage["seconds"])


@pytest.mark.parametrize("p, m, v, schedule", [(4, 8, 1, "1f1b"), (4, 8, 1, "gpipe"), (4, 8, 2, "1f1b"),
                                               (3, 9, 3, "1f1b"), (1, 3, 1, "1f1b"), (3, 1, 1, "1f1b")])
def test_equal_stages_end_when_the_schedule_formula_says(p, m, v, schedule):
    # Narayanan et al. 2021 §2.2.1 / §2.2.2: (m + p - 1) t, and m t + (p - 1) t / v interleaved
    stages = [Stage(str(s), 1.0, 2.0) for s in range(p)]
    ops = operations(stages, m, schedule, v)
    assert len(ops) == 2 * p * m * v
    assert max(op.end for op in ops) == pytest.approx(float(pipeline_time([3.0] * p, m, v)))
    assert max(op.end for op in ops) == pytest.approx(m * 3.0 + (p - 1) * 3.0 / v)


def test_unequal_forward_only_stages_by_hand():
    # stage 1 takes 1 s, stage 2 takes 2 s per micro-batch: stage 2 runs 1-3, 3-5, 5-7
    ops = operations([Stage("a", 1.0, 0.0), Stage("b", 2.0, 0.0)], 3)
    assert [(op.start, op.end) for op in ops if op.stage == 1] == [(1.0, 3.0), (3.0, 5.0), (5.0, 7.0)]


def test_1f1b_warms_up_with_p_minus_s_minus_1_forwards():
    # Narayanan §2.2.1: stage 0 of 4 runs 3 forwards, then alternates; the last stage alternates at once
    assert [k for k, _, _ in _order(4, 0, 8, "1f1b", 1)][:6] == ["F", "F", "F", "F", "B", "F"]
    assert [k for k, _, _ in _order(4, 3, 8, "1f1b", 1)][:4] == ["F", "B", "F", "B"]


def test_a_saved_comparison_is_redrawn(tmp_path):
    saved, figure = tmp_path / "c.json", tmp_path / "c.png"
    assert main(["compare", QUICKSTART, "--search", "dp,accpar", "--json", str(saved)]) == 0
    assert main(["show", str(saved), "--plot", str(figure)]) == 0
    assert figure.read_bytes().startswith(PNG) and figure.stat().st_size > 10_000


def test_a_stages_table_without_seconds_is_not_a_schedule():
    from optmap.cost import CostReport
    from optmap.timeline import stages_of

    # the example plugin's table names its column stage_s: no timeline rather than zero-length boxes
    assert stages_of(CostReport({"time": 1.0}, tables={"stages": [{"stage": 0, "stage_s": 1.0}]})) == []
    two = stages_of(CostReport({"time": 1.0}, tables={"stages": [{"stage": "a", "seconds": 3.0, "forward_s": 1.0}]}))
    assert two[0].forward == 1.0 and two[0].backward == 2.0
