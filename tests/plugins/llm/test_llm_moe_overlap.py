"""Megatron-Core's expert-parallel all-to-all overlap (``moe_a2a_overlap``): what it hides by hand,
the plans Megatron-Core refuses with it, and the SMs its kernels hold."""

import numpy as np
import pytest

from optmap.plugins.llm import moe
from optmap.plugins.llm.model import CATEGORIES, DECISIONS

from test_llm_moe import columns, plan, problem


def test_all_to_all_overlap_by_hand():
    # the schedule's warm-up: pipeline 4 without interleaving runs p - 1 = 3 of its 16 micro-batches
    # (256 / 16) alone; the other 13 hide each of their four all-to-alls (a quarter of the exchange)
    # behind its partner in another micro-batch (Megatron-Core's TransformerLayerSchedulePlan.run):
    # combine_bwd ‖ attention fwd, dispatch_fwd ‖ MLP bwd, dispatch_bwd ‖ MLP fwd, combine_fwd ‖
    # attention bwd. Interleaved (v 2): (4-1)·2 + (2-1)·4 = 10 of 32 chunks alone
    big = ((5.0, 5.0), (5.0, 5.0))
    assert float(moe.overlapped(1.0, 0.25, *big, 4, 1, 16)) == pytest.approx(1.0 - 13 / 16)
    # short partners hide only themselves: 0.1 + 0.2 + 0.25 (capped at a quarter) + 0.05 = 0.6
    assert float(moe.overlapped(1.0, 0.25, (0.1, 0.2), (0.3, 0.05), 4, 1, 16)) == pytest.approx(1.0 - 13 / 16 * 0.6)
    assert float(moe.overlapped(1.0, 0.25, *big, 4, 2, 16)) == pytest.approx(1.0 - 22 / 32)
    assert float(moe.overlapped(1.0, 0.25, *big, 1, 1, 4)) == pytest.approx(1.0 - 3 / 4)  # the first forward alone
    # each all-to-all holds 20 of the H100's 132 SMs while it runs (Megatron-Core's DeepEP default): the
    # partner runs on the other 112, so at least 20/132 of every overlapped all-to-all stays exposed
    share = 20 / 132
    assert float(moe.overlapped(1.0, 0.25, *big, 4, 1, 16, share)) == pytest.approx(1.0 - 13 / 16 * (1 - share))
    # a partner shorter than the rest of its all-to-all still hides only itself: 0.1 + 0.2 + 0.05 and
    # min(0.25 · 112/132, 0.3) = 0.2121 for the MLP's
    hidden = 0.1 + 0.2 + 0.25 * (1 - share) + 0.05
    assert float(moe.overlapped(1.0, 0.25, (0.1, 0.2), (0.3, 0.05), 4, 1, 16, share)) == pytest.approx(1.0 - 13 / 16 * hidden)
    # with the forward recomputed (full or moe) the layer's exchange holds six all-to-alls of 0.25: the
    # recomputation's two stay exposed, the four of the schedule hide as before
    assert float(moe.overlapped(1.5, 0.25, *big, 4, 1, 16)) == pytest.approx(1.5 - 13 / 16)
    # in a plan: Mixtral on 64 H100s, pipeline 4 (plan()); only the expert exchange changes, and the
    # pipeline bubble with it (a shorter stage)
    off, on = (columns(problem(moe_a2a_overlap=x).cost_model, plan(interleaving=2)) for x in (False, True))
    assert on["ep_comm_s"] < off["ep_comm_s"] and on["forward_s"] == off["forward_s"]
    assert on["bubble_s"] < off["bubble_s"]
    assert on["time"] == pytest.approx(off["time"] - (off["ep_comm_s"] - on["ep_comm_s"])
                                       - (off["bubble_s"] - on["bubble_s"]), rel=1e-9)


def test_overlap_plans_follow_megatron_cores_rules():
    # transformer_config.py refuses --overlap-moe-expert-parallel-comm without expert parallelism,
    # with a pipeline that is not interleaved, and with full or moe recomputation (none, selective
    # and norm_act pass); without the option every such plan stays valid
    on, off = problem(moe_a2a_overlap=True).cost_model, problem().cost_model
    refused = [plan(expert_parallel=1, interleaving=2), plan(), plan(interleaving=2, recompute="full"),
               plan(interleaving=2, recompute="moe")]
    accepted = [plan(interleaving=2), plan(interleaving=2, recompute="selective"),
                plan(interleaving=2, recompute="norm_act"),
                plan(pipeline_parallel=1, data_parallel=64)]
    def broken(model, given):
        values = {k: np.array([CATEGORIES[k].index(given[k]) if k in CATEGORIES else given[k]]) for k in DECISIONS}
        return bool(model.validity(model.plan_arrays(values))["overlap"][0])

    assert all(broken(on, g) and not broken(off, g) for g in refused)
    assert not any(broken(on, g) for g in accepted)
    # an otherwise feasible plan (pipeline 4, no interleaving) is infeasible with the option, in one line
    assert columns(off, plan())["feasible"] and not columns(on, plan())["feasible"]
    assert "needs expert_parallel > 1, interleaving > 1" in on.evaluate(on.space.mapping(plan())).reason


def test_comm_share_is_the_dispatchers_sms_over_the_gpus():
    from optmap.plugins.hardware.accelerators import B200, H100
    from optmap.system import Accelerator

    assert moe.comm_share(H100, 20) == pytest.approx(20 / 132)  # H100 SXM5: 132 SMs (NVIDIA whitepaper)
    assert moe.comm_share(B200, 24) == pytest.approx(24 / 148)  # Blackwell B200: 148
    custom = Accelerator("my-gpu", 1e15, 8e10, 3e12, 1e11, attrs={"sms": 100})
    assert moe.comm_share(custom, 20) == pytest.approx(0.2)
    assert moe.comm_share(Accelerator("other", 1e15, 8e10, 3e12, 1e11), 20) == 0.0  # unknown SMs: no contention
