"""Training-step extras by hand, the single-device step, and AccPar pricing a measured leaf."""

import numpy as np
import pytest

from optmap.compute import Calibration, compute_time, with_calibration
from optmap.compute.step import StepModel, owners, training_step
from optmap.compute.traffic import Traffic, layer_traffic, weight_bytes_per_parameter
from optmap.plugins.accpar.model import AccParCostModel
from optmap.plugins.hardware import topologies
from optmap.plugins.zoo.models import resnet18
from optmap.system import Accelerator, GroupSpec
from optmap.workload import WorkloadBuilder

CAL = Calibration(math_flops=50e12, backward_flops=40e12, unaligned_flops=5e12, gather_bandwidth=4e12,
                  unaligned_gather_bandwidth=0.5e12, copy_bandwidth=1e12, output_bandwidth=2e12, smoothness=4.0,
                  kernel_s=2e-6, dispatch_s=10e-6, backward_call_s=100e-6)
PLAIN = Accelerator("plain", {"bf16": 100e12}, 64e9, 1e12, 100e9)
MEASURED = with_calibration(PLAIN, CAL)


def _net(batch=16):
    b = WorkloadBuilder("net", (8, 16, 16))
    x = b.conv2d("input", 16, 3, padding=1, bias=False, name="conv1")
    x = b.batchnorm2d(x, name="bn1")
    x = b.activation(x, name="relu1")
    x = b.maxpool2d(x, 2, name="pool")
    x = b.flatten(x, name="flatten")
    b.linear(x, 10, name="fc")
    return b.build(batch, "bf16")


def test_layer_traffic_by_hand():
    net = _net()
    bn, relu, pool = (net.layer(n) for n in ("bn1", "relu1", "pool"))
    e = 16 * 16 * 16  # elements per sample of the conv output
    # 3 forward kernels: statistics, normalisation and torch.nn.BatchNorm2d's num_batches_tracked.add_(1)
    # (issue 24: that counter's kernel was missing, 2 before)
    assert layer_traffic(bn, 2) == Traffic(3 * e * 2, 5 * e * 2, 3, 2)
    assert (layer_traffic(relu, 2).forward, layer_traffic(relu, 2).backward) == (2 * e * 2, 3 * e * 2)
    out = 16 * 8 * 8  # after 2x2 pooling; int64 index per output
    assert layer_traffic(pool, 2).forward == e * 2 + out * (2 + 8)
    assert layer_traffic(pool, 2).backward == 2 * e * 2 + out * (2 + 8)
    assert layer_traffic(net.layer("flatten"), 2).total == 0


def test_data_movement_traffic_by_hand():
    # An imported (S, D) = (4, 8) tensor: reshaped (a view, 0 bytes), transposed (read + write
    # 32 bf16 elements each way: 2 * 32 * 2 = 128 B), sliced to 16 (a view forward; backward its
    # gradient is written into the input's: 2 * 16 * 2 = 64 B). 0 FLOPs throughout.
    b = WorkloadBuilder("moves", (4, 8))
    b.op("reshape", "input", (4, 2, 4), name="view")
    b.op("transpose", "view", (2, 4, 4), name="heads", perm=(0, 2, 1, 3))
    b.op("slice", "heads", (1, 4, 4), name="head0")
    net = b.build(2, "bf16")
    assert layer_traffic(net.layer("view"), 2) == Traffic()
    assert layer_traffic(net.layer("heads"), 2) == Traffic(128, 128, 1, 1)
    assert layer_traffic(net.layer("head0"), 2) == Traffic(0, 64, 0, 1)
    assert all(net.layer(n).flops(2).total == 0 for n in ("view", "heads", "head0"))


def test_weight_traffic_by_hand():
    # bf16 autocast: cast forward (4 + 2), cast the gradient back (2 + 4), SGD 12 B (read w, g; write w)
    assert weight_bytes_per_parameter(2, "sgd", True) == 6 + 6 + 12
    assert weight_bytes_per_parameter(2, "momentum", True) == 12 + 20
    assert weight_bytes_per_parameter(4, "adam", False) == 28


