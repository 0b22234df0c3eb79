"""Pipeline-schedule arithmetic: one copy for every formulation that runs layers in stages.

A synchronous pipeline runs ``m`` micro-batches through ``p`` stages, stage ``s`` taking
``t_s`` seconds per micro-batch (forward and backward together, its stage-to-stage transfers
included). Two schedules flush the pipeline once per iteration:

- ``gpipe`` (Huang et al., NeurIPS 2019, §2.3): every forward, then every backward; a stage keeps
  the activations of all ``m`` micro-batches;
- ``1f1b`` (PipeDream-Flush; Narayanan et al., SC 2021, §2.2.1): after a warm-up, one forward and
  one backward alternate; stage ``s`` (0-based) keeps at most ``p - s`` micro-batches in flight.

Both take the same time (Narayanan §2.2.1: the same bubble). With ``v`` interleaved model chunks
per device (Narayanan §2.2.2, 1F1B only) the bubble shrinks ``v``-fold and the first stage keeps
``1 + (p - 1)/(p v)`` of its layers' activations per micro-batch in flight, times ``p``
(Korthikanti et al. 2022, §4.2.3).

Stages run contiguous ranges of items (layers, channels, work units): :func:`stage_bounds` turns
cut points into boundaries, :func:`stage_sums` prices every stage of a whole population from one
prefix sum, and :func:`stage_transfers` charges what crosses from each stage to the next.

Every function takes numpy arrays (a whole population at once) or plain numbers.
"""

from __future__ import annotations

import numpy as np

SCHEDULES = ("1f1b", "gpipe")


def pipeline_time(stage_times, microbatches, interleave=1) -> np.ndarray:
    """Seconds of one iteration: ``m · max_s t_s + (Σ_s t_s − max_s t_s) / v``.

    ``stage_times`` is ``(..., p)``; the last axis holds the stages. With equal stages ``t`` this
    is Narayanan et al. (2021) §2.2.1's ``(m + p − 1) t`` (``v = 1``) and §2.2.2's bubble
    ``(p − 1) t / v``; with unequal ones the slowest stage sets the steady state (GPipe §2.3)
    and every stage is crossed once in the fill and drain.
    """
    t = np.asarray(stage_times, dtype=float)
    slowest = t.max(axis=-1)
    return np.asarray(microbatches, float) * slowest + (t.sum(axis=-1) - slowest) / np.asarray(interleave, float)


def bubble_time(stage_times, interleave=1) -> np.ndarray:
    """Seconds of the fill and drain: :func:`pipeline_time` less the ``m`` steady-state periods."""
    t = np.asarray(stage_times, dtype=float)
    return (t.sum(axis=-1) - t.max(axis=-1)) / np.asarray(interleave, float)


def bubble_fraction(stages, microbatches, interleave=1) -> np.ndarray:
    """Idle share of the ideal time with equal stages: ``(p − 1) / (v m)`` (Narayanan §2.2.2)."""
    p, m, v = (np.asarray(x, dtype=float) for x in (stages, microbatches, interleave))
    return (p - 1.0) / (v * m)


def in_flight(stages, microbatches, stage=0, schedule: str = "1f1b") -> np.ndarray:
    """Micro-batches whose activations stage ``stage`` (0-based) holds at its peak: ``m`` for
    GPipe, ``min(p − stage, m)`` for 1F1B (Narayanan §2.2.1)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    p, m, s = (np.asarray(x, dtype=float) for x in (stages, microbatches, stage))
    return m if schedule == "gpipe" else np.minimum(p - s, m)


def interleaved_in_flight(stages, interleave, microbatches=np.inf, stage=0) -> np.ndarray:
    """Micro-batches of its layers' activations stage ``stage`` holds with ``v`` interleaved
    chunks (1F1B): ``p · (1 + (p − 1)/(p v))`` for the first (Korthikanti et al. 2022, §4.2.3).
    Megatron-LM's interleaved schedule warms up ``2(p − 1 − stage) + (v − 1)p`` chunk
    micro-batches and holds one more, at most all ``m·v`` of the iteration
    (``forward_backward_pipelining_with_interleaving``), so the peak is
    ``min((p v + p − 1 − 2·stage)/v, m)`` micro-batches of the stage's ``v`` chunks."""
    p, v, m, s = (np.asarray(x, dtype=float) for x in (stages, interleave, microbatches, stage))
    return np.minimum((p * v + p - 1.0 - 2.0 * s) / v, m)


def uniform_bubble_time(stages, stage_time, interleave=1) -> np.ndarray:
    """Seconds of the fill and drain with ``p`` equal stages of ``t`` seconds: ``(p − 1) t / v``
    (Narayanan §2.2.2); :func:`bubble_time` of ``p`` copies of ``t``, for a population whose
    stage counts differ."""
    p, t, v = (np.asarray(x, dtype=float) for x in (stages, stage_time, interleave))
    return (p - 1.0) / v * t


