"""How a plan's transformer layers are split over pipeline stages, even or uneven (Megatron-Core).

A pipeline of ``p`` stages with ``v`` interleaved (virtual) stages per device runs ``C = p·v``
model chunks in model order; chunk ``c`` sits on device ``c mod p`` (Megatron-LM's interleaved
schedule, Narayanan et al. SC'21 §2.2.2). Megatron-LM of 2021-2022 needs ``L`` divisible by ``C``
(every chunk ``L/C`` layers). Megatron-Core lets the first and last stages hold fewer layers,
since the first also runs the embedding and the last the logits and loss
(``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers``; with
interleaving, ``--pipeline-model-parallel-layout``, whose ``E`` and ``L`` mark the embedding and
loss: ``megatron/core/transformer/transformer_block.py`` ``get_num_layers_to_build`` and
``pipeline_parallel_layer_layout.py``).

The uneven split used here (:func:`split`): the middle chunks hold ``k`` layers each, the first
chunk ``f`` and the last ``l``. Without interleaving (``v = 1``) Megatron-Core takes any first and
last stage counts (its two flags); with interleaving its flags need every stage's layers
divisible by ``v``, so only its account-for split below is used, where ``C`` divides ``L + 2``
(a first and last chunk of ``k - 1`` layers). The embedding and the loss are each counted as one layer, as
Megatron-Core's ``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``
do, so ``k = ceil((L + 2) / C)``; the remainder ``r = L - (C - 2)·k`` goes to the first and last
chunks, the first taking the larger half (the embedding lookup costs less than the logits and
loss). Where ``C = L + 2`` the first and last chunks hold the embedding and the loss alone (no
transformer layer), as Megatron-Bridge runs Llama 3.1 405B with p = 16, v = 8. Without the
account-for division (``any``, v = 1), when the remainder leaves fewer than one layer each (``r < 2``),
``k`` is lowered to ``floor((L - 2) / (C - 2))``, so every stage holds a layer and any ``C <= L`` is valid.
With NeMo's Llama 3.1 405B recipe (126 layers, p = 8, v = 8) this gives the published layout:
one layer beside the embedding, 62 chunks of two, one layer beside the loss.

Option ``uneven_stages`` of the cost model picks which splits a plan may use:

* ``balanced`` (default): the even split where ``C`` divides ``L``, else the account-for split
  where ``C`` divides ``L + 2`` (Llama 3.1 405B: p = 8 and p = 16 with 126 layers). Every layout
  Megatron-LM ran before is priced as before, and the search grows by a few pipeline sizes only.
* ``any``: also any other pipeline size ``p <= L`` without interleaving (first and last stage
  counts chosen as above): "any pipeline size up to the layer count", at the price of a search
  over every such size (about ten times the plans for a 100-layer model).
* ``layout``: any pipeline size and interleaving with ``C <= L + 2``: Megatron-Core's explicit
  ``--pipeline-model-parallel-layout``, whose stages need not hold equal counts (Megatron-Bridge
  runs DeepSeek-V3 this way). Where ``C`` divides neither ``L`` nor ``L + 2`` the ``L + 2`` slots
  (the layers, the embedding and the loss) are spread as evenly as they go, the first
  ``(L + 2) mod C`` chunks taking one more (:func:`_spread`); else as ``balanced``. It searches every size.
* ``never``: Megatron-LM's old rule, ``C`` must divide ``L``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

UNEVEN_STAGES = ("balanced", "any", "layout", "never")


@dataclass(frozen=True)
class StageLayers:
    """Per plan: layers in the first, each middle and the last chunk, and on the first, a middle
    and the last device (``v`` chunks each), and whether the split is valid."""

    first_chunk: np.ndarray
    middle_chunk: np.ndarray
    last_chunk: np.ndarray
    first_device: np.ndarray
    middle_device: np.ndarray
    last_device: np.ndarray
    valid: np.ndarray


def split(layers: int, p, v, mode: str = "balanced") -> StageLayers:
    """The layer split of ``layers`` over ``p`` stages of ``v`` chunks (arrays broadcast; above)."""
    p, v = np.asarray(p, float), np.asarray(v, float)
    C = p * v
    L = float(layers)
    even = np.mod(L, C) == 0
    account_for = np.mod(L + 2.0, C) == 0
    uneven = (C >= 2) & account_for  # Megatron-Core's account-for split
    if mode == "any":
        uneven = uneven | ((v == 1) & (C >= 2) & (C <= L))  # its first / last stage flags
    uneven = uneven & ~even if mode != "never" else np.zeros_like(even)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.ceil((L + 2.0) / C)
        k = np.where(~account_for & (L - (C - 2.0) * k < 2.0), np.floor((L - 2.0) / np.maximum(C - 2.0, 1.0)), k)
    k = np.where(C > 2, k, 0.0)
    rest = L - (C - 2.0) * k
    first, last = np.ceil(rest / 2.0), np.floor(rest / 2.0)
    k, first, last = (np.where(uneven, x, L / C) for x in (k, first, last))
    many = v - 1.0  # a device holds v chunks: its own first or last chunk and v - 1 middle ones
    lay = StageLayers(first, k, last, first + many * k, v * k, last + many * k, even | uneven)
    if mode != "layout":
        return lay
    spread = ~lay.valid & (C >= 2) & (C <= L + 2.0)
    near = _spread(L, p, v)
    return StageLayers(*(np.where(spread, a, b) for a, b in zip(dataclasses.astuple(near)[:-1],
                                                                dataclasses.astuple(lay)[:-1])), lay.valid | spread)


def _spread(L: float, p, v) -> StageLayers:
    """The ``L + 2`` slots of an explicit layout spread as evenly as they go over the ``C = p·v``
    chunks, chunk ``c`` on device ``c mod p``: ``floor((L + 2) / C)`` each, one more for the first
    ``(L + 2) mod C`` chunks; the first chunk's first slot is the embedding, the last chunk's last
    the loss. The middle device with the most layers is the second (the extras go to low indices)."""
    C = p * v
    base = np.floor((L + 2.0) / C)
    rem = L + 2.0 - base * C

    def extras(device):  # chunks d, d + p, ... below rem hold one more slot
        return np.clip(np.ceil((rem - device) / p), 0.0, v)

    return StageLayers(base + (rem > 0) - 1.0, base + (rem > 1), base - 1.0, v * base + extras(0.0) - 1.0,
                       v * base + extras(1.0), v * base + extras(p - 1.0) - 1.0, np.ones_like(C, dtype=bool))


def layout_string(layers: int, p: int, v: int, mtp: int = 0) -> str | None:
    """Megatron-Core's ``--pipeline-model-parallel-layout`` of the spread split (``E`` the embedding,
    ``t`` a layer, ``m`` a multi-token prediction module, on the last chunk before ``L`` the loss,
    ``|`` between chunks; ``pipeline_parallel_layer_layout.py``), or None where ``C`` divides ``L``
    or ``L + 2`` (the flags of the even and account-for splits say it)."""
    C, slots = p * v, layers + 2
    if layers % C == 0 or slots % C == 0 or C > slots:
        return None
    base, rem = divmod(slots, C)
    sizes_ = [base + (c < rem) for c in range(C)]
    chunks = ["t" * n for n in sizes_]
    chunks[0], chunks[-1] = "E" + chunks[0][1:], chunks[-1][:-1] + "m" * mtp + "L"
    return "|".join(chunks)


def sizes(layers: int, limit: float, mode: str, interleaving: bool = False) -> tuple[int, ...]:
    """Pipeline sizes (or, ``interleaving``, virtual stages per device) up to ``limit`` that some
    split of ``mode`` can use: divisors of ``L`` (and of ``L + 2``), or with ``any`` every size."""
    top = int(min(layers, limit))
    if (mode == "any" and not interleaving) or mode == "layout":
        return tuple(range(1, top + 1))
    bases = (layers,) if mode == "never" else (layers, layers + 2)
    # and the powers of two, so that a pinned one is refused with the split it lacks, not as an unknown choice
    return tuple(k for k in range(1, top + 1)
                 if any(n % k == 0 for n in bases) or (mode == "balanced" and k & (k - 1) == 0))
