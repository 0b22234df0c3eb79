"""Training-step extras by hand, the single-device step, and AccPar pricing a measured leaf."""

import numpy as np
import pytest

from optmap.compute import Calibration, compute_time, with_calibration
from optmap.compute.step import StepModel, Traffic, layer_traffic, owners, training_step, weight_bytes_per_parameter
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
    assert layer_traffic(bn, 2) == Traffic(3 * e * 2, 5 * e * 2, 2, 2)
    assert (layer_traffic(relu, 2).forward, layer_traffic(relu, 2).backward) == (2 * e * 2, 3 * e * 2)
    out = 16 * 8 * 8  # after 2x2 pooling; int64 index per output
    assert layer_traffic(pool, 2).forward == e * 2 + out * (2 + 8)
    assert layer_traffic(pool, 2).backward == 2 * e * 2 + out * (2 + 8)
    assert layer_traffic(net.layer("flatten"), 2).total == 0


def test_weight_traffic_by_hand():
    # bf16 autocast: cast forward (4 + 2), cast the gradient back (2 + 4), SGD 12 B (read w, g; write w)
    assert weight_bytes_per_parameter(2, "sgd", True) == 6 + 6 + 12
    assert weight_bytes_per_parameter(2, "momentum", True) == 12 + 20
    assert weight_bytes_per_parameter(4, "adam", False) == 28


def test_element_wise_layers_belong_to_the_contraction_upstream():
    assert {k: [l.name for l in v] for k, v in owners(_net()).items()} == {
        "conv1": ["bn1", "relu1", "pool", "flatten"], "fc": []}


def test_training_step_adds_up_by_hand():
    net = _net()
    step = training_step(MEASURED, net)
    conv = {"batch": 16, "cin": 8, "cout": 16, "in_hw": 256, "out_hw": 256, "kernel": 9, "aligned": True}
    fc = {"batch": 16, "cin": 1024, "cout": 10, "aligned": True}
    e, out = 16 * 256, 16 * 64
    elementwise = 16 * (8 * e * 2 + 5 * e * 2 + (e * 2 + out * 10) + (2 * e * 2 + out * 10))
    per_weight = weight_bytes_per_parameter(2, "sgd", True)

    def memory(nbytes, kernels):
        return kernels * 2e-6 + nbytes / 1e12

    conv1 = (compute_time(MEASURED, "conv2d", conv, passes=("forward", "weight_grad"))  # input needs no gradient
             + memory(8 * 16 * 9 * per_weight, 3) + memory(elementwise, 4 + 2 + 3))
    head = (compute_time(MEASURED, "linear", fc, passes="training") + memory(1024 * 10 * per_weight, 3)
            + memory(16 * 10 * 16, 4))  # loss: 16 B per logit
    assert step["layers"]["conv1"] == pytest.approx(conv1, rel=1e-9)
    assert step["layers"]["fc"] == pytest.approx(head, rel=1e-9)
    kernels = (2 + 3) + (3 + 3) + 9 + 4  # contraction passes, weight kernels, element-wise, loss
    assert step["host"] == pytest.approx(kernels * 10e-6 + 100e-6)
    assert step["time"] == pytest.approx(max(step["device"], step["host"]))


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
    device = np.sum(half.device_seconds(MEASURED, 8.0, d_in, half.out_channels))
    assert out["compute_time"][0] == pytest.approx(max(device, half.host_seconds(MEASURED)), rel=1e-9)


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
