"""The values a ``megatron-3d`` decision may take: the search's bounds, and pinned values beyond them.

The planner's search is bounded for speed: micro-batches up to ``max_microbatch``, interleaving up
to ``max_interleaving``, and (``uneven_stages = "balanced"``, the default) the pipeline splits whose
chunks divide the layers or the layers + 2 (:mod:`.stages`). Megatron-Core runs more than that:
any micro-batch that divides the batch, and any split of the layers through its explicit
``--pipeline-model-parallel-layout``. Issue 25 asks that every published configuration be priced,
so a ``[fix]`` (or ``--fix``) value outside those bounds widens them for its problem alone
(:func:`admit`, the cost model's ``admit``), instead of being refused:

* a micro-batch above ``max_microbatch`` that divides the batch, an interleaving above
  ``max_interleaving``, or a context-parallel size above ``max_context_parallel`` (or its default,
  :func:`.context.default_limit`) that splits the sequence: the bound rises to it;
* a pipeline size, an interleaving or the pair that no ``balanced`` split can hold (Megatron-Core
  runs DeepSeek-V3's 61 layers over 8 stages, or over 4 × 4 chunks): ``uneven_stages = "layout"``,
  the layers, the embedding and the loss spread over the chunks as evenly as they go, which
  ``optmap export`` writes as Megatron-Core's layout flag.

``never``, ``any`` and ``layout`` are kept as the problem file sets them: a pin they cannot hold is
refused with the split it lacks (``never`` is Megatron-LM's old rule, chosen on purpose).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

from optmap.space import DesignSpace

from . import context, stages


def divisors(n: int, limit: float = math.inf) -> tuple[int, ...]:
    """The divisors of ``n`` up to ``limit``."""
    return tuple(k for k in range(1, n + 1) if n % k == 0 and k <= limit)


def bounded(cfg, batch: int, gpus: int, mode: str, max_microbatch: float, max_interleaving: float,
            max_context_parallel: int | None) -> dict[str, tuple[int, ...]]:
    """The choices of the four bounded decisions: pipeline sizes and interleavings that ``mode``'s
    splits hold (:func:`.stages.sizes`), micro-batches dividing the batch and context-parallel sizes
    splitting the sequence (:func:`.context.choices`), each up to its bound."""
    return {"pipeline_parallel": stages.sizes(cfg.layers, gpus, mode),
            "microbatch_size": divisors(batch, max_microbatch),
            "interleaving": stages.sizes(cfg.layers, max_interleaving, mode, True),
            "context_parallel": context.choices(cfg.seq_len, gpus, max_context_parallel)}


def _whole(value: Any) -> int | None:
    """A pinned value as a positive whole number (``--fix`` values may arrive as text), else None:
    the core's check of the pins reports anything else."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() and number >= 1 else None


def _balanced_holds(layers: int, p: int | None, v: int | None) -> bool:
    """Whether a ``balanced`` split holds the pinned pipeline size and interleaving (either may be free)."""
    if p is not None:
        return bool(stages.split(layers, p, v or 1, "balanced").valid)
    return v is None or v in stages.sizes(layers, v, "balanced", True)


def admit(model, pins: dict[str, Any]):
    """``model`` (a :class:`~.model.Megatron3DCostModel`) with its choices widened to hold ``pins``
    (module docstring); ``model`` itself where they already do."""
    space, layers = model.space, model.config.layers
    p, b, v, cp = (_whole(pins.get(name)) for name in ("pipeline_parallel", "microbatch_size", "interleaving",
                                                        "context_parallel"))
    mode = model.options.uneven_stages
    if mode == "balanced" and not _balanced_holds(layers, p, v):
        mode = "layout"
    now = {var.name: var.choices for var in space.variables}
    # each bound is the largest choice the model has (the same choices again), or the pin above it
    wider = bounded(model.config, model.batch, model.n, mode, *(max(max(now[name]), pin or 1) for name, pin in (
        ("microbatch_size", b), ("interleaving", v), ("context_parallel", cp))))
    if mode == model.options.uneven_stages and all(wider[name] == now[name] for name in wider):
        return model
    widened = copy.copy(model)
    widened.space = DesignSpace([dataclasses.replace(var, choices=wider[var.name]) if var.name in wider else var
                                 for var in space.variables], repair=space.custom_repair, sample=space.custom_sample)
    widened.options = dataclasses.replace(model.options, uneven_stages=mode)
    return widened
