"""Reproduce DeepSpatialMatrix (Venkataramani et al., IBM): Fig. 11-15 and the best utilisations.

Usage::

    python examples/reproduce_dsm.py              # every experiment, ~10 minutes on 2 shared cores
    python examples/reproduce_dsm.py --quick      # ladders and Fig. 12/13 only

It fills ``docs/reproductions/dsm.template.md`` (the prose) into ``docs/reproductions/dsm.md`` and
draws its plots (``dsm-*.png``). Every number comes from the
problem files ``problems/dsm/*.toml`` explored by the ``dsm`` engine, with the overrides a user
would pass as ``--set`` (listed in the report), so each cell can be re-run from the command line.
"""

from __future__ import annotations

import argparse
import pickle
from pathlib import Path

from optmap.plugins.dsm.layercost import NON_OVERLAPPED
from optmap.problem import load
from optmap.run import solve
from optmap.search import Budget

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems" / "dsm"
OUT = ROOT / "docs" / "reproductions"
NETS = ("vgg16", "resnet50", "gnmt")
MINIBATCHES = (256, 512, 1024)
BATCHES = (1, 2, 4, 8, 16)
OFF = {"hybrid": "false", "mem_opt": "false", "dysm": "false", "timestep_pipelining": "false"}

# Fig. 11 (a-c): each bar adds one optimisation; "+Hybrid" is the asymmetric torus with hybrid types.
LADDER = {
    "DSM-sym": {"system.preset": '"dsm-8pf-sym"', **{f"cost.{k}": v for k, v in OFF.items()}},
    "+Hybrid": {f"cost.{k}": "false" for k in ("mem_opt", "dysm", "timestep_pipelining")},
    "+Mem-Opt": {"cost.dysm": "false", "cost.timestep_pipelining": "false"},
    "+DySM/TP": {},
}
# Fig. 11 (d-f): one chip; feature reuse, then weight preloading.
INFERENCE = {
    "DSM": {"cost.mem_opt": "false", "cost.weight_preload": "false"},
    "+Feature": {"cost.weight_preload": "false"},
    "+Preload": {},
}
CHIPS = (16, 32, 64, 128, 256)  # Fig. 14: 2-32 PFLOP/s, X = 4 chips, Y = 4-64
SPADS = (0.5, 1.0, 2.0, 4.0)  # Fig. 15: MB per core
SWEEP_CONFIGS = {  # Fig. 14/15 bars
    "baseline": LADDER["+Hybrid"],  # hybrid parallelism on the asymmetric torus, no memory optimisation
    "+Mem-Opt": LADDER["+Mem-Opt"],
    "+DySM/TP": LADDER["+DySM/TP"],
}


def explore(name: str, overrides: dict[str, str]):
    """The dsm engine's best plan for a problem file with ``--set`` overrides."""
    problem = load(PROBLEMS / f"{name}.toml", [f"{k}={v}" for k, v in overrides.items()])
    result = solve(problem, engine="dsm")
    report = result.report
    return {"time": report.metrics["time"], "util": report.metrics["utilization"], "report": report,
            "batch": problem.workload.batch, "candidates": result.extra.get("candidates_scored", 0)}


def training_ladder() -> dict:
    out = {}
    for net in NETS:
        for mb in MINIBATCHES:
            for step, sets in LADDER.items():
                out[net, mb, step] = explore(f"{net}-train", {**sets, "workload.batch": str(mb)})
                print(f"train {net} {mb} {step}: util {out[net, mb, step]['util']:.3f}", flush=True)
    return out


def grid(label: str, kind: str, values, configs: dict, overrides) -> dict:
    """``explore`` for every net, value and config: {(net, value, config): plan}, with
    ``overrides(value)`` the --set entries a value adds; one progress line per net."""
    out = {}
    for net in NETS:
        for value in values:
            for config, sets in configs.items():
                out[net, value, config] = explore(f"{net}-{kind}", {**sets, **overrides(value)})
        print(f"{label} {net} done", flush=True)
    return out


def inference_bars() -> dict:
    return grid("inference", "infer", BATCHES, INFERENCE, lambda batch: {"workload.batch": str(batch)})


def torus_comparison() -> dict:
    """Every optimisation on, symmetric vs asymmetric links (what '+Hybrid' mixes together)."""
    return {(net, preset): explore(f"{net}-train", {"system.preset": f'"{preset}"'})
            for net in NETS for preset in ("dsm-8pf-sym", "dsm-8pf-asym")}


