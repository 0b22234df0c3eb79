"""FPDeep's view of a workload: units per split, per-unit work/weights/activations, op counts."""

import pytest

from optmap.errors import OptmapError
from optmap.plugins.fpdeep.layers import layer_table
from optmap.plugins.zoo.models import alexnet, resnet18, vgg16
from optmap.workload import WorkloadBuilder


def tiny(phase="training"):
    """conv 3->4 (3x3, pad 1) on 8x8, ReLU, 2x2 max pool, flatten, linear 64->5."""
    b = WorkloadBuilder("tiny", (3, 8, 8))
    x = b.activation(b.conv2d("input", 4, 3, padding=1, name="conv"), name="relu")
    x = b.flatten(b.maxpool2d(x, 2, name="pool"), name="flat")
    b.linear(x, 5, name="fc")
    return b.build(1, "fp32", phase)


def test_tiny_table_by_hand():
    t = layer_table(tiny())
    assert t.names == ("conv", "fc")
    # conv: 8*8 outputs x 3*3*3 inputs x 4 channels = 6912 MACs; fc: 64 x 5 = 320
    assert t.macs.tolist() == [6912, 320]
    assert t.work.tolist() == [3 * 6912, 3 * 320]  # FP + EB + PG
    assert t.units.tolist() == [[3, 4], [64, 5]]  # ICP = input channels, OCP = output channels
    assert t.macs_per_unit[0].tolist() == [6912 / 3, 6912 / 4]
    assert t.weights_per_unit[0].tolist() == [9 * 4, 9 * 3]  # ICP: K² OC per channel; OCP: K² IC
    assert t.in_spatial.tolist() == [64, 1] and t.out_spatial.tolist() == [64, 1]
    assert t.handoff.tolist() == [64, 5]  # 4 x 4 x 4 after pooling; the fc output
    assert t.act_per_unit[0].tolist() == [64, 0] and t.act_fixed[0].tolist() == [0, 3 * 64]
    assert t.fc.tolist() == [False, True]


def test_op_count_conventions_by_hand():
    weighted = 6 * (6912 + 320)  # 2 ops per MAC, FP + EB + PG
    # IR: ReLU 256 outputs fwd + bwd, max pool 2x2 x 64 outputs fwd + bwd, flatten free
    elementwise = 2 * 256 + 2 * 4 * 64
    assert layer_table(tiny(), op_count="macs").ops_per_image == weighted
    assert layer_table(tiny(), op_count="ir").ops_per_image == weighted + elementwise
    no_eb = layer_table(tiny(), first_layer_eb=False, op_count="macs")
    assert no_eb.phases.tolist() == [2, 3] and no_eb.ops_per_image == weighted - 2 * 6912


def test_vgg16_counts_match_note_4_6():
    t = layer_table(vgg16(batch=1))
    assert len(t) == 16 and t.fc.sum() == 3
    assert t.macs[1] == 224 * 224 * 9 * 64 * 64  # conv1_2: 1849.69 M (note §4.6)
    assert t.macs.sum() / 1e9 == pytest.approx(15.47, abs=0.005)  # note §4.6 total
    assert 6 * t.macs.sum() / 1e9 == pytest.approx(92.82, abs=0.03)  # training ops per image
    assert t.weights[:13].sum() == pytest.approx(14.71e6, rel=1e-3)  # conv weights (no bias)


def test_unsupported_workloads_are_one_line_errors():
    with pytest.raises(OptmapError, match="chain of conv/linear"):
        layer_table(resnet18(batch=1))
    with pytest.raises(OptmapError, match="training"):
        layer_table(alexnet(batch=1, phase="inference"))
    with pytest.raises(OptmapError, match="grouped"):
        layer_table(_grouped())
    with pytest.raises(OptmapError, match="op_count"):
        layer_table(tiny(), op_count="flops")


def _grouped():
    b = WorkloadBuilder("g", (4, 8, 8))
    b.conv2d("input", 4, 3, padding=1, groups=2, name="conv")
    return b.build(1)
