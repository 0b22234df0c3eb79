"""Bounded option types for plugin signatures: every number a problem file can set has a range.

A plugin declares its options as annotated keyword parameters (:mod:`optmap.options`); these
aliases give them ranges, so an out-of-range value is one clear line at load time instead of a
silent nonsense result, an overflow or a hang. Integers have both bounds (they size the work);
floats a lower one at least. The upper limits are generous sizes far beyond any published model
or system, named here so that a user who hits one knows what it is.
"""

from __future__ import annotations

from typing import Annotated

from annotated_types import Ge, Gt, Le

MAX_BATCH = 2**31 - 1  # samples per step
MAX_DIMENSION = 2**24  # channels, features, tokens, image side, vocabulary
MAX_LAYERS = 10_000  # layers or blocks of one network (GPT-3 has 96, Megatron-1T 128)
MAX_STEPS = 10_000_000  # grids, generations, chains and the like


def ints(low: int, high: int):
    """An ``int`` option in [low, high]."""
    return Annotated[int, Ge(low), Le(high)]


def floats(low: float, high: float | None = None, *, open_low: bool = False):
    """A ``float`` option above ``low`` (inclusive unless ``open_low``), at most ``high`` if given."""
    lower = Gt(low) if open_low else Ge(low)
    return Annotated[float, lower] if high is None else Annotated[float, lower, Le(high)]


Gbps = floats(0, open_low=True)  # a bandwidth in Gb/s, > 0
Microseconds = floats(0)  # a latency in µs, >= 0
Positive = floats(0, open_low=True)
NonNegative = floats(0)
Fraction = floats(0, 1, open_low=True)  # in (0, 1]
Probability = floats(0, 1)  # in [0, 1]
Batch = ints(1, MAX_BATCH)
Dimension = ints(1, MAX_DIMENSION)
Depth = ints(1, MAX_LAYERS)
Steps = ints(1, MAX_STEPS)
