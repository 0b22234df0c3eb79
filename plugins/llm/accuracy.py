"""How far ``megatron-3d`` fell from published, measured runs like the one it prices: the held-out
summary of ``docs/reproductions/llm-today.md`` (runs never fitted to), reported beside every plan so a
user can weigh its seconds.

The summary ships as ``heldout_accuracy.json``, written by ``python examples/validate_llm.py`` from the
model it validates; ``tests/plugins/llm/test_llm_accuracy.py`` recomputes it, so it cannot go stale.
A run belongs to a group by its accelerator preset and its workload: ``h100`` / ``h100-sxm`` dense or
mixture-of-experts, ``b200`` / ``gb200``; any other accelerator has no held-out runs (the A100
constants are fitted, ``docs/reproductions/llm.md``), and no table.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

FAMILIES = {"h100": "H100", "h100-sxm": "H100", "b200": "B200 / GB200", "gb200": "B200 / GB200"}
FILE = "heldout_accuracy.json"
HOW = {"summary_without_recipe_options": "plain problem files", "summary": "with their recipes' options"}


def group(accelerator: str, moe: bool) -> str | None:
    """The held-out group of a run on ``accelerator`` (a preset name), or None."""
    family = FAMILIES.get(accelerator)
    if family == "H100":
        return "H100 MoE" if moe else "H100 dense"
    return family


@functools.cache
def summary() -> dict:
    """The shipped summary, ``{"summary": [...], "summary_without_recipe_options": [...]}``; empty
    before ``validate_llm.py`` first writes it (it prices the runs with this model)."""
    path = resources.files(__package__).joinpath(FILE)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def table(accelerator: str, moe: bool) -> list[dict]:
    """Rows of the ``held_out_accuracy`` table for a run on ``accelerator``: its group's mean and
    worst |predicted / measured - 1| (``docs/reproductions/llm-today.md``), the runs priced as plain problem files (the
    planner's defaults) and with the cost options their recipes fix."""
    name = group(accelerator, moe)
    if name is None:
        return []
    rows = []
    for key, how in HOW.items():
        for g in summary().get(key, ()):
            if g["group"] == name and g["mean_abs_error_percent"] is not None:
                rows.append({"published runs": f"{name} ({g['runs']})", "priced as": how,
                             "mean |error| %": round(g["mean_abs_error_percent"], 1),
                             "worst |error| %": round(g["max_abs_error_percent"], 1)})
    return rows
