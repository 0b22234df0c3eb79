"""Reproduce FPDeep's results (Table 6, §6.3.1, Fig. 15, Figs. 9–10) and write docs/reproductions/fpdeep.md.

Usage::

    python examples/reproduce_fpdeep.py            # writes the report and its two PNG plots

Every number comes from the ``fpdeep`` engine's plan on ``problems/fpdeep/*.toml``, scored by
the ``fpdeep`` cost model; the paper's numbers are typed in from the seed paper (its Table 6 and
text, note ``seeds/notes/seed-fpdeep.md`` §4). Nothing is fitted to them.
"""

from __future__ import annotations

import time
from pathlib import Path

import optmap
from optmap.plugins.fpdeep import study
from optmap.plugins.zoo.models import alexnet

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "reproductions"
TITLE = {"alexnet": "AlexNet", "vgg16": "VGG-16", "vgg19": "VGG-19"}
IMAGES = 1_281_167  # ImageNet-1k training images (the paper does not name its dataset)

# FPDeep Table 6 (15 × XC7VX690T) and §6.3: per-FPGA GOPS, GOPS/J, hours per epoch; limits.
PAPER = {
    "alexnet": {"gops": 1157, "gops_j": 37.09, "hours": 0.17, "limit150": 83},
    "vgg16": {"gops": 1197, "gops_j": 37.88, "hours": 2.19, "limit150": 56},
    "vgg19": {"gops": 1220, "gops_j": 38.13, "hours": 2.76, "limit150": 70},
}
PAPER_LINK_GBPS = 18.6  # "the highest bandwidth requirement among these 15 FPGAs for these three networks"


def table(header: list[str], rows: list[list]) -> str:
    def cell(v):
        if not isinstance(v, float):
            return str(v)
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows])


def fifteen(net: str, *overrides: str):
    return study.solve(net, 15, overrides).report


def span(values, percent=True) -> str:
    """'a–b' of a list of ratios as percentages (or plain numbers)."""
    lo, hi = min(values), max(values)
    return f"{lo:.0f}–{hi:.0f} %" if percent else f"{lo:.1f}–{hi:.1f}"


def table6() -> tuple[str, str, dict]:
    rows, gap, stats = [], [], {"gops": [], "epoch": []}
    for net in study.NETS:
        r, paper = fifteen(net), PAPER[net]
        macs = fifteen(net, 'cost.op_count="macs"').metrics
        m = r.metrics
        rows.append([TITLE[net], paper["gops"], m["gops_per_fpga"], macs["gops_per_fpga"], m["gops_per_fpga_allocated"],
                     paper["gops_j"], m["gops_per_joule"], paper["hours"], m["hours_per_epoch"],
                     IMAGES / (paper["hours"] * 3600), m["throughput"]])
        stats["gops"].append(100 * abs(1 - m["gops_per_fpga"] / paper["gops"]))
        stats["epoch"].append(100 * (1 - m["hours_per_epoch"] / paper["hours"]))
        implied = 15 * paper["gops"] * 1e9 / (IMAGES / (paper["hours"] * 3600))
        table_ = optmap.load(study.problems_folder() / f"{net}-15.toml").cost_model.table
        six_mac = 6 * table_.macs.sum()
        gap.append([TITLE[net], implied / 1e9, table_.ops_per_image / 1e9, six_mac / 1e9, implied / six_mac,
                    m["gops_per_fpga_allocated"] * 15e9 / m["throughput"] / 1e9])
    torch_macs = 6 * sum(layer.macs for layer in alexnet(batch=1).weighted_layers())
    implied = 15 * PAPER["alexnet"]["gops"] * 1e9 / (IMAGES / (PAPER["alexnet"]["hours"] * 3600))
    gap.append(["AlexNet, torchvision zoo (64/192/384/256/256)", implied / 1e9, float("nan"), torch_macs / 1e9,
                implied / torch_macs, float("nan")])
    return table(["network", "GOPS/FPGA paper", "ours (IR ops)", "ours (6·MAC)", "ours (allocated DSPs)",
                  "GOPS/J paper", "ours", "h/epoch paper", "ours", "img/s implied by paper", "ours"], rows), table(
        ["network", "ops/img implied by Table 6 (G)", "IR ops/img (G)", "6·MAC (G)", "Table 6 ÷ 6·MAC",
         "ours: allocated DSP ops/img (G)"], gap), {key: span(v) for key, v in stats.items()}


