"""FPDeep (Wang et al.) on the scorecard: Table 6 at 15 FPGAs, the linear-scaling limits and idle
stages of §6.3.3 (Fig. 15) and the 1-D / 2-D comparison of §4.2, from ``optmap.plugins.fpdeep.study``
and ``examples/reproduce_fpdeep.py``."""

from __future__ import annotations

from functools import lru_cache

import reproduce_fpdeep as rep
from optmap.plugins.fpdeep import study

from .card import Claim, finding, in_ci

DOC = "docs/reproductions/fpdeep.md"
CONSISTENCY = ("a consistency check, not a prediction: GOPS per FPGA is close to 2 × 200 MHz (assumed clock) × "
               "the paper's own 80 % DSP share by construction; GOPS/J divides it by the paper's own 31.6 W")
CHECK = "a consistency check: the 80 % DSP share and 31.6 W are the paper's own"
OPS_GAP = ("Table 6's GOPS and hours per epoch disagree by 1.19-1.22× for all three networks (15 × GOPS ÷ the "
           "images per second its epoch times imply = 1.2 × 6·MAC per image); a model where GOPS × N = ops per "
           "image × images per second can match one column, not both. We match GOPS, so an epoch is ~12-15 % "
           "faster; the paper's epoch time must include time (fill/drain, host I/O, FC FPGA) its GOPS excludes.")
LIMIT = ("A linear-scaling limit scales with the inverse of the images per second per FPGA, and ours is ~13-18 % "
         "above what the paper's epoch times imply (the op-count gap); rescaled by that ratio the limits land "
         "near 83 / 56 / 70.")
IDLE = ("Our idle measure counts every DSP of the 80 % budget: K×K tile rounding (0.6 % on every device), DSPs a "
        "portion cannot use (AlexNet conv1 fits 7 tile sets of 3 × 11 × 11 DSPs) and channel granularity, which "
        "grows with the cluster for AlexNet's few-channel first layers.")


@lru_cache(maxsize=None)
def fifteen(net: str, *overrides: str):
    return rep.fifteen(net, *overrides)


@lru_cache(maxsize=None)
def scaling(quick: bool) -> dict:
    sizes = tuple(range(5, 101, 5)) if not quick else (5, 15, 30, 50, 70, 85, 100)
    return study.scaling_study(sizes=sizes)


def table6() -> list[Claim]:
    out = []
    for net in study.NETS:
        m, paper, name = fifteen(net).metrics, rep.PAPER[net], rep.TITLE[net]
        out += [
            Claim("fpdeep", f"{name}, 15 FPGAs: GOPS per FPGA", "Table 6", paper["gops"], m["gops_per_fpga"],
                  unit="GOPS", detail=CHECK, explanation=CONSISTENCY),
            Claim("fpdeep", f"{name}, 15 FPGAs: GOPS/J", "Table 6", paper["gops_j"], m["gops_per_joule"], unit="GOPS/J",
                  detail=CHECK, explanation=CONSISTENCY),
            Claim("fpdeep", f"{name}, 15 FPGAs: training hours per epoch (ImageNet-1k)", "Table 6", paper["hours"],
                  m["hours_per_epoch"], unit="h", explanation=OPS_GAP,
                  sensitivity=f"{DOC} § The ≈ 1.2× op-count gap (note §4.5)"),
        ]
    link = max(fifteen(net, "cost.park_levels=0").metrics["max_link_gbps"] for net in study.NETS)
    out.append(Claim("fpdeep", "15 FPGAs: highest link demand over the three networks (fp32)", "§6.3.1",
                     rep.PAPER_LINK_GBPS, link, unit="Gb/s", detail="activations only (parameter balancing off)",
                     explanation="depends on where the cuts fall inside the 224 × 224 layers; the paper's cut "
                     "positions (Fig. 14) are not in its text (note §4.5 finds 17.1-24.3 Gb/s for equal-work cuts)",
                     sensitivity=f"{DOC} § Highest link demand at 15 FPGAs"))
    bram = {net: max(d["BRAM %"] for d in fifteen(net, "cost.park_levels=0").tables["devices"]) for net in study.NETS}
    out.append(Claim("fpdeep", "15 FPGAs: AlexNet needs no parameter balancing, VGG-16 and VGG-19 do", "§6.3.1",
                     "holds", finding(bram["alexnet"] <= 100 < min(bram["vgg16"], bram["vgg19"])), kind="finding",
                     detail="max BRAM % without balancing: "
                     + ", ".join(f"{rep.TITLE[n]} {v:.0f}" for n, v in bram.items())))
    return out


