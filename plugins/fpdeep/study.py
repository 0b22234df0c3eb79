"""FPDeep's experiments as functions: the scaling study (Fig. 15), its linear-scaling limits, and
the 1-D / 2-D comparison (Figs. 9–10). ``examples/reproduce_fpdeep.py`` writes the report from
them and ``benchmarks/bench_fpdeep.py`` times them.

Every point is the ``fpdeep`` engine's plan for a problem file of ``problems/fpdeep/`` with the
FPGA count (and the accelerator or topology) overridden, as ``--set`` would.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import optmap
from optmap.errors import OptmapError
from optmap.problem import Problem
from optmap.search import SearchResult
from optmap.system import square_shape

# The repository's problems/fpdeep: beside the plugin in a source checkout, else under the working
# directory (an installed optmap run from a clone of the repository, as CI runs the scorecard).
SOURCE_PROBLEMS = Path(__file__).resolve().parents[2] / "problems" / "fpdeep"
NETS = ("alexnet", "vgg16", "vgg19")
VARIANTS = {"150": "vc709", "250": "vc709-250"}  # Gb/s per FPGA → accelerator preset
SIZES = tuple(range(5, 101, 5))


@dataclass(frozen=True)
class Point:
    """One plan of the study."""

    net: str
    variant: str
    count: int
    throughput: float
    link_demand: float
    idle: float
    idle_allocated: float  # idle share of the rate-matched CE arrays only
    max_link_gbps: float
    gops_per_fpga: float
    epochs_per_hour: float
    seconds: float

    @property
    def link_bound(self) -> bool:
        return self.link_demand >= 1 - 1e-9


def problems_folder() -> Path:
    """Where the study's problem files are (see :data:`SOURCE_PROBLEMS`)."""
    for folder in (SOURCE_PROBLEMS, Path.cwd() / "problems" / "fpdeep"):
        if folder.is_dir():
            return folder
    raise OptmapError("the FPDeep study reads the repository's problems/fpdeep/*.toml: run it from a clone of "
                      "the optmap repository")


def problem(net: str, count: int, overrides: tuple[str, ...] = ()) -> Problem:
    """``problems/fpdeep/<net>-15.toml`` on ``count`` FPGAs, with ``--set`` style overrides."""
    return optmap.load(problems_folder() / f"{net}-15.toml", overrides=[f"system.groups.0.count={count}", *overrides])


def solve(net: str, count: int, overrides: tuple[str, ...] = ()) -> SearchResult:
    """The fpdeep engine's plan for ``problems/fpdeep/<net>-15.toml`` on ``count`` FPGAs."""
    return optmap.solve(problem(net, count, overrides), engine="fpdeep")


def point(net: str, variant: str, count: int) -> Point:
    started = time.perf_counter()
    p = problem(net, count, (f'system.groups.0.accelerator="{VARIANTS[variant]}"',))
    m = optmap.solve(p, engine="fpdeep").report.metrics
    useful = m["throughput"] * p.cost_model.table.work.sum()  # MACs per second doing work
    allocated = m["gops_per_fpga_allocated"] * 1e9 / 2 * count  # MACs per second of the CE arrays
    return Point(net, variant, count, m["throughput"], m["link_demand"], m["idle"], 1 - useful / allocated,
                 m["max_link_gbps"], m["gops_per_fpga"], m["epochs_per_hour"], time.perf_counter() - started)


def linear_limit(net: str, variant: str, points: list[Point]) -> tuple[int | None, list[Point]]:
    """The last FPGA count before the first link-bound plan (to one FPGA), and the extra points
    solved to find it; None when no plan of ``points`` is link-bound."""
    ordered = sorted(points, key=lambda p: p.count)
    first = next((i for i, p in enumerate(ordered) if p.link_bound), None)
    if first is None:
        return None, []
    low = ordered[first - 1].count if first else 0
    extra = []
    for count in range(low + 1, ordered[first].count):
        extra.append(point(net, variant, count))
        if extra[-1].link_bound:
            return count - 1, extra
    return ordered[first].count - 1, extra


def scaling_study(sizes=SIZES, nets=NETS, variants=tuple(VARIANTS)) -> dict[tuple[str, str], tuple[list[Point], int | None]]:
    """Every network at every link variant over ``sizes`` FPGAs, with its linear-scaling limit."""
    study = {}
    for net in nets:
        for variant in variants:
            points = [point(net, variant, count) for count in sizes]
            limit, extra = linear_limit(net, variant, points)
            study[net, variant] = (sorted(points + extra, key=lambda p: p.count), limit)
    return study


def mesh_degree(count: int) -> int:
    """The largest node degree of the most square 2-D mesh of ``count`` devices."""
    x, y = square_shape(count)
    return min(x - 1, 2) + min(y - 1, 2)


def topology_comparison(net: str, counts, ports: int = 10, port_gbps: float = 25.0) -> list[dict]:
    """Throughput on a 1-D chain and on a 2-D mesh of FPGAs with ``ports`` links each (Fig. 9:
    each link gets ports / degree of its busiest device): the chain with its chain reduction,
    the mesh with the paper's 2-D (central) reduction and with a chain snaked through it."""
    rows = []
    for count in counts:
        chain_gbps, mesh_gbps = ports // 2 * port_gbps, ports // mesh_degree(count) * port_gbps
        mesh = ("system.topology=\"mesh2d\"", f"system.x_bandwidth_gbps={mesh_gbps}",
                f"system.y_bandwidth_gbps={mesh_gbps}")
        plans = {
            "1-D chain": solve(net, count, (f"system.bandwidth_gbps={chain_gbps}",)),
            "2-D central": solve(net, count, (*mesh, 'cost.reduction="central"')),
            "2-D snake": solve(net, count, (*mesh, 'cost.reduction="chain"')),
        }
        rows.append({"FPGAs": count, "1-D Gb/s per link": chain_gbps, "2-D Gb/s per link": mesh_gbps,
                     **{name: r.report.metrics["throughput"] for name, r in plans.items()}})
    return rows
