"""Regenerate docs/reproductions/llm.md: megatron-3d predictions beside measured Megatron-LM runs.

    python examples/reproduce_llm.py            # writes docs/reproductions/llm.md (a few minutes)

Every run of :mod:`optmap.plugins.llm.published` is predicted with the published decisions pinned
and the rest chosen by the planner; the A100 constants are those of
:mod:`optmap.plugins.llm.compute` (fitted by ``python -m optmap.plugins.llm.calibration``), and
the held-out errors are recomputed here by leaving each fitted source out.
"""

from __future__ import annotations

from pathlib import Path


from optmap.plugins.llm import calibration
from optmap.plugins.llm.compute import A100_FIT

OUT = Path(__file__).resolve().parent.parent / "docs" / "reproductions" / "llm.md"
TEMPLATE = OUT.with_name("llm.template.md")


def table(cs) -> str:
    lines = ["| source | run | GPUs | batch | t × p × d | mb | v | recompute | measured s | predicted s | error |",
             "|---|---|---:|---:|---|---:|---:|---|---:|---:|---:|"]
    for c in cs:
        pred, info = calibration.predict(c, A100_FIT)
        plan = info["plan"]
        rc = ("none", "selective", "full")[int(plan["recompute"])] + (" + sp" if plan["sequence_parallel"] else "")
        lines.append(f"| {c.run.source} | {c.run.label} | {c.run.gpus:,} | {c.run.batch:,} | "
                     f"{plan['tensor_parallel']} × {plan['pipeline_parallel']} × {plan['data_parallel']} | "
                     f"{plan['microbatch_size']} | {plan['interleaving']} | {rc} | {c.run.measured_s:.2f} | "
                     f"{pred:.2f} | {100 * (pred / c.run.measured_s - 1):+.1f} % |")
    return "\n".join(lines)


def main() -> None:
    cs = calibration.cases()
    by = {src: [c for c in cs if c.run.source == src] for src in dict.fromkeys(c.run.source for c in cs)}
    rows = []
    for held in calibration.FIT_SOURCES:
        eff, _ = calibration.fit([c for s in calibration.FIT_SOURCES if s != held for c in by[s]])
        rows.append(f"| fitted on the other source (gemm {eff.gemm:.2f}, memory {eff.memory:.2f}) | {held} | "
                    f"{calibration.summary(by[held], eff)} |")
    for src, group in by.items():
        kind = "fitted" if src in calibration.FIT_SOURCES else "held out"
        rows.append(f"| final constants (gemm {A100_FIT.gemm:.2f}, memory {A100_FIT.memory:.2f}), {kind} | {src} | "
                    f"{calibration.summary(group, A100_FIT)} |")
    errors = "| constants | runs | error |\n|---|---|---|\n" + "\n".join(rows)
    text = TEMPLATE.read_text().replace("{{ERRORS}}", errors).replace("{{TABLE}}", table(cs))
    OUT.write_text(text)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
