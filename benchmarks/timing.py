"""What the speed benchmarks share: the machine they ran on, timings in CPU and wall seconds, and
the AccPar problems two of them measure.

The development machine is shared (2 cores, often a load of 5-10), so wall time says more about
the neighbours than about optmap: every figure is given in CPU seconds of the measured process
(``time.process_time``, or the child's rusage) beside wall seconds, and each script prints the
load average it ran under.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent


def machine() -> str:
    """One line: CPU model, cores, Python, numpy, and the load average now."""
    import numpy as np

    model = platform.processor() or platform.machine()
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}; "
            f"load average {load}")


@dataclass
class Timing:
    cpu: float  # seconds of CPU (user + system)
    wall: float  # seconds on the clock
    rss_mb: float = 0.0  # peak resident memory of a child process, MB

    def __str__(self) -> str:
        memory = f", {self.rss_mb:,.0f} MB" if self.rss_mb else ""
        return f"{_seconds(self.cpu)} CPU ({_seconds(self.wall)} wall{memory})"


def _seconds(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def timed(function: Callable[[], object], repeats: int = 5) -> Timing:
    """The median CPU and wall time of ``function()`` over ``repeats`` calls (after one warm-up)."""
    function()
    cpu, wall = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        function()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return Timing(statistics.median(cpu), statistics.median(wall))


def process(argv: list[str], repeats: int = 3, cwd: Path | None = None) -> Timing:
    """The median CPU, wall time and peak memory of a whole process ``argv`` (stdout discarded)."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        error = child.stderr.read().decode(errors="replace").strip().splitlines()
        child.stderr.close()
        if child.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}): {error[-1] if error else ''}")
        samples.append(Timing(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024))
    return Timing(*(statistics.median(getattr(s, f) for s in samples) for f in ("cpu", "wall", "rss_mb")))


def optmap_command() -> list[str]:
    """The ``optmap`` command of this interpreter's environment, as a user runs it."""
    script = Path(sys.executable).parent / "optmap"
    return [str(script)] if script.exists() else [sys.executable, "-m", "optmap.cli"]


def verdict(value: float, target: float, smaller_is_better: bool = True) -> str:
    met = value <= target if smaller_is_better else value >= target
    return "meets" if met else "misses"


def accpar_problem(model: str, groups: list[tuple[str, int]]):
    """AccPar on ``model`` (batch 512, bf16) over a hierarchical system of (accelerator, count) groups."""
    from optmap.problem import build_problem

    return build_problem({
        "workload": {"model": model, "batch": 512, "dtype": "bf16"},
        "system": {"topology": "hierarchical", "latency_us": 0.0,
                   "groups": [{"accelerator": a, "count": n} for a, n in groups]},
        "cost": {"model": "accpar"},
    })

