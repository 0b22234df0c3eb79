"""One primary layer under given decisions: its passes, timesteps and spatial minibatches, and the breakdown of Fig. 13.

Per pass the time is ``reps x TotCy(one step, one spatial minibatch)`` plus what happens once per
layer and pass: the gradient reduction and weight update after all steps and spatial minibatches
(§III-C: "DySM does not increase the gradient reduction cost"; §III-A: an LSTM reduces "only
after all timesteps"), and, for recurrent weights kept on chip across timesteps (§III-B2), their
single fetch from HBM (and the single write of their accumulated gradient). ``reps`` is
timesteps x DySM factor; without weight reuse the partial weight gradients of the reps are
accumulated in HBM (read-modify-write, note §5.3).

Breakdown categories (Fig. 13, note §4.4k), which sum to the total: ``mac`` (MACs busy = the
ideal time), ``underuse`` (PE array idle for data-flow reasons: padding, imbalance, short
streams, pipeline fill), ``visible`` (overlapped transfers not hidden), ``psum``, ``rotation``
(BWD), ``gradient`` (reduction + broadcast), ``weights`` (one-off weight traffic), ``aux``;
``relayout`` and ``pipeline`` (timestep-pipelining transfers) are added by the graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .chip import ChipConfig
from .chipcomm import PTYPES, chips_along, gradient_reduction, rotation
from .layers import SGD_ACCESSES, PrimaryLayer
from .passes import Rotation, pass_cost, tensor_size
from .splits import MB, OUT, TILED, tile_size
from .torus import Torus

CATEGORIES = ("mac", "underuse", "visible", "psum", "rotation", "gradient", "weights", "aux", "relayout", "pipeline")
NON_OVERLAPPED = ("psum", "rotation", "gradient", "weights", "relayout", "pipeline")


@dataclass(frozen=True)
class Phase:
    """What the workload asks of every layer: training or inference, the minibatch, options."""

    training: bool
    batch: int
    load_cycles: int  # cycles to load a block into the PE array (hidden by a stream at least this long)
    skip_first_bwd: bool = True  # a layer fed by the network input needs no input error (note §4.4a)
    bwd_rotation_overlapped: bool = False  # Fig. 5: BWD rotation not overlapped; Fig. 13 shows it overlapped
    gradient_staging: str = "links"  # Fig. 5: the reduction streams over the links; "memory": staged in HBM


class LayerModel:
    """Costs of one layer on one torus, vectorised over rows of decisions."""

    def __init__(self, layer: PrimaryLayer, hw: ChipConfig, torus: Torus, phase: Phase) -> None:
        self.layer, self.hw, self.torus, self.phase = layer, hw, torus, phase
        self.chips_mb, self.chips_out = (np.array(v) for v in zip(*(chips_along(p, torus) for p in PTYPES)))
        skip_bwd = layer.from_input and phase.skip_first_bwd
        self.passes = ("fwd", "upd") if skip_bwd else ("fwd", "bwd", "upd")
        if not phase.training:
            self.passes = ("fwd",)
        self.macs = layer.n_in * layer.n_out * layer.n_ij * layer.n_kij * layer.repeats * phase.batch * layer.timesteps
        self.ideal = self.macs / (torus.chips * hw.cores * hw.macs_per_core * hw.frequency)  # per pass (all reps)
        self.rotations = [rotation(p, torus, 0.0) for p in PTYPES]
        self.gradients = np.array([  # once per layer: reduction + broadcast of the chip's weight gradient
            gradient_reduction(p, torus, hw, float(self.kernel_bytes(self.chip_work(i, 1))), phase.gradient_staging)
            for i, p in enumerate(PTYPES)])

    def chip_work(self, ptype, dysm) -> list:
        """ChipD per dimension for one step and one spatial minibatch (note §4.4b: ceilings, the busiest chip)."""
        layer = self.layer
        ptype = np.asarray(ptype)
        out = np.ceil(layer.n_out / self.chips_out[ptype])
        mb = np.ceil(np.ceil(self.phase.batch / np.asarray(dysm)) / self.chips_mb[ptype])
        return [layer.n_in, out, layer.n_ij, layer.n_kij, mb]

    def kernel_bytes(self, chip: list):
        """Bytes of the weights one chip holds."""
        return tensor_size(self.layer, "K", chip) * self.hw.element_bytes if self.layer.shared_kernel else 0.0

    def _rotation(self, ptype: np.ndarray, chip: list) -> Rotation:
        """Rotation of the whole input features of a chip among its model-parallel group (Fig. 5)."""
        features = tensor_size(self.layer, "I", chip) * self.hw.element_bytes
        pick = {f: np.array([getattr(r, f) for r in self.rotations])[ptype] for f in ("group", "n_x", "n_y")}
        piece = features / pick["group"]
        latency = self.torus.latency
        return Rotation(pick["group"], pick["n_x"], pick["n_y"], piece / self.torus.x_bandwidth + latency,
                        piece / self.torus.y_bandwidth + latency, features)

    def work(self, ptype, dysm, split: list, level: list) -> tuple[list, list, list]:
        """ChipD, CoreD and ArrayD per dimension for split factors and tile levels (TILED order)."""
        chip = self.chip_work(ptype, dysm)
        core = [np.ceil(c / s) for c, s in zip(chip, split)]
        p = (self.hw.array_rows, self.hw.array_cols, 1, 1, 1)
        tiles = list(core)
        for k, lev in zip(TILED, level):
            tiles[k] = tile_size(core[k], lev, p[k])
        return chip, core, tiles

    def evaluate(self, pass_: str, ptype, dysm, split: list, level: list, *, in_res=False, out_res=False,
                 weights_res=False, preloaded=False, reserved=0.0, fork=False) -> dict:
        """Breakdown (seconds per category) and ``capacity`` of ``pass_`` for broadcastable decisions.

        ``split`` holds the five core split factors and ``level`` the four tile levels (TILED
        order), each a scalar or an array. ``in_res``: the main input comes from the scratchpad
        (FWD operand, BWD output kept for the previous layer); ``out_res``: the next layer keeps
        this output (FWD output, BWD/UPD error operand); ``weights_res``: recurrent weights (and
        their gradient) stay on chip across timesteps; ``preloaded``: weights were loaded before
        the job (inference, never fetched); ``fork``: the output has other consumers that read it
        from HBM.
        """
        layer, hw, phase = self.layer, self.hw, self.phase
        ptype, dysm = np.asarray(ptype), np.asarray(dysm)
        chip, core, tiles = self.work(ptype, dysm, split, level)
        reps = layer.timesteps * dysm
        weights_res, preloaded = np.asarray(weights_res, bool), np.asarray(preloaded, bool)
        rot = self._rotation(ptype, chip)
        share = chip[MB] * (chip[OUT] / layer.n_out) / hw.cores  # a core's share of the outputs
        if pass_ == "fwd":
            resident = (in_res, weights_res | preloaded, out_res)
            write_back = np.asarray(in_res) & (phase.training | np.asarray(fork))
            aux, traffic = layer.aux_fwd * share, 1.0
        elif pass_ == "bwd":
            resident, write_back = (out_res, weights_res | preloaded, in_res), False
            aux, traffic = layer.aux_bwd * share, 1.0
        else:
            resident, write_back, aux = (False, out_res, weights_res), False, 0.0
            traffic = np.where(weights_res | (reps == 1), 1.0, (2.0 * reps - 1.0) / reps)
        exposed = pass_ == "bwd" and not phase.bwd_rotation_overlapped
        cost = pass_cost(layer, pass_, core, tiles, split, hw, load_cycles=phase.load_cycles, resident=resident,
                         write_back=write_back, output_traffic=traffic, reserved=reserved,
                         rotation=Rotation() if exposed else rot, aux_accesses=aux)
        zero = 0.0 * cost.ovl
        parts = {
            "mac": self.ideal + zero,
            "underuse": reps * cost.pri - self.ideal,
            "visible": reps * (cost.ovl - cost.pri),
            "psum": reps * cost.psum,
            "rotation": (reps * rot.exposed + zero) if exposed else zero,
            "gradient": (self.gradients[ptype] + zero) if pass_ == "upd" else zero,
            "weights": np.where(weights_res & ~preloaded, self.kernel_bytes(chip) / hw.hbm_effective, 0.0) + zero,
            "aux": reps * cost.aux + zero,
            "capacity": cost.capacity + zero,
        }
        if pass_ == "upd" and layer.shared_kernel:  # SGD on the shard a chip owns after the reduction
            parts["aux"] = parts["aux"] + SGD_ACCESSES * layer.weight_elements / self.torus.chips / hw.cores \
                * hw.element_bytes / hw.spad_bandwidth
        return parts

    def total(self, parts: dict[str, np.ndarray]) -> np.ndarray:
        """Sum of the categories; ``inf`` where the scratchpad is too small."""
        total = sum(parts[c] for c in CATEGORIES if c in parts)
        return np.where(parts["capacity"] <= self.hw.spad_bytes, total, np.inf)
