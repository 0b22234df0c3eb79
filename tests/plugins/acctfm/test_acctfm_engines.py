"""AccTFM engines through problem files, the CLI and the evaluator (integration)."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest

import optmap
from optmap.cli import main
from optmap.errors import OptmapError
from optmap.plugins.acctfm.schedule import PS, CostTables
from optmap.problem import build_problem
from optmap.run import make_engine, solve

PROBLEMS = Path(__file__).resolve().parents[3] / "problems" / "acctfm"
K = np.array(PS, float)


def _time(problem, engine, **options):
    return solve(problem, engine, options=options).values["time"]


def test_cli_run_shows_both_directions(tmp_path, capsys):
    out = tmp_path / "tf8.json"
    assert main(["run", str(PROBLEMS / "tf8.toml"), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "K fwd" in text and "K bwd" in text and "enc0.self_attn" in text and "speedup" in text
    result = json.loads(out.read_text())
    rows = result["report"]["layers"]
    assert len(rows) == 31 and all(r["K fwd"] in PS and r["K bwd"] in PS for r in rows[:30])
    assert result["report"]["metrics"]["speedup"] > 1 and result["extra"]["method"] == "exact"


def test_cli_compare_megatron_acctfm_random(tmp_path, capsys):
    out = tmp_path / "cmp.json"
    args = ["compare", str(PROBLEMS / "tf8.toml"), "--search", "megatron,acctfm,random",
            "--set", "search.budget.evaluations=1000", "--json", str(out)]
    assert main(args) == 0
    assert "exact optimum" in capsys.readouterr().out
    table = json.loads(out.read_text())
    rows = {r["engine"]: r for r in table["rows"]}
    assert rows["megatron"]["speedup"] == 1.0 and rows["acctfm"]["gap_percent"] == 0.0
    assert rows["acctfm"]["speedup"] > 1 and rows["random"]["best_mean"] >= rows["acctfm"]["best_mean"]
    acctfm_run = next(r for r in table["runs"] if r["engine"] == "acctfm")
    assert {"K fwd", "K bwd"} <= set(acctfm_run["report"]["layers"][0])


def test_engines_on_tiny_problem_agree_with_exhaustive():
    problem = optmap.load(PROBLEMS / "tiny.toml")
    exhaustive = solve(problem, "exhaustive")
    assert exhaustive.evaluations == problem.cost_model.space.size == 324
    exact = solve(problem, "acctfm")
    assert exact.values["time"] == pytest.approx(exhaustive.values["time"], rel=1e-12)
    assert _time(problem, "acctfm", exact=False) >= exact.values["time"] - 1e-15
    rand = solve(problem, "random", seed=3)
    assert rand.values["time"] >= exact.values["time"] - 1e-15
    assert solve(problem, "random", seed=3).values == rand.values  # deterministic by seed
    base = solve(problem, "megatron")
    assert base.report.metrics["speedup"] == pytest.approx(1.0)
    assert base.best.as_dict()["keep_ratio"] == 1.0 and base.best.as_dict()["bits"] == 32
    comp = solve(problem, "megatron", options={"compression": "on"})
    assert comp.best.as_dict()["keep_ratio"] == 0.5 and comp.best.as_dict()["bits"] == 4


def _random_spec(rng, kind, layers):
    return {
        "workload": {"model": "transformer", "kind": kind, "layers": int(layers), "d_model": 64, "heads": 4,
                     "d_ff": int(rng.choice([128, 1024, 4096])), "seq_len": int(rng.choice([8, 64, 256])),
                     "vocab": 500, "batch": int(rng.choice([4, 16, 64]))},
        "system": {"topology": "fully-connected", "bandwidth_gbps": float(rng.uniform(0.5, 20)),
                   "latency_us": float(rng.uniform(0, 200)),
                   "groups": [{"accelerator": "titan-rtx", "count": int(rng.choice([2, 4]))}]},
        "cost": {"model": "acctfm", "keep_ratio": float(rng.choice([0.5, 0.6, 1.0])), "bits": int(rng.choice([4, 32])),
                 "efficiency": float(rng.uniform(0.05, 0.9)), "half_efficiency_tokens": float(rng.uniform(0, 4096)),
                 "launch_overhead_us": float(rng.uniform(0, 300)),
                 "algorithm": str(rng.choice(["recursive_doubling", "ring"]))},
    }


def test_exact_equals_brute_force_through_the_cost_model():
    rng = np.random.default_rng(11)
    for trial in range(12):  # training: 2 or 3 blocks per direction (up to 3^6 x 4 points)
        kind = ["encoder", "decoder"][trial % 2]
        problem = build_problem(_random_spec(rng, kind, 1))
        brute = solve(problem, "exhaustive").values["time"]
        assert _time(problem, "acctfm") == pytest.approx(brute, rel=1e-12)
    for trial in range(6):  # inference: one direction of 4 to 6 blocks
        spec = _random_spec(rng, ["encoder", "decoder", "decoder-only"][trial % 3], 2)
        spec["workload"]["phase"] = "inference"
        problem = build_problem(spec)
        brute = solve(problem, "exhaustive").values["time"]
        assert _time(problem, "acctfm") == pytest.approx(brute, rel=1e-12)


def test_exact_never_loses_to_faithful_or_uniform():
    rng = np.random.default_rng(5)
    specs = [_random_spec(rng, kind, rng.integers(1, 4)) for kind in ("encoder", "decoder-only", "encoder-decoder")
             for _ in range(4)]
    for spec in specs:
        if spec["workload"]["kind"] == "encoder-decoder":
            spec["workload"]["decoder_layers"] = 2
        problem = build_problem(spec)
        model = problem.cost_model
        exact = _time(problem, "acctfm")
        assert exact <= _time(problem, "acctfm", exact=False) + 1e-15
        uniform = model.evaluate_batch(np.array([
            model.plan_vector([k] * model.L, [k] * model.L, s) for k in PS for s in model.settings()]))["time"]
        assert exact <= uniform.min() + 1e-15
    for name in ("tf8", "tf16", "tf32", "tf64"):  # the reproduction problems themselves
        problem = optmap.load(PROBLEMS / f"{name}.toml")
        model = problem.cost_model
        exact = _time(problem, "acctfm")
        assert exact <= _time(problem, "acctfm", exact=False) + 1e-15
        assert all(exact <= model.evaluate(plan).metrics["time"] + 1e-15 for plan in model.plans().values())


def _inject(problem, tcp, tcm):
    """Replace the model's uncompressed tables by a hand-made instance (same tables both directions)."""
    model = problem.cost_model
    L = len(tcp)
    tab = CostTables(ks=PS, tcp_fwd=tcp, tcm_fwd=tcm, tcp_bwd=tcp[::-1], tcm_bwd=tcm[::-1],
                     bytes_fwd=np.ones((L, 3)), bytes_bwd=np.ones((L, 3)))
    model._tables[(model.off, model.ks)] = tab  # test hook: the cache the engines and evaluator read
    return model


