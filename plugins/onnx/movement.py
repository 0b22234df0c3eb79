"""Data movement: layers that move or copy elements and compute nothing (0 FLOPs).

* ``Concat`` of activations -> concat; with constants among its inputs (a class token) -> copy,
  counting the non-scalar float initializers as parameters.
* ``Flatten`` or ``Reshape`` to a per-sample vector -> flatten; other reshapes, ``Squeeze``,
  ``Unsqueeze``, ``DepthToSpace``, ``SpaceToDepth`` -> reshape; ``Transpose`` -> transpose.
* ``Slice``, each output of ``Split``, each ``SequenceAt`` of a ``SplitToSequence`` (torch's
  ``.split`` / ``.chunk``, nanoGPT's q, k, v), and ``Gather``/``GatherElements``/``GatherND`` of an
  activation -> slice; ``Gather`` of rows of a constant table by activation indices -> embedding
  (the table is its parameters).
* ``Expand``, ``Tile``, ``Pad``, ``ScatterND``, ``ScatterElements`` -> copy.
* ``Dropout`` -> dropout; ``Identity``, ``Cast`` and ``CastLike`` are no layer at all.
"""

from __future__ import annotations

import math

import onnx

from .convert import Converter, Handler, Unsupported, attributes, has_input
from optmap.workload.general_ops import COPY, EMBEDDING, RESHAPE, SLICE, TRANSPOSE


def concat(c: Converter, node: onnx.NodeProto) -> None:
    xs = c.activations(node)
    rank = len(c.g.shape(node.output[0])) + 1
    axis = int(attributes(node)["axis"]) % rank
    if axis == 0:
        raise Unsupported("Concat (along the batch)")
    if len(xs) == len(node.input) and len(set(xs)) == len(xs) > 1:
        c.emit("concat", xs, node.output[0], axis=axis - 1)
    else:
        c.emit(COPY, xs, node.output[0], fn="Concat", params=c.trainable_elements(node))


def reshape(c: Converter, node: onnx.NodeProto) -> None:
    if node.op_type in ("Flatten", "Reshape") and len(c.g.shape(node.output[0])) == 1:
        c.emit("flatten", [node.input[0]], node.output[0])  # torch.flatten(x, 1)
    else:
        c.emit(RESHAPE, [node.input[0]], node.output[0], fn=node.op_type)


def transpose(c: Converter, node: onnx.NodeProto) -> None:
    perm = attributes(node).get("perm")  # ONNX's, over the whole tensor (batch included)
    c.emit(TRANSPOSE, [node.input[0]], node.output[0], **({"perm": tuple(perm)} if perm is not None else {}))


def slice_(c: Converter, node: onnx.NodeProto) -> None:
    c.emit(SLICE, c.activations(node), node.output[0], fn=node.op_type)


def split(c: Converter, node: onnx.NodeProto) -> None:
    for i, out in enumerate(node.output):
        if out:
            c.emit(SLICE, [node.input[0]], out, suffix=f".{i}", fn="Split")


def split_to_sequence(c: Converter, node: onnx.NodeProto) -> None:
    c.sequence(node.output[0], node)


def _chunk_sizes(c: Converter, split: onnx.NodeProto, length: int) -> list[int]:
    """The sizes along the split axis of a SplitToSequence's chunks (ONNX: a scalar split is the
    chunk size, the last chunk smaller; a 1-D split lists the sizes; none splits into ones)."""
    if not has_input(split, 1):
        return [1] * length
    sizes = c.g.const_value(split.input[1])
    if sizes is None:
        raise Unsupported("SplitToSequence (split sizes computed in the graph)")
    if sizes.ndim == 0:
        step = int(sizes)
        return [min(step, length - start) for start in range(0, length, step)]
    return [int(s) for s in sizes]


def sequence_at(c: Converter, node: onnx.NodeProto) -> None:
    split = c.sequences.get(node.input[0])
    if split is None:
        raise Unsupported("SequenceAt (of a sequence not made by SplitToSequence)")
    position = c.g.const_scalar(node.input[1])
    if position is None:
        raise Unsupported("SequenceAt (position computed from the input)")
    source = c.g.shape(split.input[0])
    a = attributes(split)
    axis = int(a.get("axis", 0)) % (len(source) + 1)  # ONNX's axis counts the batch
    if axis == 0:
        raise Unsupported("SplitToSequence (along the batch)")
    sizes = _chunk_sizes(c, split, source[axis - 1])
    shape = list(source)
    shape[axis - 1] = sizes[int(position) % len(sizes)]
    if not has_input(split, 1) and not a.get("keepdims", 1):
        del shape[axis - 1]
    c.emit(SLICE, [split.input[0]], node.output[0], shape=tuple(shape) or (1,), fn="SplitToSequence")


def gather(c: Converter, node: onnx.NodeProto) -> None:
    data, indices = node.input[0], node.input[1]
    if c.g.is_activation(data):
        c.emit(SLICE, c.activations(node), node.output[0], fn="Gather")
    elif int(attributes(node).get("axis", 0)) == 0:  # rows of a table: an embedding lookup
        c.emit(EMBEDDING, [indices], node.output[0], params=math.prod(c.g.const_shape(data)))
    else:
        raise Unsupported("Gather (of a constant along an axis other than its rows)")


def copy(c: Converter, node: onnx.NodeProto) -> None:
    c.emit(COPY, c.activations(node), node.output[0], fn=node.op_type, params=c.trainable_elements(node))


def dropout(c: Converter, node: onnx.NodeProto) -> None:
    ratio = c.g.const_value(node.input[1]) if has_input(node, 1) else None
    p = float(ratio.reshape(())) if ratio is not None and ratio.size == 1 else float(
        attributes(node).get("ratio", 0.5))
    c.emit("dropout", [node.input[0]], node.output[0], p=p)


def identity(c: Converter, node: onnx.NodeProto) -> None:
    c.alias(node.output[0], node.input[0])


# ONNX op type -> its handler (reader.py joins the tables of every handler module)
HANDLERS: dict[str, Handler] = {
    "Concat": concat,
    **dict.fromkeys(("Flatten", "Reshape", "Squeeze", "Unsqueeze", "DepthToSpace", "SpaceToDepth"), reshape),
    "Transpose": transpose,
    **dict.fromkeys(("Slice", "GatherElements", "GatherND"), slice_),
    "Split": split,
    "SplitToSequence": split_to_sequence,
    "SequenceAt": sequence_at,
    "Gather": gather,
    **dict.fromkeys(("Expand", "Tile", "Pad", "ScatterND", "ScatterElements"), copy),
    "Dropout": dropout,
    **dict.fromkeys(("Identity", "Cast", "CastLike"), identity),
}
