"""Named unit conversions: SI inside the code, conversions only at the edges.

Conventions (stated once, used everywhere):

* ``Gb/s`` (gigabit per second, suffix ``_gbps``) is 1e9 **bits** per second, so 8 Gb/s = 1e9 B/s.
  Network rates in papers and datasheets (AccPar's 8 Gb/s and 16 Gb/s, Ethernet) use it.
* ``GB/s`` (gigabyte per second, suffix ``_gBps``) is 1e9 **bytes** per second. Memory and NVLink
  bandwidths in datasheets use it.
* ``GB`` is 1e9 bytes; ``GiB`` is 2**30 bytes. Accelerator memory capacities are binary in
  practice (a "32 GB" V100 holds 32 GiB), so the presets use :func:`gib_to_bytes`.
* ``TFLOP/s`` is 1e12 FLOP/s; ``µs`` is 1e-6 s.

Every function accepts a float or a numpy array and returns the same kind.
"""

from __future__ import annotations

BITS_PER_BYTE = 8
GIGA = 1e9
TERA = 1e12
GIB = 2**30
MICRO = 1e-6


def gbps_to_bytes_per_s(gbps):
    """Gigabits per second (1e9 bit/s) → bytes per second: ``8 Gb/s → 1e9 B/s``."""
    return gbps * GIGA / BITS_PER_BYTE


def bytes_per_s_to_gbps(bytes_per_s):
    """Bytes per second → gigabits per second (1e9 bit/s)."""
    return bytes_per_s * BITS_PER_BYTE / GIGA


def gBps_to_bytes_per_s(gBps):  # noqa: N802 - the capital B is the unit (bytes)
    """Gigabytes per second (1e9 B/s) → bytes per second."""
    return gBps * GIGA


def bytes_per_s_to_gBps(bytes_per_s):  # noqa: N802
    """Bytes per second → gigabytes per second (1e9 B/s)."""
    return bytes_per_s / GIGA


def tflops_to_flops(tflops):
    """TFLOP/s (1e12 FLOP/s) → FLOP/s."""
    return tflops * TERA


def flops_to_tflops(flops):
    """FLOP/s → TFLOP/s (1e12 FLOP/s)."""
    return flops / TERA


def gib_to_bytes(gib):
    """Gibibytes (2**30 B) → bytes."""
    return gib * GIB


def bytes_to_gib(nbytes):
    """Bytes → gibibytes (2**30 B)."""
    return nbytes / GIB


def gb_to_bytes(gb):
    """Gigabytes (1e9 B) → bytes."""
    return gb * GIGA


def us_to_s(us):
    """Microseconds → seconds."""
    return us * MICRO


def s_to_us(s):
    """Seconds → microseconds."""
    return s / MICRO