def _hand_problem(kind):
    spec = {
        "workload": {"model": "transformer", "kind": kind, "layers": 1 if kind == "decoder" else 2, "d_model": 64,
                     "heads": 4, "d_ff": 128, "seq_len": 8, "vocab": 50, "batch": 8},
        "system": {"topology": "fully-connected", "groups": [{"accelerator": "titan-rtx", "count": 4}]},
        "cost": {"model": "acctfm", "include_head": False, "head_comm": False},
    }
    return build_problem(spec)


def test_note_counterexample_through_engines():
    # note §2.5: Alg. 1 keeps one state per (layer, K) → [2,2,4] = 11.65; the optimum is [4,4,4] = 11.25
    problem = _hand_problem("decoder")  # 3 blocks: self_attn, cross_attn, ffn
    tcp = np.array([[1.2, 0.7, 0.45], [3.2, 1.7, 0.95], [4.2, 2.2, 1.2]])
    tcm = np.array([[3.2, 1.7, 0.95], [4.0, 2.0, 1.0], [3.0, 1.5, 0.75]])
    _inject(problem, tcp, tcm)  # the backward pass sees the same chain (reversed tables, reversed order)
    faithful = solve(problem, "acctfm", options={"exact": False})
    exact = solve(problem, "acctfm")
    assert faithful.values["time"] == pytest.approx(2 * 11.65) and exact.values["time"] == pytest.approx(2 * 11.25)
    assert [r.decisions["K fwd"] for r in faithful.report.layers[:3]] == [2, 2, 4]
    assert [r.decisions["K bwd"] for r in faithful.report.layers[:3]] == [4, 2, 2]  # planned from the last block
    assert [r.decisions["K fwd"] for r in exact.report.layers[:3]] == [4, 4, 4]
    assert solve(problem, "exhaustive").values["time"] == pytest.approx(2 * 11.25)


def test_note_worked_example_through_engines():
    # note §2.5: uniform 1/2/4 = 11.2 / 9.0 / 9.25; Alg. 1 = exact = [2,4,4,2] → 8.7
    problem = _hand_problem("encoder")  # 2 layers x (self_attn, ffn) = 4 blocks
    tcp = np.array([1.0, 0.4, 4.0, 0.6])[:, None] / K + 0.1
    tcm = 0.2 + np.ones(4)[:, None] / K
    model = _inject(problem, tcp, tcm)
    plans = model.plans()
    assert [model.evaluate(plans[p]).metrics["fwd_time"] for p in ("megatron", "uniform-2", "uniform-4")] \
        == pytest.approx([11.2, 9.0, 9.25])
    for exact in (True, False):
        result = solve(problem, "acctfm", options={"exact": exact})
        assert result.report.metrics["fwd_time"] == pytest.approx(8.7)
        assert [r.decisions["K fwd"] for r in result.report.layers[:4]] == [2, 4, 4, 2]


def test_engine_options_and_capability_errors():
    problem = optmap.load(PROBLEMS / "tiny.toml")
    assert make_engine(problem, "acctfm").exact is True
    assert make_engine(problem, "acctfm", {"exact": False}).exact is False
    assert make_engine(problem, "acctfm", {"compression": "off"}).exact is False  # only part of the space
    off = solve(problem, "acctfm", options={"compression": "off"})
    assert off.best.as_dict()["keep_ratio"] == 1.0 and off.report.metrics["compression_ratio"] == 1.0
    with pytest.raises(OptmapError, match="unknown key 'exactly'"):
        make_engine(problem, "acctfm", {"exactly": True})
    plain = optmap.load(PROBLEMS / "tiny.toml", ["cost.keep_ratio=1.0", "cost.bits=32"])
    with pytest.raises(OptmapError, match="needs a compression setting"):
        solve(plain, "megatron", options={"compression": "on"})
    accpar = build_problem({
        "workload": {"model": "lenet", "batch": 8},
        "system": {"topology": "fully-connected", "groups": [{"accelerator": "v100", "count": 2}]},
        "cost": {"model": "accpar"},
    })
    for engine in ("acctfm", "megatron"):
        with pytest.raises(OptmapError, match="capability 'acctfm_tables'"):
            make_engine(accpar, engine)
    spec = copy.deepcopy(plain.spec)
    with pytest.raises(OptmapError, match="capability 'layer_chain_tables'"):
        make_engine(build_problem(spec), "accpar")
