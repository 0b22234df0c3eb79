"""Expert tensor parallelism as a planner decision (``expert_tensor_parallel``): its choices, the
search over them, its memory by hand, the rule a pinned plan breaks, its launch flag, and the
published Grok-1 layout on GB200 that needs it."""

import dataclasses
import json

import numpy as np
import pytest

from optmap.cli import main
from optmap.errors import OptmapError
from optmap.plugins.llm import heldout, heldout_runs
from optmap.run import solve

from test_llm_heldout import validate_llm
from test_llm_moe import columns, plan, problem


def etp_choices(p):
    return next(v.choices for v in p.space.variables if v.name == "expert_tensor_parallel")


def test_choices_are_one_and_the_tensor_sizes_unless_pinned():
    # Qwen3-30B-A3B: tensor sizes divide gcd(32 heads, 4 groups, 6,144) = 4; experts' d_ff 768 takes 2 and 4
    assert etp_choices(problem("qwen3-30b-a3b", gpus=16, batch=16)) == (1, 2, 4)
    assert etp_choices(problem("qwen3-30b-a3b", gpus=16, batch=16, expert_tensor_parallel=2)) == (2,)
    dense = problem("gpt3-5b", gpus=8, batch=8)
    assert etp_choices(dense) == (1,)


def test_free_search_is_the_best_of_the_pinned_ones():
    # brute force over the decision: the free search's best plan is the best of one search per value
    def search(**fixed):
        p = problem("qwen3-30b-a3b", gpus=16, batch=16, max_microbatch=2, max_interleaving=2)
        return solve(dataclasses.replace(p, fixed=fixed))
    runs = {etp: search(expert_tensor_parallel=etp) for etp in (1, 2, 4)}
    pinned = {etp: r.values["time"] for etp, r in runs.items()}
    free = search()
    assert free.evaluations == sum(r.evaluations for r in runs.values())  # the pins partition the plans
    assert free.values["time"] == pytest.approx(min(pinned.values()))
    assert free.best.as_dict()["expert_tensor_parallel"] == min(pinned, key=pinned.get)


def test_expert_weights_split_over_the_expert_tensor_ranks_by_hand():
    # Mixtral 8x7B on 64 H100s, t = 2, p = 4 (8 layers a stage), d = 8, ep = 8: each GPU holds one
    # expert of each of its 8 layers, 176,160,768 weights each (3 · 4,096 · 14,336); etp = 2 keeps
    # half of each: 2 B · 8 · 176,160,768 / 2 fewer bytes of 16-bit weights than etp = 1
    m = problem().cost_model
    base = plan(tensor_parallel=2, data_parallel=8, sequence_parallel=True)
    one, two = columns(m, base), columns(m, {**base, "expert_tensor_parallel": 2})
    assert one["memory_weights"] - two["memory_weights"] == pytest.approx(2.0 * 8 * 176_160_768 / 2, rel=1e-12)


def test_a_size_the_search_does_not_try_is_named_and_the_cost_option_pins_it():
    m = problem().cost_model
    mixed = {**plan(tensor_parallel=4, data_parallel=4, sequence_parallel=True), "expert_tensor_parallel": 2}
    report = m.evaluate(m.space.mapping(mixed))
    assert not report.feasible and "neither 1 nor tensor_parallel = 4" in report.reason
    pinned = problem(expert_tensor_parallel=2).cost_model
    assert pinned.evaluate(pinned.space.mapping(mixed)).feasible
    # the engine names the same rule when every size is pinned, and the cost option when it leaves no shape
    shape = {k: v for k, v in mixed.items() if k in ("tensor_parallel", "pipeline_parallel", "data_parallel",
                                                     "microbatch_size", "interleaving", "context_parallel",
                                                     "expert_parallel", "expert_tensor_parallel")}
    with pytest.raises(OptmapError, match="neither 1 nor tensor_parallel = 4"):
        solve(dataclasses.replace(problem(), fixed=shape))
    with pytest.raises(OptmapError, match=r"expert_tensor_parallel = 3: expert_parallel × 3 must divide"):
        solve(problem("qwen3-30b-a3b", gpus=16, batch=16, expert_tensor_parallel=3))  # 16 GPUs: no factor 3


