"""The compiled batch scorer (plugins/accpar/kernel.py) against the numpy one, bit for bit.

Every problem the recorded-score tests use (heterogeneous and homogeneous systems, link latency,
``comm_only``, measured accelerators, one accelerator, "linear" shares with ``combine = "sum"``,
odd counts, three kinds, ``overlap``) is scored on 300 random plans both ways; every column must
be equal with ``==``, in the same order. The recorded values themselves are checked through
both paths in test_accpar_scoring_paths.py and test_accpar_speed.py.
"""

import json
import subprocess
import sys

import numba
import numpy as np
import pytest

import optmap.plugins.accpar.model as accpar_model
from conftest import DATA, make_problem
from optmap.plugins.accpar.kernel import COMPILING_NOTE, column_sums

CASES = [case for name in ("scores-before-table-gathers.json", "before-issue14.json")
         for case in json.loads((DATA / "accpar_speed" / name).read_text())]


def _name(case):
    groups = "+".join(f"{g['count']}{g['accelerator']}" for g in case["spec"]["system"]["groups"])
    options = ",".join(f"{k}={v}" for k, v in case["spec"]["cost"].items() if k != "model")
    return f"{case['spec']['workload']['model']}-{groups}-{options or 'defaults'}"


def scores(model, X, kernel_rows, monkeypatch, chunk=None):
    monkeypatch.setattr(accpar_model, "KERNEL_ROWS", kernel_rows)
    return model.evaluate_batch(X, chunk)


@pytest.mark.parametrize("case", CASES, ids=_name)
def test_the_kernel_scores_every_plan_bit_for_bit_as_numpy(case, monkeypatch):
    model = make_problem(json.loads(json.dumps(case["spec"]))).cost_model
    X = model.space.sample(np.random.default_rng(7), 300)
    compiled = scores(model, X, 1, monkeypatch, chunk=128)  # three calls, the last one short
    reference = scores(model, X, 10**9, monkeypatch)
    assert list(compiled) == list(reference)
    for key in reference:
        assert np.array_equal(compiled[key], reference[key]), key


def test_large_batches_go_through_the_kernel_and_small_ones_do_not(monkeypatch):
    model = make_problem(json.loads(json.dumps(CASES[0]["spec"]))).cost_model
    X = model.space.sample(np.random.default_rng(0), accpar_model.KERNEL_ROWS)
    calls = []
    import optmap.plugins.accpar.kernel as kernel

    score_batch = kernel.score_batch
    counted = lambda model, X, chunk: calls.append(len(X)) or score_batch(model, X, chunk)  # noqa: E731
    monkeypatch.setattr(kernel, "score_batch", counted)
    # a process that has not loaded the kernel (earlier tests here have): small batches stay in numpy
    monkeypatch.setattr(accpar_model, "_kernel_loaded", lambda: False)
    model.evaluate_batch(X[:-1])
    assert calls == []
    model.evaluate_batch(X)
    assert calls == [accpar_model.KERNEL_ROWS]
    # issue 27: once the kernel is loaded, every batch goes there (16 plans: 13x numpy's rate)
    monkeypatch.undo()
    monkeypatch.setattr(kernel, "score_batch", counted)
    model.evaluate_batch(X[:16])
    assert calls == [accpar_model.KERNEL_ROWS, 16]


def test_every_model_uses_one_compiled_signature():
    # a second signature (an array in another layout or type) would compile again on first use,
    # 15 s: every array is C-contiguous (numpy hands some tables over in either layout, depending
    # on the network), and every model's inputs have the same types
    from optmap.plugins.accpar.kernel import kernel_inputs

    signatures = set()
    for case in CASES:
        inputs = kernel_inputs(make_problem(json.loads(json.dumps(case["spec"]))).cost_model)
        assert all(value.flags.c_contiguous for value in inputs if isinstance(value, np.ndarray))
        signatures.add(tuple(numba.typeof(value) for value in inputs))
    assert len(signatures) == 1


@pytest.mark.parametrize("n", [*range(1, 40), 127, 128, 129, 136, 255, 300, 1000])
def test_column_sums_add_in_numpy_order(n):
    # pairwise summation: a plain loop under 8 terms, eight running sums to 128, halves above;
    # terms spanning 16 orders of magnitude make any other order show in the last bits
    rng = np.random.default_rng(n)
    a = rng.random((n, 33)) * 10.0 ** rng.integers(-8, 8, (n, 33))
    out = np.empty(33)
    column_sums(np.ascontiguousarray(a), out, np.empty((8, 33)))
    assert out.tolist() == np.ascontiguousarray(a.T).sum(1).tolist()
    shuffled = np.empty(33)
    column_sums(np.ascontiguousarray(np.roll(a, 1, axis=0)), shuffled, np.empty((8, 33)))
    assert n < 3 or shuffled.tolist() != out.tolist()  # the test would see a different order


def test_a_first_call_that_takes_long_says_it_is_compiling():
    # the first run after an install compiles the kernel (about 15 s): one line on stderr says why
    # it waits. Here the note's delay is 0 s, so it shows while the kernel loads; a second batch
    # in the same process is silent.
    spec = {"workload": {"model": "vgg11", "batch": 64, "dtype": "bf16"}, "cost": {"model": "accpar"},
            "system": {"topology": "fully-connected", "groups": [{"accelerator": "tpu-v3", "count": 4}]}}
    code = (f"import sys, numpy as np, optmap.plugins.accpar.kernel as kernel\n"
            f"from optmap.problem import build_problem\n"
            f"kernel.COMPILING_NOTE_AFTER = 0.0\n"
            f"model = build_problem({spec!r}).cost_model\n"
            f"X = model.space.sample(np.random.default_rng(0), 300)\n"
            f"model.evaluate_batch(X); print('second', file=sys.stderr, flush=True); model.evaluate_batch(X)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    first, second = done.stderr.split("second") if done.returncode == 0 else (done.stderr, "")
    assert first.strip() == COMPILING_NOTE and second.strip() == ""
