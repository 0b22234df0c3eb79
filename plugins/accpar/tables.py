"""AccPar's communication amounts (Tables 4 and 5) from tensor layouts, vectorised with numpy.

A side of a bisection holds each tensor in one of three layouts: ROWS (the batch dimension is
split), COLS (the channel dimension is split) or FULL (replicated). A layer's partition type
fixes the layout in which it produces and needs its tensors (note §1.4, Table 3). The elements a
side must fetch are those of the layout it needs that the layout it has lacks (note §1.6 [D]):
for a side with share r, r̄ = 1 - r,

    have ROWS, need COLS (or the reverse): r·r̄·A     have anything, need FULL: r̄·A (0 if FULL)

Inter-layer cost (Table 5) = missing(F_{l+1}: produced by l → needed by l+1)
                           + missing(E_{l+1}: produced by l+1 → needed by l).
This derives all nine entries of Table 5 (checked in tests) and extends them to merge nodes of
multi-path blocks, which hold their tensor in a layout of their own (they have no weights).

Nodes have a role: WEIGHTED (CONV/FC, states = Type-I, II, III) or MERGE (residual add/concat,
states = layouts ROWS, COLS, FULL).
"""

from __future__ import annotations

import numpy as np

ROWS, COLS, FULL = 0, 1, 2
TYPE_I, TYPE_II, TYPE_III = 0, 1, 2
WEIGHTED, MERGE = 0, 1
TYPE_NAMES = ("I", "II", "III")
LAYOUT_NAMES = ("batch", "channel", "replicated")

# Layout of each tensor per (role, state): AccPar §3.2, note §1.4 table.
F_OUT = np.array([[ROWS, FULL, COLS], [ROWS, COLS, FULL]])  # F_{l+1} as produced
F_IN = np.array([[ROWS, COLS, FULL], [ROWS, COLS, FULL]])  # F_l as needed
E_OUT = np.array([[ROWS, COLS, FULL], [ROWS, COLS, FULL]])  # E_l as produced (psum reduced)
E_IN = np.array([[ROWS, FULL, COLS], [ROWS, COLS, FULL]])  # E_{l+1} as needed

# Which dimension a state splits, per (role, state): (batch, in-channels, out-channels).
SPLITS_BATCH = np.array([[True, False, False], [True, False, False]])
SPLITS_IN = np.array([[False, True, False], [False, True, False]])
SPLITS_OUT = np.array([[False, False, True], [False, True, False]])


def _crosses(have, need):
    """Rows held, columns needed, or the reverse: the side lacks r·r̄ of the tensor."""
    return ((have == ROWS) & (need == COLS)) | ((have == COLS) & (need == ROWS))


def _to_full(have, need):
    """A replica needed from a split tensor: the side lacks r̄ of it."""
    return (need == FULL) & (have != FULL)


def missing(have: np.ndarray, need: np.ndarray, share) -> np.ndarray:
    """Fraction of a tensor a side with ``share`` lacks when it has layout ``have``, needs ``need``."""
    rest = 1.0 - np.asarray(share, float)
    return np.where(_crosses(have, need), share * rest, 0.0) + np.where(_to_full(have, need), rest, 0.0)


def _transition_terms() -> tuple[np.ndarray, np.ndarray]:
    """Table 5 = a·r·r̄ + b·r̄ for every (role_u, state_u, role_v, state_v): the counts a and b.

    Forward, F_{l+1} goes from how l produces it to how l+1 needs it; backward, E_{l+1} goes
    from how l+1 produces it to how l needs it.
    """
    ru, su, rv, sv = (a.reshape(-1) for a in np.meshgrid(range(2), range(3), range(2), range(3), indexing="ij"))
    pairs = ((F_OUT[ru, su], F_IN[rv, sv]), (E_OUT[rv, sv], E_IN[ru, su]))
    cross = sum(_crosses(have, need).astype(float) for have, need in pairs)
    to_full = sum(_to_full(have, need).astype(float) for have, need in pairs)
    return cross, to_full


CROSS_TERMS, FULL_TERMS = _transition_terms()


