"""Table II designs: cycle models by hand, peaks, and designs added by a third-party accelerator."""

import numpy as np
import pytest

from optmap.errors import OptmapError
from optmap.plugins.mars.designs import Design, design_of, superlip, systolic, winograd
from optmap.system import Accelerator

VGG_CONV1_1 = (64, 3, 224, 224, 3, 3)  # (C_out, C_in, H, W, K_h, K_w) of VGG16's first conv


def cycles(acc, dims, stride=1):
    return float(design_of(acc).cycles(np.array(dims, float), np.array(stride, float)))


def test_superlip_tiling_by_hand():
    # ⌈64/64⌉·⌈3/7⌉·⌈224/7⌉·⌈224/14⌉·(7·14·3·3) = 1·1·32·16·882 (note §3.2, Table II 64, 7, 7, 14)
    assert cycles(superlip(), VGG_CONV1_1) == 32 * 16 * 882 == 451_584
    # the same layer with C_in = 64: ⌈64/7⌉ = 10 input-channel tiles
    assert cycles(superlip(), (64, 64, 224, 224, 3, 3)) == 10 * 451_584


def test_systolic_array_by_hand():
    # ⌈64/11⌉·⌈224/13⌉·⌈3/8⌉·224·3·3 = 6·18·1·2016 (rows ↔ C_out, cols ↔ W, vec ↔ C_in)
    assert cycles(systolic(), VGG_CONV1_1) == 6 * 18 * 2016 == 217_728


def test_winograd_by_hand_and_its_1x1_and_stride_penalties():
    # F(4×4, 3×3): ⌈3/2⌉·⌈64/8⌉·⌈224/4⌉·⌈224/4⌉ = 2·8·56·56
    assert cycles(winograd(), VGG_CONV1_1) == 2 * 8 * 56 * 56 == 50_176
    one_by_one = (256, 64, 56, 56, 1, 1)
    three_by_three = (256, 64, 56, 56, 3, 3)
    assert cycles(winograd(), one_by_one) == cycles(winograd(), three_by_three)  # 1×1 padded to 3×3
    # stride 2 is computed at stride 1 and subsampled: 4× the tiles of the stride-1 output
    assert cycles(winograd(), (64, 64, 28, 28, 3, 3), stride=2) == cycles(winograd(), (64, 64, 56, 56, 3, 3))
    # Kernels above 3×3 do not run on the F(4×4, 3×3) datapath (Lu et al. build it for r = 3; Table III never
    # maps a 5×5, 7×7 or 11×11 layer to Design 3). They used to be tiled by 3×3, which is now the option
    # large_kernels = "decompose": ⌈7/3⌉² = 9 passes.
    assert cycles(winograd(), (64, 3, 112, 112, 7, 7)) == float("inf")
    assert cycles(winograd(large_kernels="decompose"), (64, 3, 112, 112, 7, 7)) == \
        9 * cycles(winograd(), (64, 3, 112, 112, 3, 3))


def test_peaks_from_parameters_and_table_ii_metadata():
    # Table II: 438 / 572 / 576 PEs; peaks from the parameters: 64·7, 11·13·8, 4²·9·2·8 (note §6.3)
    assert [design_of(a()).macs_per_cycle for a in (superlip, systolic, winograd)] == [448, 1144, 2304]
    assert [design_of(a()).pes for a in (superlip, systolic, winograd)] == [438, 572, 576]
    assert superlip().peak_flops_by_dtype["default"] == pytest.approx(2 * 448 * 200e6)
    assert all(design_of(a()).clock_hz == 200e6 for a in (superlip, systolic, winograd))
    assert superlip().memory_bytes == 2**30  # 1 GB DRAM (Sec. VI-A)


def test_options_change_the_model_and_bad_values_are_refused():
    assert cycles(superlip(tn=3), VGG_CONV1_1) == 451_584  # ⌈3/3⌉ = ⌈3/7⌉ = 1: same
    assert cycles(superlip(tr=14, tc=14), VGG_CONV1_1) == 16 * 16 * (14 * 14 * 9)
    assert "linear" not in design_of(winograd()).supports and "linear" in design_of(systolic()).supports
    with pytest.raises(OptmapError, match="tm must be a number > 0"):
        superlip(tm=0)


def test_design_rides_in_accelerator_attrs():
    design = design_of(superlip())
    assert isinstance(design, Design) and superlip().attrs["design_parameters"] == {"tm": 64, "tn": 7, "tr": 7, "tc": 14}
    assert design_of(Accelerator("x", 1e12, 2**30, 1e9, 1e9)) is None
    carried = Accelerator("x", 1e12, 2**30, 1e9, 1e9, attrs={"mars_design": design})
    assert design_of(carried) is design
    assert design_of(superlip().with_datasheet(memory_gib=2)) is not None  # overrides keep the design


def test_winograd_never_wins_a_1x1_or_strided_convolution_of_table_iii():
    # Sec. VI-B: the Winograd design "makes it impossible to effectively handle 1×1 convolution"; Lu et al.'s
    # F(4×4, 3×3) needs stride 1. Brute force over every convolution of the five Table III models, one device:
    # wherever the kernel is not 3×3 or the stride is not 1, another Table II design is faster.
    from optmap.plugins.mars.layers import layer_graph
    from optmap.plugins.zoo.models import alexnet, resnet34, resnet101, vgg16, wide_resnet50_2

    designs = {name: design_of(make()) for name, make in (("superlip", superlip), ("systolic", systolic),
                                                           ("winograd", winograd))}
    checked = 0
    for build in (alexnet, vgg16, resnet34, resnet101, wide_resnet50_2):
        graph = layer_graph(build(batch=1))
        dims, strides = graph.dims, graph.strides
        odd = (dims[:, 4] != 3) | (dims[:, 5] != 3) | (strides != 1)
        times = {name: d.seconds(dims[odd], strides[odd]) for name, d in designs.items()}
        best_other = np.minimum(times["superlip"], times["systolic"])
        assert (times["winograd"] > best_other).all(), build.__name__
        checked += int(odd.sum())
    assert checked > 60  # AlexNet's 11×11/5×5, every ResNet 1×1 and strided layer
