"""Issue 9: a formulation is a plugin. Each test exercises one opening of the core with values
computed by hand in its comment."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import optmap
from conftest import ROOT, make_problem
from optmap.cost import CostModel, CostReport
from optmap.errors import OptmapError
from optmap.problem import load
from optmap.run import solve
from optmap.search import Budget, Evaluator
from optmap.space import DesignSpace, categorical, integer, permutation
from optmap.workload import LayerFlops, OpKind, WorkloadBuilder, op_kind

QUICKSTART = ROOT / "problems" / "quickstart.toml"
OPTMAP = [str(Path(sys.executable).with_name("optmap"))]


def cli(*args, cwd=ROOT):
    return subprocess.run([*OPTMAP, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


# --- open workload IR ---------------------------------------------------------------------------

class Recurrent(OpKind):
    """A toy recurrent cell: h_t = W x_t + U h_{t-1} over ``timesteps`` steps."""

    name, weighted = "toy_rnn", True

    def weight_elements(self, layer):
        hidden, features = layer.attr("hidden"), layer.in_shapes[0][-1]
        return hidden * (features + hidden)

    def params(self, layer):
        return self.weight_elements(layer)

    def macs(self, layer):
        return self.weight_elements(layer) * layer.attr("timesteps")


def test_a_registered_op_kind_prices_its_layers():
    b = WorkloadBuilder("rnn", (10, 32))  # 10 timesteps of 32 features
    h = b.op(Recurrent(), "input", (10, 64), timesteps=10, hidden=64)
    w = b.build(batch=4)
    layer = w.layer(h)
    # weights 64 * (32 + 64) = 6144; MACs 6144 * 10 = 61440 per sample; forward 2 * 61440 * 4 = 491520
    assert layer.params == 6144 and layer.macs == 61440
    assert layer.flops(4) == LayerFlops(491520, 491520, 491520) and layer.weighted
    assert op_kind("toy_rnn").name == "toy_rnn"
    with pytest.raises(OptmapError, match="unknown op 'toy_rn'; did you mean 'toy_rnn'"):
        b.op("toy_rn", h, (1,))


def test_phases_and_dtypes_are_open():
    from optmap.workload import DTYPE_BYTES, PHASE_PASSES, register_dtype, register_phase

    try:
        register_dtype("fp4", 0.5)
        register_phase("forward_backward", ("forward", "backward_data"))
        b = WorkloadBuilder("t", (10,))
        b.linear("input", 4)
        w = b.build(batch=3, dtype="fp4", phase="forward_backward")
        # linear 10 -> 4: forward 2 * 40 * 3 = 240, backward_data 240, no weight gradient in this phase
        assert w.flops() == LayerFlops(240, 240, 0) and w.bytes_per_element == 0.5
        with pytest.raises(OptmapError, match="unknown phase 'trainig'"):
            b.build(batch=1, phase="trainig")
    finally:  # the registries are process-wide: leave them as the other tests expect
        DTYPE_BYTES.pop("fp4", None)
        PHASE_PASSES.pop("forward_backward", None)


# --- open systems -------------------------------------------------------------------------------

SYSTEM_PROBLEM = {
    "workload": {"model": "lenet", "batch": 8, "dtype": "bf16"},
    "system": {"topology": "fully-connected", "groups": [{"accelerator": "tpu-v3", "count": 2}]},
    "cost": {"model": "accpar"},
}


def test_group_keys_override_the_preset_datasheet():
    spec = {**SYSTEM_PROBLEM, "system": {"topology": "fully-connected", "groups": [
        {"accelerator": "tpu-v3", "count": 2, "memory_gib": 1, "network_gbps": 32}]}}
    accelerator = make_problem(spec).system.devices[0]
    assert accelerator.memory_bytes == 2**30 and accelerator.network_bandwidth == 4e9  # 32 Gb/s = 4e9 B/s
    assert accelerator.peak_flops_by_dtype["bf16"] == 420e12  # the rest stays TPU-v3's (AccPar Table 7)


def test_accelerators_defined_in_the_problem_file(tmp_path):
    (tmp_path / "lab.toml").write_text('peak_tflops = { bf16 = 100 }\nmemory_gib = 16\nmemory_bandwidth_gBps = 900\n'
                                       'network_gbps = 100\n[attrs]\nlab = "ours"\n')
    spec = {**SYSTEM_PROBLEM,
            "accelerators": {"labgpu": {"file": "lab.toml"}, "big-v3": {"base": "tpu-v3", "memory_gib": 256}},
            "system": {"topology": "fully-connected", "groups": [{"accelerator": "labgpu", "count": 1},
                                                      {"accelerator": "big-v3", "count": 1}]}}
    system = make_problem(spec, tmp_path / "p.toml").system
    lab, big = system.devices
    assert (lab.name, lab.peak_flops_by_dtype["bf16"], lab.attrs["lab"]) == ("labgpu", 100e12, "ours")
    assert big.memory_bytes == 256 * 2**30 and big.network_bandwidth == 2e9  # 16 Gb/s kept from tpu-v3
    bad = {**spec, "accelerators": {"labgpu": {"memory_gib": 16}}}
    with pytest.raises(OptmapError, match=r"\[accelerators.labgpu\]: missing peak_tflops"):
        make_problem(bad, tmp_path / "p.toml")


def test_an_accelerator_factory_takes_the_group_keys(monkeypatch):
    from optmap.host import load_host
    from optmap.system import Accelerator

    def fpga(*, dsp: int = 3600) -> Accelerator:
        """A toy FPGA whose peak is its DSPs x 2 FLOP x 200 MHz."""
        return Accelerator("fpga", {"default": dsp * 2 * 200e6}, 1e9, 10e9, 1e9, attrs={"dsp": dsp})

    host = load_host()
    monkeypatch.setitem(host.registries["accelerator"], "toy-fpga",
                        host.registries["accelerator"]["tpu-v3"].__class__("accelerator", "toy-fpga", "t", "", fpga))
    spec = {**SYSTEM_PROBLEM, "system": {"topology": "fully-connected", "groups": [
        {"accelerator": "toy-fpga", "count": 2, "dsp": 1000}]}}
    device = make_problem(spec).system.devices[0]
    assert device.attrs["dsp"] == 1000 and device.flops_per_s("fp32") == 4e11  # 1000 * 2 * 2e8
    spec["system"]["groups"][0]["dps"] = 1
    with pytest.raises(OptmapError, match="unknown key 'dps'; did you mean 'dsp'"):
        make_problem(spec)


def test_set_reaches_list_elements():
    problem = load(QUICKSTART, ["system.groups.0.count=4", "system.groups.1.accelerator=tpu-v2"])
    assert [g.count for g in problem.system.groups] == [4, 8]
    assert {d.name for d in problem.system.devices} == {"tpu-v2"}


# --- richer spaces --------------------------------------------------------------------------------

def test_permutation_and_conditional_space_enumerates_each_point_once():
    space = DesignSpace([categorical("par", ["data", "model"]), integer("split", 1, 4, active_if={"par": ["model"]}),
                         permutation("order", ["a", "b", "c"])])
    # (1 data point + 4 model splits) x 3! orders = 30
    assert space.size == 30 and space.width == 5
    points = np.vstack(list(space.grid()))
    assert len(points) == 30 and len({tuple(p) for p in points}) == 30
    mapping = space.decode(points[0])
    assert mapping["split"] is None and "split" not in mapping.as_dict() and sorted(mapping["order"]) == ["a", "b", "c"]
    x = space.encode({"par": "model", "split": 3, "order": ["c", "a", "b"]})
    assert space.decode(x).as_dict() == {"par": "model", "split": 3, "order": ["c", "a", "b"]}


def test_pins_narrow_the_space_and_name_bad_values():
    space = DesignSpace([categorical("t", ["I", "II", "III"]), integer("k", 1, 4)])
    pinned = space.pin({"t": "II"})
    assert pinned.size == 4 and pinned.pinned == {"t": "II"}
    assert set(pinned.repair(np.array([[0.0, 2.0], [2.0, 9.0]]))[:, 0]) == {1.0}
    with pytest.raises(OptmapError, match="'IV' is not one of"):
        space.pin({"t": "IV"})
    with pytest.raises(OptmapError, match="no decision 'kk'; did you mean 'k'"):
        space.pin({"kk": 1})


class Stages(CostModel):
    """Three layers of cost 3, 1, 2 onto stages; a formulation-supplied repair keeps stage 0 first."""

    metrics = ("time", "throughput")
    senses = {"throughput": "max"}

    def __init__(self):
        self.space = DesignSpace([permutation("order", ["s0", "s1", "s2"]), integer("k", 1, 3)], repair=self._repair)

    @staticmethod
    def _repair(X):
        X = X.copy()
        X[:, 0] = 0.0  # s0's key is always the smallest
        return X

    def evaluate(self, mapping):
        time = {"s0": 1.0, "s1": 2.0, "s2": 3.0}[mapping["order"][1]] * mapping["k"]
        return CostReport({"time": time, "throughput": 1 / time})


def test_custom_repair_and_maximised_objective_through_the_evaluator():
    model = Stages()
    evaluator = Evaluator(model, ["throughput"], senses=["max"], budget=Budget(evaluations=100))
    F, violation = evaluator.evaluate(model.space.sample(np.random.default_rng(0), 50))
    # every repaired point starts with s0; the best throughput is 1/(2*1) with order (s0, s1, s2), k = 1
    assert all(model.space.decode(x)["order"][0] == "s0" for x in evaluator.space.repair(np.eye(4)))
    assert evaluator.best_value == 0.5 and (F <= 0).all()  # maximised: the engine sees -throughput
    result = evaluator.result("test", 0, "complete")
    assert result.values == {"throughput": 0.5} and result.senses == ("max",)


def test_child_evaluator_searches_the_rest_of_the_decisions():
    model = Stages()
    parent = Evaluator(model, ["time"], budget=Budget(evaluations=1000))
    child = parent.child(fixed={"k": 3})
    assert child.space.size == 6  # 3! orders x the one pinned k (an upper bound: size ignores the repair)
    X = np.vstack(list(child.space.grid()))
    child.evaluate(X)
    # the repair keeps s0 first, so two orders remain: (s0, s1, s2) costs 2 x 3 = 6, (s0, s2, s1) 3 x 3 = 9
    assert child.space.pinned == {"k": 3} and len(X) == 2 and child.best_value == 6.0
    parent.merge(child)
    assert parent.evaluations == 2 and parent.best_value == 6.0


def test_problem_defaults_to_the_primary_metric_and_takes_maximize(tmp_path):
    from optmap.plugins.accpar.model import AccParCostModel

    spec = {k: v for k, v in SYSTEM_PROBLEM.items()}
    spec["cost"] = {"model": "accpar", "mode": "comm_only"}  # metrics comm_elements, comm_bytes: no "time"
    problem = make_problem(spec)
    assert problem.objectives == ("comm_elements",) and problem.senses == ("min",)
    assert isinstance(problem.cost_model, AccParCostModel)
    spec["objective"] = {"maximize": ["comm_bytes"]}
    assert make_problem(spec).senses == ("max",)
    spec["objective"] = {"minimize": ["comm_bytes"]}
    spec["constraints"] = {"min_comm_bytes": 5.0, "max_comm_bytes": 1.0}
    with pytest.raises(OptmapError, match="min_comm_bytes = 5 is above max_comm_bytes = 1"):
        make_problem(spec)


# --- pins end to end, engines refused at load, the example formulation ------------------------------

def test_fix_keeps_the_decision_for_native_and_generic_engines():
    problem = load(QUICKSTART, fixes=["L0:classifier.0=I", "L1:features.0=III"])
    for engine in ("accpar", "random"):
        result = solve(problem, engine=engine, budget=Budget(evaluations=200))
        assert result.best["L0:classifier.0"] == "I" and result.best["L1:features.0"] == "III", engine
    with pytest.raises(OptmapError, match=r"\[fix\] decision 'L0:classifier.0': 'IV' is not one of"):
        load(QUICKSTART, fixes=["L0:classifier.0=IV"])


def test_pinning_every_decision_scores_that_one_mapping():
    problem = load(ROOT / "problems" / "accpar" / "homog-lenet.toml")
    plan = solve(problem, engine="owt").best.as_dict()
    pinned = load(ROOT / "problems" / "accpar" / "homog-lenet.toml", fixes=[f"{k}={v}" for k, v in plan.items()])
    assert pinned.space.size == 1
    again = solve(pinned, engine="random", budget=Budget(evaluations=5))
    assert again.best.as_dict() == plan


def test_cli_fix_and_engine_refused_at_load(tmp_path):
    proc = cli("run", str(QUICKSTART), "--fix", "L0:classifier.0=I", "--json", str(tmp_path / "r.json"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert '"L0:classifier.0": "I"' in (tmp_path / "r.json").read_text()
    proc = cli("run", str(ROOT / "problems" / "acctfm" / "tiny.toml"), "--search", "owt", "--json",
               str(tmp_path / "owt.json"))
    assert proc.returncode == 2 and "engine 'owt' does not fit cost model 'acctfm'" in proc.stderr
    assert not (tmp_path / "owt.json").exists()  # refused before anything ran or was written


def test_compare_can_be_called_twice():
    problem = load(ROOT / "problems" / "accpar" / "homog-lenet.toml")
    first = optmap.compare(problem, engines=["dp"], seeds=[0])
    second = optmap.compare(problem, engines=["owt"], seeds=[0])  # the submodule import used to shadow it
    assert first.rows[0]["engine"] == "dp" and second.rows[0]["engine"] == "owt"


def test_global_options_after_the_command_and_version():
    proc = cli("plugins", "--debug", "-p", "no:acctfm")
    assert proc.returncode == 0 and "acctfm" not in proc.stdout and "accpar" in proc.stdout, proc.stderr
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"optmap {optmap.__version__}"
    proc = cli()
    assert proc.returncode == 0 and "usage: optmap" in proc.stdout


def test_compare_ranks_a_maximised_objective_the_right_way():
    """Throughput is maximised: the best known value is the largest, gaps are how far below it
    an engine stays (never negative), speedup is engine / baseline."""
    from optmap.comparison import compare

    model = Stages()
    spec = {"cost": {"model": "stages"}}
    problem = make_problem_from_model(model, spec)
    table = compare(problem, ["exhaustive", "random"], seeds=[0], budget=Budget(evaluations=3), baseline="random")
    best = max(r.values["throughput"] for r in table.runs)
    assert table.best_known == best == 1 / 2  # (s0, s1, s2) with k = 1 by brute force: 1 / (2 * 1)
    rows = {row["engine"]: row for row in table.rows}
    assert rows["exhaustive"]["gap_percent"] == 0 and rows["random"]["gap_percent"] >= 0
    assert rows["exhaustive"]["speedup"] == pytest.approx(rows["exhaustive"]["best_mean"] / rows["random"]["best_mean"])


def make_problem_from_model(model, spec):
    from optmap.host import load_host
    from optmap.problem import Problem, SearchDefaults

    return Problem(name="stages", path=None, spec=spec, workload=None, system=None, cost_model=model,
                   objectives=("throughput",), constraints={}, search=SearchDefaults("random", 0, Budget(10)),
                   host=load_host(), senses=("max",), cost_name="stages")


def test_a_cost_model_admits_pins_beyond_its_search_bounds():
    """CostModel.admit (default: the model itself) widens a space whose choices are search bounds;
    the problem's pins are checked against the widened space, and an admit that raises is one line."""
    from optmap.cost import admit
    from optmap.problem.goals import admitted

    class Bounded(Stages):  # k's search stops at 3; a pinned k up to 9 is priced
        def admit(self, pins):
            wider = Bounded()
            wider.space = DesignSpace([permutation("order", ["s0", "s1", "s2"]),
                                       integer("k", 1, max(3, min(9, int(pins.get("k", 3)))))], repair=self._repair)
            return wider

    plain = Stages()
    assert admit(plain, {"k": 2}) is plain and plain.admit({"k": 5}) is plain
    bounded = Bounded()
    assert admit(bounded, {}) is bounded and admit(bounded, "not a table") is bounded
    wider = admit(bounded, {"k": 7})
    assert wider.space.pin({"k": 7}).pinned == {"k": 7}
    with pytest.raises(OptmapError, match="outside"):
        bounded.space.pin({"k": 7})

    class Broken(Stages):
        def admit(self, pins):
            raise OptmapError("k = 7 needs a bigger machine")

    with pytest.raises(OptmapError, match=r"^p.toml: \[fix\] k = 7 needs a bigger machine$"):
        admitted("p.toml", {"k": 7}, Broken())