def test_element_wise_layers_belong_to_the_contraction_upstream():
    assert {k: [l.name for l in v] for k, v in owners(_net()).items()} == {
        "conv1": ["bn1", "relu1", "pool", "flatten"], "fc": []}


def _simulate(groups, dispatch_s, backward_call_s, backward_from):
    """Brute force: every kernel one by one (a group's kernels share its device time equally); the
    host dispatches each after the previous one, the first backward kernel after the backward call;
    a kernel starts once dispatched and its predecessor is done."""
    ready = end = 0.0
    for j, (seconds, kernels) in enumerate(groups):
        for i in range(int(kernels)):
            ready += backward_call_s if (j == backward_from and i == 0) else dispatch_s
            end = max(end, ready) + seconds / kernels
    return end


def test_training_step_adds_up_by_hand():
    # channels_last: the convolutions run as measured, without cuDNN's NCHW transforms (those are
    # test_nchw_layout_transforms_by_hand's)
    net = _net()
    step = training_step(MEASURED, net, memory_format="channels_last")
    conv = {"batch": 16, "cin": 8, "cout": 16, "in_hw": 256, "out_hw": 256, "kernel": 9, "aligned": True}
    fc = {"batch": 16, "cin": 1024, "cout": 10, "aligned": True}
    e, out = 16 * 256, 16 * 64
    forward = 16 * (3 * e * 2 + 2 * e * 2 + (e * 2 + out * 10))  # bn, relu, pool
    backward = 16 * (5 * e * 2 + 3 * e * 2 + (2 * e * 2 + out * 10))

    def memory(nbytes, kernels):
        return kernels * 2e-6 + nbytes / 1e12

    # bf16 autocast: each weight tensor cast once each way (6 B per parameter, 1 kernel per tensor);
    # SGD 12 B per parameter, launched once for the whole network (foreach), so the layers carry its
    # bytes and the step its launches. fc has a bias (issue 24: its 10 parameters, the second cast
    # kernel each way and the gradient's sum over the 16 rows, 16 * 10 * 2 B in 1 kernel, were missing)
    conv1 = (compute_time(MEASURED, "conv2d", conv, passes="forward") + memory(8 * 16 * 9 * 6, 1)
             + memory(forward, 3 + 1 + 1),
             compute_time(MEASURED, "conv2d", conv, passes="weight_grad") + memory(8 * 16 * 9 * 6, 1)  # no dgrad
             + memory(backward, 2 + 1 + 2), memory(8 * 16 * 9 * 12, 0))
    fc_params = 1024 * 10 + 10
    head = (compute_time(MEASURED, "linear", fc, passes="forward") + memory(fc_params * 6, 2) + memory(16 * 10 * 8, 2),
            compute_time(MEASURED, "linear", fc, passes=("backward_data", "weight_grad")) + memory(fc_params * 6, 2)
            + memory(16 * 10 * 8 + 16 * 10 * 2, 2 + 1), memory(fc_params * 12, 0))  # loss: 16 B per logit
    assert step["layers"]["conv1"] == pytest.approx(sum(conv1), rel=1e-9)
    assert step["layers"]["fc"] == pytest.approx(sum(head), rel=1e-9)
    kernels = [1 + 1 + 5, 1 + 2 + 2, 1 + 1 + 2 + 1 + 2, 1 + 1 + 5, 1]  # forward conv1, fc; backward fc, conv1; SGD
    assert step["host"] == pytest.approx(sum(kernels) * 10e-6 + 100e-6 - 10e-6)
    groups = [(conv1[0], 7), (head[0], 5), (head[1], 7), (conv1[1], 7), (conv1[2] + head[2] + 2e-6, 1)]
    assert step["time"] == pytest.approx(_simulate(groups, 10e-6, 100e-6, 2), rel=1e-9)
    assert step["time"] >= max(step["device"], step["host"])
    # the same device time by kind of work; nothing transposed in channels_last
    assert sum(step["families"].values()) == pytest.approx(step["device"], rel=1e-12)
    assert step["families"]["layout transforms"] == 0
    assert step["families"]["update"] == pytest.approx(conv1[2] + head[2] + 2e-6, rel=1e-9)


