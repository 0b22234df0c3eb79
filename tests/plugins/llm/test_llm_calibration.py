"""Calibration against published Megatron-LM runs: the shipped A100 constants and their errors."""

import numpy as np
import pytest

from optmap.host import load_host
from optmap.plugins.llm import calibration
from optmap.plugins.hardware.accelerators import B200, GB200
from optmap.plugins.llm.compute import A100_FIT, H100_FIT, efficiency_for
from optmap.plugins.llm.published import runs


def test_a100_shape_curve_is_the_h100_one_scaled_by_ridge_points():
    # datasheet ridge points: A100 312 TFLOP/s / 2,039 GB/s, H100 989.4 TFLOP/s / 3,350 GB/s
    assert A100_FIT.half_dim == round(H100_FIT.half_dim * (312 / 2039) / (989.4 / 3350)) == 104


@pytest.mark.parametrize("acc, peak_tflops, hbm_gbps, half_dim", [(B200, 2250, 8000, 190.46), (GB200, 2500, 8000, 211.62)])
def test_blackwell_takes_the_a100_fractions_and_its_own_ridge_point(acc, peak_tflops, hbm_gbps, half_dim):
    # no Blackwell GEMM is measured: the A100's fractions, half_dim by the A100's rule from the datasheet
    # ridge point (B200: 200 × (2250/8000) / (989.4/3350) = 190.46; GB200: 200 × 0.3125 / 0.29534 = 211.62)
    eff, own = efficiency_for(acc, acc.flops_per_s("bf16"))
    assert not own and (eff.gemm, eff.memory, eff.launch) == (A100_FIT.gemm, A100_FIT.memory, A100_FIT.launch)
    assert eff.half_dim == pytest.approx(H100_FIT.half_dim * (peak_tflops / hbm_gbps) / (989.4 / 3350))
    assert eff.half_dim == pytest.approx(half_dim, abs=0.01)


def test_published_runs_are_consistent():
    # Narayanan et al. Table 1 row 10: 1T on 3,072 GPUs, batch 3,072, 163 TFLOP/s per GPU ->
    # Eq. 3 FLOPs / (3072 x 163e12) = 102.6 s; Korthikanti Table 5: 1T 94.42 s (full), 71.49 s (sel + sp)
    by_label = {(r.source, r.label): r for r in runs()}
    assert by_label[("narayanan-t1", "1008.0B / 3072")].measured_s == pytest.approx(102.63, abs=0.01)
    assert by_label[("korthikanti-t5", "1T full")].measured_s == 94.42
    # (issue 25: the cost model's attention default became fused flash attention, and its tensor-parallel
    # collectives chunked beside their GEMMs (Transformer Engine's userbuffers), so every 2021-2022 run
    # pins the unfused attention core and the whole collectives its Megatron-LM ran)
    old = {"attention": "unfused", "tp_comm_overlap": False}
    assert all(r.options == {"tp_overlap": False, "grad_accumulation_fusion": False, **old}
               for r in runs() if r.source.startswith("narayanan"))
    assert all(r.options == old for r in runs() if r.source == "korthikanti-t5")


@pytest.mark.parametrize("source,mean,worst", [("korthikanti-t5", 3.5, 8.0), ("narayanan-t2", 3.5, 8.0)])
def test_shipped_constants_meet_the_aim_on_published_runs(source, mean, worst):
    # the issue's aim (mean <= 3.5 %, none off by more than 8 %) against the papers' measured times
    err = 100 * np.abs(calibration.errors(calibration.cases([source], host=load_host())))
    assert err.mean() <= mean and err.max() <= worst


def test_table1_interleaves_as_the_paper_did():
    # Narayanan et al. SC'21 §5.1: "we use the interleaved pipeline schedule with the scatter/gather
    # optimization enabled" for Table 1 (degree not reported: the planner chooses it wherever there
    # is a pipeline); Table 2 does not say, so it keeps Megatron-LM's default schedule
    for run in runs():
        if run.source == "narayanan-t1":
            pipelined = run.fixed["pipeline_parallel"] > 1
            assert ("interleaving" not in run.fixed) if pipelined else run.fixed["interleaving"] == 1, run.label
        if run.source == "narayanan-t2":
            assert run.fixed["interleaving"] == 1
    free = [c for c in calibration.cases(["narayanan-t1"], host=load_host()) if c.run.label == "145.6B / 1536"][0]
    assert len(free.allowed["interleaving"]) > 1
