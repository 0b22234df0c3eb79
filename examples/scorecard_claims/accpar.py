"""AccPar (Song et al., HPCA 2020) on the scorecard: §6.2-6.3 speedups over data parallelism, the
per-family ranges and the Fig. 7 plan, computed by ``examples/reproduce_accpar.py``'s functions."""

from __future__ import annotations

from functools import lru_cache

import optmap
import reproduce_accpar as rep

from .card import Claim, finding, in_ci

DOC = "docs/reproductions/accpar.md"
SHARES = (f"{DOC} § Where and why we differ, 1 (share_scaling = \"linear\", Eq. 10 read literally, "
          "column 'AccPar, linear shares' of accpar-results.md)")
EQ10 = ("Eq. 10 assumes each side's cost is linear in its share, but under Tables 4-5 Type-I's weight-gradient "
        "psum does not shrink with the share, so the TPU-v2 half pays it at 8 Gb/s whatever it gets; the best "
        "share is then 1/3 and AccPar gains less over HyPar. share_scaling = \"linear\" (Eq. 10 literally) "
        "lands within 1-4 % of the paper; 'tables' stays the default as what the paper's tables imply.")
OWT_RESNET = ("On ResNet-18/34, OWT differs from DP only in the 512→1000 FC layer, where at batch 512 Type-II's "
              "forward psum equals Type-I's gradient psum: OWT cannot gain and pays the I→II conversion. The "
              "paper's trace simulator must count something unspecified here.")


@lru_cache(maxsize=None)
def table(array: str) -> dict[str, dict[str, float]]:
    """Speedups over DP per model and engine (and AccPar with linear shares) on one array."""
    out = {}
    for model in rep.MODELS:
        path = rep.PROBLEMS / f"{array}-{model}.toml"
        out[model] = rep.speedups(optmap.load(path))
        out[model]["linear"] = rep.speedups(rep.linear_problem(path))["accpar"]
    return out


def geomean(array: str, engine: str) -> float:
    return rep.geomean([table(array)[m][engine] for m in rep.MODELS])


def family_range(family: str, engine: str) -> tuple[float, float]:
    members = rep.MODELS[2:6] if family == "vgg" else rep.MODELS[6:]
    values = [table("hetero")[m][engine] for m in members]
    return min(values), max(values)


def range_claims() -> list[Claim]:
    out = []
    for family, label in (("vgg", "VGG"), ("resnet", "ResNet")):
        for engine, name in (("owt", "OWT"), ("hypar", "HyPar"), ("accpar", "AccPar")):
            low, high = family_range(family, engine)
            paper = rep.PAPER_RANGES[family][engine]
            # the range reproduces when both ends do: the larger error of the two ends
            worst = max(((low, paper[0]), (high, paper[1])), key=lambda p: abs(p[0] - p[1]) / p[1])
            explanation = (EQ10 if engine == "accpar" else OWT_RESNET if family == "resnet" and engine == "owt"
                           else "HyPar plans minimise communicated elements and are scored by time; the paper "
                           "gives no per-model HyPar values to place the gap.")
            out.append(Claim("accpar", f"heterogeneous {label} {name} speedup range (the worse end)",
                             "§6.2 text (note §5.2 reading)", worst[1], worst[0], unit="x",
                             detail=f"ours {low:.2f}–{high:.2f}x, paper {paper[0]:.2f}–{paper[1]:.2f}x",
                             explanation=explanation, sensitivity=SHARES if engine == "accpar" else DOC))
    return out


def fig7() -> list[Claim]:
    problem = optmap.load(rep.PROBLEMS / "fig7-alexnet.toml")
    levels = optmap.solve(problem, engine="accpar").report.plan["levels"]
    fc = [t for level in levels for layer, t in level["types"].items() if layer.startswith("fc")]
    convs = [layer for layer in levels[0]["types"] if not layer.startswith("fc")]
    conv_types = [level["types"][c] for level in levels for c in convs]
    non_i = [sum(level["types"][c] != "I" for c in convs) for level in levels]
    half = len(levels) // 2
    return [
        Claim("accpar", "Fig. 7 (AlexNet, 7 levels): fc1-fc3 use Type-II and Type-III", "Fig. 7 text",
              "holds", finding(all(t in ("II", "III") for t in fc)), kind="finding",
              detail=f"FC types over the 7 levels: {' '.join(fc)}"),
        Claim("accpar", "Fig. 7: convolutions mostly Type-I, but not solely", "Fig. 7 text", "holds",
              finding(0.5 < conv_types.count("I") / len(conv_types) < 1.0), kind="finding",
              detail=f"{conv_types.count('I')} of {len(conv_types)} conv layer-levels Type-I"),
        Claim("accpar", "Fig. 7: deeper hierarchy levels configure more layers as Type-II/III", "Fig. 7 text",
              "holds", finding(sum(non_i[half:]) > sum(non_i[:half])), kind="finding",
              detail=f"non-Type-I convolutions per level: {non_i}"),
    ]


def claims(quick: bool, ci_only: bool = False) -> list[Claim]:
    out = []
    for array, label in (("hetero", "128 TPU-v2 + 128 TPU-v3"), ("homog", "128 TPU-v3")):
        section = "§6.2, Fig. 5" if array == "hetero" else "§6.3, Fig. 6"
        for engine, name in (("owt", "OWT"), ("hypar", "HyPar"), ("accpar", "AccPar")):
            hetero_accpar = array == "hetero" and engine == "accpar"
            out.append(Claim("accpar", f"{label}: {name} geomean speedup over DP (9 models)", section,
                             rep.PAPER_GEOMEAN[array][engine], geomean(array, engine), unit="x",
                             detail=(f"share_scaling = \"linear\": {geomean(array, 'linear'):.2f}x"
                                     if hetero_accpar else ""),
                             explanation=EQ10 if hetero_accpar else "", sensitivity=SHARES if hetero_accpar else ""))
    out += range_claims()
    ordered = all(row["owt"] <= row["hypar"] * 1.001 and row["hypar"] <= row["accpar"] * 1.001
                  for array in ("hetero", "homog") for row in table(array).values())
    out.append(Claim("accpar", "OWT ≤ HyPar ≤ AccPar on every model and both arrays", "§6.2-6.3, Figs. 5-6",
                     "holds", finding(ordered), kind="finding"))
    vgg_beats = all(min(family_range("vgg", e)) > max(family_range("resnet", e)) for e in ("owt", "hypar", "accpar"))
    out.append(Claim("accpar", "ResNet speedups are lower than VGG ones for every scheme", "§6.2 text", "holds",
                     finding(vgg_beats), kind="finding"))
    return in_ci(out + fig7())  # every AccPar row is cheap (18 problems, ~1 s each)
