"""``optmap run`` as a user runs it (issue 14, item 5): whole processes, CPU and wall seconds.

- problems/quickstart.toml (VGG-16 on 8 TPU-v2 + 8 TPU-v3, the ``accpar`` engine): target
  under 0.35 s for the whole process;
- a chain of 10,000 FC layers (the AccPar text format) on 8 TPU-v3: the default output (the
  per-layer table summarised to its most expensive rows), ``--layers all`` and ``--quiet``.

The figure depends on the environment as much as on optmap: an editable install adds its
import finder, and a site with extra ``.pth`` files or ``PYTHONDONTWRITEBYTECODE`` (no cached
bytecode: every module compiled on every start) adds more. The script prints the interpreter's
bare start-up (``python -c pass``) beside it; ``--optmap PATH`` times another installed command,
e.g. one in a fresh virtual environment made with ``pip install .``, as a user has it.

    python benchmarks/bench_cli.py [--repeats 5] [--skip-all] [--optmap PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from timing import ROOT, machine, optmap_command, process, verdict

CHAIN = """name = "chain10k"
[workload]
file = "chain10k.txt"
batch = 512
[system]
topology = "fully-connected"
[[system.groups]]
accelerator = "tpu-v3"
count = 8
[cost]
model = "accpar"
[objective]
minimize = ["time"]
[search]
engine = "accpar"
"""


def chain_layers(n: int) -> str:
    lines = [f"num_layers {n}"]
    for i in range(n):
        lines += [f"fc{i} FC", f"in_ch {256 + 64 * (i % 5)}", f"out_ch {256 + 64 * ((i + 1) % 5)}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-all", action="store_true", help="skip the slow --layers all run")
    parser.add_argument("--optmap", metavar="PATH", help="the optmap command to time (default: this environment's)")
    args = parser.parse_args()
    print(machine())
    command = [args.optmap] if args.optmap else optmap_command()
    python = Path(command[0]).with_name("python") if args.optmap else Path(sys.executable)
    bare = process([str(python), "-c", "pass"], args.repeats)
    print(f"{command[0]}; the interpreter's bare start-up (python -c pass): {bare}")
    run = [*command, "run"]
    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "result.json")
        quick = process([*run, str(ROOT / "problems" / "quickstart.toml"), "--json", out], args.repeats)
        print(f"quickstart (vgg16, 8 + 8 accelerators, accpar engine), whole process: {quick}; target < 0.35 s: "
              f"CPU {verdict(quick.cpu, 0.35)}, wall {verdict(quick.wall, 0.35)}")
        Path(folder, "chain10k.txt").write_text(chain_layers(10_000))
        Path(folder, "chain10k.toml").write_text(CHAIN)
        variants = [("default (summarised table)", []), ("--quiet", ["--quiet"])]
        if not args.skip_all:
            variants.append(("--layers all", ["--layers", "all"]))
        for label, extra in variants:
            t = process([*run, "chain10k.toml", "--json", out, *extra], max(1, args.repeats // 2), cwd=Path(folder))
            print(f"10,000-layer chain, {label}: {t}")


if __name__ == "__main__":
    main()
