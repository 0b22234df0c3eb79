"""Readable, unique layer names for ONNX nodes.

* PyTorch's exporter (``torch.onnx.export(..., dynamo=True)``) records each node's module path in
  the metadata ``pkg.torch.onnx.name_scopes`` (``['', 'layer1', 'layer1.0', 'layer1.0.conv1',
  'conv2d_1']``) and the module classes in ``pkg.torch.onnx.class_hierarchy``. A node made by a
  ``torch.nn`` layer module (Conv2d, BatchNorm2d, ReLU, Linear, ...) takes that module's path
  (``layer1.0.conv1``), as the zoo's torchvision models do; a functional op inside a user module
  takes the module path and the op (``layer1.0.add``).
* TorchScript-exported names (``/layer1/layer1.0/conv1/Conv``) become dotted paths
  (``layer1.0.conv1.Conv``).
* Other node names are kept; a node without a name is called after its op (``conv``, ``conv_2``, ...).

A name used twice gets ``_2``, ``_3``, ... (a ReLU module applied twice: ``layer1.0.relu``,
``layer1.0.relu_2``).
"""

from __future__ import annotations

import ast
import re

import onnx

CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
_NUMBERED = re.compile(r"_\d+$")


def op_label(node: onnx.NodeProto) -> str:
    """The node's op, with its domain when that is not the standard one (``com.microsoft::Attention``)."""
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"


def describe(node: onnx.NodeProto) -> str:
    """How an error message names a node: ``Conv node 'conv1'``."""
    op = op_label(node)
    return f"{op} node '{node.name}'" if node.name else f"{op} node (output '{node.output[0]}')"


def _metadata(node: onnx.NodeProto, key: str) -> list[str] | None:
    for prop in node.metadata_props:
        if prop.key == key:
            try:
                value = ast.literal_eval(prop.value)
            except (ValueError, SyntaxError):
                return None
            return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None
    return None


def _torch_name(node: onnx.NodeProto) -> str | None:
    scopes = _metadata(node, "pkg.torch.onnx.name_scopes")
    classes = _metadata(node, "pkg.torch.onnx.class_hierarchy")
    if not scopes or len(scopes) < 2 or not classes or len(classes) != len(scopes):
        return None
    module, cls, op = scopes[-2], classes[-2], _NUMBERED.sub("", scopes[-1])
    leaf = cls.startswith("torch.nn.modules.") and cls.rsplit(".", 1)[-1] not in CONTAINERS
    if leaf and module:
        return module
    return f"{module}.{op}" if module else op


def _scoped_name(name: str) -> str:
    """``/layer1/layer1.0/conv1/Conv`` -> ``layer1.0.conv1.Conv`` (a segment may repeat its parent's path)."""
    path = ""
    for segment in name.strip("/").split("/"):
        path = segment if not path or segment.startswith(path + ".") else f"{path}.{segment}"
    return path


def base_name(node: onnx.NodeProto) -> str:
    """The name a node's layer would like (before making names unique)."""
    torch_name = _torch_name(node)
    if torch_name:
        return torch_name
    if node.name.startswith("/"):
        return _scoped_name(node.name)
    return node.name or _NUMBERED.sub("", node.op_type.lower())


class Namer:
    """Hands out unique layer names."""

    def __init__(self) -> None:
        self._used: dict[str, int] = {}

    def __call__(self, wanted: str) -> str:
        if wanted not in self._used:
            self._used[wanted] = 1
            return wanted
        count = self._used[wanted]
        name = wanted
        while name in self._used:
            count += 1
            name = f"{wanted}_{count}"
        self._used[wanted] = count
        self._used[name] = 1
        return name
