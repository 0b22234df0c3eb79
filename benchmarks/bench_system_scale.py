"""Systems that scale with groups, not devices (issue 14, item 1): ``optmap run`` of ResNet-152
with the ``accpar`` engine on 2^10, 2^20 and 2^30 identical accelerators, as a whole process.

Target: 2^30 accelerators in under 1 s and 200 MB. The per-device graph is never built (AccPar
needs only the groups); a cost model that routes between devices gets one line instead when the
graph would pass ``optmap.system.graph.GRAPH_SIZE_LIMIT``.

    python benchmarks/bench_system_scale.py [--exponents 10,20,30] [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from timing import machine, optmap_command, process, verdict

PROBLEM = """name = "scale-2^{exponent}"
[workload]
model = "resnet152"
batch = 512
dtype = "bf16"
[system]
topology = "fully-connected"
[[system.groups]]
accelerator = "tpu-v3"
count = {count}
[cost]
model = "accpar"
[objective]
minimize = ["time"]
[search]
engine = "accpar"
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exponents", default="10,20,30", help="system sizes as powers of two")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        for exponent in (int(e) for e in args.exponents.split(",")):
            path = Path(folder) / f"scale{exponent}.toml"
            path.write_text(PROBLEM.format(exponent=exponent, count=2**exponent))
            result = process([*optmap_command(), "run", str(path), "--quiet", "--json", str(path.with_suffix(".json"))],
                             args.repeats)
            line = f"resnet152, accpar, 2^{exponent} accelerators: {result}"
            if exponent == 30:
                line += (f"; target < 1 s and < 200 MB: CPU {verdict(result.cpu, 1.0)}, wall "
                         f"{verdict(result.wall, 1.0)}, memory {verdict(result.rss_mb, 200)}")
            print(line, flush=True)


if __name__ == "__main__":
    main()