def period(stage_times) -> np.ndarray:
    """Seconds between micro-batches in the steady state: the slowest stage, ``max_s t_s``
    (GPipe §2.3; the ``m``-term of :func:`pipeline_time`)."""
    return np.asarray(stage_times, dtype=float).max(axis=-1)


def pass_time(stage_times) -> np.ndarray:
    """Seconds for one micro-batch to cross every stage in turn, ``Σ_s t_s``: :func:`pipeline_time`
    with ``m = 1`` (one inference through the stages, nothing to overlap it with)."""
    return np.asarray(stage_times, dtype=float).sum(axis=-1)


# --- contiguous ranges: stage s runs items bounds[s] .. bounds[s + 1] − 1 ---------------------------

def stage_bounds(cuts, items: int) -> np.ndarray:
    """Boundaries ``(..., p + 1)`` of ``p`` contiguous stages over ``items`` items (layers, units):
    ``0``, the ``p − 1`` cut points (each the first item of a stage after the first, in
    increasing order) and ``items``."""
    cuts = np.asarray(cuts, dtype=np.int64)
    edge = cuts.shape[:-1] + (1,)
    return np.concatenate([np.zeros(edge, np.int64), cuts, np.full(edge, items, np.int64)], axis=-1)


def stage_ranges(bounds) -> tuple[tuple[int, int], ...]:
    """One plan's stages as ``(first, last)`` items, both included, from its boundaries."""
    bounds = [int(b) for b in bounds]
    return tuple((a, b - 1) for a, b in zip(bounds[:-1], bounds[1:]))


def prefix_sums(values) -> np.ndarray:
    """``prefix[i] = Σ values[:i]`` along the last axis (one more entry than ``values``)."""
    values = np.asarray(values, dtype=float)
    return np.concatenate([np.zeros(values.shape[:-1] + (1,)), np.cumsum(values, axis=-1)], axis=-1)


def stage_sums(prefix, bounds) -> np.ndarray:
    """Per-stage totals ``(..., p)`` of contiguous ranges: ``prefix[b_{s+1}] − prefix[b_s]``, each
    stage in O(1) from :func:`prefix_sums` of the per-item values (``prefix`` 1-D, shared by the
    whole population of ``bounds``)."""
    prefix, bounds = np.asarray(prefix, dtype=float), np.asarray(bounds, dtype=np.int64)
    return prefix[bounds[..., 1:]] - prefix[bounds[..., :-1]]


def stage_of(bounds) -> np.ndarray:
    """The stage (0-based) of every item of one plan, from its boundaries."""
    bounds = np.asarray(bounds, dtype=np.int64)
    return np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))


# --- stage-to-stage transfers -------------------------------------------------------------------

def transfer_time(nbytes, bandwidth, latency, messages=1) -> np.ndarray:
    """Seconds to send ``nbytes`` in ``messages`` messages over one path: ``n/B + k·α`` (Hockney
    α-β, as :func:`optmap.collectives.point_to_point` for one message)."""
    n, bw, lat, k = (np.asarray(x, dtype=float) for x in (nbytes, bandwidth, latency, messages))
    return n / bw + k * lat


def stage_transfers(nbytes, devices, bandwidth, latency, messages=1) -> np.ndarray:
    """Seconds of the transfer after each stage but the last, ``(..., p − 1)``, for a population.

    ``nbytes (..., p − 1)`` crosses from stage ``s`` to ``s + 1``; ``devices (..., p)`` is the
    device (an index) each stage runs on; ``bandwidth`` and ``latency`` are ``(n, n)`` path
    matrices between devices.
    """
    devices = np.asarray(devices, dtype=np.int64)
    src, dst = devices[..., :-1], devices[..., 1:]
    return transfer_time(nbytes, np.asarray(bandwidth)[src, dst], np.asarray(latency)[src, dst], messages)


def increasing_cuts(cuts, low: int, high: int) -> np.ndarray:
    """Rows of cut points rounded, sorted and spread apart: strictly increasing in [low, high],
    the j-th of k at least ``low + j`` and at most ``high − (k − 1 − j)``, so every stage
    between two cuts is non-empty (a formulation's repair of cut decisions)."""
    X = np.sort(np.round(np.array(cuts, dtype=float, ndmin=2)), axis=1)
    k = X.shape[1]
    for j in range(k):
        floor = low if j == 0 else np.maximum(X[:, j - 1] + 1, low + j)
        X[:, j] = np.clip(np.maximum(X[:, j], floor), low + j, high - (k - 1 - j))
    return X