def links_and_balancing() -> tuple[str, str, str]:
    link_rows, balance_rows, fp32 = [], [], []
    for net in study.NETS:
        for dtype in ("fp32", "fp16"):
            r = fifteen(net, f'workload.dtype="{dtype}"')
            m, devices = r.metrics, r.tables["devices"]
            unparked = fifteen(net, f'workload.dtype="{dtype}"', "cost.park_levels=0")
            spill = unparked.tables["devices"]
            if dtype == "fp32":
                fp32.append(unparked.metrics["max_link_gbps"])
            link_rows.append([TITLE[net], dtype, unparked.metrics["max_link_gbps"], m["max_link_gbps"],
                              PAPER_LINK_GBPS if dtype == "fp32" else "", max(d["link %"] for d in devices)])
            over = [d["fpga"] for d in spill if d["BRAM %"] > 100]
            balance_rows.append([TITLE[net], dtype, max(d["BRAM %"] for d in spill), len(over),
                                 m["parked_bytes"] / 1e6, sum(d["hosted MB"] > 0 for d in devices),
                                 sum(d["DRAM MB/img"] for d in spill), m["dram_bytes"] / 1e6, m["throughput"]])
    return (table(["network", "values", "highest link demand, activations only (Gb/s)", "with parked weights (Gb/s)",
                   "paper (Gb/s)", "link use %"], link_rows),
            table(["network", "values", "max BRAM % without balancing", "FPGAs over BRAM", "parked MB", "host FPGAs",
                   "DRAM MB/img without", "DRAM MB/img with", "img/s"], balance_rows),
            f"{min(fp32):.1f}–{max(fp32):.1f} Gb/s")


def scaling(result) -> tuple[str, str, str, dict]:
    limits, idle, sample = [], [], []
    stats = {"limit": [], "throughput": [], "scaled": [], "vgg16_250": result["vgg16", "250"][1] or "> 100"}
    show = (5, 15, 30, 50, 70, 100)
    for net in study.NETS:
        points150, limit150 = result[net, "150"]
        points250, limit250 = result[net, "250"]
        ours15 = next(p for p in points150 if p.count == 15).throughput
        theirs15 = IMAGES / (PAPER[net]["hours"] * 3600)
        scaled = f"{limit150 * ours15 / theirs15:.0f}" if limit150 else ""
        stats["throughput"].append(100 * (ours15 / theirs15 - 1))
        if limit150:
            stats["limit"].append(100 * (1 - limit150 / PAPER[net]["limit150"]))
            stats["scaled"].append(scaled)
        limits.append([TITLE[net], PAPER[net]["limit150"], limit150 or "> 100", scaled, "about 100",
                       limit250 or "> 100"])
        bound = [p for p in points250 if not p.link_bound]  # idle stages of compute-bound plans
        beyond = [p for p in bound if p.count > 30]
        idle.append([TITLE[net], 100 * max(p.idle for p in bound), 100 * min(p.idle for p in beyond),
                     100 * max(p.idle for p in beyond), 100 * max(p.idle_allocated for p in bound)])
        for variant, points in (("150", points150), ("250", points250)):
            by = {p.count: p for p in points}
            sample.append([TITLE[net], variant] + [f"{by[n].throughput:,.0f}{' L' if by[n].link_bound else ''}" for n in show])
    return (table(["network", "150 Gb/s: paper", "ours", "ours × (our img/s ÷ Table 6's) at 15", "250 Gb/s: paper",
                   "ours"], limits),
            table(["network", "max idle % (5–100 FPGAs, 250 Gb/s)", "min idle % beyond 30", "max idle % beyond 30",
                   "max idle % of the rate-matched arrays"], idle),
            table(["network", "Gb/s per FPGA"] + [f"{n} FPGAs" for n in show], sample),
            {"limit": span(stats["limit"]), "throughput": span(stats["throughput"]),
             "scaled": " / ".join(stats["scaled"]), "vgg16_250": stats["vgg16_250"]})