LATENCIES = (0.0, 0.25, 0.5, 1.0)  # us per chip-to-chip hop (not in the paper: its model is bandwidth-centric)
STAGINGS = ("links", "memory")  # gradient reduction streamed over the links (Fig. 5) or staged in HBM (Fig. 13)


def parallelism_sensitivity() -> dict:
    """VGG16's Fig. 12 types and ResNet50's tail types for every link latency and reduction staging."""
    out = {}
    for staging in STAGINGS:
        for latency in LATENCIES:
            sets = {"cost.gradient_staging": f'"{staging}"', "system.latency_us": str(latency)}
            vgg = explore("vgg16-train", sets)["report"]
            resnet = explore("resnet50-train", {**sets, "cost.dysm": "false"})["report"]
            out[staging, latency] = ({VGG_NAMES[row.name]: row.decisions["parallelism"] for row in vgg.layers},
                                     [row.decisions["parallelism"] for row in resnet.layers
                                      if row.name.startswith("layer4")], vgg.metrics["utilization"])
        print(f"sensitivity {staging} done", flush=True)
    return out


def peak_sweep() -> dict:
    return grid("Fig. 14", "train", CHIPS, SWEEP_CONFIGS,
                lambda chips: {"system.groups.0.count": str(chips), "system.shape": f"[4, {chips // 4}]"})


def spad_sweep() -> dict:
    return grid("Fig. 15", "train", SPADS, SWEEP_CONFIGS, lambda mb: {"system.groups.0.spad_mb": str(mb)})


def engines_on_small() -> dict:
    """`optmap compare problems/dsm/small.toml --search dsm,exhaustive,ga,random` (one seed)."""
    problem = load(PROBLEMS / "small.toml")
    out = {}
    for engine in ("dsm", "exhaustive", "ga", "random"):
        result = solve(problem, engine=engine, seed=0, budget=None if engine == "exhaustive" else Budget(evaluations=2000))
        out[engine] = (result.values["time"], result.evaluations, result.seconds)
    return out


# --- the report ---------------------------------------------------------------------------------
VGG_NAMES = dict(zip([f"features.{i}" for i in (0, 2, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28)] +
                     ["classifier.0", "classifier.3", "classifier.6"],
                     ["CONV1_1", "CONV1_2", "CONV2_1", "CONV2_2", "CONV3_1", "CONV3_2", "CONV3_3", "CONV4_1",
                      "CONV4_2", "CONV4_3", "CONV5_1", "CONV5_2", "CONV5_3", "FCON1", "FCON2", "FCON3"]))
FIG12 = {  # DSM Fig. 12 rows (blank = 1; CONV4_3's split multiplies to 4 only, a cell lost in extraction)
    "CONV1_1": ("Data", "ij32", "Y", 4), "CONV1_2": ("Data", "ij32", "N", 4), "CONV2_2": ("Data", "out2.ij8.mb2", "Y", 4),
    "CONV3_1": ("Data", "in4.out4.ij2", "Y", 4), "CONV4_3": ("Data", "ij2.mb2 (sic)", "Y", 4),
    "CONV5_1": ("Data", "in8.out4", "Y", 4), "FCON1": ("Model", "mb32", "Y", 1),
    "FCON2": ("DataXModelY", "out4.mb8", "Y", 1), "FCON3": ("DataXModelY", "mb32", "Y", 1),
}


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def pct(x: float) -> str:
    return f"{100 * x:+.0f} %"


def ladder_section(lad: dict) -> tuple[str, dict]:
    parts, facts = [], {}
    for net in NETS:
        base = lad[net, 256, "DSM-sym"]
        thr = {k: v["batch"] / v["time"] for k, v in lad.items() if k[0] == net}
        rows = [[mb] + [f"{lad[net, mb, s]['util']:.3f} ({thr[net, mb, s] / thr[net, 256, 'DSM-sym']:.2f}x)"
                        for s in LADDER] for mb in MINIBATCHES]
        parts.append(f"**{net}** (utilisation, and speedup over DSM-sym at N_mb = 256 in parentheses)\n\n"
                     + table(["N_mb", *LADDER], rows))
        step = {s: [thr[net, mb, s] for mb in MINIBATCHES] for s in LADDER}
        gain = lambda a, b: [x / y - 1 for x, y in zip(step[a], step[b])]  # noqa: E731
        best = max((lad[net, mb, "+DySM/TP"]["util"], mb) for mb in MINIBATCHES)
        facts[net] = {"base256": base["util"], "best": best, "boost": best[0] / base["util"],
                      "hybrid": gain("+Hybrid", "DSM-sym"), "memopt": gain("+Mem-Opt", "+Hybrid"),
                      "last": gain("+DySM/TP", "+Mem-Opt")}
    return "\n\n".join(parts), facts


