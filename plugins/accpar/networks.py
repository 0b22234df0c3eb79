"""AccPar's workloads: the original AlexNet of the paper and the authors' layer-description files."""

from __future__ import annotations

from pathlib import Path

from optmap.bounds import Batch, Dimension
from optmap.errors import OptmapError
from optmap.workload import Layer, Workload, WorkloadBuilder

CONV_KEYS = ("in_ch", "in_fmap_h", "in_fmap_w", "kernel", "out_ch", "out_fmap_h", "out_fmap_w", "pool")
FC_KEYS = ("in_ch", "out_ch")


def alexnet_original(*, batch: Batch, dtype: str = "bf16", phase: str = "training", num_classes: Dimension = 1000) -> Workload:
    """The AlexNet of Krizhevsky et al. 2012 as in AccPar (96/256/384/384/256 channels, no groups)."""
    b = WorkloadBuilder("alexnet-original", (3, 224, 224))
    x = "input"
    for i, (channels, kernel, stride, padding, pool) in enumerate(
        [(96, 11, 4, 2, True), (256, 5, 1, 2, True), (384, 3, 1, 1, False), (384, 3, 1, 1, False), (256, 3, 1, 1, True)]
    ):
        x = b.activation(b.conv2d(x, channels, kernel, stride, padding, name=f"conv{i + 1}"), name=f"relu{i + 1}")
        if pool:
            x = b.maxpool2d(x, 3, 2, name=f"pool{i + 1}")
    x = b.flatten(x, name="flatten")
    for i, features in enumerate((4096, 4096)):
        x = b.activation(b.linear(b.dropout(x, name=f"drop{i + 1}"), features, name=f"fc{i + 1}"), name=f"relu_fc{i + 1}")
    b.linear(x, num_classes, name="fc3")
    return b.build(batch, dtype, phase)


def lenet_caffe(*, batch: Batch, dtype: str = "bf16", phase: str = "training", num_classes: Dimension = 10) -> Workload:
    """Caffe's LeNet on MNIST (conv 20, conv 50, fc 500, fc 10; 431,080 parameters), the "Lenet-c"
    of HyPar (HPCA 2019) by the same group, which we take to be AccPar's Lenet."""
    b = WorkloadBuilder("lenet-caffe", (1, 28, 28))
    x = b.maxpool2d(b.conv2d("input", 20, 5, name="conv1"), 2, name="pool1")
    x = b.maxpool2d(b.conv2d(x, 50, 5, name="conv2"), 2, name="pool2")
    x = b.activation(b.linear(b.flatten(x, name="flatten"), 500, name="fc1"), name="relu1")
    b.linear(x, num_classes, name="fc2")
    return b.build(batch, dtype, phase)


def _read(path: Path) -> list[tuple[int, str, str]]:
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise OptmapError(f"{path}: cannot read: {exc.strerror}") from None
    return [(n, *line.split()[:2]) if len(line.split()) >= 2 else (n, line.strip(), "")
            for n, line in enumerate(lines, 1) if line.strip()]


def accpar_text(*, file: str, batch: Batch, dtype: str = "bf16", phase: str = "training") -> Workload:
    """A chain of CONV/FC layers in the AccPar authors' text format (num_layers, then per layer
    'name CONV|FC' and its keys). As in their program, a layer's feature-map sizes are taken as
    written (the out size is after pooling) and ``pool`` is read but not used."""
    path = Path(file)
    rows = iter(_read(path))

    def expect(key: str) -> int:
        line, name, value = next(rows, (None, None, None))
        if name != key:
            raise OptmapError(f"{path}:{line or 'end'}: expected '{key} <number>', got {name!r}")
        if not value.isdigit() or int(value) < 1:
            raise OptmapError(f"{path}:{line}: '{key}' must be a whole number >= 1, got {value!r}")
        return int(value)

    count = expect("num_layers")
    layers: dict[str, Layer] = {}
    producers: dict[str, tuple[str, ...]] = {}
    previous = None
    for _ in range(count):
        line, name, kind = next(rows, (None, None, None))
        if kind not in ("CONV", "FC"):
            raise OptmapError(f"{path}:{line or 'end'}: expected '<name> CONV|FC', got {name!r} {kind!r}")
        if name in layers:
            raise OptmapError(f"{path}:{line}: duplicate layer name '{name}'")
        if kind == "CONV":
            v = dict(zip(CONV_KEYS, map(expect, CONV_KEYS)))
            layer = Layer(name, "conv2d", ((v["in_ch"], v["in_fmap_h"], v["in_fmap_w"]),),
                          (v["out_ch"], v["out_fmap_h"], v["out_fmap_w"]),
                          {"kernel": (v["kernel"], v["kernel"]), "pool": v["pool"]})
        else:
            v = dict(zip(FC_KEYS, map(expect, FC_KEYS)))
            layer = Layer(name, "linear", ((v["in_ch"],),), (v["out_ch"],))
        if previous is None:
            layers["input"] = Layer("input", "input", (), layer.in_shapes[0])
            previous = "input"
        layers[name], producers[name] = layer, (previous,)
        previous = name
    return Workload(path.stem, layers, producers, batch, dtype, phase)
