"""FPDeep's view of a workload: the chain of weighted layers as arrays, per split kind.

FPDeep maps a feed-forward CNN, a chain of CONV and FC layers (note §1.1). Non-weighted layers
(ReLU, pooling, dropout, flatten) run in the SFU of the device that finishes a layer (§5.3) and
take no DSPs. Every count comes from the workload IR (:mod:`optmap.workload`): MACs, weights,
shapes, and FLOPs.

Splits (the mapping IR shared with AccPar, whose Type-I/II/III partition the batch, the input and
the output dimension of a layer): a layer that straddles devices is split by

* ``II``: input channels (FPDeep's ICP, §4.1) — each device holds ``c`` input channels and their
  weights for every output, and computes partial sums of all outputs, reduced along the chain;
* ``III``: output channels (FPDeep's OCP) — each device holds ``c`` output channels and all
  inputs (cached on every device, §4.1), and computes complete outputs.

Type-I (batch) has no place here: FPDeep streams one image at a time. A *unit* is one channel of
the split dimension (an FC layer's channels are its features), the granularity of a cut.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optmap import schedule
from optmap.errors import OptmapError
from optmap.workload import Workload

SPLITS = ("II", "III")  # AccPar Type-II = ICP (input channels), Type-III = OCP (output channels)
ICP, OCP = 0, 1
PHASES = 3  # FP, EB, PG: "due to BP, the number of operations per layer triples" (§1)


@dataclass(frozen=True, eq=False)
class LayerTable:
    """Per weighted layer (in chain order) everything the formulation needs, as numpy arrays.

    Per layer: ``kernel`` K² (the tile size, §5.3), ``phases`` (3, or 2 for a first layer without
    EB), ``macs`` forward MACs per image, ``work`` = phases × macs (DSP-cycles at 1 MAC/DSP),
    ``in_spatial`` H_in², ``out_spatial`` H'² (before pooling), ``handoff`` the elements passed
    to the next layer (after pooling; the output size for the last layer), ``fc`` (FC layers keep
    their weights in DRAM, §7). Per layer and split (shape (L, 2)): ``units``, and per unit
    ``macs_per_unit``, ``weights_per_unit``, ``act_per_unit``; ``act_fixed`` is what every device
    of the layer caches whatever its share (OCP caches all inputs).
    """

    names: tuple[str, ...]
    kernel: np.ndarray
    phases: np.ndarray
    macs: np.ndarray
    work: np.ndarray
    in_channels: np.ndarray
    out_channels: np.ndarray
    in_spatial: np.ndarray
    out_spatial: np.ndarray
    handoff: np.ndarray
    weights: np.ndarray
    fc: np.ndarray
    units: np.ndarray
    macs_per_unit: np.ndarray
    weights_per_unit: np.ndarray
    act_per_unit: np.ndarray
    act_fixed: np.ndarray
    ops_per_image: float

    def __len__(self) -> int:
        return len(self.names)

    @property
    def work_start(self) -> np.ndarray:
        """Cumulative work at the start of each layer, and the total at the end: (L + 1,)."""
        return schedule.prefix_sums(self.work)

    @property
    def min_unit_work(self) -> float:
        """The smallest work of one unit over every layer and split (the cut resolution)."""
        return float((self.work[:, None] / self.units).min())


def layer_table(workload: Workload, *, first_layer_eb: bool = True, op_count: str = "ir") -> LayerTable:
    """The chain of weighted layers of ``workload``; OptmapError if it is not a plain CNN chain.

    ``first_layer_eb``: whether the error of the network input is computed (Fig. 11 does; note
    §5.23). ``op_count`` (what GOPS counts, per image): ``"ir"`` — the workload IR's training
    FLOPs of every layer (2 per MAC for FP, EB and PG, plus the element-wise ops of ReLU and
    pooling); ``"macs"`` — 2 × MACs × phases of the weighted layers only (note §2.2, "6 × MAC").
    """
    if workload.phase != "training":
        raise OptmapError("fpdeep models CNN training (FP, EB, PG); set [workload] phase = \"training\"")
    if not workload.is_chain():
        raise OptmapError(
            f"fpdeep maps a chain of conv/linear layers (AlexNet, VGG); workload '{workload.name}' has "
            "branches or merges, which FPDeep leaves to future work (§5.1)"
        )
    layers = workload.weighted_layers()
    for layer in layers:
        if layer.op == "matmul":
            raise OptmapError(f"fpdeep: layer '{layer.name}' multiplies two activations; FPDeep maps conv and linear layers")
        if layer.op == "conv2d" and layer.attr("groups", 1) != 1:
            raise OptmapError(f"fpdeep: layer '{layer.name}' is a grouped convolution, which FPDeep's ICP/OCP do not cover")
    count = len(layers)
    first = np.zeros(count, bool)
    first[0] = True
    phases = np.where(first & (not first_layer_eb), PHASES - 1, PHASES)
    macs = np.array([layer.macs for layer in layers], float)
    ic = np.array([layer.in_channels for layer in layers], float)
    oc = np.array([layer.out_channels for layer in layers], float)
    in_sp = np.array([layer.in_spatial for layer in layers], float)
    out_sp = np.array([layer.out_spatial for layer in layers], float)
    handoff = np.array([nxt.in_elements for nxt in layers[1:]] + [layers[-1].out_elements], float)
    weights = np.array([layer.weight_elements for layer in layers], float)
    units = np.stack([ic, oc], axis=1)
    ops = _ops_per_image(workload, layers[0].name, first_layer_eb, op_count, macs, phases)
    return LayerTable(
        names=tuple(layer.name for layer in layers),
        kernel=np.array([layer.kernel_elements for layer in layers], float),
        phases=phases.astype(float),
        macs=macs,
        work=phases * macs,
        in_channels=ic,
        out_channels=oc,
        in_spatial=in_sp,
        out_spatial=out_sp,
        handoff=handoff,
        weights=weights,
        fc=np.array([layer.op == "linear" for layer in layers]),
        units=units,
        macs_per_unit=macs[:, None] / units,
        weights_per_unit=weights[:, None] / units,
        act_per_unit=np.stack([in_sp, np.zeros(count)], axis=1),  # ICP caches its own input channels
        act_fixed=np.stack([np.zeros(count), ic * in_sp], axis=1),  # OCP caches every input channel
        ops_per_image=ops,
    )


def _ops_per_image(workload, first_name, first_layer_eb, op_count, macs, phases) -> float:
    if op_count == "macs":
        return float(2.0 * (macs * phases).sum())  # note §2.2: 2 ops per MAC, FP + EB + PG
    if op_count != "ir":
        raise OptmapError(f"op_count must be \"ir\" or \"macs\", got {op_count!r}")
    total = workload.flops()  # the IR's FLOPs for the whole batch
    ops = total.total / workload.batch
    if not first_layer_eb:
        ops -= workload.layer(first_name).flops(1).backward_data
    return float(ops)
