"""A shared Optuna study store, for real: two ``optmap run --storage URL`` processes share one
study, and a worker killed with SIGKILL loses no finished trial. Against PostgreSQL (the server
``.ci/run`` starts; its URL in ``OPTMAP_TEST_POSTGRES``), SQLite and a journal file.

Without a server a plain local ``pytest`` skips the PostgreSQL cases and says why; under CI
(``CI`` set) a missing server or driver fails them, so CI never passes without running them.

The problem's cost model (``barrier-toy``, written below as a plugin module) is a sum with a
known value per mapping, so every stored trial's value is checked by hand. Its first evaluation
waits at a file barrier until ``parties`` processes have arrived: both workers are then
searching at the same time, whatever the machine's load.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")

ENV = "OPTMAP_TEST_POSTGRES"
_SCRIPT = Path(sys.executable).with_name("optmap")
OPTMAP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "optmap.cli"]

PLUGIN = '''
import os, time
from pathlib import Path
from optmap.cost import CostModel, CostReport
from optmap.hookspecs import hookimpl
from optmap.space import DesignSpace, categorical

WEIGHTS = (1, 2, 3, 4)


class BarrierToy(CostModel):
    """time = 1 + sum((i + 1) * choice_i) over four choices in 0..3 (optimum 1, all zeros)."""

    metrics = ("time",)

    def __init__(self, workload, system, *, barrier: str = "", parties: int = 1, delay_ms: float = 0.0):
        self.space = DesignSpace(tuple(categorical(f"x{i}", [0, 1, 2, 3]) for i in range(4)))
        self.barrier, self.parties, self.delay, self.waited = barrier, parties, delay_ms / 1000, False

    def _wait(self):
        self.waited = True
        if not self.barrier:
            return
        Path(self.barrier, str(os.getpid())).touch()
        deadline = time.time() + 120
        while len(os.listdir(self.barrier)) < self.parties:
            if time.time() > deadline:
                raise RuntimeError("barrier: the other worker never came")
            time.sleep(0.02)

    def evaluate(self, mapping):
        if not self.waited:
            self._wait()
        time.sleep(self.delay)
        return CostReport({"time": 1.0 + sum(w * float(v) for w, v in zip(WEIGHTS, mapping.array))})


@hookimpl
def optmap_register_cost_models(register):
    register("barrier-toy", BarrierToy)
'''

PROBLEM = """\
name = "barrier toy"
[workload]
model = "lenet-caffe"
batch = 8
[system]
topology = "fully-connected"
[[system.groups]]
accelerator = "tpu-v3"
count = 1
[cost]
model = "barrier-toy"
[search]
engine = "optuna"
seed = 0
[search.optuna]
sampler = "random"
batch = 5
"""


def postgres_url() -> str:
    """The test server's URL; skipped locally without one, a failure under CI."""
    url = os.environ.get(ENV)
    problem = None
    if not url:
        problem = (f"no PostgreSQL server: {ENV} is not set (.ci/run starts one; or set "
                   f"{ENV}=postgresql+psycopg://user@host:port/db)")
    else:
        try:
            import psycopg  # noqa: F401  (the driver of postgresql+psycopg:// URLs)
        except ImportError:
            problem = "the psycopg driver is not installed: pip install 'optmap[test]'"
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the PostgreSQL storage tests: {problem}", pytrace=False)
        pytest.skip(problem)
    return url


@pytest.fixture(params=["postgresql", "sqlite", "journal"])
def storage(request, tmp_path) -> str:
    if request.param == "postgresql":
        return postgres_url()
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'study.db'}"
    return str(tmp_path / "study.journal")  # a file path: Optuna's journal storage


@pytest.fixture
def setup(tmp_path):
    (tmp_path / "barrier_toy.py").write_text(PLUGIN)
    (tmp_path / "toy.toml").write_text(PROBLEM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    return tmp_path, env


def command(tmp_path, storage: str, study: str, out: str, *options: str) -> list[str]:
    return OPTMAP + ["run", str(tmp_path / "toy.toml"), "--plugin", "barrier_toy", "--storage", storage,
                     "--study", study, "--json", str(tmp_path / out), "--quiet", *options]


def stored(storage: str, study: str):
    url = storage
    if "://" not in storage:
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        url = JournalStorage(JournalFileBackend(storage))
    return optuna.load_study(study_name=study, storage=url).get_trials(deepcopy=False)


def by_hand(trial) -> float:
    return 1.0 + sum((i + 1) * trial.params[f"x{i}"] for i in range(4))


def test_two_processes_share_one_study(setup, storage):
    tmp_path, env = setup
    study = f"shared-{uuid.uuid4().hex[:8]}"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    options = ["--resume", "--set", "search.budget.evaluations=60", "--set", f'cost.barrier="{barrier}"',
               "--set", "cost.parties=2", "--set", "cost.delay_ms=5"]
    workers = [subprocess.Popen(command(tmp_path, storage, study, f"{name}.json", *options, "--seed", str(seed)),
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for seed, name in enumerate(("a", "b"))]
    for worker in workers:
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
    trials = stored(storage, study)
    owners = {t.user_attrs["optmap_id"].split(":")[0] for t in trials}
    assert len(owners) == 2  # both processes wrote trials into the one study
    assert 60 <= len(trials) <= 60 + 5  # the budget is study-wide (each may finish its last batch of 5)
    assert all(t.state == optuna.trial.TrialState.COMPLETE and t.values[0] == by_hand(t) for t in trials)
    results = [json.loads((tmp_path / f"{name}.json").read_text()) for name in ("a", "b")]
    # the worker that synchronised last counted every trial of the study, the other's included
    assert max(r["evaluations"] for r in results) == len(trials)
    assert min(r["values"]["time"] for r in results) == min(t.values[0] for t in trials)


def test_a_killed_worker_loses_no_finished_trial(setup, storage):
    tmp_path, env = setup
    study = f"killed-{uuid.uuid4().hex[:8]}"
    slow = ["--set", "search.budget.evaluations=1000000", "--set", "cost.delay_ms=2", "--checkpoint-every", "0.2"]
    worker = subprocess.Popen(command(tmp_path, storage, study, "killed.json", *slow), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    checkpoint = tmp_path / "killed.checkpoint.json"
    deadline = time.time() + 120
    seen: list[str] = []
    while len(seen) < 10 and time.time() < deadline and worker.poll() is None:
        time.sleep(0.1)
        try:
            seen = json.loads(checkpoint.read_text())["engine"]["seen"]
        except (OSError, ValueError, KeyError):
            pass
    worker.send_signal(signal.SIGKILL)  # no handler, no last save: the process just ends
    worker.wait(timeout=60)
    assert len(seen) >= 10, worker.stderr.read()
    trials = stored(storage, study)
    ids = {t.user_attrs["optmap_id"] for t in trials}
    assert set(seen) <= ids  # every trial the worker had finished (and checkpointed) is in the study
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)  # nothing left half-written
    assert all(t.values[0] == by_hand(t) for t in trials)
    # another worker joins and finishes the budget: the killed worker's trials count toward it
    target = len(trials) + 10
    again = subprocess.run(command(tmp_path, storage, study, "again.json", "--resume", "--seed", "1", *slow[2:4],
                                   "--set", f"search.budget.evaluations={target}"), env=env, capture_output=True,
                           text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    result = json.loads((tmp_path / "again.json").read_text())
    after = stored(storage, study)
    assert result["evaluations"] == target == len(after)
    assert ids <= {t.user_attrs["optmap_id"] for t in after}
    assert result["values"]["time"] == min(t.values[0] for t in after)
