"""Speed of the composite pipeline's native joint engine (issue 23): whole process, as a user runs it.

- ``optmap run problems/compose/hetero-vgg19-pipeline.toml`` (VGG-19 on 128 TPU-v2 + 128 TPU-v3,
  up to 4 stages, AccPar inside): target within 10 s;
- ``problems/compose/f1-resnet34-pipeline.toml`` and ``small.toml`` for scale.

Medians of ``--repeats`` fresh processes, in CPU seconds of the process (and wall). Not a test.

    python benchmarks/bench_compose.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile

from timing import ROOT, machine, optmap_command, process, verdict

PROBLEMS = ("hetero-vgg19-pipeline", "f1-resnet34-pipeline", "small")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as out:
        for name in PROBLEMS:
            argv = [*optmap_command(), "run", str(ROOT / "problems/compose" / f"{name}.toml"), "--quiet",
                    "--json", f"{out}/{name}.json"]
            t = process(argv, args.repeats)
            target = f"; target <= 10 s: {verdict(t.cpu, 10.0)}" if name == "hetero-vgg19-pipeline" else ""
            print(f"{name}, native pipeline engine, whole process: {t}{target}")


if __name__ == "__main__":
    main()
