"""What a problem asks for: ``[objective]`` (minimise / maximise), ``[constraints]`` and ``[fix]``."""

from __future__ import annotations

import math
from typing import Any

from optmap.cost import admit, primary_metric, sense
from optmap.errors import OptmapError, did_you_mean
from optmap.options import unknown_key
from optmap.problem.common import short


def _names(where: str, key: str, value: Any) -> list[str]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise OptmapError(
            f"{where}: [objective] {key} must be a non-empty list of metric names, e.g. [\"time\"], got {short(value)}"
        )
    return names


def objectives(where: str, table: dict, cost_model: Any, cost_name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(objective names, their senses "min"/"max"): the table's, else the model's primary metric."""
    metrics = tuple(cost_model.metrics)
    unknown = sorted(set(table) - {"minimize", "maximize"})
    if unknown:
        raise OptmapError(f"{where}: [objective] {unknown_key(unknown[0], ('maximize', 'minimize'))}")
    if not table:
        metric = primary_metric(cost_model)
        return (metric,), (sense(cost_model, metric),)
    chosen: list[tuple[str, str]] = []
    for key, direction in (("minimize", "min"), ("maximize", "max")):
        if key in table:
            chosen += [(name, direction) for name in _names(where, key, table[key])]
    for name, direction in chosen:
        if name not in metrics:
            hint = did_you_mean(name, metrics).replace("valid names", f"metrics of cost model '{cost_name}'")
            key = "minimize" if direction == "min" else "maximize"
            raise OptmapError(f"{where}: [objective] {key}: unknown metric '{name}'{hint}")
    names = [name for name, _ in chosen]
    if len(set(names)) != len(names):
        raise OptmapError(f"{where}: [objective] lists a metric twice: {short(names)}")
    return tuple(names), tuple(direction for _, direction in chosen)


def constraints(where: str, table: dict, metrics: tuple[str, ...], cost_name: str) -> tuple[dict, dict]:
    """(upper bounds, lower bounds) by metric, from ``max_<metric>`` and ``min_<metric>`` keys."""
    upper, lower = {}, {}
    valid = [f"{bound}_{m}" for m in metrics for bound in ("max", "min")]
    for key, value in table.items():
        bound, _, metric = key.partition("_")
        if bound not in ("max", "min") or metric not in metrics:
            raise OptmapError(
                f"{where}: [constraints] {unknown_key(key, valid)} (max_<metric> or min_<metric> for a metric of "
                f"cost model '{cost_name}')"
            )
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise OptmapError(f"{where}: [constraints] {key} must be a finite number, got {short(value)}")
        (upper if bound == "max" else lower)[metric] = float(value)
    for metric in set(upper) & set(lower):
        if lower[metric] > upper[metric]:
            raise OptmapError(f"{where}: [constraints] min_{metric} = {lower[metric]:g} is above max_{metric} = "
                              f"{upper[metric]:g}; no mapping can satisfy both")
    return upper, lower


def admitted(where: str, table: Any, cost_model: Any) -> Any:
    """The cost model widened to hold the pinned decisions (:func:`optmap.cost.admit`)."""
    try:
        return admit(cost_model, table)
    except OptmapError as exc:
        raise OptmapError(f"{where}: [fix] {exc}") from None


def fixes(where: str, table: dict, cost_model: Any) -> dict[str, Any]:
    """The pinned decisions, checked against the cost model's space (names and domains)."""
    try:
        cost_model.space.pin(table)
    except OptmapError as exc:
        raise OptmapError(f"{where}: [fix] {exc}") from None
    return dict(table)
