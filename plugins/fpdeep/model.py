"""The ``fpdeep`` cost model: a CNN trained as one fine-grained pipeline on a chain of FPGAs.

FPDeep (Wang, Geng, Li, Jin, Herbordt; journal version of FCCM/FPL 2018), note
``seeds/notes/seed-fpdeep.md``. One image streams through every FPGA at once; the score is the
pipeline's period and throughput (images/s), not a step time.

Decisions (the design space, shared vocabulary with AccPar, see :mod:`.layers`):

* ``cut:<b>`` for b = 1..N-1: where device b-1's work ends, a slot on the work line (FP + EB + PG
  work of every layer end to end), rounded to a channel of the layer it falls in. The cuts are
  read as a sorted set, so any vector is a valid partition (§3.2: fractional layer boundaries).
* ``split:<layer>``: ``II`` (input channels, ICP) or ``III`` (output channels, OCP) — AccPar's
  Type-II / Type-III; it matters only for a layer that a cut falls inside (§4.1).
* ``park:<j>`` for every device: how many ``park_levels``-ths of its weights it parks on other
  devices (parameter balancing, §3.4.2); absent when ``park_levels = 0``.

Scoring (details and equations in :mod:`.partition`, :mod:`.memory`, :mod:`.traffic`): each
device's stage time from its DSPs (exact tile allocation with K×K rounding), DRAM time of FC
weights and of any fall-back, the period max over devices; the link bound from the per-image
traffic of every link; throughput = min of both. Resources (Eqs. 8–11): CE arrays on DSPs and
buffers in BRAM (α = β = 1, note §5.5), so Eq. 11 is the DSP budget and Eq. 10 the BRAM check;
the LUT and FF costs f2, f3 are not given by the paper and are not modelled.

Metrics (SI: seconds, bytes, images/s; GOPS and Gb/s named as such): ``throughput`` (maximised;
FPDeep Eq. 7 read as a rate, note §5.1) and ``period``; ``compute_period`` (the period if links
were free); ``gops_per_fpga`` (useful ops, ``op_count``) and ``gops_per_fpga_allocated`` (2 ×
clock × DSPs of the CE arrays rate-matched to the period); ``gops_per_joule``; ``epochs_per_hour``
and ``hours_per_epoch``; ``idle``, the share of the DSP budget's cycles without useful work at the
compute period (K×K rounding, DSPs a portion cannot use, imbalance, DRAM waits; link stalls are
not idle stages); ``max_link_gbps`` per direction at the achieved throughput and ``link_demand``
(link time ÷ compute period, ≥ 1 when a link binds); ``variance`` (Eq. 5 over devices' work;
not reported, NaN, when a device gets no work: Eq. 5 divides by the least work);
``storage_bytes`` (Eq. 12: the largest on-chip demand) and ``max_bram_use``; ``parked_bytes``,
``dram_bytes`` per image, ``power_watts``, ``energy_per_image``; ``memory_bytes`` (the standard
name of :data:`optmap.cost.MEMORY`) equals ``storage_bytes``: the largest device's storage, on chip
and spilled to its DRAM (the FC weights that stream from DRAM are not held between images).
"""

from __future__ import annotations

from typing import Annotated, Literal

from annotated_types import Ge, Gt, Le

import numpy as np

from optmap import schedule
from optmap.cost import BATCH, CostModel, CostReport
from optmap.errors import OptmapError
from optmap.space import DesignSpace, Mapping, categorical, integer
from optmap.system import System
from optmap.workload import Workload

from .hardware import FPGAResources
from .layers import SPLITS, layer_table
from .memory import device_storage, unit_costs
from .partition import cut_grid, decode, encode, portion_macs, stage_times, tiles_for
from .report import build_report
from .traffic import Routes, central_loads, hop_loads, parked_hops

IMAGENET_TRAIN_IMAGES = 1_281_167  # ILSVRC-2012 training set; the paper does not name its dataset (note §5.21)
METRICS = (
    "period", "throughput", "compute_period", "gops_per_fpga", "gops_per_fpga_allocated", "gops_per_joule",
    "epochs_per_hour", "hours_per_epoch", "idle", "max_link_gbps", "link_demand", "variance", "storage_bytes",
    "max_bram_use", "parked_bytes", "dram_bytes", "power_watts", "energy_per_image", "memory_bytes",
)