def _two_convs(bias):
    b = WorkloadBuilder("two", (8, 16, 16))
    x = b.conv2d("input", 16, 3, padding=1, bias=bias, name="conv1")
    x = b.activation(x, name="relu1")
    b.conv2d(x, 32, 3, padding=1, bias=bias, name="conv2")
    return b.build(4, "bf16")


def test_nchw_layout_transforms_by_hand():
    # issue 24: a torchvision model is NCHW; cuDNN transposes the operands each tensor-core kernel
    # reads to NHWC (read + write, 2 B each way per bf16 element, one kernel per operand):
    # forward x and the weights, backward_data dy and the weights, weight_grad x and dy.
    net = _two_convs(bias=False)
    nchw, nhwc = (training_step(MEASURED, net, memory_format=f) for f in ("contiguous", "channels_last"))
    x1, w1, y1 = 4 * 8 * 256, 8 * 16 * 9, 4 * 16 * 256  # conv1: the first layer, no backward_data
    x2, w2, y2 = y1, 16 * 32 * 9, 4 * 32 * 256
    conv1 = (4 * (x1 + w1) + 4 * (x1 + y1)) / 1e12 + 4 * 2e-6  # 2 kernels forward, 2 backward
    conv2 = (4 * (x2 + w2) + 4 * (x2 + y2) + 4 * (y2 + w2)) / 1e12 + 6 * 2e-6  # 2 forward, 4 backward
    assert nchw["layers"]["conv1"] - nhwc["layers"]["conv1"] == pytest.approx(conv1, rel=1e-9)
    assert nchw["layers"]["conv2"] - nhwc["layers"]["conv2"] == pytest.approx(conv2, rel=1e-9)
    assert nchw["families"]["layout transforms"] == pytest.approx(conv1 + conv2, rel=1e-9)
    assert nchw["host"] == nhwc["host"]  # launched inside the cuDNN call, not dispatched by PyTorch
    # a 3-channel first layer keeps its measured direct kernel: nothing transposed
    b = WorkloadBuilder("rgb", (3, 16, 16))
    b.conv2d("input", 16, 3, padding=1, bias=False, name="conv1")
    rgb = b.build(4, "bf16")
    assert training_step(MEASURED, rgb)["layers"] == training_step(MEASURED, rgb, memory_format="channels_last")["layers"]


def test_convolution_bias_by_hand():
    # issue 24: cuDNN leaves the bias to ATen (ConvShared.cpp, "Convolution design"): output.add_(bias)
    # reads and writes the output (2 B each), grad_output.sum reads it; under autocast the bias is a
    # second tensor to cast each way (6 B per parameter, 1 kernel) and SGD updates it (12 B).
    with_bias, without = (training_step(MEASURED, _two_convs(b), memory_format="channels_last")
                          for b in (True, False))
    y2 = 4 * 32 * 256
    extra = (2 * y2 * 2 + y2 * 2 + 32 * (6 + 6 + 12)) / 1e12 + 4 * 2e-6  # add_, sum, two casts
    assert with_bias["layers"]["conv2"] - without["layers"]["conv2"] == pytest.approx(extra, rel=1e-9)
    assert with_bias["host"] - without["host"] == pytest.approx(2 * 4 * 10e-6)  # 4 dispatches per layer


def test_memory_format_is_checked():
    from optmap.errors import OptmapError

    with pytest.raises(OptmapError, match="memory_format must be one of contiguous, channels_last"):
        training_step(MEASURED, _net(), memory_format="nhwc")


def test_overlap_matches_kernel_by_kernel_simulation():
    from optmap.compute.step import overlap_seconds

    rng = np.random.default_rng(0)
    for _ in range(50):
        n = rng.integers(2, 8)
        device = rng.uniform(0, 100e-6, n) * rng.choice([0.1, 1, 10], n)
        kernels = rng.integers(1, 6, n).astype(float)
        split = int(rng.integers(1, n))
        extra = np.zeros(n)
        extra[split] = 90e-6
        got = overlap_seconds(device, kernels, 10e-6, extra)
        assert got == pytest.approx(_simulate(list(zip(device, kernels)), 10e-6, 100e-6, split), rel=1e-9)


