"""optmap export: a saved megatron-3d plan as Megatron-Core flags or a DeepSpeed config; bad input is one line."""

import json

import pytest

from optmap.cli import main

PROBLEM = """
[workload]
model = "transformer"
preset = "llama3.1-405b"
batch = 512
dtype = "fp8"

[system]
topology = "dgx-h100"
[[system.groups]]
accelerator = "h100-sxm"
count = 1024

[cost]
model = "megatron-3d"

[search]
engine = "megatron-3d"
"""
# the Llama 3 paper's 405B layout (§3.3.2): tensor 8, pipeline 16 (first and last one layer short); full
# recomputation so that it fits the memory model at data parallel 8
FIX = ["--fix", "tensor_parallel=8", "--fix", "pipeline_parallel=16", "--fix", "data_parallel=8",
       "--fix", "microbatch_size=1", "--fix", "interleaving=1", "--fix", "recompute=full",
       "--fix", "sequence_parallel=true", "--fix", "optimizer_sharding=true", "--fix", "dp_overlap=true"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export")
    (folder / "p.toml").write_text(PROBLEM)
    assert main(["run", str(folder / "p.toml"), *FIX, "--json", str(folder / "r.json")]) == 0
    return folder


def test_megatron_flags(saved, capsys):
    capsys.readouterr()
    assert main(["export", str(saved / "r.json"), "--to", "megatron"]) == 0
    out = capsys.readouterr().out
    flags = [line.rstrip(" \\") for line in out.splitlines()]
    # the pinned plan, flag by flag (126 layers over 16 stages: 7, 14 × 8, 7)
    for want in ("--tensor-model-parallel-size 8", "--pipeline-model-parallel-size 16",
                 "--decoder-first-pipeline-num-layers 7", "--decoder-last-pipeline-num-layers 7",
                 "--micro-batch-size 1", "--global-batch-size 512", "--sequence-parallel", "--tp-comm-overlap",
                 "--recompute-granularity full", "--recompute-method uniform", "--use-distributed-optimizer",
                 "--overlap-grad-reduce",
                 "--bf16", "--fp8-format hybrid", "--num-layers 126", "--num-query-groups 8", "--swiglu",
                 # Llama trains without dropout; Megatron-LM's default (0.1) would store masks the plan has not
                 "--hidden-dropout 0.0", "--attention-dropout 0.0"):
        assert want in flags, want
    assert not any(f.startswith("--num-layers-per-virtual-pipeline-stage") for f in flags)


def test_deepspeed_config_and_notes(saved, capsys, tmp_path):
    capsys.readouterr()
    out = tmp_path / "ds.json"
    assert main(["export", str(saved / "r.json"), "--to", "deepspeed", "--out", str(out)]) == 0
    config = json.loads(out.read_text())
    # batch 512 = 8 replicas × micro-batch 1 × 64 accumulation steps
    assert config["train_batch_size"] == 512 and config["gradient_accumulation_steps"] == 64
    assert config["zero_optimization"] == {"stage": 1, "overlap_comm": True}
    assert config["tensor_parallel"] == {"autotp_size": 8} and config["bf16"] == {"enabled": True}
    err = capsys.readouterr().err.splitlines()
    assert all(line.startswith("note: ") for line in err)
    assert any("PipelineModule(num_stages=16) with 7 layers on the first stage" in line for line in err)
    assert any("sequence_parallel" in line for line in err) and any("fp8" in line for line in err)


def test_bad_input_is_one_error_line(saved, capsys, tmp_path):
    capsys.readouterr()
    assert main(["export", str(saved / "r.json"), "--to", "nemo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "offers megatron, deepspeed" in err
    assert main(["export", str(tmp_path / "none.json"), "--to", "megatron"]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "x.json").write_text("{}")
    assert main(["export", str(tmp_path / "x.json"), "--to", "megatron"]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_the_priced_gradient_type_is_exported(capsys, tmp_path):
    """fp32 main gradients are Megatron-LM's --bf16 default (arguments.py: accumulate and all-reduce in
    fp32 unless --grad-reduce-in-bf16), so a plan with grad_reduce_in_fp32 = true writes no flag; a plan
    with 16-bit gradients (pinned here by the cost option grad_bytes = 2, as NeMo's and Megatron-Bridge's
    performance recipes run) writes --grad-reduce-in-bf16 and, for DeepSpeed, data_types.grad_accum_dtype =
    "bf16" (BF16_Optimizer accumulates in fp32 otherwise)."""
    (tmp_path / "p.toml").write_text(PROBLEM)
    fp32 = [*FIX, "--fix", "grad_reduce_in_fp32=true"]
    assert main(["run", str(tmp_path / "p.toml"), *fp32, "--json", str(tmp_path / "fp32.json")]) == 0
    capsys.readouterr()
    assert main(["export", str(tmp_path / "fp32.json"), "--to", "megatron"]) == 0
    assert "--grad-reduce-in-bf16" not in capsys.readouterr().out
    (tmp_path / "p.toml").write_text(PROBLEM.replace('model = "megatron-3d"', 'model = "megatron-3d"\ngrad_bytes = 2'))
    assert main(["run", str(tmp_path / "p.toml"), *FIX, "--json", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["mapping"]["grad_reduce_in_fp32"] is False
    capsys.readouterr()
    assert main(["export", str(tmp_path / "r.json"), "--to", "megatron"]) == 0
    assert "--grad-reduce-in-bf16" in [line.rstrip(" \\") for line in capsys.readouterr().out.splitlines()]
    assert main(["export", str(tmp_path / "r.json"), "--to", "deepspeed", "--out", str(tmp_path / "ds.json")]) == 0
    # a result saved before the decision existed (no grad_reduce_in_fp32 in its plan) exports what pricing
    # it would take: the space's default, here the 16-bit gradients grad_bytes = 2 pins
    data = json.loads((tmp_path / "r.json").read_text())
    del data["mapping"]["grad_reduce_in_fp32"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["export", str(tmp_path / "old.json"), "--to", "megatron"]) == 0
    assert "--grad-reduce-in-bf16" in [line.rstrip(" \\") for line in capsys.readouterr().out.splitlines()]
    assert json.loads((tmp_path / "ds.json").read_text())["data_types"] == {"grad_accum_dtype": "bf16"}
