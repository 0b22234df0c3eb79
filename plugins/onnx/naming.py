"""Readable, unique layer names for ONNX nodes.

* PyTorch's exporter (``torch.onnx.export(..., dynamo=True)``) records each node's module path in
  the metadata ``pkg.torch.onnx.name_scopes`` (``['', 'layer1', 'layer1.0', 'layer1.0.conv1',
  'conv2d_1']``) and the module classes in ``pkg.torch.onnx.class_hierarchy``. A node made by a
  ``torch.nn`` layer module (Conv2d, BatchNorm2d, ReLU, Linear, ...) takes that module's path
  (``layer1.0.conv1``), as the zoo's torchvision models do; a functional op inside a user module,
  or one of the several ops of a torch.nn module such as MultiheadAttention, takes the module
  path and the op (``layer1.0.add``, ``self_attention.linear``).
* TorchScript-exported names (``/layer1/layer1.0/conv1/Conv``) become dotted paths
  (``layer1.0.conv1.Conv``).
* Other node names are kept; a node without a name is called after its op (``conv``, ``conv_2``, ...).

When one torch op became several ONNX ops (scaled_dot_product_attention), each name ends with
its ONNX op (``self_attention.scaled_dot_product_attention.matmul``). A name used twice gets
``_2``, ``_3``, ... (a ReLU module applied twice: ``layer1.0.relu``, ``layer1.0.relu_2``).
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


def _torch_scope(node: onnx.NodeProto) -> tuple[str, str, bool] | None:
    """(module path, op stem, made by a torch.nn library module) from torch's metadata, else None."""
    scopes = _metadata(node, "pkg.torch.onnx.name_scopes")
    classes = _metadata(node, "pkg.torch.onnx.class_hierarchy")
    if not scopes or len(scopes) < 2 or not classes or len(classes) != len(scopes):
        return None
    cls = classes[-2]
    leaf = cls.startswith("torch.nn.modules.") and cls.rsplit(".", 1)[-1] not in CONTAINERS
    return scopes[-2], _NUMBERED.sub("", scopes[-1]).strip("_"), leaf and bool(scopes[-2])


def _scoped_name(name: str) -> str:
    """``/layer1/layer1.0/conv1/Conv`` -> ``layer1.0.conv1.Conv`` (a segment may repeat its parent's path)."""
    path = ""
    for segment in name.strip("/").split("/"):
        path = segment if not path or segment.startswith(path + ".") else f"{path}.{segment}"
    return path


def _plain_name(node: onnx.NodeProto) -> str:
    if node.name.startswith("/"):
        return _scoped_name(node.name)
    return node.name or node.op_type.lower()


def base_names(nodes: list[onnx.NodeProto]) -> dict[int, str]:
    """The name each node's layer would like (before making names unique), by ``id(node)``."""
    scopes = {id(node): _torch_scope(node) for node in nodes}
    stems: dict[str, set[str]] = {}
    for scope in scopes.values():
        if scope is not None and scope[2]:
            stems.setdefault(scope[0], set()).add(scope[1])
    names = {}
    for node in nodes:
        scope = scopes[id(node)]
        if scope is None:
            names[id(node)] = _plain_name(node)
        elif scope[2] and len(stems[scope[0]]) == 1:  # a layer module, run once or reused (a ReLU)
            names[id(node)] = scope[0]
        else:  # a functional op in a module, or one op of a module made of several (MultiheadAttention)
            names[id(node)] = f"{scope[0]}.{scope[1]}" if scope[0] else scope[1]
    scoped = [node for node in nodes if scopes[id(node)] is not None]
    ops: dict[str, set[str]] = {}
    for node in scoped:
        ops.setdefault(names[id(node)], set()).add(node.op_type)
    for node in scoped:  # one torch op exported as several ONNX ops (attention): tell them apart
        if len(ops[names[id(node)]]) > 1:
            names[id(node)] += "." + node.op_type.lower()
    return names


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
