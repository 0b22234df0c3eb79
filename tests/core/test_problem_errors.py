"""Malformed problem files give one clear line and exit code 2, never a traceback (issue 2).

Every ``tests/data/bad_problems/*.toml`` holds one defect. ``EXPECTED`` lists, per file, the
substrings its message must contain (the section/key at fault and the hint), so messages cannot
silently regress; a file without a row, or a row without a file, fails the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import optmap
from optmap.errors import OptmapError

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "data" / "bad_problems"
_SCRIPT = Path(sys.executable).with_name("optmap")  # the console script users run
OPTMAP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "optmap.cli"]

EXPECTED: dict[str, list[str]] = {
    # TOML syntax: line, column and the offending line
    "toml_unterminated_string": ["invalid TOML at line 5, column 15", "string is not closed", 'model = "vgg11'],
    "toml_duplicate_key": ["invalid TOML at line 7, column 11", "batch = 64"],
    "toml_unclosed_table_header": ["invalid TOML at line 17, column 6", "Expected ']'", "`[cost`"],
    "toml_missing_value": ["invalid TOML at line 25, column 7", "Invalid value", "`seed =`"],
    "toml_not_utf8": ["not UTF-8 text at line 2", "byte 0xe9"],
    # top level and sections
    "unknown_top_level_key": ["unknown top-level key 'serach'", "did you mean 'search'?"],
    "missing_workload": ["missing section [workload]", "problems/quickstart.toml"],
    "missing_system": ["missing section [system]"],
    "missing_cost": ["missing section [cost]"],
    "section_not_a_table": ["'workload' must be a table [workload]", "got str 'vgg11'"],
    "name_not_a_string": ["name must be a non-empty string", "got 11"],
    # unknown plugin names
    "unknown_workload_model": ["[workload] model", "unknown workload 'vgg111'", "did you mean 'vgg11'?"],
    "unknown_topology": ["[system] topology", "unknown topology 'torus3d'", "did you mean 'torus2d'?"],
    "unknown_accelerator": ["[[system.groups]] #1", "unknown accelerator 'tpu-v9'"],
    "unknown_cost_model": ["[cost] model", "unknown cost model 'acpar'", "did you mean 'accpar'?"],
    "unknown_search_engine": ["[search] engine", "unknown search engine 'acpar'", "did you mean 'accpar'?"],
    "missing_topology": ["[system] needs topology", "ring", "torus2d"],
    "missing_cost_model": ["[cost] needs model", "accpar"],
    # unknown keys inside sections: a suggestion and the valid keys
    "unknown_workload_key": ["[workload] model 'vgg11'", "unknown key 'bacth'", "did you mean 'batch'?",
                             "valid keys: batch, dtype"],
    "unknown_system_key": ["[system] topology 'ring'", "unknown key 'latency'", "did you mean 'latency_us'?",
                           "valid keys: bandwidth_gbps, groups, latency_us, topology"],
    "unknown_cost_key": ["[cost] model 'accpar'", "unknown key 'levels'", "valid keys:", "mode", "model"],
    "unknown_search_key": ["[search] unknown key 'evals'", "valid keys: engine, seed, budget", "[search.<engine>]"],
    "unknown_search_engine_option": ["[search.accpar]", "unknown key 'sweep'", "did you mean 'sweeps'?",
                                     "valid keys: ratio, sweeps"],
    "unknown_group_key": ["[[system.groups]] #1", "unknown key 'memroy_gib'", "did you mean 'memory_gib'?",
                          "valid keys: accelerator, attrs, count"],  # a group's other keys are its accelerator's
    "unknown_objective_key": ["[objective] unknown key 'minimise'", "did you mean 'minimize'?"],
    "unknown_budget_key": ["[search] budget", "unknown key 'evals'", "valid keys: evaluations, seconds"],
    "search_engine_option_not_a_table": ["[search] 'accpar' must be a table [search.accpar]"],
    # wrong types and values
    "batch_not_a_number": ["[workload] model 'vgg11'", "key 'batch'", "valid integer", "got 'big'"],
    "batch_boolean": ["[workload] model 'vgg11'", "key 'batch' must be a number", "got true"],
    "batch_zero": ["[workload] model 'vgg11'", "batch must be a positive integer", "got 0"],
    "batch_negative": ["[workload] model 'vgg11'", "batch must be a positive integer", "got -32"],
    "count_fractional": ["[[system.groups]] #1", "count must be a whole number >= 1", "got 1.5"],
    "count_zero": ["[[system.groups]] #1", "count must be a whole number >= 1", "got 0"],
    "count_negative": ["[[system.groups]] #1", "count must be a whole number >= 1", "got -4"],
    "count_string": ["[[system.groups]] #1", "count must be a whole number >= 1", "got 'four'"],
    "seed_negative": ["[search] seed must be a whole number >= 0", "got -1"],
    "seed_not_integer": ["[search] seed must be a whole number >= 0", "got 'zero'"],
    "engine_not_a_string": ["[search] engine must be a string", "got 1"],
    "budget_zero_evaluations": ["[search] budget.evaluations must be a whole number >= 1", "got 0"],
    "budget_negative_seconds": ["[search] budget.seconds must be a number > 0", "got -5"],
    "budget_not_a_table": ["[search] budget must be a table", "got 100"],
    "engine_option_wrong_type": ["[search.accpar]", "key 'sweeps'", "valid integer", "got 'many'"],
    "engine_option_bad_choice": ["[search.accpar]", "key 'ratio'", "'search' or 'equal'", "got 'golden'"],
    "engine_needs_missing_capability": ["[search] engine 'acctfm'", "capability 'acctfm_tables'",
                                        "cost model 'accpar'"],
    "cost_option_wrong_type": ["[cost] model 'accpar'", "key 'mode'", "'time' or 'comm_only'", "got 3"],
    "dtype_unknown": ["[workload] model 'vgg11'", "unknown dtype 'fp7'", "did you mean"],
    "phase_unknown": ["[workload] model 'vgg11'", "unknown phase 'trainng'", "did you mean 'training'?"],
    # system
    "bandwidth_zero": ["[system] topology 'ring'", "key 'bandwidth_gbps': input should be greater than 0", "got 0"],
    "bandwidth_negative": ["[system] topology 'ring'", "key 'bandwidth_gbps': input should be greater than 0", "got -100"],
    "bandwidth_not_a_number": ["[system] topology 'ring'", "key 'bandwidth_gbps'", "valid number", "got 'fast'"],
    "latency_negative": ["[system] topology 'ring'", "key 'latency_us': input should be greater than or equal to 0", "got -1"],
    "torus_shape_mismatch": ["[system] topology 'torus2d'", "shape [3, 3] holds 9 devices", "groups give 4"],
    "groups_empty": ["[system] groups is empty", "[[system.groups]]", "count = N"],
    "groups_missing": ["[system] has no groups", "[[system.groups]]"],
    "group_missing_count": ["[[system.groups]] #1", "missing key 'count'"],
    "group_missing_accelerator": ["[[system.groups]] #1", "missing key 'accelerator'"],
    # objective and constraints
    "objective_unknown_metric": ["[objective] minimize", "unknown metric 'latency'", "cost model 'accpar'", "time"],
    "objective_empty": ["[objective] minimize must be a non-empty list", "got []"],
    "constraints_unknown_key": ["[constraints] unknown key 'max_power'", "max_time", "max_memory_bytes"],
    "constraints_not_a_number": ["[constraints] max_memory_bytes must be a finite number", "got '16 GiB'"],
    # workload files
    "workload_file_missing": ["[workload] file 'networks/no-such-net.txt' does not exist",
                              "relative paths start at the problem file's folder"],
    "workload_file_malformed": ["[workload] model 'accpar-text'", "workload_file_malformed.txt:13",
                                "'out_ch' must be a whole number >= 1", "got 'many'"],
    "workload_file_unknown_suffix": ["[workload] file 'workload_file_malformed.toml'",
                                     "no workload reader loads '.toml'", "accpar-text reads .txt", "add model ="],
}

BAD_FILES = sorted(BAD.glob("*.toml"))
RUN_THROUGH_CLI_RUN = ["toml_unterminated_string", "unknown_search_engine", "bandwidth_zero",
                       "engine_option_wrong_type", "objective_unknown_metric"]


def optmap_cli(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*OPTMAP, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit code 2, nothing on stdout, exactly one stderr line ``error: ...`` holding ``needles``."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("error: "), line
    for needle in needles:
        assert needle in line, f"{needle!r} missing from: {line}"
    return line


def _run_concurrently(commands: dict[str, list[str]]) -> dict[str, subprocess.CompletedProcess]:
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {key: pool.submit(optmap_cli, *args) for key, args in commands.items()}
        return {key: future.result() for key, future in futures.items()}


@pytest.fixture(scope="module")
def validated() -> dict[str, subprocess.CompletedProcess]:
    """``optmap validate`` on every bad file, one process each, run concurrently."""
    return _run_concurrently({path.stem: ["validate", str(path.relative_to(ROOT))] for path in BAD_FILES})


def test_every_bad_file_has_expectations():
    stems = {path.stem for path in BAD_FILES}
    assert len(stems) >= 24
    assert stems - set(EXPECTED) == set(), "add a row to EXPECTED for each new bad problem file"
    assert set(EXPECTED) - stems == set(), "EXPECTED names files that do not exist"


@pytest.mark.parametrize("path", BAD_FILES, ids=lambda p: p.stem)
def test_validate_reports_one_line(path: Path, validated):
    proc = validated[path.stem]
    relative = str(path.relative_to(ROOT))
    line = assert_one_line_error(proc, relative, *EXPECTED[path.stem])
    assert proc.stdout == ""
    assert len(line) < 400, f"message too long ({len(line)} chars): {line}"


@pytest.mark.parametrize("stem", RUN_THROUGH_CLI_RUN)
def test_run_reports_one_line_and_writes_nothing(stem: str, tmp_path: Path):
    path = BAD / f"{stem}.toml"
    proc = optmap_cli("run", str(path), "--json", str(tmp_path / "out.json"), cwd=tmp_path)
    assert_one_line_error(proc, path.name, *EXPECTED[stem])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", BAD_FILES, ids=lambda p: p.stem)
def test_load_raises_one_line_optmap_error(path: Path):
    """The Python API raises the same one-line OptmapError (no other exception type)."""
    with pytest.raises(OptmapError) as info:
        optmap.load(path)
    message = str(info.value)
    assert "\n" not in message
    assert path.name in message
    for needle in EXPECTED[path.stem]:
        assert needle in message


# --set: the override syntax and its targets

GOOD = ROOT / "problems" / "accpar" / "homog-lenet.toml"
BAD_SETS = {
    "workload.batch": ["--set 'workload.batch'", "expected SECTION.KEY=VALUE"],
    "workload.batch=": ["no value after '='"],
    "=64": ["expected SECTION.KEY=VALUE"],
    "workload..batch=64": ["expected SECTION.KEY=VALUE"],
    "wrkload.batch=64": ["unknown section 'wrkload'", "did you mean 'workload'?"],
    "workload.batch.size=64": ["'workload.batch' is a number, not a table"],
    "system.groups.count=2": ["'system.groups' is a list, not a table"],
    "workload.batch=big": ["homog-lenet.toml", "[workload] model 'lenet-caffe'", "key 'batch'", "got 'big'"],
    "workload.bacth=64": ["homog-lenet.toml", "unknown key 'bacth'", "did you mean 'batch'?"],
    "system.bandwidth_gbps=0": ["homog-lenet.toml", "key 'bandwidth_gbps': input should be greater than 0"],
}


@pytest.fixture(scope="module")
def overridden() -> dict[str, subprocess.CompletedProcess]:
    return _run_concurrently({text: ["validate", str(GOOD), "--set", text] for text in BAD_SETS})


@pytest.mark.parametrize("override", sorted(BAD_SETS))
def test_bad_set_reports_one_line(override: str, overridden):
    assert_one_line_error(overridden[override], *BAD_SETS[override])


def test_parse_override_reads_toml_values():
    from optmap.problem import apply_overrides, parse_override

    assert parse_override("workload.batch=64") == (["workload", "batch"], 64)
    assert parse_override("search.budget={ seconds = 5 }") == (["search", "budget"], {"seconds": 5})
    assert parse_override("workload.dtype=fp16") == (["workload", "dtype"], "fp16")  # bare word: a string
    spec = apply_overrides({"workload": {"batch": 1}}, ["workload.batch=8", "search.seed=3"])
    assert spec == {"workload": {"batch": 8}, "search": {"seed": 3}}


def test_missing_problem_file(tmp_path: Path):
    proc = optmap_cli("validate", str(tmp_path / "nope.toml"))
    assert_one_line_error(proc, "nope.toml: no such problem file")
    proc = optmap_cli("validate", str(tmp_path))
    assert_one_line_error(proc, "is a folder, not a problem file")
