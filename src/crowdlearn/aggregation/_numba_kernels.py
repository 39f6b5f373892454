"""The numba-compiled kernels behind :mod:`crowdlearn.aggregation._kernels`.

Imported only through :mod:`crowdlearn.aggregation._kernels` (importing this module
imports numba). Every kernel is a sequential loop over one range of tasks
``first..last-1`` of a block held in CSR form (``indptr`` (n_tasks + 1,) and, per
annotation in task order, its codes), compiled with ``nogil``: the driver runs the
ranges of a step on a pool of threads (each range writes its own tasks' rows, or adds
into its own partial sums, so there is no write race). Each reproduces the arithmetic
of the NumPy path named in its docstring, in the same order within a task.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_OPTIONS = {"cache": True, "nogil": True, "fastmath": False, "error_model": "numpy"}


# ------------------------------------------------------------------ softmax of a tile

#: Cells (tasks x classes) of the per-thread tile an E-step works in (in L1/L2 cache).
TILE_CELLS = 4096
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_MAGIC = 6755399441055744.0  # 1.5 * 2**52: adding it rounds to an integer in the low bits
_MAGIC_BITS = 0x4338000000000000
_RESCALE = 1e250


@njit(**_OPTIONS)
def _exp_inplace(values, bits, bits2):
    """``values[:] = exp(values)`` (for ``values <= 709``), in loops the compiler
    vectorises (a scalar ``math.exp`` call per value is 3-10x slower than NumPy's SIMD
    exp and was most of an E-step's time). ``exp(x) = 2^n exp(r)``, ``n`` the nearest
    integer to ``x / ln 2`` (Cody-Waite: ``r = x - n ln 2`` in two parts, ``|r| <=
    ln(2) / 2``), ``exp(r)`` by its Taylor polynomial to degree 13 (truncation below
    1e-16 relative), ``2^n`` built from its bits as two factors so that results down to
    the smallest subnormal are right; ``x < -746`` gives 0 (and ``x > 709`` is read as
    709, where NumPy overflows to infinity). Relative error within 2.3e-16
    of NumPy's ``np.exp`` (tests/aggregation/test_kernels.py). ``bits`` and ``bits2``
    are int64 scratch arrays of the same length."""
    m = len(values)
    scaled = bits.view(np.float64)
    for i in range(m):
        x = min(max(values[i], -746.0), 709.0)
        z = x * _LOG2E + _MAGIC
        scaled[i] = z
        n = z - _MAGIC
        r = (x - n * _LN2_HI) - n * _LN2_LO
        p = 1.0 / 6227020800.0
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        p = p * r + 1.0
        values[i] = p
    for i in range(m):
        n = bits[i] - _MAGIC_BITS
        half = n >> 1
        bits[i] = (half + 1023) << 52
        bits2[i] = (n - half + 1023) << 52
    other = bits2.view(np.float64)
    for i in range(m):
        values[i] = values[i] * scaled[i] * other[i]


@njit(**_OPTIONS)
def _softmax_rows(tile, m, bits, bits2, shifts, norms):
    """Rows ``0..m-1`` of ``tile`` (log-scores) replaced by their softmax; ``shifts``
    and ``norms`` get each row's maximum and sum of ``exp(score - maximum)`` (the log
    normaliser is ``shift + log(norm)``). NumPy path: _design.normalise_log.

    With two classes the larger score's term is ``exp(0) = 1`` exactly, so only the
    other one is exponentiated (one ``exp`` a row instead of two; the same values)."""
    k = tile.shape[1]
    if k == 2:
        _softmax_pairs(tile, m, bits, bits2, shifts, norms)
        return
    for i in range(m):
        shift = tile[i, 0]
        for c in range(1, k):
            if tile[i, c] > shift:
                shift = tile[i, c]
        shifts[i] = shift
        for c in range(k):
            tile[i, c] -= shift
    cells = m * k
    _exp_inplace(tile.reshape(-1)[:cells], bits[:cells], bits2[:cells])
    for i in range(m):
        norm = 0.0
        for c in range(k):
            norm += tile[i, c]
        norms[i] = norm
        for c in range(k):
            tile[i, c] = tile[i, c] / norm


@njit(**_OPTIONS)
def _softmax_pairs(tile, m, bits, bits2, shifts, norms):
    """:func:`_softmax_rows` of a (rows, 2) tile: per row ``e = exp(low - high)``
    (vectorised over the tile, in ``norms`` first), then ``high / (1 + e)`` ... as
    the general loop computes them: ``exp(0) = 1``, ``norm = 0 + v0 + v1``."""
    for i in range(m):
        a = tile[i, 0]
        b = tile[i, 1]
        if b > a:
            shifts[i] = b
            norms[i] = a - b
        else:
            shifts[i] = a
            norms[i] = b - a
    _exp_inplace(norms[:m], bits[:m], bits2[:m])
    for i in range(m):
        e = norms[i]
        if tile[i, 1] > tile[i, 0]:
            v0 = e
            v1 = 1.0
        else:
            v0 = 1.0
            v1 = e
        norm = (0.0 + v0) + v1
        norms[i] = norm
        tile[i, 0] = v0 / norm
        tile[i, 1] = v1 / norm


@njit(**_OPTIONS)
def _write_rows(tile, m, first, gold, has_gold, hard, joints, shifts, norms, out):
    """Rows of a softmaxed tile into ``out`` from row ``first`` (one-hot for gold
    tasks, or all of them with ``hard``); returns their log-likelihood: the log
    normaliser of the tasks without gold, ``joints`` for the others. The logarithms
    of the normalisers are taken of their running product (rescaled before it can
    overflow): one ``log`` per tile rather than per task."""
    k = tile.shape[1]
    total = 0.0
    product = 1.0
    for i in range(m):
        t = first + i
        g = gold[t] if has_gold else -1
        if g >= 0:
            total += joints[i]
            for c in range(k):
                out[t, c] = 0.0
            out[t, g] = 1.0
            continue
        total += shifts[i]
        product *= norms[i]
        if product > _RESCALE:
            total += math.log(product)
            product = 1.0
        if hard:
            best = 0
            for c in range(1, k):
                if tile[i, c] > tile[i, best]:
                    best = c
            for c in range(k):
                out[t, c] = 0.0
            out[t, best] = 1.0
        else:
            for c in range(k):
                out[t, c] = tile[i, c]
    return total + math.log(product)


@njit(**_OPTIONS)
def _tile_buffers(k):
    rows = max(1, TILE_CELLS // k)
    tile = np.empty((rows, k))
    bits = np.empty(rows * k, dtype=np.int64)
    bits2 = np.empty(rows * k, dtype=np.int64)
    return rows, tile, bits, bits2, np.empty(rows), np.empty(rows), np.zeros(rows)


# ------------------------------------------------------------------ Dawid-Skene


@njit(**_OPTIONS)
def _ds_tile_scores(indptr, columns, table, log_prior, gold, has_gold, start, m, tile, joints):
    """Log-scores of tasks ``start..start+m-1`` into rows ``0..m-1`` of ``tile`` (the
    sum of their annotations' table rows, plus the log prior), and the gold class's
    score in ``joints`` (0 without gold)."""
    k = table.shape[1]
    for i in range(m):
        t = start + i
        row = tile[i]
        if k == 2:  # binary: the two sums in registers
            first_sum = 0.0
            second_sum = 0.0
            for a in range(indptr[t], indptr[t + 1]):
                j = columns[a]
                first_sum += table[j, 0]
                second_sum += table[j, 1]
            row[0] = first_sum + log_prior[0]
            row[1] = second_sum + log_prior[1]
        else:
            for c in range(k):
                row[c] = 0.0
            for a in range(indptr[t], indptr[t + 1]):
                source = table[columns[a]]
                for c in range(k):
                    row[c] += source[c]
            for c in range(k):
                row[c] += log_prior[c]
        g = gold[t] if has_gold else -1
        joints[i] = row[g] if g >= 0 else 0.0


@njit(**_OPTIONS)
def ds_e_range(indptr, columns, table, log_prior, gold, hard, first, last, out):
    """Dawid-Skene E-step of tasks ``first..last-1`` into ``out`` (n_tasks, K); returns
    their log-likelihood. ``columns``: ``worker * K + label`` per annotation;
    ``table``: the (n_workers * K, K) log confusions; ``gold``: (n_tasks,) codes, -1
    unknown, or an empty array. NumPy path:
    :func:`~crowdlearn.aggregation.dawid_skene.posterior_block`."""
    k = table.shape[1]
    has_gold = len(gold) > 0
    rows, tile, bits, bits2, shifts, norms, joints = _tile_buffers(k)
    total = 0.0
    for start in range(first, last, rows):
        m = min(rows, last - start)
        _ds_tile_scores(indptr, columns, table, log_prior, gold, has_gold, start, m, tile, joints)
        _softmax_rows(tile, m, bits, bits2, shifts, norms)
        total += _write_rows(tile, m, start, gold, has_gold, hard, joints, shifts, norms, out)
    return total


@njit(**_OPTIONS)
def ds_em_range(
    indptr, columns, table, log_prior, gold, hard, lone_vote, first, last, out, counts, totals
):
    """:func:`ds_e_range` of tasks ``first..last-1``, and, tile by tile while the
    tile's codes and posteriors are in cache, :func:`ds_m_range` of the posteriors
    just written (the next M-step's sums, added to ``counts`` and ``totals``): one
    pass over the annotations for both steps. Returns the log-likelihood."""
    k = table.shape[1]
    has_gold = len(gold) > 0
    rows, tile, bits, bits2, shifts, norms, joints = _tile_buffers(k)
    total = 0.0
    for start in range(first, last, rows):
        m = min(rows, last - start)
        _ds_tile_scores(indptr, columns, table, log_prior, gold, has_gold, start, m, tile, joints)
        _softmax_rows(tile, m, bits, bits2, shifts, norms)
        total += _write_rows(tile, m, start, gold, has_gold, hard, joints, shifts, norms, out)
        ds_m_range(indptr, columns, out, gold, lone_vote, start, start + m, counts, totals)
    return total


@njit(**_OPTIONS)
def ds_m_range(indptr, columns, probas, gold, lone_vote, first, last, counts, totals):
    """Add the Dawid-Skene M-step sums of tasks ``first..last-1`` to ``counts``
    (n_workers * K, K: ``design.T @ probas`` over the identified tasks) and ``totals``
    (K: the class-prior counts). With ``lone_vote``, a task with one label and no gold
    adds one count to its label's class instead. NumPy path:
    :func:`~crowdlearn.aggregation.dawid_skene.confusion_statistics`."""
    k = probas.shape[1]
    has_gold = len(gold) > 0
    for t in range(first, last):
        begin = indptr[t]
        end = indptr[t + 1]
        if end == begin:
            continue
        if lone_vote and end - begin == 1 and (not has_gold or gold[t] < 0):
            totals[columns[begin] % k] += 1.0
            continue
        if k == 2:  # binary: the two posteriors in registers
            p0 = probas[t, 0]
            p1 = probas[t, 1]
            totals[0] += p0
            totals[1] += p1
            for a in range(begin, end):
                j = columns[a]
                counts[j, 0] += p0
                counts[j, 1] += p1
            continue
        row = probas[t]
        for c in range(k):
            totals[c] += row[c]
        for a in range(begin, end):
            target = counts[columns[a]]
            for c in range(k):
                target[c] += row[c]
    return 0


@njit(**_OPTIONS)
def ds_scores(indptr, columns, table):
    """``design @ table``: per task, the sum of the table rows of its annotations."""
    n_tasks = len(indptr) - 1
    k = table.shape[1]
    out = np.zeros((n_tasks, k), dtype=table.dtype)
    for t in range(n_tasks):
        for a in range(indptr[t], indptr[t + 1]):
            for c in range(k):
                out[t, c] += table[columns[a], c]
    return out


# ------------------------------------------------------------------ correctness models


@njit(**_OPTIONS)
def correctness_e_range(
    indptr, worker, label, log_right, log_wrong, per_worker, log_prior, first, last, out
):
    """E-step of the "right with probability c, else a wrong class" models for tasks
    ``first..last-1`` into ``out``: one-coin with per-worker ``log_right`` and
    ``log_wrong`` (``per_worker``), or values per annotation. Returns their
    log-likelihood. NumPy path: _correctness.correctness_scores, then
    _design.normalise_log."""
    k = out.shape[1]
    rows, tile, bits, bits2, shifts, norms, joints = _tile_buffers(k)
    none = np.empty(0, dtype=np.int64)
    total = 0.0
    for start in range(first, last, rows):
        m = min(rows, last - start)
        for i in range(m):
            t = start + i
            row = tile[i]
            for c in range(k):
                row[c] = 0.0
            base = 0.0
            if k == 2:  # binary: the two bonuses in registers
                bonus0 = 0.0
                bonus1 = 0.0
                for a in range(indptr[t], indptr[t + 1]):
                    j = worker[a] if per_worker else a
                    wrong = log_wrong[j]
                    base += wrong
                    if label[a] == 0:
                        bonus0 += log_right[j] - wrong
                    else:
                        bonus1 += log_right[j] - wrong
                row[0] = bonus0
                row[1] = bonus1
            else:
                for a in range(indptr[t], indptr[t + 1]):
                    j = worker[a] if per_worker else a
                    wrong = log_wrong[j]
                    base += wrong
                    row[label[a]] += log_right[j] - wrong
            for c in range(k):
                row[c] = (row[c] + base) + log_prior[c]
        _softmax_rows(tile, m, bits, bits2, shifts, norms)
        total += _write_rows(tile, m, start, none, False, False, joints, shifts, norms, out)
    return total


@njit(**_OPTIONS)
def skill_range(indptr, worker, label, probas, first, last, sums, counts, class_totals):
    """Add the one-coin M-step sums of tasks ``first..last-1``: per worker the posterior
    mass of its labels (``sums``) and its number of annotations (``counts``), per class
    the posterior mass of the annotated tasks. NumPy path: one_coin.skill_statistics."""
    k = probas.shape[1]
    for t in range(first, last):
        begin = indptr[t]
        end = indptr[t + 1]
        if end == begin:
            continue
        for c in range(k):
            class_totals[c] += probas[t, c]
        for a in range(begin, end):
            w = worker[a]
            sums[w] += probas[t, label[a]]
            counts[w] += 1
    return 0


#: Tasks per tile of GLAD's passes (their annotations' values are computed together).
GLAD_TILE = 512


_LN2 = 0.6931471805599453  # the double nearest ln 2 ...
_LN2_REST = 2.3190468138462996e-17  # ... and what it leaves out


@njit(**_OPTIONS)
def _log1p_inplace(values):
    """``values[:] = log1p(values)`` for ``0 <= values <= 1``, vectorisable:
    ``log1p(e) = 2 atanh(s)``, ``s = e / (2 + e)``, by its series in ``s^2`` to
    ``s^23``; for ``e >= 1/2``, ``log1p(e) = ln 2 + log1p(w)`` with ``w = (e - 1) / 2``
    (exact) in ``[-1/4, 0]``, so that ``|s| <= 1/5`` always and 11 terms reach the
    double's precision (no cancellation for small ``e``; within 4.1e-16 of NumPy's
    ``np.log1p``)."""
    for i in range(len(values)):
        e = values[i]
        high = e >= 0.5
        w = (e - 1.0) * 0.5 if high else e
        s = w / (2.0 + w)
        q = s * s
        p = 1.0 / 23.0
        p = p * q + 1.0 / 21.0
        p = p * q + 1.0 / 19.0
        p = p * q + 1.0 / 17.0
        p = p * q + 1.0 / 15.0
        p = p * q + 1.0 / 13.0
        p = p * q + 1.0 / 11.0
        p = p * q + 1.0 / 9.0
        p = p * q + 1.0 / 7.0
        p = p * q + 1.0 / 5.0
        p = p * q + 1.0 / 3.0
        series = 2.0 * (s + s * q * p)
        values[i] = (_LN2 + (series + _LN2_REST)) if high else series


@njit(**_OPTIONS)
def _glad_buffers(indptr, first, last):
    """Scratch arrays for the annotations of the largest tile of ``first..last-1`` (and
    at least a tile's tasks)."""
    size = GLAD_TILE
    for start in range(first, last, GLAD_TILE):
        stop = min(start + GLAD_TILE, last)
        size = max(size, indptr[stop] - indptr[start])
    xs = np.empty(size)
    right = np.empty(size)
    sigma = np.empty(size)
    bits = np.empty(size, dtype=np.int64)
    bits2 = np.empty(size, dtype=np.int64)
    betas = np.empty(GLAD_TILE)
    return xs, right, sigma, bits, bits2, betas


@njit(**_OPTIONS)
def _glad_values(
    indptr, worker, alphas, log_betas, start, stop, xs, right, sigma, bits, bits2, betas, sig
):
    """For the annotations of tasks ``start..stop-1`` (from ``indptr[start]``): ``x =
    alpha_j beta_i`` in ``xs``, ``log sigma(x) = min(x, 0) - log1p(exp(-|x|))`` in
    ``right`` (glad.log_sigmoid) and, with ``sig``, ``sigma(x)`` in ``sigma`` (from
    the same ``exp(-|x|)``: a division instead of a third ``exp``); ``beta_i`` of the
    tile's tasks in ``betas``,
    each computed by a vectorised loop over the tile. Returns their number."""
    begin = indptr[start]
    m = stop - start
    for i in range(m):
        betas[i] = log_betas[start + i]
    _exp_inplace(betas[:m], bits[:m], bits2[:m])
    for t in range(start, stop):
        beta = betas[t - start]
        for a in range(indptr[t], indptr[t + 1]):
            xs[a - begin] = alphas[worker[a]] * beta
    n = indptr[stop] - begin
    for i in range(n):
        right[i] = -abs(xs[i])
    _exp_inplace(right[:n], bits[:n], bits2[:n])
    if sig:  # sigma(x) = 1 / (1 + e) (x >= 0) or e / (1 + e), e = exp(-|x|): no exp
        for i in range(n):
            e = right[i]
            sigma[i] = (1.0 if xs[i] >= 0.0 else e) / (1.0 + e)
    _log1p_inplace(right[:n])
    for i in range(n):
        right[i] = min(xs[i], 0.0) - right[i]
    return n


@njit(**_OPTIONS)
def glad_e_range(
    indptr,
    worker,
    label,
    alphas,
    log_betas,
    log_k_minus_1,
    log_prior,
    as_float32,
    first,
    last,
    out,
):
    """GLAD E-step of tasks ``first..last-1`` into ``out``: per annotation ``x = alpha_j
    beta_i``, the log-probabilities of being right and of each wrong class (rounded to
    float32 with ``as_float32``, as the NumPy path casts them), then the correctness
    E-step. Returns their log-likelihood (without the parameters' prior)."""
    k = out.shape[1]
    rows, tile, bits, bits2, shifts, norms, joints = _tile_buffers(k)
    xs, rights, sigma, vbits, vbits2, betas = _glad_buffers(indptr, first, last)
    none = np.empty(0, dtype=np.int64)
    total = 0.0
    for start in range(first, last, GLAD_TILE):
        stop = min(start + GLAD_TILE, last)
        _glad_values(
            indptr,
            worker,
            alphas,
            log_betas,
            start,
            stop,
            xs,
            rights,
            sigma,
            vbits,
            vbits2,
            betas,
            False,
        )
        begin = indptr[start]
        for sub in range(start, stop, rows):
            m = min(rows, stop - sub)
            for i in range(m):
                t = sub + i
                row = tile[i]
                for c in range(k):
                    row[c] = 0.0
                base = 0.0
                for a in range(indptr[t], indptr[t + 1]):
                    right = rights[a - begin]
                    wrong = right - xs[a - begin] - log_k_minus_1
                    if as_float32:
                        right = float(np.float32(right))
                        wrong = float(np.float32(wrong))
                    base += wrong
                    row[label[a]] += right - wrong
                for c in range(k):
                    row[c] = (row[c] + base) + log_prior[c]
            _softmax_rows(tile, m, bits, bits2, shifts, norms)
            total += _write_rows(tile, m, sub, none, False, False, joints, shifts, norms, out)
    return total


@njit(**_OPTIONS)
def _beta_sums(indptr, label, probas, xs, rights, sigma, begin, t, log_k_minus_1):
    """GLAD's Q term of task ``t`` and the sums of its slope, bend and Fisher terms in
    ``log beta_t`` (glad._QTerms.by_log_beta), from its annotations' values in the
    tile buffers."""
    value = 0.0
    slope_sum = 0.0
    bend_sum = 0.0
    fisher_sum = 0.0
    for a in range(indptr[t], indptr[t + 1]):
        i = a - begin
        right = float(probas[t, label[a]])
        x = xs[i]
        value += rights[i] - (1.0 - right) * (x + log_k_minus_1)
        s = sigma[i]
        slope = (right - s) * x
        fisher = s * (1.0 - s) * x**2
        slope_sum += slope
        bend_sum += fisher - slope
        fisher_sum += fisher
    return value, slope_sum, bend_sum, fisher_sum


@njit(**_OPTIONS)
def glad_alpha_range(
    indptr, worker, label, probas, alphas, log_betas, log_k_minus_1, derivatives, task_sums,
    first, last, out,
):  # fmt: skip
    """Add, per worker, the sums over the annotations of tasks ``first..last-1`` of
    GLAD's Q term and (with ``derivatives``) its slope and curvature in ``alpha``
    (glad._QTerms.by_alpha) to ``out`` (3 or 1, n_workers). With a non-empty
    ``task_sums`` (n_tasks, 4), also each task's sums of :func:`_beta_sums` at these
    ``alphas`` (what the ``log beta`` step that follows a trial of ``alpha`` starts
    from, when the trial is the step taken: its values are computed once)."""
    xs, rights, sigma, bits, bits2, betas = _glad_buffers(indptr, first, last)
    ahead = len(task_sums) > 0 and not derivatives
    for start in range(first, last, GLAD_TILE):
        stop = min(start + GLAD_TILE, last)
        _glad_values(
            indptr,
            worker,
            alphas,
            log_betas,
            start,
            stop,
            xs,
            rights,
            sigma,
            bits,
            bits2,
            betas,
            derivatives or ahead,
        )
        begin = indptr[start]
        for t in range(start, stop):
            beta = betas[t - start]
            if ahead:  # each term once, added per worker and (as _beta_sums) per task
                value = 0.0
                slope_sum = 0.0
                bend_sum = 0.0
                fisher_sum = 0.0
                for a in range(indptr[t], indptr[t + 1]):
                    i = a - begin
                    right = float(probas[t, label[a]])
                    x = xs[i]
                    term = rights[i] - (1.0 - right) * (x + log_k_minus_1)
                    out[0, worker[a]] += term
                    value += term
                    s = sigma[i]
                    slope = (right - s) * x
                    fisher = s * (1.0 - s) * x**2
                    slope_sum += slope
                    bend_sum += fisher - slope
                    fisher_sum += fisher
                task_sums[t, 0] = value
                task_sums[t, 1] = slope_sum
                task_sums[t, 2] = bend_sum
                task_sums[t, 3] = fisher_sum
                continue
            for a in range(indptr[t], indptr[t + 1]):
                w = worker[a]
                i = a - begin
                right = float(probas[t, label[a]])
                out[0, w] += rights[i] - (1.0 - right) * (xs[i] + log_k_minus_1)
                if derivatives:
                    s = sigma[i]
                    out[1, w] += (right - s) * beta
                    out[2, w] += s * (1.0 - s) * beta**2
    return 0


# ------------------------------------------------------------------ votes


@njit(**_OPTIONS)
def sorted_range(values, first, last):
    """Whether ``values[first - 1..last - 1]`` is non-decreasing."""
    for i in range(max(first, 1), last):
        if values[i] < values[i - 1]:
            return False
    return True


@njit(**_OPTIONS)
def task_cuts(task, n_ranges):
    """Annotation bounds (n_ranges + 1,) of about equal ranges, each cut moved to the
    first annotation of a task (``task`` sorted): a task is one range's."""
    n = len(task)
    step = (n + n_ranges - 1) // n_ranges
    cuts = np.empty(n_ranges + 1, dtype=np.int64)
    for r in range(n_ranges + 1):
        i = min(r * step, n)
        while 0 < i < n and task[i] == task[i - 1]:
            i += 1
        cuts[r] = i
    cuts[n_ranges] = n
    return cuts


@njit(**_OPTIONS)
def votes_range(task, worker, label, weights, first, last, out):
    """Add the votes of annotations ``first..last-1`` to ``out`` (n_tasks, K): each
    its worker's weight, or one when ``weights`` is empty. NumPy path:
    weighted_vote.weighted_scores (a bincount over task x class cells)."""
    unit = len(weights) == 0
    for a in range(first, last):
        if unit:
            out[task[a], label[a]] += 1
        else:
            out[task[a], label[a]] += weights[worker[a]]
    return 0


# ------------------------------------------------------------------ ties


@njit(**_OPTIONS)
def top_range(scores, first, last, labels, n_top):
    """Rows ``first..last-1``: the first column of the largest score (``argmax``) and
    how many scores are within 1e-12 of it; returns the number of NaN scores seen
    (the caller then uses NumPy's rules). NumPy path: _base.break_ties."""
    k = scores.shape[1]
    nan = 0
    for t in range(first, last):
        best = scores[t, 0]
        label = 0
        for c in range(k):
            value = scores[t, c]
            if value != value:
                nan += 1
            if value > best:
                best = value
                label = c
        floor = best - 1e-12
        count = 0
        for c in range(k):
            if scores[t, c] >= floor:
                count += 1
        labels[t] = label
        n_top[t] = count
    return nan


@njit(**_OPTIONS)
def pick_tied(scores, keys, start, tied, labels):
    """For each row ``t`` of ``tied`` (rows ``start..start + len(keys) - 1`` of the
    table), the maximal cell of largest random key: ``np.where(is_max, keys, -1.0)
    .argmax()`` of _base.break_ties."""
    k = scores.shape[1]
    for t in tied:
        row = t - start
        best = scores[t, 0]
        for c in range(1, k):
            if scores[t, c] > best:
                best = scores[t, c]
        floor = best - 1e-12
        pick = 0
        key = -2.0
        for c in range(k):
            value = keys[row, c] if scores[t, c] >= floor else -1.0
            if value > key:
                key = value
                pick = c
        labels[t] = pick
    return 0


@njit(**_OPTIONS)
def one_hot_range(labels, first, last, out):
    """Rows ``first..last-1`` of ``out`` one-hot at ``labels`` (every cell written)."""
    k = out.shape[1]
    for t in range(first, last):
        for c in range(k):
            out[t, c] = 0.0
        out[t, labels[t]] = 1.0
    return 0


@njit(**_OPTIONS)
def _task_value(indptr, label, probas, xs, rights, begin, t, log_k_minus_1):
    """GLAD's Q term of task ``t`` from its annotations' values in the tile buffers."""
    value = 0.0
    for a in range(indptr[t], indptr[t + 1]):
        i = a - begin
        right = float(probas[t, label[a]])
        value += rights[i] - (1.0 - right) * (xs[i] + log_k_minus_1)
    return value


@njit(**_OPTIONS)
def glad_beta_newton_range(
    indptr,
    worker,
    label,
    probas,
    alphas,
    log_betas,
    log_k_minus_1,
    prior_mean,
    max_halvings,
    trial,
    task_sums,
    first,
    last,
):
    """One safeguarded Newton step on ``b_i = log beta_i`` of each task of
    ``first..last-1``, in place: glad.newton_step on the per-task sums of
    :func:`glad_beta_range`, done task by task (each ``b_i`` owns only its task's terms,
    so the step, its halvings and the test that the task's objective did not decrease
    need no other task: one pass instead of one per halving, and no per-task
    temporaries). ``trial``: scratch (n_tasks,). ``task_sums``: each task's sums at
    the current parameters from :func:`glad_alpha_range` (n_tasks, 4), or empty (then
    computed here). Returns the largest step taken."""
    xs, rights, sigma, bits, bits2, betas = _glad_buffers(indptr, first, last)
    steps = np.empty(GLAD_TILE)
    currents = np.empty(GLAD_TILE)
    worse_first = np.empty(GLAD_TILE, dtype=np.bool_)
    given = len(task_sums) > 0
    largest = 0.0
    for start in range(first, last, GLAD_TILE):
        stop = min(start + GLAD_TILE, last)
        if not given:
            _glad_values(
                indptr, worker, alphas, log_betas, start, stop, xs, rights, sigma, bits, bits2,
                betas, True,
            )  # fmt: skip
        begin = indptr[start]
        for t in range(start, stop):
            if given:
                value = task_sums[t, 0]
                slope_sum = task_sums[t, 1]
                bend_sum = task_sums[t, 2]
                fisher_sum = task_sums[t, 3]
            else:
                value, slope_sum, bend_sum, fisher_sum = _beta_sums(
                    indptr, label, probas, xs, rights, sigma, begin, t, log_k_minus_1
                )
            param = log_betas[t]
            currents[t - start] = value - 0.5 * (param - prior_mean) ** 2
            gradient = slope_sum - (param - prior_mean)
            bend = bend_sum + 1.0
            expected = fisher_sum + 1.0
            if not bend > 0.5 * expected:
                bend = expected
            steps[t - start] = gradient / bend
            trial[t] = param + steps[t - start]
        # the first trial of every task, values computed together
        _glad_values(
            indptr, worker, alphas, trial, start, stop, xs, rights, sigma, bits, bits2, betas,
            False,
        )  # fmt: skip
        for t in range(start, stop):
            reached = 0.0  # _task_value, inline
            for a in range(indptr[t], indptr[t + 1]):
                i = a - begin
                right = float(probas[t, label[a]])
                reached += rights[i] - (1.0 - right) * (xs[i] + log_k_minus_1)
            reached -= 0.5 * (trial[t] - prior_mean) ** 2
            current = currents[t - start]
            worse_first[t - start] = reached < current - 1e-12 * abs(current)
        # then the halvings of the (few) tasks whose objective decreased, one by one
        for t in range(start, stop):
            current = currents[t - start]
            step = steps[t - start]
            worse = worse_first[t - start]
            halvings = 1
            while worse and halvings < max_halvings:
                step *= 0.5
                trial[t] = log_betas[t] + step
                _glad_values(
                    indptr, worker, alphas, trial, t, t + 1, xs, rights, sigma, bits, bits2,
                    betas, False,
                )  # fmt: skip
                first_row = indptr[t]
                reached = _task_value(
                    indptr, label, probas, xs, rights, first_row, t, log_k_minus_1
                )
                reached -= 0.5 * (trial[t] - prior_mean) ** 2
                worse = reached < current - 1e-12 * abs(current)
                halvings += 1
            if worse:
                step = 0.0
            log_betas[t] += step
            largest = max(largest, abs(step))
    return largest


# The majority vote's one pass and NumPy's PCG64 draws by jump-ahead, and Dawid-Skene's
# E-step from products (their own modules: the module size limit); imported here for
# the drivers' ``getattr``.
from crowdlearn.aggregation._numba_products import (  # noqa: E402, F401
    ds_confusions,
    ds_e_product_range,
    ds_m_tuple_range,
)
from crowdlearn.aggregation._numba_votes import majority_range  # noqa: E402, F401
