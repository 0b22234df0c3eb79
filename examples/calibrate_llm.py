"""Refit the A100 constants of the LLM planner on published Megatron-LM runs, with held-out errors.

    python examples/calibrate_llm.py

Prints, for each Megatron-LM source, the constants fitted without it and its held-out error, then
the fit on all three (the constants shipped in :mod:`optmap.plugins.llm.compute`) and its error
per source (:mod:`optmap.plugins.llm.calibration` holds the method).
"""

from __future__ import annotations

import numpy as np

from optmap.host import load_host
from optmap.plugins.llm.calibration import cases, fit, grid, held_out, summary
from optmap.plugins.llm.published import MEGATRON_SOURCES


def main() -> None:
    cs = cases(host=load_host())
    table = grid(cs)
    source = np.array([c.run.source for c in cs])
    for held, eff, err in held_out(cs, table):
        print(f"fit without {held}: gemm={eff.gemm:.2f} memory={eff.memory:.2f}; held out {held}: {summary(err)}")
    eff = fit(table, np.isin(source, MEGATRON_SOURCES))
    print(f"fit on {' + '.join(MEGATRON_SOURCES)}: gemm={eff.gemm:.2f} memory={eff.memory:.2f}")
    for src in dict.fromkeys(source):
        kind = "fitted" if src in MEGATRON_SOURCES else "never fitted"
        print(f"  {src} ({kind}): {summary(table[(eff.gemm, eff.memory)][source == src])}")


if __name__ == "__main__":
    main()
