"""torchvision's ResNet building blocks (He et al. 2016): the stem and a stage of BasicBlocks or
Bottlenecks, written into a :class:`~optmap.workload.WorkloadBuilder`.

Shared by the workload plugins that build ResNets or networks made of ResNet parts (the zoo's
ResNets, MARS's multi-modal networks), so they live in the core; layer names follow torchvision.
"""

from __future__ import annotations

from optmap.workload.builder import WorkloadBuilder


def _conv_bn(b: WorkloadBuilder, x: str, out: int, kernel: int, stride: int, prefix: str, i: int | str,
             groups: int = 1) -> str:
    """conv{i} (no bias, 'same' padding) followed by bn{i}."""
    x = b.conv2d(x, out, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False,
                 name=f"{prefix}.conv{i}")
    return b.batchnorm2d(x, name=f"{prefix}.bn{i}")


def resnet_stem(b: WorkloadBuilder, x: str, prefix: str = "") -> str:
    """torchvision's ResNet stem: conv1 7x7/2 (64), bn1, relu, maxpool 3x3/2 (names prefixed by ``prefix``)."""
    x = b.conv2d(x, 64, 7, stride=2, padding=3, bias=False, name=f"{prefix}conv1")
    x = b.batchnorm2d(x, name=f"{prefix}bn1")
    x = b.activation(x, name=f"{prefix}relu")
    return b.maxpool2d(x, 3, stride=2, padding=1, name=f"{prefix}maxpool")


def resnet_stage(b: WorkloadBuilder, x: str, in_ch: int, planes: int, depth: int, stride: int, kind: str,
                 prefix: str, width: int = 1, groups: int = 1) -> tuple[str, int]:
    """``depth`` BasicBlocks or Bottlenecks (torchvision), the first with ``stride`` and a 1x1-conv + BN
    downsample when the shape changes; ``width`` multiplies a bottleneck's inner channels and ``groups``
    groups its 3x3 conv (ResNeXt). Returns the last layer and the output channels."""
    expansion = 1 if kind == "basic" else 4
    for j in range(depth):
        p = f"{prefix}.{j}"
        s = stride if j == 0 else 1
        if kind == "basic":
            y = b.activation(_conv_bn(b, x, planes, 3, s, p, 1), name=f"{p}.relu1")
            y = _conv_bn(b, y, planes, 3, 1, p, 2)
        else:
            y = b.activation(_conv_bn(b, x, planes * width, 1, 1, p, 1), name=f"{p}.relu1")
            y = b.activation(_conv_bn(b, y, planes * width, 3, s, p, 2, groups), name=f"{p}.relu2")
            y = _conv_bn(b, y, planes * expansion, 1, 1, p, 3)
        shortcut = x
        if s != 1 or in_ch != planes * expansion:
            shortcut = b.conv2d(x, planes * expansion, 1, stride=s, bias=False, name=f"{p}.downsample.0")
            shortcut = b.batchnorm2d(shortcut, name=f"{p}.downsample.1")
        x = b.add(y, shortcut, name=f"{p}.add")
        x = b.activation(x, name=f"{p}.relu{2 if kind == 'basic' else 3}")
        in_ch = planes * expansion
    return x, in_ch
