"""Reproduce AccPar's evaluation (HPCA 2020, §6) with optmap and print it as markdown.

    python examples/reproduce_accpar.py [--out docs/reproductions/accpar-results.md]

Per model and array: the time of each engine's plan under the `accpar` cost model and its
speedup over data parallelism, with geometric means and per-family ranges next to the paper's,
and the Fig. 7 table (AlexNet, type per layer per level). A sweep cannot express these: they
summarise over models (geometric means, ranges) or print a plan's decisions. Fig. 8, a grid over
the hierarchy depth, is the sweep ``problems/accpar/fig8.sweep.toml`` (``optmap sweep``).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import optmap
from optmap.problem import build_problem, read_spec

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ROOT / "problems" / "accpar"
MODELS = ["lenet", "alexnet", "vgg11", "vgg13", "vgg16", "vgg19", "resnet18", "resnet34", "resnet50"]
ENGINES = ["dp", "owt", "hypar", "accpar"]
# AccPar §6.2, §6.3 (geometric means over the models; VGG and ResNet ranges from the text,
# ResNet OWT/HyPar ranges in the reading of the note §5.2: the abstract swaps them).
PAPER_GEOMEAN = {"hetero": {"owt": 2.98, "hypar": 3.78, "accpar": 6.30}, "homog": {"owt": 2.94, "hypar": 3.51, "accpar": 3.86}}
PAPER_RANGES = {
    "vgg": {"owt": (5.33, 8.25), "hypar": (5.92, 9.46), "accpar": (9.75, 16.14)},
    "resnet": {"owt": (1.03, 1.04), "hypar": (1.22, 1.38), "accpar": (1.92, 2.20)},
}


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def speedups(problem) -> dict[str, float]:
    times = {engine: optmap.solve(problem, engine=engine).values["time"] for engine in ENGINES}
    return {engine: times["dp"] / times[engine] for engine in ENGINES}


def linear_problem(path: Path):
    """The same problem with the paper-literal share scaling of Eq. 10 (note §6.3, option a)."""
    spec = read_spec(path)
    spec["cost"]["share_scaling"] = "linear"
    return build_problem(spec, path)


def model_tables(lines: list[str]) -> None:
    for array in ("hetero", "homog"):
        title = "128 TPU-v2 + 128 TPU-v3" if array == "hetero" else "128 TPU-v3"
        lines += [f"### {title} (batch 512, bf16)", "",
                  "| model | OWT | HyPar | AccPar | AccPar, linear shares | AccPar share (v2) |", "|---|---|---|---|---|---|"]
        table = {}
        for model in MODELS:
            path = PROBLEMS / f"{array}-{model}.toml"
            problem = optmap.load(path)
            table[model] = speedups(problem)
            table[model]["linear"] = speedups(linear_problem(path))["accpar"] if array == "hetero" else table[model]["accpar"]
            share = optmap.solve(problem, engine="accpar").report.plan["shares"]
            shown = ", ".join(f"{v:.3f}" for v in share.values()) or "-"
            row = table[model]
            lines.append(f"| {model} | {row['owt']:.2f}x | {row['hypar']:.2f}x | {row['accpar']:.2f}x | {row['linear']:.2f}x | {shown} |")
        ours = {e: geomean([table[m][e] for m in MODELS]) for e in ("owt", "hypar", "accpar", "linear")}
        paper = PAPER_GEOMEAN[array]
        lines.append(f"| **geomean (ours)** | {ours['owt']:.2f}x | {ours['hypar']:.2f}x | {ours['accpar']:.2f}x | {ours['linear']:.2f}x | |")
        lines.append(f"| **geomean (paper)** | {paper['owt']:.2f}x | {paper['hypar']:.2f}x | {paper['accpar']:.2f}x | | |")
        if array == "hetero":
            for family, members in (("vgg", MODELS[2:6]), ("resnet", MODELS[6:])):
                cells = []
                for engine in ("owt", "hypar", "accpar", "linear"):
                    low, high = min(table[m][engine] for m in members), max(table[m][engine] for m in members)
                    plow, phigh = PAPER_RANGES[family]["accpar" if engine == "linear" else engine]
                    cells.append(f"{low:.2f}–{high:.2f}x (paper {plow:.2f}–{phigh:.2f}x)")
                lines.append(f"| {family} range | " + " | ".join(cells) + " | |")
        lines.append("")


def fig7(lines: list[str]) -> None:
    problem = optmap.load(PROBLEMS / "fig7-alexnet.toml")
    result = optmap.solve(problem, engine="accpar")
    levels = result.report.plan["levels"]
    lines += ["### Fig. 7: AccPar's type per layer and level, AlexNet, 7 levels, batch 128", "",
              "| layer | " + " | ".join(f"L{h}" for h in range(len(levels))) + " |",
              "|---|" + "---|" * len(levels)]
    for layer in levels[0]["types"]:
        lines.append(f"| {layer} | " + " | ".join(level["types"][layer] for level in levels) + " |")
    lines.append("")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the markdown to this file")
    args = parser.parse_args()
    lines = ["## Speedup over data parallelism", ""]
    model_tables(lines)
    fig7(lines)
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