def claims(f: dict) -> str:
    v, r, g = f["vgg16"], f["resnet50"], f["gnmt"]
    rng = lambda xs: f"{pct(min(xs))} to {pct(max(xs))}"  # noqa: E731
    rows = [
        ["VGG16 DSM-sym utilisation, N_mb = 256", "0.57", f"{v['base256']:.2f}"],
        ["VGG16 +Hybrid", "+3 to +12 %", rng(v["hybrid"])],
        ["VGG16 best utilisation", "0.79", f"{v['best'][0]:.2f} (N_mb {v['best'][1]})"],
        ["VGG16 overall boost", "1.36x", f"{v['boost']:.2f}x"],
        ["ResNet50 +Hybrid at 256 / 512", "+10 to +18 %", f"{pct(r['hybrid'][0])} / {pct(r['hybrid'][1])}"],
        ["ResNet50 +Mem-Opt over Hybrid, 512", "+55 %", pct(r["memopt"][1])],
        ["ResNet50 +DySM at 1024", "~+18 %", pct(r["last"][2])],
        ["ResNet50 best utilisation", "0.41", f"{r['best'][0]:.2f} (N_mb {r['best'][1]})"],
        ["ResNet50 overall boost", "2.6x", f"{r['boost']:.2f}x"],
        ["GNMT +Hybrid", "2x to 3x", " / ".join(f"{1 + x:.2f}x" for x in g["hybrid"])],
        ["GNMT +Mem-Opt over Hybrid", "3x to 4x", " / ".join(f"{1 + x:.2f}x" for x in g["memopt"])],
        ["GNMT +TP at 256 / largest", "~+30 % / ~+17 %", f"{pct(g['last'][0])} / {pct(g['last'][2])}"],
        ["GNMT best utilisation", "0.36", f"{g['best'][0]:.2f} (N_mb {g['best'][1]})"],
        ["GNMT overall boost", "32x", f"{g['boost']:.1f}x"],
    ]
    return table(["Fig. 11 / §V-A1", "paper", "ours"], rows)


def inference_section(inf: dict) -> str:
    rows = []
    for net in NETS:
        for b in BATCHES:
            base = inf[net, b, "DSM"]["time"]
            rows.append([net, b, f"{base * 1e6:,.0f}"] + [f"{base / inf[net, b, s]['time']:.2f}x" for s in INFERENCE][1:]
                        + [f"{inf[net, b, '+Preload']['util']:.3f}"])
    return table(["network", "batch", "DSM latency (us)", "+Feature", "+Preload", "utilisation"], rows)


def sensitivity_section(sens: dict) -> str:
    rows = []
    for (staging, latency), (vgg, tail, util) in sens.items():
        convs = sorted({t for name, t in vgg.items() if name.startswith("CONV")})
        hybrid_tail = sum(t == "ModelXDataY" for t in tail)
        paper = (convs == ["Data"] and [vgg[f] for f in ("FCON1", "FCON2", "FCON3")] == [
            "Model", "DataXModelY", "DataXModelY"] and hybrid_tail > 0)
        rows.append([staging, latency, "/".join(convs), vgg["FCON1"], vgg["FCON2"], vgg["FCON3"],
                     f"{hybrid_tail} of {len(tail)}", f"{util:.3f}", "yes" if paper else "no"])
    return table(["reduction", "latency (us/hop)", "VGG16 convs", "FCON1", "FCON2", "FCON3",
                  "ResNet50 layer4 ModelXDataY", "VGG16 util", "all as the paper"], rows)


def fig12_section(fig12: dict) -> str:
    rows = []
    for layer in fig12["report"].layers:
        name = VGG_NAMES[layer.name]
        d = layer.decisions
        paper = FIG12.get(name, ("", "", "", ""))
        rows.append([name, d["parallelism"], d["fwd split"], d["reuse"], d["dysm"], d["util"], *paper])
    return table(["layer", "ours: type", "CoreD split (FWD)", "Mem-Opt", "DySM", "util", "paper: type", "CoreD split",
                  "Mem-Opt", "DySM"], rows)


