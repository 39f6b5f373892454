"""Numba kernels of ``partial_fit``'s passes, for
:mod:`crowdlearn.aggregation._incremental_kernels` (which calls them, and has the NumPy
forms they replace; importing this module imports numba).

Each kernel is a sequential loop over one range (of tasks or rows), ``nogil``, so that
the passes over all tasks or annotations run on the thread pool of
:mod:`crowdlearn.aggregation._kernels`; the small ones (the touched tasks' block, the
local E-step) run in the calling thread.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from crowdlearn.aggregation._numba_kernels import _exp_inplace
from crowdlearn.aggregation._numba_votes import _advance, _affine, _draw

_OPTIONS = {"cache": True, "nogil": True, "fastmath": False, "error_model": "numpy"}


@njit(**_OPTIONS)
def cell_sums_range(pointer, worker, label, values, k, out, first, last):
    """``out[t] = sum over the rows of task t of values[worker * k + label]`` for tasks
    ``first..last-1`` of annotations sorted by task (``pointer``: their CSR pointer),
    summed in row order from 0 (as SciPy's CSR product with a design of ones)."""
    for t in range(first, last):
        total = 0.0
        for a in range(pointer[t], pointer[t + 1]):
            total += values[np.int64(worker[a]) * k + label[a]]
        out[t] = total
    return 0


@njit(**_OPTIONS)
def margins_range(probas, floor, out, first, last):
    """``top / max(second, floor)`` per row of ``probas`` (rows ``first..last-1``), the
    top two found as ``_incremental_em._top_two`` finds them (in float64); the caller
    takes the logarithm (NumPy's vectorised one: a scalar log per row costs more than
    the rest of the pass)."""
    k = probas.shape[1]
    for i in range(first, last):
        a = float(probas[i, 0])
        b = float(probas[i, 1])
        high = max(a, b)
        low = min(a, b)
        for c in range(2, k):
            v = float(probas[i, c])
            low = max(low, min(high, v))
            high = max(high, v)
        out[i] = high / max(low, floor)
    return 0


@njit(**_OPTIONS)
def gather_block(
    base_start,
    base_stop,
    base_worker,
    base_label,
    tail_start,
    tail_stop,
    tail_worker,
    tail_label,
    new_start,
    new_stop,
    new_worker,
    new_label,
    offsets,
    local,
    worker,
    label,
    is_new,
    stamps,
):
    """The block of some tasks (position ``i`` in the given arrays): per task its base
    rows, its tail rows, then its new rows, written from ``offsets[i]`` into ``local``
    (``i``), ``worker``, ``label`` and ``is_new``. With ``stamps`` (one int64 per
    worker, all -1), a new row whose worker already has a held row on the task is
    counted: returns (how many, the first such new row's index), (0, -1) if none."""
    # the rows first, run by run through views (loops the compiler vectorises, and
    # whose loads do not wait on one another), then the check on the block itself
    n_groups = len(offsets)
    for i in range(n_groups):
        at = offsets[i]
        at = _run_rows(base_worker, base_label, base_start[i], base_stop[i], i, False, at,
                       local, worker, label, is_new)  # fmt: skip
        at = _run_rows(tail_worker, tail_label, tail_start[i], tail_stop[i], i, False, at,
                       local, worker, label, is_new)  # fmt: skip
        _run_rows(new_worker, new_label, new_start[i], new_stop[i], i, True, at, local,
                  worker, label, is_new)  # fmt: skip
    repeated = 0
    first = -1
    if len(stamps) == 0:
        return repeated, first
    for i in range(n_groups):
        at = offsets[i]
        held = (base_stop[i] - base_start[i]) + (tail_stop[i] - tail_start[i])
        for a in range(at, at + held):
            stamps[worker[a]] = i
        for j in range(new_stop[i] - new_start[i]):
            if stamps[worker[at + held + j]] == i:
                repeated += 1
                if first < 0:
                    first = new_start[i] + j
    return repeated, first


#: Tasks of a tile of the local E-step (their scores sit in cache while exponentiated).
_TILE_ROWS = 256
#: Row norms multiplied before one logarithm (each in [1, K]: no overflow for K up
#: to 2^15).
_LOG_GROUP = 64


@njit(inline="always", **_OPTIONS)
def _run_rows(
    source_worker, source_label, start, stop, i, fresh, at, local, worker, label, is_new
):
    """Rows ``start..stop-1`` of a source into the block from ``at`` (task ``i``,
    ``is_new`` = ``fresh``); returns the position after them."""
    n = stop - start
    _copy(source_worker[start:stop], worker[at : at + n])
    _copy(source_label[start:stop], label[at : at + n])
    run_local = local[at : at + n]
    run_new = is_new[at : at + n]
    for a in range(n):
        run_local[a] = i
        run_new[a] = fresh
    return at + n


@njit(**_OPTIONS)
def local_e_step(indptr, columns, table, log_prior, probas, margins, mode, counts, totals):
    """E-step of a small block from the log tables: per task, the scores ``log_prior +
    sum of table[columns[a]]`` over its rows, their top-two margin (in float64), and
    their softmax into ``probas`` (``_design.normalise_log``'s arithmetic: shift by the
    row maximum, exp, divide by the sum), tile by tile (the exponentials by
    ``_numba_kernels._exp_inplace``, vectorised); returns the sum of the log
    normalisers (the logarithms of products of up to ``_LOG_GROUP`` row sums).

    ``mode`` 1 or 2 also adds the next Dawid-Skene M-step's sums of the posteriors it
    writes (``dawid_skene.confusion_statistics``): ``counts[columns[a]] += p`` over
    each annotation and ``totals += p`` per annotated task; with mode 2
    (``lone_labels="vote"``) a task with one label adds one count to its label's
    class in ``totals`` instead (``columns`` = worker * K + label)."""
    n_tasks = len(indptr) - 1
    k = table.shape[1]
    rows = _TILE_ROWS
    tile = np.empty((rows, k))
    bits = np.empty(rows * k, dtype=np.int64)
    bits2 = np.empty(rows * k, dtype=np.int64)
    flat = tile.reshape(-1)
    total = 0.0
    product = 1.0
    grouped = 0
    for start in range(0, n_tasks, rows):
        m = min(rows, n_tasks - start)
        for i in range(m):
            t = start + i
            row = tile[i]
            for c in range(k):
                row[c] = 0.0
            for a in range(indptr[t], indptr[t + 1]):
                source = table[columns[a]]
                for c in range(k):
                    row[c] += source[c]
            for c in range(k):
                row[c] += log_prior[c]
            if k >= 2:
                high = max(row[0], row[1])
                low = min(row[0], row[1])
                for c in range(2, k):
                    low = max(low, min(high, row[c]))
                    high = max(high, row[c])
                margins[t] = high - low
            else:
                margins[t] = np.inf
            shift = row[0]
            for c in range(1, k):
                if row[c] > shift:
                    shift = row[c]
            total += shift
            for c in range(k):
                row[c] -= shift
        _exp_inplace(flat[: m * k], bits[: m * k], bits2[: m * k])
        for i in range(m):
            t = start + i
            row = tile[i]
            norm = 0.0
            for c in range(k):
                norm += row[c]
            for c in range(k):
                probas[t, c] = row[c] / norm
            product *= norm
            grouped += 1
            if grouped == _LOG_GROUP:
                total += math.log(product)
                product = 1.0
                grouped = 0
            n_rows = indptr[t + 1] - indptr[t]
            if mode == 0 or n_rows == 0:
                continue
            if mode == 2 and n_rows == 1:
                totals[columns[indptr[t]] % k] += 1.0
                continue
            for a in range(indptr[t], indptr[t + 1]):
                target = counts[columns[a]]
                for c in range(k):
                    target[c] += probas[t, c]
            for c in range(k):
                totals[c] += probas[t, c]
    return total + math.log(product)


@njit(**_OPTIONS)
def interleave_range(old, new, slots, out, first, last):
    """Rows ``first..last-1`` of the new codes put after the old rows before their slot
    (``slots`` non-decreasing): ``out[slots[j] + j] = new[j]``, the old rows between
    the previous new row and this one copied before it, and after the range's last new
    row the old rows up to the next range's first slot (or the end)."""
    n_new = len(new)
    start = 0 if first == 0 else slots[first]  # rows before: the previous range's
    for j in range(first, last):
        slot = slots[j]
        _copy(old[start:slot], out[start + j : slot + j])
        out[slot + j] = new[j]
        start = slot
    stop = len(old) if last == n_new else slots[last]
    _copy(old[start:stop], out[start + last : stop + last])
    return 0


@njit(inline="always", **_OPTIONS)
def _copy(source, target):
    """``target[:] = source`` as a plain loop over two views (vectorised by LLVM;
    several times faster than the indexed loop over the whole arrays)."""
    for a in range(len(source)):
        target[a] = source[a]


@njit(**_OPTIONS)
def row_keys(start, powers, cells, rows, k, keys):
    """``np.random.default_rng(seed).random((n, k))[rows]`` without drawing the other
    rows: row ``r``'s draws are the outputs after ``r * k + c + 1`` steps of PCG64 from
    the seeded state ``start`` (``_kernels.pcg64_maps``), reached by jump-ahead."""
    for i in range(len(rows)):
        high, low = _advance(powers, start[0], start[1], rows[i] * k)
        for c in range(k):
            h, lo = _affine(cells[c], high, low)
            keys[i, c] = _draw(h, lo)
    return 0


@njit(**_OPTIONS)
def settle_range(
    pointer,
    worker,
    label,
    spread,
    k,
    c0,
    eps,
    tail_sums,
    probas,
    floor,
    n_old,
    held,
    margins,
    unsure,
    largest,
    tail_counts,
    skip,
    first,
    last,
):
    """The exact label bound of tasks ``first..last-1`` (``refresh=0``): each task's
    held margin (from ``probas``' row when it has rows, as ``margins_range``, -inf
    for a task after ``n_old``; else ``held[t]``) lowered by ``c0`` plus the sum
    of ``spread[worker * k + label]`` over its base rows (in row order) plus
    ``tail_sums[t]`` (when given), written to ``margins`` (may be ``held``);
    ``unsure[t]``: whether it is then at most ``eps``. With ``skip`` (one flag
    per task), also counts the tasks not skipped whose held margin is finite and
    within ``eps`` of the crude bound ``n_t * largest + c0`` (``n_t``: the task's
    rows, base and ``tail_counts``), the count the NumPy path's choice of bound depends on."""
    from_probas = probas.shape[0] > 0
    n_base = len(pointer) - 1
    has_tail = len(tail_sums) > 0
    count_crude = len(skip) > 0
    has_tail_counts = len(tail_counts) > 0
    kp = probas.shape[1]
    known = 0
    for t in range(first, last):
        if from_probas:
            if t < n_old:
                a0 = float(probas[t, 0])
                a1 = float(probas[t, 1])
                high = max(a0, a1)
                low = min(a0, a1)
                for c in range(2, kp):
                    v = float(probas[t, c])
                    low = max(low, min(high, v))
                    high = max(high, v)
                m = math.log(high / max(low, floor))
            else:
                m = -np.inf
        else:
            m = held[t]
        total = 0.0
        n_rows = 0
        if t < n_base:
            n_rows = pointer[t + 1] - pointer[t]
            for a in range(pointer[t], pointer[t + 1]):
                total += spread[np.int64(worker[a]) * k + label[a]]
        if has_tail:
            total += tail_sums[t]
        if count_crude and not skip[t] and np.isfinite(m):
            if has_tail_counts:
                n_rows += tail_counts[t]
            crude = float(n_rows) * largest
            crude += c0
            if m - crude <= eps:
                known += 1
        m -= total + c0
        margins[t] = m
        unsure[t] = m <= eps
    return known


@njit(**_OPTIONS)
def pointer_range(task, pointer, first, last):
    """The CSR pointer of task codes sorted by task (``pointer[t]``: the first row of
    a task >= t, as ``np.searchsorted(task, arange(n_tasks + 1))``), for the
    transitions at rows ``first..last-1`` (the last range also fills the end).
    Returns False if ``task`` decreases in the range (the pointer is then void)."""
    n = len(task)
    previous = -1 if first == 0 else np.int64(task[first - 1])
    for i in range(first, last):
        current = np.int64(task[i])
        if current < previous:
            return False
        for t in range(previous + 1, current + 1):
            pointer[t] = i
        previous = current
    if last == n:
        for t in range(previous + 1, len(pointer)):
            pointer[t] = n
    return True


@njit(**_OPTIONS)
def store_votes_range(
    pointer, worker, label, tail_pointer, tail_worker, tail_label, weights, shares, out, first,
    last,
):  # fmt: skip
    """Per task ``t`` in ``first..last-1``, the total weight of the votes for each class
    (``out[t]``, float64): ``weights[worker]`` added in row order over the task's base
    rows (``pointer``), then its tail rows (``tail_pointer``), the order of the rows
    in the merged annotations (so the sums equal those of one pass over them, as
    ``_numba_kernels``' ``votes_range`` and ``np.bincount`` add them). With ``shares``,
    each row is then replaced by ``weighted_vote.vote_shares`` of it: each class's
    share of the positive part, or, where no class scores above 0, an even split
    over the classes of highest score."""
    k = out.shape[1]
    n_base = len(pointer) - 1
    n_tail = len(tail_pointer) - 1
    for t in range(first, last):
        row = out[t]
        for c in range(k):
            row[c] = 0.0
        if t < n_base:
            for a in range(pointer[t], pointer[t + 1]):
                row[label[a]] += weights[worker[a]]
        if t < n_tail:
            for a in range(tail_pointer[t], tail_pointer[t + 1]):
                row[tail_label[a]] += weights[tail_worker[a]]
        if shares:
            total = 0.0
            best = row[0]
            for c in range(k):
                total += max(row[c], 0.0)
                best = max(best, row[c])
            if total > 0:
                for c in range(k):
                    row[c] = max(row[c], 0.0) / total
            else:
                n_top = 0.0
                for c in range(k):
                    n_top += 1.0 if row[c] == best else 0.0
                for c in range(k):
                    row[c] = (1.0 if row[c] == best else 0.0) / n_top
    return 0


@njit(**_OPTIONS)
def store_e_range(
    pointer, worker, label, tail_pointer, tail_worker, tail_label, table, log_prior, probas,
    log_right, log_wrong, first, last,
):  # fmt: skip
    """Dawid-Skene E-step of tasks ``first..last-1`` of a store (a base sorted by task
    with its ``pointer``, a tail with its own): each task's scores summed over its
    base rows then its tail rows (the merged row order), plus the log prior, and
    their softmax into ``probas``, with the arithmetic of ``_numba_kernels``'
    ``ds_e_range`` (the same table rows added in the same order, the same vectorised
    exp and row sums), so the same posteriors without merging the annotations.
    With ``log_right`` and ``log_wrong`` (one per worker; ``table`` then only gives
    K), the scores are one-coin's instead, with the arithmetic of
    ``correctness_e_range`` (``base`` the sum of the wrong terms, each label's class
    adding ``log_right - log_wrong``, then ``(score + base) + log_prior``). Returns
    the log-likelihood (logarithms of products of up to ``_LOG_GROUP`` row sums)."""
    k = table.shape[1]
    correctness = len(log_right) > 0
    n_base = len(pointer) - 1
    n_tail = len(tail_pointer) - 1
    rows = _TILE_ROWS
    tile = np.empty((rows, k))
    bits = np.empty(rows * k, dtype=np.int64)
    bits2 = np.empty(rows * k, dtype=np.int64)
    flat = tile.reshape(-1)
    total = 0.0
    product = 1.0
    grouped = 0
    for start in range(first, last, rows):
        m = min(rows, last - start)
        for i in range(m):
            t = start + i
            row = tile[i]
            for c in range(k):
                row[c] = 0.0
            if correctness:
                base = 0.0
                if t < n_base:
                    for a in range(pointer[t], pointer[t + 1]):
                        wrong = log_wrong[worker[a]]
                        base += wrong
                        row[label[a]] += log_right[worker[a]] - wrong
                if t < n_tail:
                    for a in range(tail_pointer[t], tail_pointer[t + 1]):
                        wrong = log_wrong[tail_worker[a]]
                        base += wrong
                        row[tail_label[a]] += log_right[tail_worker[a]] - wrong
                for c in range(k):
                    row[c] = (row[c] + base) + log_prior[c]
            else:
                if t < n_base:
                    for a in range(pointer[t], pointer[t + 1]):
                        source = table[np.int64(worker[a]) * k + label[a]]
                        for c in range(k):
                            row[c] += source[c]
                if t < n_tail:
                    for a in range(tail_pointer[t], tail_pointer[t + 1]):
                        source = table[np.int64(tail_worker[a]) * k + tail_label[a]]
                        for c in range(k):
                            row[c] += source[c]
                for c in range(k):
                    row[c] += log_prior[c]
            shift = row[0]
            for c in range(1, k):
                if row[c] > shift:
                    shift = row[c]
            total += shift
            for c in range(k):
                row[c] -= shift
        _exp_inplace(flat[: m * k], bits[: m * k], bits2[: m * k])
        for i in range(m):
            t = start + i
            row = tile[i]
            norm = 0.0
            for c in range(k):
                norm += row[c]
            for c in range(k):
                probas[t, c] = row[c] / norm
            product *= norm
            grouped += 1
            if grouped == _LOG_GROUP:
                total += math.log(product)
                product = 1.0
                grouped = 0
    return total + math.log(product)