# The systems FPDeep models (§4.2): the 1-D chain of FPGAs, and a pipeline snaked through a 2-D
# mesh or torus with the central reduction of Fig. 9. A ring, a switch or a hierarchy is not one.
TOPOLOGIES = ("chain", "mesh2d", "torus2d")


def pipeline_order(system: System) -> list[int]:
    """Devices in pipeline order: the device ids, or a snake through a 2-D mesh / torus."""
    shape = system.params.get("shape") if system.topology in ("mesh2d", "torus2d") else None
    if shape is None:
        return list(range(system.count))
    x, y = shape
    return [row * x + (col if row % 2 == 0 else x - 1 - col) for row in range(y) for col in range(x)]


class FPDeepCostModel(CostModel):
    """FPDeep: fine-grained pipelined CNN training on a chain of FPGAs (period, throughput, links, BRAM)."""

    formulation = "fpdeep"
    capabilities = frozenset({BATCH})
    metrics = METRICS
    primary_metric = "throughput"  # §4.4: the target is "throughput, i.e. epoch/h"
    senses = {name: "max" for name in ("throughput", "gops_per_fpga", "gops_per_fpga_allocated", "gops_per_joule",
                                       "epochs_per_hour")}
    units = {"gops_per_fpga": "GOPS", "gops_per_fpga_allocated": "GOPS", "gops_per_joule": "GOPS/J",
             "epochs_per_hour": "1/h", "hours_per_epoch": "h", "max_link_gbps": "Gb/s", "energy_per_image": "J"}

    def __init__(
        self,
        workload: Workload,
        system: System,
        *,
        dsp_budget: Annotated[float, Gt(0), Le(1)] = 0.8,
        activation_images: Annotated[float, Ge(0)] = 1.0,
        fc_batch: Annotated[int, Ge(1), Le(1 << 20)] | None = None,
        memory_fallback: Literal["dram", "none"] = "dram",
        op_count: Literal["ir", "macs"] = "ir",
        first_layer_eb: bool = True,
        reduction: Literal["auto", "chain", "central"] = "auto",
        weight_passes: Annotated[int, Ge(1), Le(16)] = 2,
        park_levels: Annotated[int, Ge(0), Le(1024)] = 8,
        epoch_images: Annotated[int, Ge(1), Le(10**12)] = IMAGENET_TRAIN_IMAGES,
    ) -> None:
        """Options (each an open point of the paper, note §5):

        ``dsp_budget`` fraction of DSP slices the CE arrays may use (§6.3.1: "roughly 80%");
        ``activation_images`` images' worth of inputs each Act-RAM holds from FP until PG (note
        §5.8: the FC layers need the whole image before any error returns, so one image);
        ``fc_batch`` images per pass of the FC layers over their DRAM weights (default: the
        workload's batch, one pass per mini-batch); ``memory_fallback`` "dram" holds what does
        not fit BRAM in DRAM at a price in DRAM time, "none" marks such mappings infeasible;
        ``op_count`` what GOPS counts per image ("ir": the workload IR's training FLOPs, "macs":
        2 × MACs × phases of the weighted layers; :func:`.layers.layer_table`);
        ``first_layer_eb`` whether the input image's error is computed (Fig. 11 does);
        ``reduction`` "chain" (§4.2, the 1-D scheme) or "central" (the 2-D scheme of Fig. 9;
        "auto": central on mesh2d/torus2d, chain otherwise); ``weight_passes`` times a parked
        weight travels to its user per image (FP and EB); ``park_levels`` granularity of the
        parked fraction (0: no parameter balancing); ``epoch_images`` images per epoch.
        """
        if not 0 < dsp_budget <= 1:
            raise OptmapError(f"dsp_budget must be in (0, 1], got {dsp_budget}")
        if activation_images < 0:
            raise OptmapError(f"activation_images must be >= 0, got {activation_images}")
        for key, value in (("fc_batch", fc_batch), ("weight_passes", weight_passes), ("epoch_images", epoch_images)):
            if value is not None and value < 1:
                raise OptmapError(f"{key} must be >= 1, got {value}")
        if park_levels < 0:
            raise OptmapError(f"park_levels must be >= 0, got {park_levels}")
        if system.topology not in TOPOLOGIES:
            raise OptmapError(f"fpdeep: topology '{system.topology}' is not one FPDeep models; its pipeline runs on a "
                              f"chain of FPGAs (§4.2) or snakes through a 2-D mesh or torus (Fig. 9): use "
                              f"{', '.join(TOPOLOGIES)}")
        devices = system.devices
        fpgas = [FPGAResources.of(device, i) for i, device in enumerate(devices)]
        self.workload, self.system = workload, system
        self.table = layer_table(workload, first_layer_eb=first_layer_eb, op_count=op_count)
        self.value_bytes = float(workload.bytes_per_element)
        self.activation_images, self.memory_fallback = float(activation_images), memory_fallback
        self.fc_batch = int(fc_batch or workload.batch)
        self.weight_passes, self.park_levels, self.epoch_images = weight_passes, park_levels, epoch_images
        self.rate = np.array([f.clock_hz * f.macs_per_dsp for f in fpgas], float)
        self.budget = np.array([np.floor(dsp_budget * f.dsp_slices) for f in fpgas], float)
        self.bram = np.array([f.bram_bytes for f in fpgas], float)
        self.dram_rate = np.array([d.memory_bandwidth for d in devices], float)
        self.power = float(sum(d.power_watts or 0.0 for d in devices))
        self._check_fits(devices)
        self.order = pipeline_order(system)
        self.reduction = reduction if reduction != "auto" else (
            "central" if system.topology in ("mesh2d", "torus2d") else "chain")
        self.routes = Routes(system, self.order)
        self.hop_capacity = self.routes.hop_capacity()
        self.grid = cut_grid(self.table)
        self.unit_costs = unit_costs(self.table, self.value_bytes, self.activation_images, self.fc_batch)
        self.space = self._space()
        column = lambda name: self.space.columns(name).start  # noqa: E731
        self.cut_columns = [column(f"cut:{b}") for b in range(1, system.count)]
        self.split_columns = [column(f"split:{n}") for n in self.table.names]
        self.park_columns = [column(f"park:{j}") for j in range(system.count)] if park_levels else []

    # --- validation and the design space ------------------------------------------------------
    def _check_fits(self, devices) -> None:
        t = self.table
        units = int(t.units.max(1).sum())
        if len(devices) > units:
            raise OptmapError(
                f"fpdeep: {len(devices)} FPGAs but workload '{self.workload.name}' has only {units} work units "
                f"(channels of its layers), so some FPGA would get no work; use at most {units} FPGAs"
            )
        need = t.phases * t.kernel
        worst, small = int(np.argmax(need)), int(np.argmin(self.budget))
        if need[worst] > self.budget[small]:
            raise OptmapError(
                f"fpdeep: layer '{t.names[worst]}' needs {need[worst]:.0f} DSPs for one {np.sqrt(t.kernel[worst]):.0f}x"
                f"{np.sqrt(t.kernel[worst]):.0f} tile per phase (FP, EB, PG), more than the {self.budget[small]:.0f} "
                f"DSPs device {small} ('{devices[small].name}') offers; raise dsp_budget or use a larger FPGA"
            )

    def _space(self) -> DesignSpace:
        n = self.system.count
        variables = [integer(f"cut:{b}", 0, self.grid, device=b) for b in range(1, n)]
        variables += [categorical(f"split:{name}", SPLITS, layer=name) for name in self.table.names]
        if self.park_levels:
            variables += [integer(f"park:{j}", 0, self.park_levels, device=j) for j in range(n)]
        return DesignSpace(tuple(variables), repair=self._sort_cuts)

    def _sort_cuts(self, X: np.ndarray) -> np.ndarray:
        """The formulation's repair: cuts are a set, written in order (device b ends at cut b)."""
        X[:, self.cut_columns] = np.sort(X[:, self.cut_columns], axis=1)
        return X

    def vector(self, bounds, splits, park=None) -> np.ndarray:
        """The space vector of unit boundaries (N + 1,), splits (L,) and park levels (N,)."""
        x = np.zeros(self.space.width)
        splits = np.asarray(splits, int)
        x[self.cut_columns] = encode(self.table, np.asarray(bounds, float), splits, self.grid)
        x[self.split_columns] = splits
        if self.park_columns:
            x[self.park_columns] = np.zeros(self.system.count) if park is None else park
        return x

    def plans(self) -> dict[str, Mapping]:
        """``coarse``: FPDeep's coarse phase (§3.2) — equal work per device, all ICP, no parking."""
        n = self.system.count
        x = np.zeros(self.space.width)
        x[self.cut_columns] = np.rint(np.arange(1, n) / n * self.grid)
        return {"coarse": self.space.decode(x)}

    # --- scoring ------------------------------------------------------------------------------
    def scored(self, X: np.ndarray) -> dict:
        """Every metric (arrays over the rows of X), ``feasible``, and under ``_detail`` the
        partition, storage, loads and DSPs behind them (for reports and the fpdeep engine)."""
        t, n = self.table, self.system.count
        X = np.atleast_2d(np.asarray(X, float))
        splits = np.rint(X[:, self.split_columns]).astype(int)
        park = X[:, self.park_columns] / self.park_levels if self.park_columns else np.zeros((len(X), n))
        part = decode(t, X[:, self.cut_columns], splits, self.grid)
        macs = portion_macs(t, part)
        stage = stage_times(macs, t, self.rate, self.budget)
        store = device_storage(part, self.unit_costs, park, self.bram, self.value_bytes)
        dram_time = store.dram / self.dram_rate
        compute_period = schedule.period(np.maximum(stage, dram_time))  # the slowest device (Eq. 7, note §5.1)
        if self.reduction == "chain":
            hops = hop_loads(t, part)
            fwd, bwd = parked_hops(store.flows, len(X), n, self.weight_passes)
            loads = self.routes.chain_loads(hops + fwd, hops + bwd)
        else:
            loads = central_loads(t, part, store.flows, self.routes, self.weight_passes)
        link_time = (loads * self.value_bytes / self.routes.capacity).max(1, initial=0.0)
        period = np.maximum(compute_period, link_time)
        with np.errstate(divide="ignore", invalid="ignore"):
            throughput = np.where(period > 0, 1.0 / period, 0.0)
            tiles = np.maximum(tiles_for(macs, t.kernel, self.rate[None, :, None], period[:, None, None]), macs > 0)
            dsps = t.phases * t.kernel * tiles
            work = (macs * t.phases).sum(-1)  # (M, N) DSP-cycles of every device per image
            allocated = (dsps.sum(-1) * self.rate).sum(1)  # MACs/s of the rate-matched CE arrays
            idle = 1.0 - work.sum(1) / ((self.budget * self.rate).sum() * compute_period)
            ops_min = work.min(1)
            # Eq. 5; undefined (NaN, printed "-") when a device gets no work: Op_min = 0 divides
            variance = np.where(ops_min > 0, ((work - ops_min[:, None]) / ops_min[:, None]).sum(1), np.nan)
        ops = t.ops_per_image
        gops = ops * throughput / 1e9
        feasible = np.isfinite(compute_period)
        if self.memory_fallback == "none":
            feasible &= (store.spill <= 0).all(1) & (store.unplaced <= 0).all(1)
        return {
            "period": period, "throughput": throughput, "compute_period": compute_period,
            "gops_per_fpga": gops / n, "gops_per_fpga_allocated": 2.0 * allocated / n / 1e9,
            "gops_per_joule": gops / self.power if self.power else np.full(len(X), np.nan),
            "epochs_per_hour": throughput * 3600.0 / self.epoch_images,
            "hours_per_epoch": np.where(throughput > 0, self.epoch_images / (3600.0 * throughput), np.inf),
            "idle": idle, "max_link_gbps": (loads * self.value_bytes * 8 / 1e9).max(1, initial=0.0) * throughput,
            "link_demand": np.where(compute_period > 0, link_time / compute_period, 0.0),
            "variance": variance, "storage_bytes": store.need.max(1), "memory_bytes": store.need.max(1),
            "max_bram_use": (store.need / self.bram).max(1),
            "parked_bytes": store.parked.sum(1), "dram_bytes": store.dram.sum(1),
            "power_watts": np.full(len(X), self.power), "energy_per_image": self.power * period,
            "feasible": feasible,
            "_detail": dict(part=part, macs=macs, stage=stage, store=store, dram_time=dram_time, loads=loads,
                            dsps=dsps, work=work),
        }

    def evaluate_batch(self, X: np.ndarray, chunk: int = 256) -> dict[str, np.ndarray]:
        """Every metric for every row of X, vectorised over chunks of rows."""
        parts = []
        for start in range(0, len(X), chunk):
            out = self.scored(X[start:start + chunk])
            out.pop("_detail")
            parts.append(out)
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}

    def evaluate(self, mapping: Mapping) -> CostReport:
        out = self.scored(mapping.array[None])
        return build_report(self, out)