def test_export_writes_the_plans_expert_tensor_size(tmp_path, capsys):
    path, out = tmp_path / "m.toml", tmp_path / "r.json"
    path.write_text('[workload]\nmodel = "transformer"\npreset = "mixtral-8x7b"\nbatch = 256\ndtype = "bf16"\n'
                    '[system]\ntopology = "dgx-h100"\n[[system.groups]]\naccelerator = "h100-sxm"\ncount = 64\n'
                    '[cost]\nmodel = "megatron-3d"\n')
    fixes = [a for k, v in {**plan(tensor_parallel=2, data_parallel=8, sequence_parallel="true"),
                            "expert_tensor_parallel": 2}.items() for a in ("--fix", f"{k}={v}")]
    assert main(["run", str(path), *fixes, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["mapping"]["expert_tensor_parallel"] == 2
    capsys.readouterr()
    assert main(["export", str(out), "--to", "megatron"]) == 0
    assert "--expert-tensor-parallel-size 2" in [line.rstrip(" \\") for line in capsys.readouterr().out.splitlines()]


def test_grok_on_gb200_as_the_issue_states_it_is_feasible():
    # dgxc-benchmarking 25.05.01 grok1/launch.sh runs Grok-1 on GB200 with TP 4, EP 8 and ET 4; the
    # issue's problem file pins the layout but not ET. With expert tensor parallelism 1 each GPU holds
    # a whole 32,768-wide expert of its 64 layers and the model needed 186.7 GiB of the 184 GiB: the
    # planner now finds ET = 4 itself
    run = next(r for r in heldout_runs.runs() if r.label == "Grok1-314B BF16 128 GB200 (dgxc-25.05)")
    row = validate_llm.predict(run, recipe=False)
    assert row["feasible"] and row["plan"]["expert_tensor_parallel"] == 4


def test_recipes_state_the_expert_tensor_size_or_megatron_cores_default():
    def etp(label):
        return heldout.recipe_options(next(r for r in heldout_runs.runs() if r.label == label))["expert_tensor_parallel"]
    # NeMo 24.12's Grok-1 YAML sets none: Megatron-Core 0.10 takes the tensor-parallel size (4)
    assert etp("Grok1-314B BF16 1024 H100 (dgxc-25.04)") == 4
    # 25.05's launch.sh says ET=1 on H100; Megatron-Bridge's and the ModelZoo's configs say 1
    assert etp("Grok1-314B BF16 512 H100 (dgxc-25.05)") == 1
    assert etp("Qwen3-235B-A22B FP8 256 H100 (bridge-26.04)") == 1
    assert etp("Qwen3-235B-A22B BF16 256 H100 TP4 EP8 (moe-modelzoo)") == 1


def test_expert_links_of_mixed_sizes_in_one_call_equal_one_call_each():
    # the search prices plans of different expert tensor sizes together: one vectorised call must
    # place each plan's groups as a call for that plan alone does (brute force: test_llm_moe)
    from optmap.plugins.hardware.accelerators import A100
    from optmap.plugins.llm.cluster import dgx_h100, expert_links
    from optmap.system import GroupSpec

    system = dgx_h100([GroupSpec(A100, 128)])
    cases = [(t, d, p, ep, etp) for t, d, p, ep in ((1, 16, 2, 8), (2, 16, 2, 16), (4, 4, 4, 4), (8, 4, 2, 32),
                                                    (4, 8, 2, 8))
             for etp in (1, 2, 4) if (t * d) % (ep * etp) == 0]
    assert {c[-1] for c in cases} == {1, 2, 4}
    together = expert_links(system, *(np.array(x) for x in zip(*cases)))
    for i, case in enumerate(cases):
        alone = expert_links(system, *case)
        assert {k: float(v[i]) for k, v in together.items()} == {k: float(v) for k, v in alone.items()}, case


def test_sampling_engines_score_any_point_of_the_space():
    # random, GA and TPE sample invalid plans too (here ep · etp above t · d): each is priced as its
    # nearest valid shape and marked infeasible, never raised on (a random search ran into it)
    m = problem("qwen3-30b-a3b", gpus=16, batch=16).cost_model
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, len(v.choices), 3000) for v in m.space.variables]).astype(float)
    cols = m.evaluate_batch(X)
    values = m.values(X)
    broken = np.mod(values["tensor_parallel"] * values["data_parallel"] * values["context_parallel"],
                    values["expert_parallel"] * values["expert_tensor_parallel"]) != 0
    assert broken.any() and not cols["feasible"][broken].any()
    assert np.isfinite(cols["time"]).all()
