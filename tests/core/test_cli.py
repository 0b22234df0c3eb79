"""The command line: fast start, schema, validate / show / run, ``--set`` and ``--json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optmap.host import KINDS, load_host

ROOT = Path(__file__).resolve().parents[2]
_SCRIPT = Path(sys.executable).with_name("optmap")  # the console script users run
OPTMAP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "optmap.cli"]
HEAVY = ("numpy", "pydantic", "networkx", "pymoo", "optuna", "dask", "matplotlib", "scipy", "pandas")
HETERO_VGG19 = ROOT / "problems" / "accpar" / "hetero-vgg19.toml"

SMALL = """\
name = "vgg11 on 4 tpu-v3"
[workload]
model = "vgg11"
batch = 32
dtype = "bf16"
[system]
topology = "fully-connected"  # accpar prices non-blocking networks only
latency_us = 0.0
[[system.groups]]
accelerator = "tpu-v3"
count = 4
[cost]
model = "accpar"
[objective]
minimize = ["time"]
[search]
engine = "accpar"
seed = 0
budget = { evaluations = 100 }
"""


def optmap_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([*OPTMAP, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


def best_of(args: list[str], repeat: int = 3) -> float:
    """Best wall time of ``repeat`` runs of the console script (best-of filters a busy machine)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run([*OPTMAP, *args], capture_output=True, text=True, timeout=60)
        times.append(time.perf_counter() - start)
        assert proc.returncode == 0, proc.stderr
    return min(times)


@pytest.mark.parametrize("args", [["--help"], ["plugins"]], ids=["help", "plugins"])
def test_starts_fast(args):
    seconds = best_of(args)
    print(f"optmap {' '.join(args)}: {seconds:.3f} s wall (best of 3)")
    assert seconds < 2.0


