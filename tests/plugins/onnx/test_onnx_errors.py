"""Bad ONNX input gets one line naming what is wrong (and exit code 2 from the CLI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from optmap.errors import OptmapError
from optmap.plugins.onnx import read_onnx

from onnx_models import ints, model, node, save, value, weight

_SCRIPT = Path(sys.executable).with_name("optmap")
OPTMAP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "optmap.cli"]
PROBLEM = """\
[workload]
file = "{file}"
batch = 8
dtype = "bf16"
[system]
topology = "fully-connected"
[[system.groups]]
accelerator = "tpu-v3"
count = 4
[cost]
model = "accpar"
"""


def unsupported_model():
    """Relu, then Hardmax, two custom-domain Foo nodes and a Det: four nodes the importer lacks."""
    foo1, foo2 = node("Foo", ["h"], ["f"], "foo1"), node("Foo", ["f"], ["g"], "foo2")
    foo1.domain = foo2.domain = "com.example"
    nodes = [node("Relu", ["x"], ["r"], "relu"), node("Hardmax", ["r"], ["h"], "hm"), foo1, foo2,
             node("Det", ["g"], ["y"], "det")]
    return model(nodes, [value("x", "N", 4, 4)], [value("y", "N")], [], extra_opsets={"com.example": 1})


def test_every_unsupported_op_is_named_in_one_line(tmp_path):
    path = save(unsupported_model(), tmp_path / "bad.onnx")
    with pytest.raises(OptmapError) as info:
        read_onnx(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: 4 ONNX nodes optmap cannot import: ")
    assert "Det ('det'), Hardmax ('hm'), com.example::Foo x2 (e.g. 'foo1')" in message


def test_cli_exits_2_with_the_op_names(tmp_path):
    save(unsupported_model(), tmp_path / "bad.onnx")
    (tmp_path / "p.toml").write_text(PROBLEM.format(file="bad.onnx"))
    run = subprocess.run([*OPTMAP, "validate", str(tmp_path / "p.toml")], capture_output=True, text=True)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Hardmax ('hm')" in lines[0] and "Det ('det')" in lines[0]
    assert "Traceback" not in run.stderr


def test_unsupported_use_of_a_supported_op(tmp_path):
    # A 1-D convolution (N, C, L) is not a conv2d; the label says why.
    nodes = [node("Conv", ["x", "w"], ["y"], "conv1d", kernel_shape=[3])]
    path = save(model(nodes, [value("x", "N", 2, 16)], [value("y", "N", 4, 14)], [weight("w", 4, 2, 3)]),
                tmp_path / "c.onnx")
    with pytest.raises(OptmapError, match=r"1 ONNX node optmap cannot import: Conv \(1-D\) \('conv1d'\)"):
        read_onnx(path)


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x00\xffnot protobuf at all" * 10)
    with pytest.raises(OptmapError, match=r"junk.onnx: not a readable ONNX model"):
        read_onnx(path)
    with pytest.raises(OptmapError, match=r"missing.onnx: no such ONNX file"):
        read_onnx(tmp_path / "missing.onnx")


def test_symbolic_sizes_need_dims(tmp_path):
    # (N, seq, 8) -> linear 8 -> 4: the sequence length must be given a size.
    nodes = [node("MatMul", ["x", "w"], ["y"], "proj")]
    path = save(model(nodes, [value("x", "N", "seq", 8)], [value("y", "N", "seq", 4)], [weight("w", 8, 4)]),
                tmp_path / "seq.onnx")
    with pytest.raises(OptmapError, match=r"input 'x' dimension 1 is symbolic \('seq'\); give its size in "
                                          r"\[workload\] dims = \{ seq = N \}"):
        read_onnx(path)
    layer = read_onnx(path, dims={"seq": 16}).layer("proj")
    assert (layer.op, layer.in_shapes, layer.out_shape, layer.macs) == ("linear", ((16, 8),), (16, 4), 16 * 8 * 4)
    with pytest.raises(OptmapError, match=r"dims names \['sq'\], which no input dimension of the model uses"):
        read_onnx(path, dims={"seq": 16, "sq": 2})


def test_the_batch_must_stay_first(tmp_path):
    # Reshape (N, 4, 8) -> (4, N*8) moves the batch out of the first dimension.
    nodes = [node("Reshape", ["x", "shape"], ["y"], "fold")]
    path = save(model(nodes, [value("x", 2, 4, 8)], [value("y", 4, 16)], [ints("shape", 4, 16)]),
                tmp_path / "fold.onnx")
    with pytest.raises(OptmapError, match=r"tensor 'y' \(output of Reshape node 'fold'\) has shape \[4, 16\], "
                                          r"whose first dimension is not the batch \(2\)"):
        read_onnx(path)


def test_without_the_onnx_package(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    with pytest.raises(OptmapError, match=r"needs the onnx package: pip install 'optmap\[onnx\]'"):
        read_onnx(tmp_path / "any.onnx")


def test_problem_file_options(tmp_path):
    # dims and batch come from the [workload] table; a bad value is one line naming the key.
    nodes = [node("MatMul", ["x", "w"], ["y"], "proj")]
    save(model(nodes, [value("x", "N", "seq", 8)], [value("y", "N", "seq", 4)], [weight("w", 8, 4)]),
         tmp_path / "seq.onnx")
    (tmp_path / "p.toml").write_text(PROBLEM.format(file="seq.onnx") + "[workload.dims]\nseq = 16\n")
    from optmap.problem import load

    layer = load(tmp_path / "p.toml").workload.layer("proj")
    assert (layer.out_shape, layer.macs) == ((16, 4), 16 * 8 * 4)
    (tmp_path / "bad.toml").write_text(PROBLEM.format(file="seq.onnx") + "[workload.dims]\nseq = 0\n")
    with pytest.raises(OptmapError, match=r"dims\.seq") as info:
        load(tmp_path / "bad.toml")
    assert "\n" not in str(info.value)


def test_dims_naming_the_batch_says_to_use_batch():
    path = Path(__file__).resolve().parents[2] / "data" / "onnx" / "vit_tiny.onnx"
    with pytest.raises(OptmapError, match=r"dims names 'batch', the batch dimension of input 'image'; give the "
                                          r"batch as \[workload\] batch = 3"):
        read_onnx(path, dims={"batch": 3})
    assert read_onnx(path, batch=3).batch == 3
