"""Exact torchvision architectures (and LeNet-5) as optmap Workloads, with torchvision's layer names.

Layers that torchvision applies functionally or reuses (``torch.flatten``, a block's single
``relu`` module, the residual ``+=``) get their own names here: ``flatten``, ``relu1``/``relu2``/...
and ``add``. ResNet bottlenecks put the stride on the 3x3 conv (torchvision's "ResNet v1.5").
"""

from optmap.bounds import Batch, Dimension
from optmap.workload import Workload, WorkloadBuilder
from optmap.workload.resnet import resnet_stage, resnet_stem

VGG_CFGS: dict[str, list[int | str]] = {  # torchvision.models.vgg cfgs "A", "B", "D", "E"
    "vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg13": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"],
}
RESNET_CFGS: dict[str, tuple[str, list[int]]] = {  # block kind and blocks per stage
    "resnet18": ("basic", [2, 2, 2, 2]),
    "resnet34": ("basic", [3, 4, 6, 3]),
    "resnet50": ("bottleneck", [3, 4, 6, 3]),
    "resnet101": ("bottleneck", [3, 4, 23, 3]),
    "resnet152": ("bottleneck", [3, 8, 36, 3]),
    "wide_resnet50_2": ("bottleneck", [3, 4, 6, 3]),  # bottleneck width x2 (torchvision width_per_group=128)
}
WIDTH = {"wide_resnet50_2": 2}  # multiplier of a bottleneck's inner (conv1/conv2) channels


def lenet(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 28,
          num_classes: Dimension = 10) -> Workload:
    """LeNet-5 (LeCun et al. 1998) on 1x28x28 MNIST: conv1 pads by 2 so the maps are the classic 28/14/10/5.

    ReLU and max pooling replace tanh and trainable subsampling (the usual PyTorch rendering);
    61,706 parameters at the defaults.
    """
    b = WorkloadBuilder("lenet", (1, image_size, image_size))
    x = b.conv2d("input", 6, 5, padding=2, name="conv1")
    x = b.activation(x, name="relu1")
    x = b.maxpool2d(x, 2, name="pool1")
    x = b.conv2d(x, 16, 5, name="conv2")
    x = b.activation(x, name="relu2")
    x = b.maxpool2d(x, 2, name="pool2")
    x = b.flatten(x, name="flatten")
    x = b.linear(x, 120, name="fc1")
    x = b.activation(x, name="relu3")
    x = b.linear(x, 84, name="fc2")
    x = b.activation(x, name="relu4")
    b.linear(x, num_classes, name="fc3")
    return b.build(batch, dtype, phase)


def alexnet(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
            num_classes: Dimension = 1000) -> Workload:
    """torchvision AlexNet (the one-weird-trick variant: 64/192/384/256/256 channels)."""
    b = WorkloadBuilder("alexnet", (3, image_size, image_size))
    x = b.conv2d("input", 64, 11, stride=4, padding=2, name="features.0")
    x = b.activation(x, name="features.1")
    x = b.maxpool2d(x, 3, stride=2, name="features.2")
    x = b.conv2d(x, 192, 5, padding=2, name="features.3")
    x = b.activation(x, name="features.4")
    x = b.maxpool2d(x, 3, stride=2, name="features.5")
    for i, channels in zip((6, 8, 10), (384, 256, 256)):
        x = b.conv2d(x, channels, 3, padding=1, name=f"features.{i}")
        x = b.activation(x, name=f"features.{i + 1}")
    x = b.maxpool2d(x, 3, stride=2, name="features.12")
    x = b.adaptive_avgpool2d(x, 6, name="avgpool")
    x = b.flatten(x, name="flatten")
    x = b.dropout(x, name="classifier.0")
    x = b.linear(x, 4096, name="classifier.1")
    x = b.activation(x, name="classifier.2")
    x = b.dropout(x, name="classifier.3")
    x = b.linear(x, 4096, name="classifier.4")
    x = b.activation(x, name="classifier.5")
    b.linear(x, num_classes, name="classifier.6")
    return b.build(batch, dtype, phase)