def scaling_claims(quick: bool) -> list[Claim]:
    result = scaling(quick)
    out = []
    for net in study.NETS:
        limit = result[net, "150"][1]
        out.append(Claim("fpdeep", f"{rep.TITLE[net]}: linear scaling up to N FPGAs at 150 Gb/s per FPGA",
                         "§6.3.3, Fig. 15", rep.PAPER[net]["limit150"], limit if limit else 101, unit="FPGAs",
                         explanation=LIMIT, sensitivity=f"{DOC} § Linear-scaling limits"))
    limits = {net: result[net, "150"][1] or 101 for net in study.NETS}
    out.append(Claim("fpdeep", "linear-scaling limit order AlexNet > VGG-19 > VGG-16 (VGG-19 has more work per "
                     "image)", "§6.3.3", "holds", finding(limits["alexnet"] > limits["vgg19"] > limits["vgg16"]),
                     kind="finding", detail=" / ".join(f"{v}" for v in limits.values())))
    at250 = [result[net, "250"][1] for net in study.NETS]
    out.append(Claim("fpdeep", "250 Gb/s per FPGA: linear up to ~100 FPGAs (VGG-16, the most demanding)",
                     "abstract, §6.3.3", 100, at250[1] or 100, unit="FPGAs",
                     detail="ours: " + " / ".join(str(v or "> 100") for v in at250), explanation=LIMIT,
                     sensitivity=f"{DOC} § Linear-scaling limits"))
    idle = max(p.idle for net in study.NETS for p in result[net, "250"][0] if not p.link_bound)
    out.append(Claim("fpdeep", "idle stages always under 5 % (compute-bound plans, 5-100 FPGAs)", "§6.3.3, Fig. 15",
                     "holds", finding(idle < 0.05), kind="finding", detail=f"largest idle {idle:.1%}",
                     explanation=IDLE, sensitivity=f"{DOC} § Idle stages (Fig. 15 B/D/F; last column: the rate-"
                     "matched arrays only)"))
    return out


def topology_claims() -> list[Claim]:
    # 2.5 Gb/s ports: at 25 Gb/s VGG-16's plans are compute-bound and every topology ties (fpdeep.md)
    rows = {r["FPGAs"]: r for r in study.topology_comparison("vgg16", (4, 9, 16), port_gbps=2.5)}
    best_2d = {n: max(r["2-D central"], r["2-D snake"]) for n, r in rows.items()}
    return [
        Claim("fpdeep", "1-D chain beats the 2-D mesh beyond 5 FPGAs (VGG-16, 10 ports of 2.5 Gb/s per FPGA)",
              "§4.2, Fig. 10",
              "holds", finding(all(rows[n]["1-D chain"] > rows[n]["2-D central"] for n in (9, 16))), kind="finding",
              detail=", ".join(f"{n}: {rows[n]['1-D chain']:.0f} vs {rows[n]['2-D central']:.0f} img/s"
                               for n in (9, 16))),
        Claim("fpdeep", "2-D mesh beats the 1-D chain at 4 FPGAs", "§4.2, Fig. 10", "holds",
              finding(best_2d[4] > rows[4]["1-D chain"] * (1 + 1e-9)), kind="finding",
              detail=f"4 FPGAs: 1-D {rows[4]['1-D chain']:.0f}, 2-D {best_2d[4]:.0f} img/s",
              explanation="At 4 FPGAs the 2 × 2 mesh has the chain's 5 ports per link and our VGG-16 plans are "
              "compute-bound, so all topologies tie.", sensitivity=f"{DOC} § 1-D against 2-D (2.5 Gb/s rows)"),
    ]


def claims(quick: bool, ci_only: bool = False) -> list[Claim]:
    """Every claim; with ``ci_only``, Table 6 at 15 FPGAs (the group holding the ``ci`` rows)."""
    if ci_only:
        return in_ci(table6())
    return in_ci(table6()) + scaling_claims(quick) + topology_claims()
