"""Issue 26: generated damage to what optmap reads back, and generated sweep grammars.

Hypothesis takes files optmap wrote itself (a result, a comparison, a sweep store, a measurement
file) and damages them: keys removed, values replaced by edge values of every JSON type (negative,
zero, huge, NaN, infinite, empty, unicode, nested lists and objects), unknown keys added. It also
writes sweep grids (``--vary`` texts, engine lists, ``--out`` values, sweep files). For every case
the rule of ``tests/core/test_fuzz_inputs.py`` holds: a result (exit 0), or exit 2 with exactly one
``error:`` line, within 60 s, nothing stray written, and nothing written before destroyed (a
refused store or measurement file is byte for byte as it was). ``OPTMAP_FUZZ_EXAMPLES`` scales the
example counts (kept small: the file runs in seconds).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from conftest import ROOT  # noqa: E402
from optmap.cli import main  # noqa: E402
from optmap.errors import OptmapError  # noqa: E402
from test_saved_files import measurement_file  # noqa: E402

LENET = ROOT / "problems" / "accpar" / "homog-lenet.toml"
SCALE = float(os.environ.get("OPTMAP_FUZZ_EXAMPLES", "120")) / 120


def examples(count: int) -> settings:
    return settings(max_examples=max(1, int(count * SCALE)), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([0, 1, -1, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.text(max_size=8), st.sampled_from(["", "time", "dp", "optmap-sweep/1", "nan", "é\x00", "1e400"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                      max_leaves=5)


def _paths(node, prefix=()):
    """Every (container path, key) in a JSON tree."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield prefix, key
        yield from _paths(child, (*prefix, key))


@st.composite
def damaged(draw, original):
    """``original`` (JSON) with one to three keys removed, replaced or added."""
    data = json.loads(json.dumps(original))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(data))
        if not paths:
            break
        prefix, key = paths[draw(st.integers(0, len(paths) - 1))]
        node = data
        for step in prefix:
            node = node[step]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "delete":
            del node[key]
        elif action == "add" and isinstance(node, dict):
            node[draw(st.text(min_size=1, max_size=6))] = draw(values)
        else:
            node[key] = draw(values)
    return data


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang


