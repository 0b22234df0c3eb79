"""Export a small torchvision VisionTransformer to ONNX without its weights: produces ``vit_tiny.onnx``.

The model is torchvision's ``VisionTransformer`` class (the code of ``vit_b_16``) at a small
size: 32x32 images, 8x8 patches, 2 encoder layers of 4 heads, width 64, MLP 128, 10 classes.
Its attention is ``nn.MultiheadAttention``, which moves the batch to the second axis and folds
it into the heads, and its class token is expanded to the batch and concatenated: the patterns a
real transformer export has. Exported and stripped as ``make_resnet18.py`` does (see there);
run it the same way:

    /tmp/torchenv/bin/python tests/data/onnx/make_vit.py
"""

import onnx
import torch
from torchvision.models.vision_transformer import VisionTransformer

from make_resnet18 import HERE, drop_zero_biases, keep_module_names, remove_dead_nodes, strip_weights

OUT = HERE / "vit_tiny.onnx"


def main() -> None:
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
                              num_classes=10).eval()
    program = torch.onnx.export(model, (torch.zeros(2, 3, 32, 32),), dynamo=True, optimize=False,
                                input_names=["image"], output_names=["logits"],
                                dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    proto = program.model_proto
    dropped = drop_zero_biases(proto)
    remove_dead_nodes(proto)
    onnx.checker.check_model(proto, full_check=True)
    strip_weights(proto, "vit_tiny.weights-not-kept")
    keep_module_names(proto)
    onnx.save_model(proto, OUT)
    params = sum(p.numel() for p in model.parameters())
    print(f"{OUT.name}: {OUT.stat().st_size} bytes, {len(proto.graph.node)} nodes, {dropped} zero conv biases "
          f"removed; torch counts {params} parameters")


if __name__ == "__main__":
    main()