def fig13(fig12: dict, folder: Path) -> str:
    rows, bars = [], []
    for row in fig12["report"].tables["per pass (Fig. 13)"]:
        total = row["total s"]
        share = {c: row[f"{c} s"] / total for c in ("mac", "underuse", "visible", "aux")}
        share["non-overlapped"] = sum(row[f"{c} s"] for c in NON_OVERLAPPED) / total
        top = max(NON_OVERLAPPED, key=lambda c: row[f"{c} s"])
        rows.append([VGG_NAMES[row["layer"]], row["pass"].upper(), f"{share['mac']:.2f}", f"{share['underuse']:.2f}",
                     f"{share['visible']:.2f}", f"{share['non-overlapped']:.2f} ({top})", f"{share['aux']:.2f}"])
        bars.append((f"{VGG_NAMES[row['layer']]} {row['pass']}", share))
    _stacked(bars, folder / "dsm-fig13.png", "VGG16, N_mb = 512: share of each layer-pass's time (Fig. 13)")
    return table(["layer", "pass", "MAC busy", "PE underuse", "visible overlapped", "non-overlapped (largest)", "aux"],
                 rows)


def _stacked(bars, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ("mac", "underuse", "visible", "non-overlapped", "aux")
    fig, ax = plt.subplots(figsize=(14, 4))
    bottom = [0.0] * len(bars)
    for key in keys:
        values = [b[1][key] for b in bars]
        ax.bar(range(len(bars)), values, bottom=bottom, label=key)
        bottom = [x + y for x, y in zip(bottom, values)]
    ax.set_xticks(range(len(bars)), [b[0] for b in bars], rotation=90, fontsize=7)
    ax.set_ylabel("share of time")
    ax.set_title(title)
    ax.legend(ncol=5, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def sweep(results: dict, xs, xlabel: str, path: Path, title: str, metric: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    rows = []
    for ax, net in zip(axes, NETS):
        for config in SWEEP_CONFIGS:
            ys = [results[net, x, config][metric] if metric == "util" else
                  results[net, xs[0], "baseline"]["time"] / results[net, x, config]["time"] for x in xs]
            ax.plot(xs, ys, marker="o", label=config)
            rows.append([net, config] + [f"{y:.2f}" for y in ys])
        ax.set_title(net)
        ax.set_xlabel(xlabel)
        ax.set_xscale("log", base=2)
    axes[0].set_ylabel("utilisation" if metric == "util" else "speedup over baseline at the smallest")
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return table(["network", "configuration", *(str(x) for x in xs)], rows)


def render(r: dict, folder: Path) -> str:
    ladder_md, facts = ladder_section(r["ladder"])
    torus = table(["network", "symmetric 80/80", "asymmetric 120/40"],
                  [[net, f"{r['torus'][net, 'dsm-8pf-sym']['util']:.3f}", f"{r['torus'][net, 'dsm-8pf-asym']['util']:.3f}"]
                   for net in NETS])
    engines = table(["engine", "best time (s)", "evaluations", "seconds"],
                    [[k, f"{v[0]:.6g}", f"{v[1]:,}", f"{v[2]:.2f}"] for k, v in r["engines"].items()])
    sections = {"ladder": ladder_md, "claims": claims(facts), "inference": inference_section(r["inference"]),
                "torus": torus, "fig12": fig12_section(r["fig12"]), "fig13": fig13(r["fig12"], folder),
                "engines": engines, "fig14": "(run without --quick)", "fig15": "(run without --quick)",
                "sensitivity": sensitivity_section(r["sensitivity"])}
    if r["peak"]:
        sections["fig14"] = sweep(r["peak"], CHIPS, "chips (2-32 PFLOP/s)", folder / "dsm-fig14.png",
                                  "Fig. 14: speedup with peak compute (N_mb = 512)", "speedup")
    if r["spad"]:
        sections["fig15"] = sweep(r["spad"], SPADS, "scratchpad MB per core", folder / "dsm-fig15.png",
                                  "Fig. 15: training utilisation against scratchpad size (N_mb = 512)", "util")
    return (OUT / "dsm.template.md").read_text().format(**sections)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the sweeps of Fig. 14 and 15")
    parser.add_argument("--out", type=Path, default=OUT / "dsm.md")
    parser.add_argument("--cache", type=Path, help="keep the explorations' results in this pickle and reuse them")
    args = parser.parse_args()
    if args.cache and args.cache.exists():
        results = pickle.loads(args.cache.read_bytes())
        args.out.write_text(render(results, args.out.parent))
        print(f"wrote {args.out} from {args.cache}")
        return
    results = {
        "ladder": training_ladder(),
        "fig12": explore("vgg16-train", {}),
        "inference": inference_bars(),
        "torus": torus_comparison(),
        "sensitivity": parallelism_sensitivity(),
        "peak": None if args.quick else peak_sweep(),
        "spad": None if args.quick else spad_sweep(),
        "engines": engines_on_small(),
    }
    if args.cache:
        args.cache.write_bytes(pickle.dumps(results))
    args.out.write_text(render(results, args.out.parent))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

