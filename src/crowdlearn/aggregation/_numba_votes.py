"""Numba kernels of the majority vote's one pass, and NumPy's PCG64 draws computed
where they are needed (by jump-ahead), for :mod:`crowdlearn.aggregation._kernels`.

Imported only through :mod:`crowdlearn.aggregation._numba_kernels` (importing this
module imports numba); the same compile options.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_OPTIONS = {"cache": True, "nogil": True, "fastmath": False, "error_model": "numpy"}


# ------------------------------------------------------------------ NumPy's PCG64 stream
#
# ``np.random.default_rng(seed).random(shape)``'s draws, computed where they are needed:
# PCG64's state is a 128-bit LCG (``s <- s * MULT + inc mod 2^128``; a draw is the
# XSL-RR output of the new state, its top 53 bits a double in [0, 1)), so the state
# after ``n`` steps is an affine map of the first one, ``A_n s + C_n``, and draw ``n``
# is reached by the maps of the powers of two of ``n`` (a few multiplications) instead
# of ``n`` draws. 128-bit values are pairs of uint64 (high, low).

_U64_ONE = np.uint64(1)
_U64_ZERO = np.uint64(0)
_U11 = np.uint64(11)
_U63 = np.uint64(63)
_U58 = np.uint64(58)


@intrinsic
def _mul_hi(typingctx, a, b):
    """The high 64 bits of the 128-bit product of two uint64 (LLVM's i128 multiply:
    one instruction on x86-64 and arm64)."""
    if a != types.uint64 or b != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        return builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))

    return types.uint64(types.uint64, types.uint64), codegen


@njit(**_OPTIONS)
def _affine(map_row, high, low):
    """``A s + C mod 2^128`` for ``map_row`` = (A high, A low, C high, C low)."""
    a_high = map_row[0]
    a_low = map_row[1]
    product_low = a_low * low
    product_high = _mul_hi(a_low, low) + a_low * high + a_high * low
    new_low = product_low + map_row[3]
    carry = _U64_ONE if new_low < product_low else _U64_ZERO
    return product_high + map_row[2] + carry, new_low


@njit(**_OPTIONS)
def _advance(powers, high, low, steps):
    """The state ``steps`` (>= 0) steps on: ``powers[i]`` is the map of ``2^i`` steps."""
    i = 0
    while steps > 0:
        if steps & 1:
            high, low = _affine(powers[i], high, low)
        steps >>= 1
        i += 1
    return high, low


@njit(**_OPTIONS)
def _draw(high, low):
    """The double NumPy's PCG64 draws from state (high, low) (already stepped)."""
    value = high ^ low
    rotation = high >> _U58
    value = (value >> rotation) | (value << ((_U64_ZERO - rotation) & _U63))
    return float(value >> _U11) * (1.0 / 9007199254740992.0)


# ------------------------------------------------------------------ majority vote


#: Tasks per tile of :func:`majority_range` (their tied tasks are listed, then broken).
VOTE_TILE = 2048


@njit(**_OPTIONS)
def majority_range(
    task, label, first_task, last_task, random, powers, cells, rows_ahead, start,
    first, last, counts, probas, labels,
):  # fmt: skip
    """Majority vote of tasks ``first_task..last_task-1``, whose annotations (sorted by
    task) are ``first..last-1``, in one pass: each task's vote counts (``counts``), its
    class (the first of the largest counts; with ``random`` and a tie, the tied class
    of largest key ``np.random.default_rng(seed).random((n_tasks, K))[t]``, the keys
    drawn only for tied tasks: ``start`` is the generator's first state, ``powers``
    the maps of 2^i steps, ``cells[c]`` that of ``c + 1`` steps, ``rows_ahead[d]`` that
    of ``d`` rows, ``d * K`` steps), ``labels`` and the
    one-hot row of ``probas``. NumPy path: weighted_vote.fused_votes (or the sparse
    counts), _base.break_ties, the one-hot rows of MajorityVote. Returns False if
    the annotations are not sorted by task (some left over; the results are then
    void).

    Tile by tile (:data:`VOTE_TILE` tasks): every task gets its counts, the first of
    its largest counts (found without a branch) and that one-hot row, and a tied task
    is listed; the listed tasks' ties are then broken (their rows still in cache). A
    branch on "tied?" per task, taken at random by a third of the tasks of a ten-class
    crowd, cost more than the draws themselves (mispredictions)."""
    k = counts.shape[1]
    a = first
    high = start[0]
    low = start[1]
    position = 0
    tied = np.empty(VOTE_TILE, dtype=np.int64)
    tied_best = np.empty(VOTE_TILE, dtype=np.int64)  # their largest counts
    cells_tied = np.empty(k, dtype=np.int64)
    for tile_start in range(first_task, last_task, VOTE_TILE):
        tile_stop = min(tile_start + VOTE_TILE, last_task)
        n_tied = 0
        for t in range(tile_start, tile_stop):
            row = counts[t]
            if k == 2:  # binary: the count of ones in a register, the class by a select
                begin = a
                ones = 0
                while a < last and task[a] == t:
                    ones += label[a]
                    a += 1
                zeros = a - begin - ones
                row[0] = zeros
                row[1] = ones
                pick = 1 if ones > zeros else 0
                labels[t] = pick
                out = probas[t]
                out[0] = 0.0
                out[1] = 0.0
                out[pick] = 1.0
                tied[n_tied] = t
                n_tied += 1 if random and ones == zeros else 0
                continue
            begin = a
            best = 0
            if k <= 16:  # 4-bit counts packed in one register: no chain through memory
                packed = 0
                while a < last and task[a] == t:
                    packed += 1 << (label[a] << 2)
                    a += 1
                for c in range(k):
                    count = (packed >> (c << 2)) & 15
                    row[c] = count
                    best = max(best, count)
            if k > 16 or a - begin > 15:  # a count may not fit in 4 bits: in memory
                a = begin
                for c in range(k):
                    row[c] = 0
                while a < last and task[a] == t:
                    row[label[a]] += 1
                    a += 1
                best = row[0]
                for c in range(1, k):
                    best = max(best, row[c])
            pick = 0
            n_top = 0
            out = probas[t]
            for c in range(k - 1, -1, -1):  # the first largest count, and how many
                top = row[c] == best
                pick = c if top else pick
                n_top += 1 if top else 0
                out[c] = 0.0
            labels[t] = pick
            out[pick] = 1.0
            tied[n_tied] = t
            tied_best[n_tied] = best
            n_tied += 1 if random and n_top > 1 else 0
        for q in range(n_tied):
            t = tied[q]
            row = counts[t]
            best = row[0] if k == 2 else tied_best[q]  # two classes: tied means equal
            gap = t - position  # rows since the last tied task's (no division)
            if 0 < gap < len(rows_ahead):  # the usual case: one map
                high, low = _affine(rows_ahead[gap], high, low)
            else:
                high, low = _advance(powers, high, low, gap * k)
            position = t
            n_cells = 0
            for c in range(k):  # the tied cells, listed without a branch
                cells_tied[n_cells] = c
                n_cells += 1 if row[c] == best else 0
            key = -2.0
            pick = 0
            for q in range(n_cells):  # their keys only (the others' are -1)
                c = cells_tied[q]
                cell_high, cell_low = _affine(cells[c], high, low)
                value_key = _draw(cell_high, cell_low)
                better = value_key > key
                key = value_key if better else key
                pick = c if better else pick
            out = probas[t]
            out[labels[t]] = 0.0
            out[pick] = 1.0
            labels[t] = pick
    return a == last
