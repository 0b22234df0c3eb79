"""Built-in plugin: the torchvision model zoo (LeNet-5, AlexNet, VGG-11/13/16/19, ResNet-18/34/50/101/152), GNMT,
and the op kind ``lstm`` (:mod:`optmap.plugins.zoo.recurrent`)."""

from optmap.hookspecs import hookimpl
from optmap.plugins.zoo.models import (
    MODELS,
    alexnet,
    lenet,
    resnet18,
    resnet34,
    resnet50,
    resnet101,
    resnet152,
    vgg11,
    vgg13,
    vgg16,
    vgg19,
)

from optmap.plugins.zoo.gnmt import gnmt
from optmap.plugins.zoo.recurrent import OPS

__all__ = ["MODELS", "gnmt", "alexnet", "lenet", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
           "vgg11", "vgg13", "vgg16", "vgg19"]


@hookimpl
def optmap_register_workloads(register):
    """Register every zoo builder under its function name (e.g. ``"vgg16"``)."""
    for name, build in MODELS.items():
        register(name, build)
    register("gnmt", gnmt)


@hookimpl
def optmap_register_ops(register):
    """The recurrent op kind GNMT needs: ``lstm``."""
    for kind in OPS:
        register(kind.name, kind)