def within_a_minute(argv: list[str], capsys) -> tuple[int, str]:
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        code = main(argv)
    except Hang:
        pytest.fail(f"optmap {' '.join(argv)} ran for over 60 s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code != 0:
        lines = [line for line in err.splitlines() if not line.startswith(("warning:", "note:"))]
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (argv, code, err)
    return code, err


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("originals")
    assert main(["run", str(LENET), "--search", "dp", "--json", str(folder / "r.json"), "--quiet"]) == 0
    assert main(["compare", str(LENET), "--search", "dp,owt", "--json", str(folder / "c.json")]) == 0
    assert main(["sweep", str(LENET), "--vary", "workload.batch=8,16", "--search", "dp",
                 "--out", str(folder / "s")]) == 0
    return {kind: json.loads((folder / f"{kind}.json").read_text()) for kind in ("r", "c", "s")}


@pytest.mark.parametrize("kind", ["r", "c", "s"])
def test_show_of_damaged_saved_files(originals, kind, tmp_path_factory, capsys, monkeypatch):
    @examples(40)
    @given(data=damaged(originals[kind]), plot=st.booleans())
    def check(data, plot):
        folder = tmp_path_factory.mktemp("show")
        monkeypatch.chdir(folder)
        file = folder / "saved.json"
        file.write_text(json.dumps(data))
        before = file.read_bytes()
        plot = plot and kind != "c"  # a comparison is redrawn by compare --plot, not show
        code, _ = within_a_minute(["show", str(file), *(["--plot", "again.png"] if plot else [])], capsys)
        assert file.read_bytes() == before
        assert {p.name for p in folder.iterdir()} - {"saved.json"} <= ({"again.png"} if plot and code == 0 else set())

    check()


def test_sweep_rerun_on_a_damaged_store(originals, tmp_path_factory, capsys, monkeypatch):
    @examples(15)
    @given(data=damaged(originals["s"]))
    def check(data):
        folder = tmp_path_factory.mktemp("rerun")
        monkeypatch.chdir(folder)
        store = folder / "s.json"
        store.write_text(json.dumps(data))
        before = store.read_bytes()
        code, _ = within_a_minute(["sweep", str(LENET), "--vary", "workload.batch=8,16,32", "--search", "dp",
                                   "--out", str(folder / "s")], capsys)
        if code == 2:
            assert store.read_bytes() == before and not (folder / "s.csv").exists()
        else:  # read: every earlier row is kept, the new point added
            rows = json.loads(store.read_text())["rows"]
            assert {row["id"] for row in data["rows"]} <= {row["id"] for row in rows}
        assert {p.name for p in folder.iterdir()} <= {"s.json", "s.csv"}

    check()


def test_refit_on_damaged_measurements(tmp_path_factory, capsys, monkeypatch):
    pytest.importorskip("scipy")

    @examples(25)
    @given(data=damaged(measurement_file()))
    def check(data):
        folder = tmp_path_factory.mktemp("refit")
        monkeypatch.chdir(folder)
        file = folder / "m.json"
        file.write_text(json.dumps(data))
        before = file.read_bytes()
        code, _ = within_a_minute(["calibrate", "--refit", str(file), "-o", str(folder / "p.toml")], capsys)
        assert file.read_bytes() == before
        assert {p.name for p in folder.iterdir()} == ({"m.json", "p.toml"} if code == 0 else {"m.json"})

    check()


# --- sweep grammars -------------------------------------------------------------------------------

KEYS = ["workload.batch", "system.groups.0.count", "system.groups.*.count", "system.latency_us", "cost.ratio_steps",
        "workload.batch+system.groups.0.count", "nope.key", "", "workload.dtype"]
PIECES = ["1", "2", "8", "0", "-1", "", " ", "x", "'a,b'", "[1,2]", "1:4", "1:100000", "2:256:*2", "5:1", "1:4:0",
          "1:1e9", "nan", "1:3:*1", "{a=1}", "true"]


@st.composite
def grids(draw):
    vary = []
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(KEYS))
        vary.append(f"{key}=" + ",".join(draw(st.lists(st.sampled_from(PIECES), max_size=4))))
    engines = draw(st.lists(st.sampled_from(["dp", "owt", "", " ", "nope", "accpar"]), max_size=3))
    seeds = draw(st.lists(st.integers(-1, 3), max_size=3))
    out = draw(st.sampled_from(["grid", "", ".", "..", "sub/grid", "grid.json", "grid/", "afile/grid"]))
    sweep_file = draw(st.one_of(st.none(), st.dictionaries(
        st.sampled_from(["title", "cumulative", "search", "seeds", "vary", "baseline", "plot", "variants"]),
        values, max_size=3)))
    return vary, engines, seeds, out, sweep_file


@examples(60)
@given(grid=grids())
def test_generated_sweep_grids_are_planned_or_refused_in_one_line(grid, tmp_path_factory, monkeypatch):
    """A grid is either planned (within the limit, every point a valid problem) or refused by an
    OptmapError, within 60 s, writing nothing: ``plan`` runs no point."""
    from optmap.sweep import plan
    from optmap.sweep.design import GRID_LIMIT

    tomli_w = pytest.importorskip("tomli_w")
    vary, engines, seeds, out, sweep_file = grid
    folder = tmp_path_factory.mktemp("grid")
    monkeypatch.chdir(folder)
    (folder / "afile").write_text("")
    variants = None
    if sweep_file is not None:
        try:
            (folder / "study.toml").write_text(tomli_w.dumps(sweep_file))
        except (TypeError, ValueError):  # not representable in TOML (None, NaN keys): nothing to test
            return
        variants = str(folder / "study.toml")
    written = {p.name for p in folder.iterdir()}
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        study = plan([str(LENET)], vary, variants, engines, [s for s in seeds if s >= 0], out=out)
    except OptmapError as exc:
        assert "\n" not in str(exc).strip()
    except Hang:
        pytest.fail(f"planning {grid} took over 60 s")
    else:
        assert 1 <= len(study.points) <= GRID_LIMIT
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert {p.name for p in folder.iterdir()} == written  # planning writes nothing
