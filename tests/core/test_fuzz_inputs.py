"""Issue 10: generated bad and edge inputs never end in a traceback, a hang, nonsense or invalid JSON.

Hypothesis mutates a small valid problem (LeNet on a few TPU-v3, AccPar) and its command line:
keys removed, values replaced by edge values of every TOML type (negative, zero, huge, NaN,
infinite, empty, unicode and control characters, nested tables and arrays), unknown keys added,
``--set`` / ``--fix`` / ``--search`` / ``--seed`` given odd values. For every case ``optmap``
must either succeed (exit 0, a strict-JSON result with finite, non-negative metrics, written
where asked) or refuse (exit 2, exactly one line ``error: ...``; ``validate`` one per error), within
a time limit, writing nothing outside its working folder.
"""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
tomli_w = pytest.importorskip("tomli_w")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from optmap.cli import main  # noqa: E402

BASE = {
    "name": "fuzz",
    "workload": {"model": "lenet", "batch": 8, "dtype": "bf16"},
    "system": {"topology": "fully-connected", "latency_us": 0.0, "groups": [{"accelerator": "tpu-v3", "count": 2}]},
    "cost": {"model": "accpar"},
    "objective": {"minimize": ["time"]},
    "search": {"engine": "random", "seed": 0, "budget": {"evaluations": 40}},
}
PATHS = [("name",), ("workload", "model"), ("workload", "batch"), ("workload", "dtype"), ("workload", "phase"),
         ("workload", "image_size"), ("system", "topology"), ("system", "latency_us"), ("system", "bandwidth_gbps"),
         ("system", "switch"), ("system", "groups"), ("cost", "model"), ("cost", "ratio_steps"),
         ("cost", "weight_copies"), ("cost", "check_memory"), ("cost", "mode"), ("objective", "minimize"),
         ("objective", "maximize"), ("constraints", "max_time"), ("constraints", "min_time"), ("search", "engine"),
         ("search", "seed"), ("search", "budget"), ("fix", "L0:conv1"), ("accelerators", "mine")]
GROUP_KEYS = ["accelerator", "count", "memory_gib", "network_gbps", "peak_tflops", "name", "colour"]

scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([0, 1, -1, 2**31, 2**63 - 1]),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.text(max_size=12), st.sampled_from(["", "I", "tpu-v3", "ring", "time", "nan", "\x00", "é" * 3, "1e400"]),
    st.sampled_from(["transformer", "vgg11", "resnet18", "acctfm", "stage-pipeline", "megatron-3d", "mesh2d",
                     "torus2d", "hierarchical", "chain", "a100", "titan-rtx", "inference", "fp16", "exhaustive",
                     "ga", "optuna", "hypar", "accpar", "comm_only", "linear"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(min_size=1, max_size=6), inner,
                                                                        max_size=3)), max_leaves=6)


@st.composite
def problems(draw):
    spec = json.loads(json.dumps(BASE))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(PATHS))
        table = spec.setdefault(path[0], {}) if len(path) > 1 else spec
        if not isinstance(table, dict):
            continue
        if draw(st.booleans()) and path[-1] in table:
            del table[path[-1]]
        else:
            table[path[-1]] = draw(values)
    if draw(st.booleans()):
        group = {k: draw(values) if draw(st.booleans()) else v for k, v in {"accelerator": "tpu-v3", "count": 2}.items()}
        group[draw(st.sampled_from(GROUP_KEYS))] = draw(values)
        spec["system"]["groups"] = [group]
    return spec


@st.composite
def command_lines(draw):
    words = [draw(st.sampled_from(["run", "run", "validate", "show", "compare"]))]
    for _ in range(draw(st.integers(0, 2))):
        key = ".".join(draw(st.sampled_from(PATHS)))
        words += ["--set", f"{key}={draw(st.sampled_from(['0', '-1', '1e9', 'nan', 'inf', '[]', 'x', '2', 'true']))}"]
    if draw(st.booleans()):
        words += ["--fix", draw(st.sampled_from(["L0:conv1=I", "L0:conv1=IV", "nope=1", "=", "L0:fc1"]))]
    if words[0] == "compare":
        words += ["--search", draw(st.sampled_from(["random,dp", "dp,dp", ",", "random", "owt,nope", "acctfm"]))]
        if draw(st.booleans()):
            words += ["--seeds", draw(st.sampled_from(["0,1", "-1", "0,0", "x", ""]))]
    if words[0] == "run":
        if draw(st.booleans()):
            words += ["--search", draw(st.sampled_from(["random", "exhaustive", "dp", "owt", "", "acctfm", "nope"]))]
        if draw(st.booleans()):
            words += ["--seed", draw(st.sampled_from(["0", "7", "-1", "x"]))]
    return words


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang


def _check_result(path: Path) -> None:
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"invalid JSON constant {c}"))
    for name, value in data["report"]["metrics"].items():
        assert value is not None and math.isfinite(value) and value >= 0, (name, value)


@settings(max_examples=int(os.environ.get("OPTMAP_FUZZ_EXAMPLES", "120")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(spec=problems(), words=command_lines())
def test_generated_inputs_fail_cleanly_or_succeed(spec, words, tmp_path_factory, capsys, monkeypatch):
    folder = tmp_path_factory.mktemp("fuzz")
    monkeypatch.chdir(folder)
    problem = folder / "p.toml"
    problem.write_text(tomli_w.dumps(spec))
    argv = [words[0], str(problem), *words[1:]]
    if words[0] == "run":
        argv += ["--json", str(folder / "out.json"), "--quiet"]
    elif words[0] == "compare":
        argv += ["--json", str(folder / "cmp.json")]
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse refusing an option value: its usage error, exit 2
        code = exit_.code
        capsys.readouterr()
        assert code == 2, argv
        return
    except Hang:
        pytest.fail(f"optmap {' '.join(argv)} ran for over 60 s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if code == 0:
        if words[0] == "run":
            _check_result(folder / "out.json")
    else:
        lines = [line for line in err.splitlines() if not line.startswith(("warning:", "note:"))]
        # issue 27: validate lists every error of a file, one line each; the other commands stop at the first
        every = words[0] == "validate"
        assert code == 2 and lines and all(line.startswith("error: ") for line in lines), (argv, code, err)
        assert len(lines) == 1 or every, (argv, code, err)
    if code == 0 and words[0] == "compare":
        json.loads((folder / "cmp.json").read_text(), parse_constant=lambda c: pytest.fail(f"invalid JSON {c}"))
    written = {p.name for p in folder.iterdir()} - {"p.toml", "out.json", "cmp.json", "optmap-results"}
    assert not {w for w in written if not w.startswith(".")}, written
