"""Export torchvision's ResNet-18 to ONNX without its weights: produces ``resnet18.onnx`` here.

Not run by the tests (they read the committed file, so CI needs no PyTorch). To regenerate, in a
throw-away virtual environment outside the repository:

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch==2.14.1 torchvision==0.29.1 onnx onnxscript
    /tmp/torchenv/bin/python tests/data/onnx/make_resnet18.py

What it does, and why:

1. ``torch.onnx.export(..., dynamo=True, optimize=False)`` with a symbolic batch dimension. The
   exporter's optimiser is off because it folds each BatchNormalization into the preceding Conv,
   which turns the training graph (conv, then batch norm with its own parameters) into an
   inference graph; we want the model as it is trained.
2. Without the optimiser, torch gives each bias-free convolution an explicit all-zero bias
   computed in the graph (``Expand(CastLike(0, x), Shape(weight))``). ResNet's convolutions
   have no bias, so the script checks that each such input is that zero constant, removes it
   and then removes the nodes nothing uses any more. (The importer itself does not count such
   a bias as parameters either, ``plugins/onnx/handlers.py``; removing it keeps the file small.)
3. The weights are replaced by references to an external data file that does not exist: every
   float initializer keeps its name, type and dimensions (all optmap reads), and the file shrinks from
   ~45 MB to under 100 kB. ``onnx.load(path, load_external_data=False)`` reads it. Of torch's
   node metadata only the module scopes that name the layers are kept (the stack traces name
   paths of the exporting machine).
"""

from pathlib import Path

import onnx
import torch
import torchvision
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
OUT = HERE / "resnet18.onnx"
WEIGHTS = "resnet18.weights-not-kept"  # external data location written into the model, never created
KEPT_METADATA = ("pkg.torch.onnx.name_scopes", "pkg.torch.onnx.class_hierarchy")
FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}


def export() -> onnx.ModelProto:
    model = torchvision.models.resnet18(weights=None).eval()
    example = torch.zeros(2, 3, 224, 224)
    program = torch.onnx.export(model, (example,), dynamo=True, optimize=False, input_names=["image"],
                                output_names=["logits"], dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    return program.model_proto


def is_zero_bias(name: str, producers: dict[str, onnx.NodeProto]) -> bool:
    """True when ``name`` is Expand(CastLike(<constant 0>, ...), ...): torch's stand-in for "no bias"."""
    expand = producers.get(name)
    if expand is None or expand.op_type != "Expand":
        return False
    cast = producers.get(expand.input[0])
    if cast is None or cast.op_type != "CastLike":
        return False
    const = producers.get(cast.input[0])
    if const is None or const.op_type != "Constant":
        return False
    value = numpy_helper.to_array(const.attribute[0].t)
    return value.size == 1 and float(value.reshape(())) == 0.0


def drop_zero_biases(model: onnx.ModelProto) -> int:
    producers = {out: node for node in model.graph.node for out in node.output}
    dropped = 0
    for node in model.graph.node:
        if node.op_type == "Conv" and len(node.input) == 3 and is_zero_bias(node.input[2], producers):
            del node.input[2]
            dropped += 1
    return dropped


def remove_dead_nodes(model: onnx.ModelProto) -> None:
    """Remove nodes whose outputs nothing reads (repeatedly), then unused initializers."""
    graph = model.graph
    while True:
        used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
        dead = [node for node in graph.node if not any(out in used for out in node.output)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    used = {name for node in graph.node for name in node.input}
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)


def strip_weights(model: onnx.ModelProto, location: str = WEIGHTS) -> None:
    """Point every floating-point initializer at an external file that is never written: names,
    types and dimensions stay. Integer initializers (shapes, axes) keep their values: shape
    inference reads them."""
    offset = 0
    for init in model.graph.initializer:
        if init.data_type not in FLOATS:
            continue
        size = len(init.raw_data) if init.HasField("raw_data") else numpy_helper.to_array(init).nbytes
        for field in ("raw_data", "float_data", "int32_data", "double_data"):
            init.ClearField(field)
        init.data_location = onnx.TensorProto.EXTERNAL
        del init.external_data[:]
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(size))):
            entry = init.external_data.add()
            entry.key, entry.value = key, value
        offset += size


def keep_module_names(model: onnx.ModelProto) -> None:
    """Keep only the node metadata optmap names layers by (torch's module scopes and classes): the
    Python stack traces name this machine's paths, and the FX node texts only add size."""
    for node in model.graph.node:
        kept = [p for p in node.metadata_props if p.key in KEPT_METADATA]
        del node.metadata_props[:]
        node.metadata_props.extend(kept)


def main() -> None:
    model = export()
    dropped = drop_zero_biases(model)
    remove_dead_nodes(model)
    onnx.checker.check_model(model, full_check=True)  # still valid ONNX, with the weights in place
    strip_weights(model)
    keep_module_names(model)
    onnx.save_model(model, OUT)
    print(f"{OUT.name}: {OUT.stat().st_size} bytes, {len(model.graph.node)} nodes, "
          f"{len(model.graph.initializer)} initializers, {dropped} zero conv biases removed")


if __name__ == "__main__":
    main()