def transition_code(role_u, state_u, role_v, state_v):
    """Index of a (role, state) → (role, state) transition into CROSS_TERMS / FULL_TERMS:
    ((role_u·3 + state_u)·2 + role_v)·3 + state_v, written so the states enter last (and the
    roles as int32, so that int32 states give int32 codes)."""
    return np.asarray(18 * role_u + 3 * role_v, np.int32) + (6 * state_u + state_v)


def inter_fraction_of(code, share) -> np.ndarray:
    """Table 5 for transition codes, as a fraction of A(F_{l+1}) = A(E_{l+1}), side share r.

    An array ``share`` (B, 1), one per plan, is turned into one table of all transitions per plan
    (B, 36), then gathered at 36·b + code for plan b: one pass over the edges instead of five.
    """
    if np.ndim(share) == 0:
        return (CROSS_TERMS * share * (1 - share) + FULL_TERMS * (1 - share)).take(code)
    rest = 1.0 - share
    table = CROSS_TERMS * (share * rest) + FULL_TERMS * rest  # (B, 36): every transition, per plan
    first = np.arange(0, table.size, CROSS_TERMS.size).reshape(-1, 1)  # where each plan's table starts
    return table.take(code + first)


def inter_fraction(role_u, state_u, role_v, state_v, share) -> np.ndarray:
    """Table 5 as a fraction of A(F_{l+1}) = A(E_{l+1}), for the side with ``share``."""
    return inter_fraction_of(transition_code(role_u, state_u, role_v, state_v), share)


def state_tables(role, kernel, s_in, s_out) -> tuple[np.ndarray, np.ndarray]:
    """Per state and node (state-major: rows Type-I, II, III): Table 4's constant factor, and which
    of (batch, in-channels, out-channels) the state splits — (3, nodes) and (3 dims, 3, nodes).

    The constant is k for Type-I (A(W_l) = D_i·D_o·k, Eq. 4), HoWo for Type-II (A(F_{l+1}) =
    B·D_o·HoWo, Eq. 5), HiWi for Type-III (A(E_l) = B·D_i·HiWi, Eq. 6); 0 for merge nodes, which
    have no weights and no partial sums.
    """
    weighted = role == WEIGHTED
    constant = np.stack([kernel * weighted, s_out * weighted, s_in * weighted])
    splits = np.stack([table[role].T for table in (SPLITS_BATCH, SPLITS_IN, SPLITS_OUT)])
    return constant, splits


def intra_products(sizes: np.ndarray) -> np.ndarray:
    """Table 4's tensor product per state, stacked (3, ...): D_i·D_o (Type-I), B·D_o (Type-II),
    B·D_i (Type-III), from ``sizes`` (B, D_i, D_o) stacked on the leading axis."""
    batch, d_in, d_out = sizes
    products = np.empty_like(sizes, float)
    np.multiply(d_in, d_out, out=products[TYPE_I, ...])
    np.multiply(batch, d_out, out=products[TYPE_II, ...])
    np.multiply(batch, d_in, out=products[TYPE_III, ...])
    return products


def intra_elements(role, state, batch, d_in, d_out, kernel, s_in, s_out) -> np.ndarray:
    """Table 4: the full partial-sum tensor each side fetches (independent of the share)."""
    constant, _ = state_tables(np.asarray(role), kernel, s_in, s_out)
    products = intra_products(np.array(np.broadcast_arrays(batch, d_in, d_out), float))
    return np.choose(state, products) * np.choose(state, constant)  # (first·second)·constant


def table6_flops(batch, d_in, d_out, kernel, s_in, s_out) -> np.ndarray:
    """Table 6 with the CONV rule of §4.3: forward + backward + gradient FLOPs of a whole layer."""
    forward = batch * d_out * s_out * (2 * d_in * kernel - 1)  # A(F_{l+1})·(2·D_i·k − 1)
    backward = batch * d_in * s_in * (2 * d_out * kernel - 1)  # A(E_l)·(2·D_o·k − 1)
    gradient = d_in * d_out * kernel * (2 * batch * s_out - 1)  # A(W_l)·(2·B·HoWo − 1)
    return forward + backward + gradient
