"""Terminal tables fit their console without splitting numbers or cutting names, and print as
markdown, CSV or JSON with full-precision values (issue 27, part 3)."""

import csv
import io
import json
import math

from rich.console import Console

from optmap.cli import main
from optmap.tabular import PIPED_WIDTH, DataTable, compact, console, csv_text, markdown

QUICKSTART = "problems/quickstart.toml"


def test_compact_numbers_keep_four_significant_digits_with_si_prefixes():
    # by hand: 2.757e-05 s = 27.57 µs; 148,851,896.32 B = 148.9 MB; 999,960 rounds to 1.000M
    assert compact(2.757e-05) == "27.57µ" and compact(148851896.32) == "148.9M"
    assert compact(999960.0) == "1M" and compact(0.1465) == "0.1465" and compact(8025.0) == "8,025"
    assert compact(20000) == "20,000" and compact(math.nan) == "-" and compact(None) == "-"
    assert compact(-3.2e-9) == "-3.2n" and compact(0.0) == "0" and compact("conv1") == "conv1"
    assert compact(1e-30) == "1.000e-30"  # beyond the SI prefixes: scientific


def _render(table: DataTable, width: int) -> list[str]:
    out = Console(width=width, record=True, file=io.StringIO())
    out.print(table)
    return out.export_text().splitlines()


def test_a_wide_table_is_split_into_column_groups_that_repeat_the_key():
    values = [[f"plan{r}", *[1234.5678 * (c + 1) + r for c in range(13)]] for r in range(3)]
    table = DataTable("many columns", ["name", *[f"metric {c} (s)" for c in range(13)]], values)
    lines = _render(table, 80)
    assert max(map(len, lines)) <= 80
    text = "\n".join(lines)
    for row in values:  # every number printed whole (4 significant digits) somewhere
        for value in row[1:]:
            assert compact(value) in text
    assert text.count("plan2") >= 2 and "(1/" in text  # the key column in every group


def test_a_long_name_wraps_but_is_never_cut():
    name = "encoder.layers.11.self_attention.query_key_value"
    lines = _render(DataTable("t", ["layer", "time (s)"], [[name, 0.000123456]]), 30)
    assert max(map(len, lines)) <= 30
    first = [line.split("│")[1].strip() for line in lines if line.startswith("│")]  # the name column's pieces
    assert "".join(first) == name and len(first) > 1  # wrapped over several lines, every letter kept
    assert "123.5µ" in "\n".join(lines)  # the number on one line


def test_piped_output_follows_columns_else_is_100_wide(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert console().width == PIPED_WIDTH == 100  # pytest's captured output is not a terminal
    monkeypatch.setenv("COLUMNS", "80")
    assert console().width == 80


def test_markdown_and_csv_keep_every_row_and_full_precision():
    table = DataTable("t", ["layer", "time (s)"], [["a|b", 1 / 3], ["c", 2.0]])
    lines = markdown(table).splitlines()
    assert lines[2] == "| layer | time (s) |" and lines[3] == "|---|---:|"
    assert lines[4] == "| a\\|b | 0.3333 |"
    rows = list(csv.reader(io.StringIO(csv_text(table).split("\n", 1)[1])))
    assert rows == [["layer", "time (s)"], ["a|b", repr(1 / 3)], ["c", "2.0"]]


def test_run_format_json_holds_the_values_of_the_result(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["run", QUICKSTART, "--json", str(out), "--format", "json"]) == 0
    captured = capsys.readouterr()
    tables = json.loads(captured.out)  # standard output holds the tables alone
    saved = json.loads(out.read_text())
    summary = dict(map(tuple, tables[0]["rows"]))
    assert summary["time (s, min)"] == saved["values"]["time"]  # full precision, not 0.1465
    layers = next(t for t in tables if t["title"] == "per-layer mapping")
    assert [row[0] for row in layers["rows"]] == [row["name"] for row in saved["report"]["layers"]]
    assert "result written to" in captured.err


def test_show_format_markdown_and_csv_print_every_layer(capsys):
    assert main(["show", QUICKSTART, "--format", "csv"]) == 0
    text = capsys.readouterr().out
    block = text.split("\n\n")[0].split("\n", 1)[1]  # the workload's table, after its "# title" line
    rows = list(csv.DictReader(io.StringIO(block)))
    assert main(["show", QUICKSTART, "--format", "markdown"]) == 0
    printed = capsys.readouterr().out
    assert sum(row["op"] == "conv2d" for row in rows) == 13  # VGG-16's 13 convolutions (Simonyan & Zisserman, D)
    assert sum(line.startswith("| features.") for line in printed.splitlines()) == \
        sum(row["layer"].startswith("features.") for row in rows)  # every layer in both


def test_format_and_json_to_standard_output_are_refused(capsys):
    assert main(["run", QUICKSTART, "--json", "-", "--format", "csv"]) == 2
    assert "only one of them can use standard output" in capsys.readouterr().err
