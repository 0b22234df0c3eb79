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


def interleaved_in_flight(stages, interleave) -> np.ndarray:
    """Micro-batches of its layers' activations the first stage holds with ``v`` interleaved
    chunks (1F1B): ``p · (1 + (p − 1)/(p v))`` (Korthikanti et al. 2022, §4.2.3)."""
    p, v = (np.asarray(x, dtype=float) for x in (stages, interleave))
    return p * (1.0 + (p - 1.0) / (p * v))
