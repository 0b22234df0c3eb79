"""``optmap run problems/llm/...`` as a user runs it: the GPU count and batch by --set, plans by --fix,
the report's tables on screen and in --json, one-line errors."""

import json
from pathlib import Path

import numpy as np
import pytest

from optmap.cli import main
from optmap.plugins.llm.engine import has_data_parallel_twin
from optmap.problem import load

ROOT = Path(__file__).resolve().parents[3]
GPT3 = ROOT / "problems" / "llm" / "gpt3-175b.toml"
SETS = ["system.groups.0.count=64", "workload.batch=64"]  # Korthikanti Table 3's 175B: 64 GPUs, batch 64
SMALL = [arg for s in SETS for arg in ("--set", s)]
# Korthikanti et al. 2022 Table 3 / 5: 175B on 64 GPUs, selective recomputation + sequence parallelism
PLAN = {"tensor_parallel": 8, "pipeline_parallel": 8, "data_parallel": 1, "microbatch_size": 1,
        "interleaving": 3, "recompute": "selective", "sequence_parallel": "true",
        "optimizer_sharding": "false", "dp_overlap": "false",
        # issue 25's decisions (every decision is fixed here, so they are too; a dense model has
        # expert_parallel and expert_tensor_parallel 1 only)
        "context_parallel": 1, "expert_parallel": 1, "fsdp": "false", "offload": "none",
        "grad_reduce_in_fp32": "false",  # fp16 training: 16-bit gradients, Megatron-LM's default
        "expert_tensor_parallel": 1}


def run(tmp_path, *args):
    out = tmp_path / "result.json"
    code = main(["run", str(GPT3), *SMALL, *args, "--json", str(out)])
    return code, (json.loads(out.read_text()) if out.exists() else None)


def test_fixing_every_decision_scores_the_users_plan(tmp_path, capsys):
    fixes = [arg for k, v in PLAN.items() for arg in ("--fix", f"{k}={v}")]
    code, result = run(tmp_path, *fixes)
    assert code == 0 and result["evaluations"] == 1
    want = {k: {"true": True, "false": False}.get(v, v) for k, v in PLAN.items()}
    assert result["mapping"] == want
    # the same plan scored directly by the cost model (no search involved)
    model = load(GPT3, SETS).cost_model
    report = model.evaluate(model.space.mapping(want))
    assert result["values"]["time"] == pytest.approx(report.metrics["time"])
    tables = result["report"]["tables"]
    assert sum(row["seconds"] for row in tables["time_breakdown"]) == pytest.approx(report.metrics["time"])
    assert tables["memory_per_gpu"][-2]["part"] == "total"
    assert [row["rank"] for row in tables["top_plans"]] == [1]
    screen = capsys.readouterr().out
    for title in ("time breakdown", "memory per gpu", "top plans", "pipeline bubble"):
        assert title in screen


def test_fixing_some_decisions_searches_the_rest(tmp_path):
    code, result = run(tmp_path, "--fix", "tensor_parallel=4", "--fix", "recompute=selective")
    assert code == 0
    assert result["mapping"]["tensor_parallel"] == 4 and result["mapping"]["recompute"] == "selective"
    # brute force over the pinned space: the same optimum
    problem = load(GPT3, SETS, fixes=["tensor_parallel=4", "recompute=selective"])
    rows = np.concatenate(list(problem.space.grid()))
    cols = problem.cost_model.evaluate_batch(rows)
    assert result["values"]["time"] == pytest.approx(cols["time"][cols["feasible"]].min())
    v = problem.cost_model.values(rows)  # each distinct plan once: a switch that cannot act, off
    # (issue 25: sharding and overlap act over the d·cp ranks holding the same weights, and FSDP
    # shards the optimizer and reduces layer by layer, so ZeRO-1 and overlap beside it cannot act)
    shards, fsdp = v["data_parallel"] * v["context_parallel"], v["fsdp"]
    distinct = ~(((v["tensor_parallel"] == 1) & v["sequence_parallel"])
                 | (((shards == 1) | fsdp) & (v["optimizer_sharding"] | v["dp_overlap"]))
                 | ((shards == 1) & fsdp)
                 # and a context-parallel plan whose data-parallel twin is as good (engine docstring)
                 | has_data_parallel_twin({v.name: [v.pinned] if v.is_pinned else v.choices for v in problem.space.variables},
                                          v["data_parallel"], v["microbatch_size"], v["context_parallel"]))
    want = np.sort(cols["time"][cols["feasible"] & distinct])[:5]
    top = result["report"]["tables"]["top_plans"]
    assert all(r["tensor"] == 4 and r["recompute"] == "selective" for r in top)
    assert [r["time s"] for r in top] == pytest.approx(want.tolist())


@pytest.mark.parametrize("fix,message", [
    ("tensor_parallel=5", "decision 'tensor_parallel': 5 is not one of [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48]"),
    ("tensor_paralel=8", "no decision 'tensor_paralel'; did you mean 'tensor_parallel'"),
    ("recompute=sometimes", "decision 'recompute': 'sometimes' is not one of ['none', 'selective', 'full']"),
])
def test_bad_pins_are_one_line_errors(tmp_path, capsys, fix, message):
    code, _ = run(tmp_path, "--fix", fix)
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1


def test_an_infeasible_pinned_plan_says_why(tmp_path, capsys):
    # no recomputation, no sequence parallelism: Korthikanti Figure 1's 66.8 GiB of activations + weights
    fixes = [arg for k, v in {**PLAN, "recompute": "none", "sequence_parallel": "false"}.items()
             for arg in ("--fix", f"{k}={v}")]
    code, _ = run(tmp_path, *fixes)
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and any("GiB per GPU" in line and "78.0 GiB available" in line for line in err)
    fixes = [arg for k, v in {**PLAN, "data_parallel": 2}.items() for arg in ("--fix", f"{k}={v}")]
    code, _ = run(tmp_path, *fixes)
    assert code != 0 and "exceeds the system's 64" in capsys.readouterr().err