def _vgg(arch: str, batch: Batch, dtype: str, phase: str, image_size: int, num_classes: int) -> Workload:
    """torchvision VGG without batch norm."""
    b = WorkloadBuilder(arch, (3, image_size, image_size))
    x, i = "input", 0
    for v in VGG_CFGS[arch]:
        if v == "M":
            x = b.maxpool2d(x, 2, stride=2, name=f"features.{i}")
            i += 1
        else:
            x = b.conv2d(x, v, 3, padding=1, name=f"features.{i}")
            x = b.activation(x, name=f"features.{i + 1}")
            i += 2
    x = b.adaptive_avgpool2d(x, 7, name="avgpool")
    x = b.flatten(x, name="flatten")
    x = b.linear(x, 4096, name="classifier.0")
    x = b.activation(x, name="classifier.1")
    x = b.dropout(x, name="classifier.2")
    x = b.linear(x, 4096, name="classifier.3")
    x = b.activation(x, name="classifier.4")
    x = b.dropout(x, name="classifier.5")
    b.linear(x, num_classes, name="classifier.6")
    return b.build(batch, dtype, phase)


def vgg11(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
          num_classes: Dimension = 1000) -> Workload:
    """torchvision VGG-11 (configuration A, no batch norm)."""
    return _vgg("vgg11", batch, dtype, phase, image_size, num_classes)


def vgg13(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
          num_classes: Dimension = 1000) -> Workload:
    """torchvision VGG-13 (configuration B, no batch norm)."""
    return _vgg("vgg13", batch, dtype, phase, image_size, num_classes)


def vgg16(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
          num_classes: Dimension = 1000) -> Workload:
    """torchvision VGG-16 (configuration D, no batch norm)."""
    return _vgg("vgg16", batch, dtype, phase, image_size, num_classes)


def vgg19(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
          num_classes: Dimension = 1000) -> Workload:
    """torchvision VGG-19 (configuration E, no batch norm)."""
    return _vgg("vgg19", batch, dtype, phase, image_size, num_classes)


def _resnet(arch: str, batch: Batch, dtype: str, phase: str, image_size: int, num_classes: int) -> Workload:
    """torchvision ResNet: BasicBlock or Bottleneck stages, 1x1-conv + BN downsample shortcuts."""
    kind, depths = RESNET_CFGS[arch]
    b = WorkloadBuilder(arch, (3, image_size, image_size))
    x, in_ch = resnet_stem(b, "input"), 64
    for stage, (planes, depth) in enumerate(zip((64, 128, 256, 512), depths), start=1):
        x, in_ch = resnet_stage(b, x, in_ch, planes, depth, 1 if stage == 1 else 2, kind, f"layer{stage}",
                                WIDTH.get(arch, 1))
    x = b.adaptive_avgpool2d(x, 1, name="avgpool")
    x = b.flatten(x, name="flatten")
    b.linear(x, num_classes, name="fc")
    return b.build(batch, dtype, phase)


def resnet18(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
             num_classes: Dimension = 1000) -> Workload:
    """torchvision ResNet-18 (BasicBlock x [2, 2, 2, 2])."""
    return _resnet("resnet18", batch, dtype, phase, image_size, num_classes)


def resnet34(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
             num_classes: Dimension = 1000) -> Workload:
    """torchvision ResNet-34 (BasicBlock x [3, 4, 6, 3])."""
    return _resnet("resnet34", batch, dtype, phase, image_size, num_classes)


def resnet50(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
             num_classes: Dimension = 1000) -> Workload:
    """torchvision ResNet-50 (Bottleneck x [3, 4, 6, 3], stride on the 3x3 conv)."""
    return _resnet("resnet50", batch, dtype, phase, image_size, num_classes)


def resnet101(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
              num_classes: Dimension = 1000) -> Workload:
    """torchvision ResNet-101 (Bottleneck x [3, 4, 23, 3])."""
    return _resnet("resnet101", batch, dtype, phase, image_size, num_classes)


def resnet152(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
              num_classes: Dimension = 1000) -> Workload:
    """torchvision ResNet-152 (Bottleneck x [3, 8, 36, 3])."""
    return _resnet("resnet152", batch, dtype, phase, image_size, num_classes)


def wide_resnet50_2(*, batch: Batch, dtype: str = "fp32", phase: str = "training", image_size: Dimension = 224,
                    num_classes: Dimension = 1000) -> Workload:
    """torchvision Wide ResNet-50-2 (Bottleneck x [3, 4, 6, 3], inner width doubled)."""
    return _resnet("wide_resnet50_2", batch, dtype, phase, image_size, num_classes)


MODELS = {f.__name__: f for f in (lenet, alexnet, vgg11, vgg13, vgg16, vgg19,
                                  resnet18, resnet34, resnet50, resnet101, resnet152, wide_resnet50_2)}
