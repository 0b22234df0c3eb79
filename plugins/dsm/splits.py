"""Core splits (ChipD -> CoreD) and PE-array tiles (CoreD -> ArrayD) of DSM §II-C, as integer arrays.

Dimensions are always ordered ``DIMS = (in, out, ij, kij, mb)``. A core split is a tuple of
factors, one per dimension, whose product is the number of cores of a chip (the paper's balance
rule, §II-E: "the ratio of product of ChipD/CoreD along each dimension should equal the number of
cores"); ``CoreD = ceil(ChipD / factor)``. A tile (ArrayD) is described per dimension by a halving
level ``a``: ``ArrayD = roundup_P(ceil(CoreD / 2**a))``, so every tile is an integral multiple of
the array's P (§II-E) and level 0 is the whole CoreD (no tiling); kij is never tiled (a kernel
window is at most a few elements).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from optmap.errors import OptmapError

DIMS = ("in", "out", "ij", "kij", "mb")
IN, OUT, IJ, KIJ, MB = range(5)
TILED = (IN, OUT, IJ, MB)  # dimensions with a tile level (kij is never tiled)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@lru_cache(maxsize=None)
def factorizations(cores: int, dims: tuple[str, ...] = DIMS) -> np.ndarray:
    """Every ordered split of ``cores`` over ``dims`` (others get 1), as an (S, 5) int array.

    For 32 cores over all five dimensions this is C(9, 4) = 126 splits (56 without kij, note §3.3).
    Order: by number of split dimensions, then lexicographic, so ties prefer simpler splits.
    """
    unknown = sorted(set(dims) - set(DIMS))
    if unknown:
        raise OptmapError(f"core_split_dims: unknown dimension '{unknown[0]}'; valid: {', '.join(DIMS)}")
    columns = [DIMS.index(d) for d in DIMS if d in dims]
    rows = []
    for combo in itertools.product(_divisors(cores), repeat=len(columns)):
        if np.prod(combo) == cores:
            row = [1] * len(DIMS)
            for c, f in zip(columns, combo):
                row[c] = f
            rows.append(row)
    rows.sort(key=lambda r: (sum(f > 1 for f in r), [-f for f in r]))
    return np.array(rows, dtype=np.int64)


def explicit_splits(splits: list[dict[str, int]], cores: int) -> np.ndarray:
    """Splits given in a problem file (``{in = 4, out = 8}``); each must multiply to ``cores``."""
    rows = []
    for i, split in enumerate(splits):
        unknown = sorted(set(split) - set(DIMS))
        if unknown:
            raise OptmapError(f"core_splits[{i}]: unknown dimension '{unknown[0]}'; valid: {', '.join(DIMS)}")
        row = [int(split.get(d, 1)) for d in DIMS]
        if min(row) < 1 or int(np.prod(row)) != cores:
            shown = " x ".join(f"{d}={f}" for d, f in zip(DIMS, row) if f != 1) or "1"
            raise OptmapError(f"core_splits[{i}]: the factors {shown} multiply to {int(np.prod(row))}, but a chip has "
                              f"{cores} cores; every split must multiply to {cores} (DSM balance rule)")
        rows.append(row)
    if not rows:
        raise OptmapError("core_splits is empty; list at least one split or omit the key")
    return np.array(rows, dtype=np.int64)


def label(split) -> str:
    """``in4.out8`` for a split (``-`` when nothing is split)."""
    parts = [f"{d}{int(f)}" for d, f in zip(DIMS, split) if f != 1]
    return ".".join(parts) or "-"


def cdiv(a, b):
    """Integer ceiling division (also for numpy arrays)."""
    return -(-a // b)


def imbalance(chip, split: np.ndarray) -> np.ndarray:
    """Work of the busiest core over the average work for each split row (1 = balanced, §II-E)."""
    chip = np.asarray(chip)
    return np.prod(cdiv(chip, split) * split, axis=-1) / np.prod(chip)


def tile_size(core, level, p: int):
    """ArrayD = roundup_P(ceil(CoreD / 2**level)): the tile of a halving level (floats, broadcasting)."""
    return np.ceil(np.ceil(core / np.exp2(level)) / p) * p
