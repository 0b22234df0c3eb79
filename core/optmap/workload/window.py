"""Sliding-window attention (Beltagy et al. 2020, "Longformer"; Mistral 7B; GPT-OSS; Gemma 2/3).

In a windowed layer each query attends to the ``window`` most recent positions, itself included
(Hugging Face's ``sliding_window``; Megatron-Core's ``window_size = (window - 1, 0)``), instead of
the whole sequence. ``full_every`` interleaves full-attention layers: every ``full_every``-th layer
(1-based) attends to the whole sequence and the rest to the window (Megatron-Core's
``window_attn_skip_freq``, an ``(N-1):1`` ratio of windowed to full layers; GPT-OSS alternates,
``full_every = 2``); 0 windows every layer (Mistral 7B).

Counting follows the transformer config's rule for full attention, which counts the whole
``s × s`` score matrix: a windowed layer counts ``s × min(window, s)`` scores (every query against
a band of ``window`` keys). A kernel that skips masked blocks computes fewer: the causal band,
``Σ_i min(i + 1, w) = w·s - w·(w - 1)/2`` of the square (:func:`causal_share`).
"""

from __future__ import annotations


def validate(window: int, full_every: int) -> None:
    """Refuse, with the rule, a window setting that cannot hold."""
    if window < 0 or full_every < 0:
        raise ValueError(f"sliding_window = {window} and full_attention_every = {full_every} must be >= 0")
    if full_every and not window:
        raise ValueError(f"full_attention_every = {full_every} interleaves full layers among windowed ones: "
                         f"give sliding_window too")
    if window and full_every == 1:
        raise ValueError("full_attention_every = 1 makes every layer full: leave sliding_window out instead")


def is_windowed(layer: int, window: int, full_every: int) -> bool:
    """True where ``layer`` (0-based) attends to the window (every ``full_every``-th layer, 1-based, is full)."""
    return bool(window) and (not full_every or (layer + 1) % full_every != 0)


def keys(seq_len: int, window: int, windowed: bool) -> int:
    """Keys each query is counted against: the whole sequence, or the window."""
    return min(window, seq_len) if windowed else seq_len


def causal_share(seq_len: int, window: int) -> float:
    """Share of the ``s × s`` square a causal kernel computes in a windowed layer: query ``i``
    attends to ``min(i + 1, w)`` keys, ``w·s - w·(w - 1)/2`` in all (``s·(s + 1)/2`` when ``w >= s``)."""
    w = min(window, seq_len)
    return (w * seq_len - w * (w - 1) / 2) / seq_len**2
