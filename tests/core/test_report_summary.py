"""Long per-layer tables are summarised on the terminal (issue 14); the JSON result keeps every row."""

import json

from optmap.cli import main
from optmap.cost import CostReport, LayerCost
from optmap.report import LAYER_ROWS, layer_table, result_table
from optmap.search import SearchResult


def _result(layers: int, levels: int = 2) -> SearchResult:
    rows = tuple(LayerCost(f"layer{i}", compute=float(i), communication=0.5,
                           decisions={f"L{h}": "I" for h in range(levels)}) for i in range(layers))
    report = CostReport(metrics={"time": 1.0}, layers=rows)
    return SearchResult("test", 0, ("time",), None, {"time": 1.0}, report, [], [], 1, 0.0, "complete")


def test_a_long_table_shows_its_most_expensive_layers_in_order():
    # layer i costs i + 0.5 s: the 40 most expensive of 50 are layers 10..49, shown in network order
    table = layer_table(_result(50))
    assert LAYER_ROWS == 40 and table.row_count == 40
    assert [str(c) for c in table.columns[0]._cells] == [f"layer{i}" for i in range(10, 50)]
    assert "the 40 most expensive of 50 layers" in table.caption and "--layers all" in table.caption
    whole = layer_table(_result(50), rows=None)
    assert whole.row_count == 50 and whole.caption is None
    assert layer_table(_result(40)).row_count == 40 and layer_table(_result(40)).caption is None


def test_many_decision_columns_are_joined():
    table = layer_table(_result(3, levels=30))
    assert [c.header for c in table.columns] == ["layer", "L0 … L29", "compute s", "comm s"]
    assert str(table.columns[1]._cells[0]) == " ".join(["I"] * 30)
    assert len(layer_table(_result(3, levels=12)).columns) == 12 + 3  # up to 12: one column each


def test_run_summarises_and_layers_all_prints_every_row(tmp_path, capsys):
    lines = ["num_layers 60"]
    for i in range(60):
        lines += [f"fc{i} FC", f"in_ch {64 + 8 * (i % 3)}", f"out_ch {64 + 8 * ((i + 1) % 3)}"]
    (tmp_path / "chain.txt").write_text("\n".join(lines) + "\n")
    problem = tmp_path / "chain.toml"
    problem.write_text('[workload]\nfile = "chain.txt"\nbatch = 64\n[system]\ntopology = "fully-connected"\n'
                       '[[system.groups]]\naccelerator = "tpu-v3"\ncount = 4\n[cost]\nmodel = "accpar"\n'
                       '[search]\nengine = "dp"\n')
    out = tmp_path / "result.json"
    assert main(["run", str(problem), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "the 40 most expensive of 60 layers" in printed
    assert sum(f"│ fc{i} " in printed for i in range(60)) == 40
    assert len(json.loads(out.read_text())["report"]["layers"]) == 60  # the JSON keeps them all
    assert main(["run", str(problem), "--json", str(out), "--layers", "all"]) == 0
    printed = capsys.readouterr().out
    assert sum(f"│ fc{i} " in printed for i in range(60)) == 60 and "most expensive" not in printed


def test_bracketed_names_are_printed_not_read_as_markup():
    """Plan keys such as AccTFM's ``k_fwd[enc0.ffn]`` and layer names with brackets keep them
    (rich would otherwise read ``[enc0.ffn]`` as a style tag and drop it)."""
    from rich.console import Console

    rows = (LayerCost("blocks[0].attn", compute=1.0, communication=0.0, decisions={"L0": "[I]"}),)
    report = CostReport(metrics={"time": 1.0}, layers=rows, plan={"k_fwd": {"enc0.ffn": 2}})
    result = SearchResult("test", 0, ("time",), None, {"time": 1.0}, report, [], [], 1, 0.0, "complete")
    console = Console(width=200, record=True)
    console.print(result_table(result))
    console.print(layer_table(result))
    text = console.export_text()
    assert "k_fwd[enc0.ffn]" in text and "blocks[0].attn" in text and "[I]" in text
