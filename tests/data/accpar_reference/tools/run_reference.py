"""Run the (patched) AccPar reference binary on every fixture network and write <net>.json.

Usage:  python run_reference.py /path/to/patched/accpar  [fixture_dir]

The patched binary is invoked as ``accpar NETWORK -1 BATCH LEVELS`` and must print, after the
original tables, lines of the form
    RESULT <MODE> level <h> plan <t_0> ... <t_{L-1}> cost <%.17g> [dpcost <%.17g> tie_path <0|1> tie_any <0|1>]
    RESULT <MODE> total <%.17g>
for MODE in DATAPAR, TRICK, HYPAR, ACCPAR (see README.md for the patch).  Numbers are copied into
the JSON as Python floats; json writes the shortest text that round-trips to the same IEEE double,
so the stored values are bit-identical to what the program printed with %.17g.
"""
import json
import subprocess
import sys
from pathlib import Path

NETWORKS = ["Alexnet.txt", "Vgg11.txt", "rand_cnn7.txt", "rand_cnn12.txt", "rand_fc3.txt",
            "rand_fc6.txt", "rand_rect4.txt", "rand_odd8.txt"]
COMBOS = [(1, 1), (1, 10), (7, 3), (7, 10), (64, 1), (64, 7), (512, 3), (512, 7), (512, 10)]


def Raw(text):
    value = float(text)
    assert repr(value) == repr(float(repr(value)))
    return value


def dumps(runs):
    """JSON text with one run per block and one plan row per line (readable diffs)."""
    out = ["["]
    for i, run in enumerate(runs):
        items = []
        for key, val in run.items():
            if key == "plans" or (isinstance(val, dict) and "plans" in val):
                if key == "plans":
                    rows = ",\n    ".join(json.dumps(r) for r in val)
                    items.append(f'  "plans": [\n    {rows}\n  ]')
                else:
                    sub = dict(val)
                    rows = ",\n      ".join(json.dumps(r) for r in sub.pop("plans"))
                    rest = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sub.items())
                    items.append(f'  {json.dumps(key)}: {{"plans": [\n      {rows}\n    ], {rest}}}')
            else:
                items.append(f"  {json.dumps(key)}: {json.dumps(val)}")
        out.append(" {\n" + ",\n".join(items) + "\n }" + ("," if i < len(runs) - 1 else ""))
    out.append("]")
    text = "\n".join(out) + "\n"
    assert json.loads(text) == json.loads(json.dumps(runs))
    return text


def run(binary, net, batch, levels):
    out = subprocess.run([binary, str(net), "-1", str(batch), str(levels)], check=True,
                         capture_output=True, text=True).stdout
    modes = {}
    for line in out.splitlines():
        if not line.startswith("RESULT "):
            continue
        tok = line.split()
        mode = modes.setdefault(tok[1], {"plans": [], "level_costs": [], "dp_costs": [],
                                         "ties": [], "ties_any": []})
        if tok[2] == "total":
            mode["total"] = Raw(tok[3])
            continue
        assert int(tok[3]) == len(mode["plans"])
        i = tok.index("cost")
        mode["plans"].append([int(x) for x in tok[5:i]])
        mode["level_costs"].append(Raw(tok[i + 1]))
        if "dpcost" in tok:
            mode["dp_costs"].append(Raw(tok[tok.index("dpcost") + 1]))
            mode["ties"].append(tok[tok.index("tie_path") + 1] == "1")
            mode["ties_any"].append(tok[tok.index("tie_any") + 1] == "1")
    return modes


def main(binary, fixture_dir):
    fixture_dir = Path(fixture_dir)
    for net in NETWORKS:
        runs = []
        for batch, levels in COMBOS:
            modes = run(binary, fixture_dir / net, batch, levels)
            acc, hyp = modes["ACCPAR"], modes["HYPAR"]
            # the DP minimum and print_partitions' recomputation must agree for chain networks
            assert [float(x) for x in acc["dp_costs"]] == [float(x) for x in acc["level_costs"]]
            assert [float(x) for x in hyp["dp_costs"]] == [float(x) for x in hyp["level_costs"]]
            runs.append({
                "network": net, "batch": batch, "levels": levels,
                "plans": acc["plans"], "level_costs": acc["level_costs"], "total": acc["total"],
                "ties": acc["ties"], "ties_any": acc["ties_any"],
                "hypar": {"plans": hyp["plans"], "level_costs": hyp["level_costs"],
                          "total": hyp["total"], "ties": hyp["ties"]},
                "data_parallel": {"level_costs": modes["DATAPAR"]["level_costs"],
                                  "total": modes["DATAPAR"]["total"]},
            })
        path = fixture_dir / (Path(net).stem + ".json")
        path.write_text(dumps(runs))
        print(path.name, len(runs), "runs")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else Path(__file__).resolve().parent.parent)