def test_small_batches_are_no_longer_flat():
    # issue 24: the step took max(device, host), so a host-bound network (ResNet-152 below batch
    # 128) got one time for every batch; with launch gaps the step grows with the batch
    from optmap.compute import read_preset
    from optmap.plugins.hardware import PRESET_FILES
    from optmap.plugins.zoo.models import resnet152

    h100 = read_preset(PRESET_FILES / "h100-sxm.toml")
    times = [training_step(h100, resnet152(batch=b, dtype="bf16"))["time"] for b in (32, 64, 128)]
    assert times[0] < times[1] < times[2]


def test_accpar_prices_a_measured_leaf_by_its_shard():
    # Two measured devices, every layer Type-I (batch split): each leaf computes the whole
    # network at half the batch, so AccPar's compute equals the one-device step at batch 8.
    workload = resnet18(batch=16, dtype="bf16", image_size=32)
    system = topologies.TOPOLOGIES["fully-connected"]([GroupSpec(MEASURED, 2)])
    model = AccParCostModel(workload, system)
    states = np.zeros((1, len(model.graph.names)), int)
    out = model.evaluate_batch(model.plan_vector(states)[None])
    half = StepModel.from_workload(workload, model.graph.names)
    layers = [workload.layer(n) for n in model.graph.names]
    d_in = np.array([l.in_channels if l.weighted else l.out_channels for l in layers], float)
    # the step's host/device recurrence over the half-batch shard (was max(device, host) before issue 24)
    step = half.step_seconds(MEASURED, *half.pass_seconds(MEASURED, 8.0, d_in, half.out_channels))
    assert out["compute_time"][0] == pytest.approx(float(step), rel=1e-9)


def test_accpar_peak_pricing_is_unchanged_by_the_compute_model():
    # compute = "peak" on a measured device, and an uncalibrated device: both Eq. 8, bit for bit.
    workload = resnet18(batch=16, dtype="bf16", image_size=32)
    x = None
    results = []
    for accelerator, compute in ((PLAIN, "auto"), (MEASURED, "peak")):
        model = AccParCostModel(workload, topologies.TOPOLOGIES["fully-connected"]([GroupSpec(accelerator, 4)]),
                                compute=compute)
        if x is None:
            x = np.random.default_rng(0).integers(0, 3, (20, len(model.space))).astype(float)
        results.append(model.evaluate_batch(x))
    for key in ("time", "compute_time", "comm_time"):
        assert np.array_equal(results[0][key], results[1][key]), key
    measured = AccParCostModel(workload, topologies.TOPOLOGIES["fully-connected"]([GroupSpec(MEASURED, 4)]))
    assert not np.allclose(measured.evaluate_batch(x)["compute_time"], results[0]["compute_time"])


def test_a_growing_shard_never_takes_less_time():
    # Every node of ResNet-18 priced on h100-sxm as its shard grows along batch, input and output
    # channels (fractions 1/64 .. 1 of the layer, as AccPar's shares make them).
    from optmap.compute import read_preset
    from optmap.plugins.hardware import PRESET_FILES

    h100 = read_preset(PRESET_FILES / "h100-sxm.toml")
    workload = resnet18(batch=256, dtype="bf16")
    model = StepModel.from_workload(workload)
    d_in = np.array([workload.layer(n).in_channels for n in model.names], float)
    grow = np.linspace(1 / 64, 1, 64)[:, None]
    for batch, cin, cout in ((grow * 256, 1.0, 1.0), (256.0, grow, 1.0), (256.0, 1.0, grow)):
        seconds = model.device_seconds(h100, batch, d_in * cin, model.out_channels * cout)
        assert np.all(np.diff(seconds, axis=0) >= 0)