def python_prints(code: str, env: dict | None = None) -> str:
    """What ``python -c code`` prints (a fresh interpreter: what it imports is its own), checked to succeed."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_import_cli_is_light():
    assert python_prints(f"import sys, optmap.cli; print([m for m in {HEAVY!r} if m in sys.modules])") == "[]"


def test_quickstart_run_starts_light(tmp_path):
    """`optmap run` on the quickstart (AccPar's own engine) loads no random-number generators,
    statistics, pydantic, numba (its one-plan batches stay on numpy) or step model (its
    accelerators are datasheet ones), and starts numpy's BLAS with one thread (issue 14: 0.1 CPU
    s of start-up, numba 0.4-0.6 s, the step model about 6 ms)."""
    code = (
        "import os, sys, contextlib, io\n"
        "os.environ.pop('OPENBLAS_NUM_THREADS', None); os.environ.pop('OMP_NUM_THREADS', None)\n"
        "from optmap.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['run', {str(ROOT / 'problems' / 'quickstart.toml')!r}, '--json', {str(tmp_path / 'r.json')!r}])\n"
        "assert code == 0\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'], [m for m in ('numpy.random', 'statistics', 'pydantic', 'numba',"
        " 'optmap.compute.step')"
        " if m in sys.modules])\n"
    )
    assert python_prints(code) == "1 []"


def test_calibrate_keeps_every_blas_thread():
    code = ("import os, optmap.commands.calibrate as c\n"
            "os.environ.pop('OPENBLAS_NUM_THREADS', None); os.environ.pop('OMP_NUM_THREADS', None)\n"
            "c.run = lambda args: print(os.environ.get('OPENBLAS_NUM_THREADS')) or 0\n"
            "from optmap.cli import main\n"
            "main(['calibrate'])\n")
    assert python_prints(code) == "None"


def test_a_blas_thread_count_the_user_set_is_kept():
    code = "import os; from optmap.cli import single_threaded_blas; single_threaded_blas(); print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    for env, expected in (({"OMP_NUM_THREADS": "4"}, "None"), ({"OPENBLAS_NUM_THREADS": "2"}, "2")):
        clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        assert python_prints(code, env={**clean, **env}) == expected


def test_plugins_does_not_import_search_libraries():
    """`optmap plugins` loads our plugin packages (networkx, numpy are fine) but no search library."""
    code = (
        "import sys, contextlib, io\n"
        "from optmap.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    code = main(['plugins'])\n"
        "assert code == 0\n"
        "print([m for m in ('pymoo', 'optuna', 'dask', 'matplotlib', 'pydantic') if m in sys.modules])\n"
    )
    assert python_prints(code) == "[]"


def test_plugins_lists_every_name_with_a_summary():
    proc = optmap_cli("plugins")
    assert proc.returncode == 0, proc.stderr
    host = load_host()
    for kind in KINDS:
        for name, entry in host.registries[kind].items():
            assert name in proc.stdout
            assert entry.summary, f"{kind} '{name}' has no summary"


def test_schema_is_json_with_every_plugin():
    proc = optmap_cli("schema")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema["required"] == ["workload", "system", "cost"]
    properties = schema["properties"]
    titles = {
        "workload": {v["title"] for v in properties["workload"]["anyOf"]},
        "topology": {v["title"] for v in properties["system"]["anyOf"]},
        "cost_model": {v["title"] for v in properties["cost"]["anyOf"]},
        "search_engine": set(properties["search"]["properties"]["engine"]["enum"]),
        "accelerator": set(properties["system"]["anyOf"][0]["properties"]["groups"]["items"]["properties"]
                           ["accelerator"]["examples"]),  # a string: problem files may define their own
    }
    host = load_host()
    for kind in titles:  # the kinds a problem file names (op kinds, dtypes and readers are vocabulary)
        assert titles[kind] == set(host.names(kind)), kind
    for name in host.names("search_engine"):
        assert name in properties["search"]["properties"]  # a [search.<engine>] options table


def test_schema_accepts_the_shipped_problems():
    """The shipped problems satisfy the schema, if a JSON Schema validator is installed."""
    jsonschema = pytest.importorskip("jsonschema")
    import tomllib

    from optmap.schema import problem_schema

    validator = jsonschema.Draft202012Validator(problem_schema())
    for path in sorted(p for p in (ROOT / "problems").rglob("*.toml") if not p.name.endswith(".sweep.toml")):
        errors = list(validator.iter_errors(tomllib.loads(path.read_text())))
        assert not errors, (path, errors[0].message)


def test_validate_hetero_vgg19():
    proc = optmap_cli("validate", str(HETERO_VGG19))
    assert proc.returncode == 0, proc.stderr
    assert "ok (accpar-hetero-vgg19" in proc.stdout


def test_show(small: Path):
    proc = optmap_cli("show", str(small))
    assert proc.returncode == 0, proc.stderr
    assert "workload vgg11: batch 32" in proc.stdout
    assert "features.0" in proc.stdout  # a layer row
    assert "system: fully-connected, 4 accelerators" in proc.stdout
    assert "design space" in proc.stdout


def test_set_takes_effect(small: Path):
    proc = optmap_cli("show", str(small), "--set", "workload.batch=64", "--set", "system.latency_us=2.5")
    assert proc.returncode == 0, proc.stderr
    assert "workload vgg11: batch 64" in proc.stdout

    import optmap

    problem = optmap.load(small, ["workload.batch=64", "search.budget={ evaluations = 7 }"])
    assert problem.workload.batch == 64
    assert problem.search.budget.evaluations == 7
    assert problem.spec["workload"]["batch"] == 64


def test_run_writes_json_with_the_plan(small: Path, tmp_path: Path):
    out = tmp_path / "out" / "result.json"
    proc = optmap_cli("run", str(small), "--set", "workload.batch=64", "--json", str(out), "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout
    result = json.loads(out.read_text())
    assert result["engine"] == "accpar"
    assert result["problem"]["workload"]["batch"] == 64
    assert result["values"]["time"] > 0
    assert result["mapping"]
    assert result["report"]["plan"]
    assert result["report"]["layers"]
