"""The multi-modal face anti-spoofing models of MARS's H2H comparison (Sec. VI-C, Table IV).

Both are three-branch DAGs, one branch per modality (RGB, depth, IR), whose features are
concatenated along channels and processed by shared stages. MARS gives no layer list for either
and neither paper's exact network is published as a layer table, so these are **documented
approximations** built from torchvision's ResNet blocks (:func:`optmap.workload.resnet.resnet_stage`):

* ``casia-surf`` — the CASIA-SURF baseline (Zhang et al., TBIOM 2020 / CVPR 2019): a ResNet-18
  per modality up to res3 (stem, then stages of two BasicBlocks with 64, 128, 256 channels), the three
  res3 features concatenated (768 channels; the paper's squeeze-and-excitation re-weighting
  before the concatenation is left out: its FC layers are negligible and MARS maps convolutions),
  then res4 (two BasicBlocks, 512) and a 2-way classifier. Inputs 3 × 112 × 112 per modality.
* ``facebagnet`` — FaceBagNet (Shen et al., CVPRW 2019): an SE-ResNeXt-50 (32 × 4d) stream per
  modality up to res2 (stem, 3 + 4 Bottlenecks with 32-group 3×3 convolutions, to 512 channels),
  concatenated (1536 channels; SE blocks and the modal-feature-erasing dropout left out), then
  shared res3 and res4 (6 + 3 Bottlenecks) and a 2-way classifier. Patches resized to
  3 × 112 × 112 per modality.
"""

from __future__ import annotations

from optmap.bounds import Batch, Dimension
from optmap.workload.resnet import resnet_stage, resnet_stem
from optmap.workload import Workload, WorkloadBuilder

MODALITIES = ("rgb", "depth", "ir")


def _branches(b: WorkloadBuilder, kind: str, stages, groups: int) -> list[tuple[str, int]]:
    outs = []
    for m in MODALITIES:
        x, ch = resnet_stem(b, m, prefix=f"{m}."), 64
        for i, (planes, depth) in enumerate(stages, start=1):
            x, ch = resnet_stage(b, x, ch, planes, depth, 1 if i == 1 else 2, kind, f"{m}.layer{i}", groups=groups,
                                 width=2 if groups > 1 else 1)
        outs.append((x, ch))
    return outs


def _model(name: str, kind: str, branch_stages, shared_stages, groups: int, batch: int, dtype: str, phase: str,
           image_size: int, num_classes: int) -> Workload:
    b = WorkloadBuilder(name, (3, image_size, image_size), input_name=MODALITIES[0])
    for m in MODALITIES[1:]:
        b.input((3, image_size, image_size), m)
    outs = _branches(b, kind, branch_stages, groups)
    x, ch = b.concat(*(o for o, _ in outs), name="fusion"), sum(c for _, c in outs)
    for i, (planes, depth) in enumerate(shared_stages, start=len(branch_stages) + 1):
        x, ch = resnet_stage(b, x, ch, planes, depth, 2, kind, f"layer{i}", groups=groups,
                             width=2 if groups > 1 else 1)
    x = b.adaptive_avgpool2d(x, 1, name="avgpool")
    b.linear(b.flatten(x, name="flatten"), num_classes, name="fc")
    return b.build(batch, dtype, phase)


def casia_surf(*, batch: Batch, dtype: str = "fp16", phase: str = "inference", image_size: Dimension = 112,
               num_classes: Dimension = 2) -> Workload:
    """CASIA-SURF baseline (approximation): three ResNet-18 branches to res3, concatenated, shared res4."""
    return _model("casia-surf", "basic", [(64, 2), (128, 2), (256, 2)], [(512, 2)], 1, batch, dtype, phase,
                  image_size, num_classes)


def facebagnet(*, batch: Batch, dtype: str = "fp16", phase: str = "inference", image_size: Dimension = 112,
               num_classes: Dimension = 2) -> Workload:
    """FaceBagNet (approximation): three ResNeXt-50 32x4d streams to res2, concatenated, shared res3-res4."""
    return _model("facebagnet", "bottleneck", [(64, 3), (128, 4)], [(256, 6), (512, 3)], 32, batch, dtype, phase,
                  image_size, num_classes)