def plots(result) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, net in zip(axes, study.NETS):
        for variant, style in (("150", "-o"), ("250", "-s")):
            points = result[net, variant][0]
            ax.plot([p.count for p in points], [p.throughput for p in points], style, ms=3, label=f"{variant} Gb/s per FPGA")
        first = result[net, "150"][0][0]
        ax.plot([5, 100], [first.throughput, first.throughput * 20], ":", color="gray", label="linear")
        ax.axvline(PAPER[net]["limit150"], color="red", lw=0.8, ls="--", label="paper's 150 Gb/s limit")
        ax.set(title=TITLE[net], xlabel="FPGAs", ylabel="images / s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(DOCS / "fpdeep-scaling.png", dpi=110)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    for net in study.NETS:
        points = result[net, "250"][0]
        left.plot([p.count for p in points], [100 * p.idle for p in points], "-o", ms=3, label=TITLE[net])
        right.plot([p.count for p in points], [p.epochs_per_hour for p in points], "-o", ms=3, label=TITLE[net])
    left.set(xlabel="FPGAs", ylabel="idle stages %", title="Idle stages (250 Gb/s; Fig. 15 B/D/F)")
    right.set(xlabel="FPGAs", ylabel="epochs / hour", title="Epochs per hour (250 Gb/s; Fig. 16 A/C/E)", yscale="log")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(DOCS / "fpdeep-idle-epochs.png", dpi=110)


DSP_SHARES = (0.65, 0.7, 0.75, 0.8, 0.85)  # `cost.dsp_budget`; §6.3.1: "roughly 80%" (the default)
PAPER_LIMITS = {"alexnet": 83, "vgg16": 56, "vgg19": 70}  # §6.3.2, 150 Gb/s


def link_limit(net: str, overrides: tuple[str, ...]) -> str:
    """The last FPGA count (150 Gb/s) before the first link-bound plan, to one FPGA."""
    def bound(count: int) -> bool:
        return study.solve(net, count, overrides).report.metrics["link_demand"] >= 1 - 1e-9

    coarse = next((c for c in range(5, 101, 5) if bound(c)), None)
    if coarse is None:
        return "> 100"
    return str(next(c for c in range(coarse - 4, coarse + 1) if bound(c)) - 1)


def dsp_sensitivity() -> str:
    """Table 6 and the linear-scaling limits against the DSP share of the CE arrays (15 FPGAs, 150 Gb/s)."""
    rows = []
    for share in DSP_SHARES:
        sets = (f"cost.dsp_budget={share}",)
        cells = [share]
        for net in study.NETS:
            m = study.solve(net, 15, sets).report.metrics
            cells.append(f"{m['gops_per_fpga']:,.0f} / {m['hours_per_epoch']:.3g}")
        cells += [link_limit(net, sets) for net in study.NETS]
        rows.append(cells)
        print(f"dsp share {share} done", flush=True)
    rows.append(["paper", "1,157 / 0.17", "1,197 / 2.19", "1,220 / 2.76", *PAPER_LIMITS.values()])
    return table(["DSP share", "AlexNet GOPS / h per epoch", "VGG-16 GOPS / h per epoch",
                  "VGG-19 GOPS / h per epoch", "AlexNet limit", "VGG-16 limit", "VGG-19 limit"], rows)


def topologies() -> str:
    out = []
    for port in (25.0, 2.5):
        for row in study.topology_comparison("vgg16", (4, 6, 9, 16, 25, 36), port_gbps=port):
            out.append([port, row["FPGAs"], row["1-D Gb/s per link"], row["2-D Gb/s per link"], row["1-D chain"],
                        row["2-D central"], row["2-D snake"]])
    return table(["Gb/s per port", "FPGAs", "1-D Gb/s per link", "2-D Gb/s per link", "1-D img/s",
                  "2-D central img/s", "2-D snake img/s"], out)


def main() -> None:
    started = time.perf_counter()
    t6, gap, fit = table6()
    links, balance, link_range = links_and_balancing()
    result = study.scaling_study()
    limits, idle, sample, scale = scaling(result)
    plots(result)
    topo = topologies()
    sensitivity = dsp_sensitivity()
    seconds = time.perf_counter() - started
    text = REPORT.format(seconds=seconds, table6=t6, gap=gap, links=links, balance=balance, limits=limits,
                         idle=idle, sample=sample, topologies=topo, gops_gap=fit["gops"], epoch_gap=fit["epoch"],
                         link_range=link_range, limit_gap=scale["limit"], throughput_gap=scale["throughput"],
                         scaled=scale["scaled"], vgg16_250=scale["vgg16_250"], sensitivity=sensitivity)
    (DOCS / "fpdeep.md").write_text(text, encoding="utf-8")
    print(f"wrote {DOCS / 'fpdeep.md'} and two plots in {seconds:.0f} s")


REPORT = """# FPDeep reproduction

FPDeep (Wang, Geng, Li, Jin, Herbordt; the journal version of FCCM/FPL 2018) trains a CNN as one
fine-grained pipeline over a 1-D chain of FPGAs. This report sets the `fpdeep` formulation
(`plugins/fpdeep/`) beside the paper. It is written by `python examples/reproduce_fpdeep.py`
({seconds:.0f} s on the shared 2-core x86-64 machine); every number of ours is the `fpdeep`
engine's plan for a problem of `problems/fpdeep/`, scored by the `fpdeep` cost model. The paper's
numbers are its Table 6 and §6.3 text (note `seeds/notes/seed-fpdeep.md` §4); nothing is fitted to
them.

## What the model assumes

| open point (note §5) | our choice | option |
|---|---|---|
| clock, MACs per DSP (§5.6) | 200 MHz, 1 MAC per DSP per cycle (assumed; Table 6 implies ≈ 200.9 MHz) | `vc709` `clock_mhz`, `macs_per_dsp` |
| DSP use | the CE arrays may use 80 % of the 3,600 DSPs (§6.3.1 "roughly 80%") | `dsp_budget = 0.8` |
| resources (Eqs. 8–11, §5.5) | CE arrays on DSPs, buffers in BRAM (α = β = 1); LUT/FF costs f2, f3 are not given and not modelled | — |
| tiles (§5.10, §6.3.3) | a layer portion has FP, EB and PG arrays of t tiles of K×K DSPs each; a device gives its portions the tiles that minimise its stage time | — |
| values | the workload's dtype: fp32 (Table 6 caption) for weights, activations and link traffic | `[workload] dtype` |
| links (§5.16) | "150 Gb/s per FPGA" = 6 ports of 25 Gb/s, 3 per chain link: 75 Gb/s per link and direction; 250 Gb/s = 5 ports per link | `vc709` `link_ports`, `port_gbps`; preset `vc709-250` |
| link traffic | note §2.2, datapaths 1–6 of §5.1 (partial sums, bypassed inputs, errors; OCP gathers) | `reduction` |
| Act-RAM lifetime (§5.7–5.8) | one image of each portion's inputs (the FC layers need the whole image before any error returns) | `activation_images = 1` |
| FC layers (§5.13) | on the chain like any layer, weights in DRAM, one weight pass per mini-batch of 128 | `fc_batch` |
| parameter balancing (§5.12) | deepest users first, nearest device with room, upstream first; parked weights travel to their user twice per image (FP and EB), gradients back once | `park_levels`, `weight_passes = 2` |
| what does not fit | held in DRAM, every byte moved twice per image, priced in DRAM time (2 DDR3-1866 SODIMMs, 29.9 GB/s) | `memory_fallback = "dram"` (or `"none"`: infeasible) |
| board power | 31.6 W, the paper's own measurement (1197 GOPS ÷ 37.88 GOPS/J): our GOPS/J differs only through our GOPS | `vc709` `board_watts` |
| op count (§4.5) | the workload IR's training FLOPs (2 per MAC for FP, EB and PG, plus ReLU/pool) | `op_count = "ir"` (or `"macs"`) |
| idle stages (§5.18) | the share of the DSP budget's cycles without useful work at the compute-bound period (K×K rounding, DSPs a portion cannot use, imbalance; link stalls excluded, since the paper's idle stays under 5 % where its plans are link-bound) | metric `idle` |
| AlexNet | the paper's (96/256/384/384/256 channels, conv1 "3 → 96"): workload `alexnet-original` | `[workload] model` |

## Table 6: 15 FPGAs

{table6}

*GOPS* count useful operations: ops per image × images per second ÷ 15. "Allocated DSPs" is
2 × clock × the DSPs of the rate-matched CE arrays, the rate if every allocated DSP did work every
cycle. Our GOPS per FPGA is by construction close to 2 × 200 MHz × 0.8 × 3,600 = 1,152: the clock
is our assumption and 80 % the paper's. What the model adds is the loss to K×K tile rounding and
balance (the idle stages), so this column confirms consistency, not a prediction. The
paper's VGG rates exceed even 1,157 (its AlexNet rate), which at one clock would need 83–85 % DSP use.

### The ≈ 1.2× op-count gap (note §4.5)

{gap}

Table 6's two columns disagree: 15 × GOPS divided by the images per second its epoch times imply
(ImageNet-1k, 1,281,167 images) gives 1.19–1.22 × the 6 × MAC operations of an image, for all
three networks alike. No counting convention closes it. The IR adds ReLU and pooling (0.1 %).
Counting the allocated DSP rate instead of useful work adds under 1 % (last column). Skipping
the first layer's EB (`first_layer_eb = false`) lowers the count. A model like ours, where
GOPS × N = ops per image × images per second, can match one column, not both: we match GOPS
within {gops_gap} and run {epoch_gap} faster per epoch. The uniform ratio points to time that the epoch
measurement includes and the GOPS figure does not: pipeline fill and drain around every weight
update, host I/O, the FC FPGA, or GOPS quoted for the active CE arrays only. The paper gives no
breakdown to decide between these. The last row shows why we use the paper's AlexNet: with
torchvision's 64-channel variant (the zoo's `alexnet`) the ratio would be 1.93.

## Highest link demand at 15 FPGAs (§6.3.1)

{links}

The paper's 18.6 Gb/s is the highest link demand over all three networks. Ours depends on where
the cuts fall inside the 224 × 224 layers. An ICP cut inside conv1_2 sends every output's partial
sums (64 × 224²) and the inputs still to come; the paper's cut positions (Fig. 14) are not in the
text. Note §4.5 finds 17.1–24.3 Gb/s for equal-work cuts at the paper's throughput; ours
(activations only, fp32) are {link_range}. With 16-bit values the activation traffic halves. Parked weights add their own
stream (VGG-16, fp32: the busiest link rises, still under half its 75 Gb/s).

## Parameter balancing at 15 FPGAs (§3.4.2, §6.3.1)

{balance}

AlexNet needs no balancing: no FPGA exceeds its BRAM, as the paper says. VGG-16 and VGG-19 do:
the late layers' weights overflow, and the engine parks them on devices with room. At fp32 the
VGGs' CONV weights, gradients and one image of activations exceed the 14 × 6.8 MB of BRAM in
total (note §4.5: 154 and 202 MB against 95 MB), so DRAM still carries part. At fp16, balancing
leaves only the FC weights in DRAM, matching the paper's "only on-chip memory for CONV layers"
if its values are 16-bit. In our model balancing does not change the throughput at 15 FPGAs:
30 GB/s of DRAM does not bind at these rates. The paper prefers balancing for costs neither
it nor we quantify (DRAM energy and latency). The engine keeps balancing whenever it ties.

## Scaling, 5–100 FPGAs (Fig. 15 A/C/E)

![throughput against FPGAs](fpdeep-scaling.png)

{sample}

(img/s; L = link-bound.)

### Linear-scaling limits

{limits}

"Ours" is the last FPGA count before the first link-bound plan: the engine's partition is exact
for given splits and respects every link, so up to there it is limited by compute. The order
AlexNet > VGG-19 > VGG-16 comes out as in the paper, and for the paper's reason. VGG-19's cuts
near the input send as much per image as VGG-16's, but VGG-19 does 27 % more work per image, so
at equal FPGA counts its images per second, and its link demand, are lower. Our limits at 150 Gb/s
are {limit_gap} below the paper's. A limit scales with the inverse of the images per second per
FPGA, and ours is {throughput_gap} above what the paper's epoch times imply. Rescaling our limit by
that ratio (third column) gives {scaled}, against the paper's 83 / 56 / 70. At 250 Gb/s the
paper reports linearity up to about 100 FPGAs; ours: the last column. Below its link limit,
AlexNet bends away from the linear line beyond about 65 FPGAs, from compute, not links: its first
layers have few channels (conv1: 96 outputs of 3.3 M MACs each), so channel-granular cuts leave
devices part-filled and the last ones empty (the idle stages below).

## Idle stages (Fig. 15 B/D/F)

![idle stages and epochs per hour](fpdeep-idle-epochs.png)

{idle}

Idle stages are counted for the compute-bound plans of the 250 Gb/s sweep. The paper reports
them always under 5 %, and 0.5–1 % beyond 30 FPGAs; ours are higher beyond 30 FPGAs, VGG's by a
little and AlexNet's by more. They come from the K×K rounding of tile counts, the cause the paper
names: a device fits 106 tile sets of 3 × 3 × 3 DSPs, 2,862 of its 2,880, 0.6 % on every device.
They also come from DSPs a portion cannot use (AlexNet's conv1 fits 7 tile sets of 3 × 11 × 11
DSPs, 2,541 of 2,880), and from channel granularity, which grows with the cluster for AlexNet.
Our measure is strict: it counts every DSP of the 80 % budget. The last column counts only the
DSPs of the arrays rate-matched to the period (the `gops_per_fpga_allocated` view). The
right plot shows epochs per hour growing linearly until the links bind (Fig. 16 A/C/E).

## 1-D against 2-D (§4.2, Figs. 9–10)

{topologies}

VGG-16 runs on FPGAs with 10 ports each (Fig. 9's boards). On the chain each link gets 5 ports. On
a 2-D mesh a link gets 10 ÷ the largest degree: 5 on a 2 × 2 mesh, 3 on 3 × 2, 2 from 3 × 3 on.
"Central" is the paper's 2-D scheme: every member of a layer sends its partial sums straight to
the layer's last device, and broadcasts follow trees of shortest paths. "Snake" runs the 1-D
chain through the mesh. While compute binds, the topologies tie; once the links matter, 1-D wins
and the gap grows with the cluster, as in Fig. 10. We do not reproduce the paper's 2-D advantage
at 4 FPGAs: there the 2 × 2 mesh has the chain's 5 ports per link, our VGG-16 plans are compute-bound
at 4 FPGAs, and so all three tie.

## Sensitivity: the DSP share (issue 24)

The one open option both of Table 6's columns and the scaling limits move with is the share of DSP
slices the CE arrays use (`cost.dsp_budget`, §6.3.1 "roughly 80%"). GOPS per FPGA / hours per
epoch at 15 FPGAs, and the linear-scaling limit at 150 Gb/s (last FPGA count before the first
link-bound plan, to one FPGA); `optmap sweep problems/fpdeep/*-15.toml --variants
problems/fpdeep/sensitivity-dsp.sweep.toml` reruns the first three columns.

{sensitivity}

At about 70 % the hours per epoch and the three scaling limits are all the paper's to within a few
per cent, and the GOPS column is then 15 % low; at the paper's 80 % the GOPS match and the
predictions are fast. No single share reproduces both columns (the 1.2× inconsistency above), and
a limit scales with the inverse of the images per second per FPGA. We keep 80 %, the paper's
stated share; the predictions' gap is the paper's own inconsistency, not a parameter to fit.

## Differences, in short

- Clock (200 MHz) and board power (31.6 W) are assumptions or the paper's own figures. GOPS per
  FPGA and GOPS/J are therefore consistency checks, not predictions.
- Table 6's GOPS and hours per epoch are mutually inconsistent by 1.2×. We match GOPS within
  {gops_gap} and run {epoch_gap} faster per epoch.
- Linear-scaling limits at 150 Gb/s are {limit_gap} lower than the paper's, in proportion to our
  higher throughput per FPGA; scaled by it they are {scaled} (paper 83 / 56 / 70).
- The highest link demand at 15 FPGAs is {link_range} against the paper's 18.6. It depends on cut
  positions the paper does not give.
- Idle stages beyond 30 FPGAs are above the paper's 0.5–1 % on our strict DSP-budget measure;
  AlexNet's pass 5 % beyond about 65 FPGAs (channel granularity).
- At fp32 the VGGs' CONV data cannot all live on chip even with balancing; at fp16 it can.
- The 2-D advantage at 4 FPGAs is not reproduced (tie).
"""


if __name__ == "__main__":
    main()
