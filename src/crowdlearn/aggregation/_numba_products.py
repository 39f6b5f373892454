"""Dawid-Skene's E-step as products of probabilities, for
:mod:`crowdlearn.aggregation._kernels` (its own module: the module size limit).

Imported only through :mod:`crowdlearn.aggregation._numba_kernels` (importing this
module imports numba); the same compile options.

A task's posterior is ``prior[c] * prod_a theta_a[c]`` normalised, where ``theta_a`` is
the confusion row of annotation ``a`` (probabilities). The log path
(:func:`~crowdlearn.aggregation._numba_kernels.ds_e_range`) sums the logarithms and
exponentiates them again (``K`` exponentials a task); here the probabilities are
multiplied directly, so that an E-step needs no exponential and no logarithm but one
per tile of tasks (the log-likelihood is the sum of the logarithms of the tasks'
normalisers, taken of their running product). The ``K`` running products are a tuple
(``one``, of length ``K``: the kernel is compiled once per number of classes), which
the compiler keeps in registers, where the log path adds into a row in memory. Both
give the same posteriors to rounding (a relative 1e-15 at 10 classes).

Where the products could lose precision (the sum of the task's products below K times
:data:`PRODUCT_FLOOR`: hundreds of annotations, or nearly zero confusions) and for
tasks with a gold class, the task is computed from the logarithms as the log path does.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.cpython.unsafe.tuple import tuple_setitem

_OPTIONS = {"cache": True, "nogil": True, "fastmath": False, "error_model": "numpy"}

#: A task whose products sum to less than K times this (its largest product may be
#: below it: about 2^-897, far above the smallest normal double, 2^-1022) is computed
#: from logarithms instead.
PRODUCT_FLOOR = 1e-270
#: The running product of the normalisers is folded into the log-likelihood when it
#: leaves [1 / RESCALE, RESCALE].
RESCALE = 1e250


@njit(**_OPTIONS)
def _ds_log_task(indptr, columns, table, log_prior, t, g, out, one):
    """Task ``t`` of :func:`ds_e_product_range` from the logarithms, as the log path
    computes it: the sum of its annotations' log-confusion rows plus the log prior,
    then (``g >= 0``, a gold class) the one-hot row and the gold class's score, or the
    softmax and the log normaliser. Returns the task's log-likelihood."""
    k = len(one)
    scores = one
    for c in range(k):
        scores = tuple_setitem(scores, c, 0.0)
    for a in range(indptr[t], indptr[t + 1]):
        source = table[columns[a]]
        for c in range(k):
            scores = tuple_setitem(scores, c, scores[c] + source[c])
    for c in range(k):
        scores = tuple_setitem(scores, c, scores[c] + log_prior[c])
    row = out[t]
    if g >= 0:
        for c in range(k):
            row[c] = 0.0
        row[g] = 1.0
        return scores[g]
    shift = scores[0]
    for c in range(1, k):
        if scores[c] > shift:
            shift = scores[c]
    norm = 0.0
    for c in range(k):
        value = math.exp(scores[c] - shift)
        row[c] = value
        norm += value
    for c in range(k):
        row[c] = row[c] / norm
    return shift + math.log(norm)


@njit(**_OPTIONS)
def ds_e_product_range(
    indptr, columns, probabilities, prior, table, log_prior, gold, one, first, last, out
):
    """Dawid-Skene E-step of tasks ``first..last-1`` into ``out`` (n_tasks, K) from
    products of probabilities; returns their log-likelihood. ``probabilities``: the
    (n_workers * K, K) confusion table (``exp`` of the log path's ``table``, which is
    passed as well for the tasks computed from logarithms); ``prior``: the class prior
    (``exp(log_prior)``); ``gold``: (n_tasks,) codes, -1 unknown, or an empty array;
    ``one``: a tuple of K ones. Soft posteriors only (hard EM takes the log path, whose
    argmax it must reproduce exactly). NumPy path:
    :func:`~crowdlearn.aggregation.dawid_skene.posterior_block`."""
    k = len(one)
    has_gold = len(gold) > 0
    start = one
    for c in range(k):
        start = tuple_setitem(start, c, prior[c])
    total = 0.0
    product = 1.0
    for t in range(first, last):
        g = gold[t] if has_gold else -1
        if g >= 0:
            total += _ds_log_task(indptr, columns, table, log_prior, t, g, out, one)
            continue
        acc = start
        for a in range(indptr[t], indptr[t + 1]):
            source = probabilities[columns[a]]
            for c in range(k):
                acc = tuple_setitem(acc, c, acc[c] * source[c])
        norm = 0.0
        for c in range(k):
            norm += acc[c]
        # the largest product is at least norm / K: at least the floor when the sum
        # is K times the floor (below: the log path, also for a NaN)
        if not norm >= PRODUCT_FLOOR * k:
            total += _ds_log_task(indptr, columns, table, log_prior, t, -1, out, one)
            continue
        row = out[t]
        for c in range(k):
            row[c] = acc[c] / norm
        product *= norm
        if product < 1.0 / RESCALE or product > RESCALE:
            total += math.log(product)
            product = 1.0
    return total + math.log(product)


@njit(**_OPTIONS)
def ds_m_tuple_range(indptr, columns, probas, gold, lone_vote, one, first, last, counts, totals):
    """:func:`~crowdlearn.aggregation._numba_kernels.ds_m_range` with each task's K
    posteriors read once into a tuple (``one``: K ones; compiled per number of
    classes), added from registers to its annotations' rows of ``counts``. ``counts``
    and ``totals`` are set to zero first (this range's own partial sums, allocated
    empty: zeroed here in parallel, by the thread that then adds into them)."""
    k = len(one)
    has_gold = len(gold) > 0
    counts[:] = 0.0
    totals[:] = 0.0
    mass = one  # the tasks' posteriors summed in registers (the lone labels in totals)
    for c in range(k):
        mass = tuple_setitem(mass, c, 0.0)
    for t in range(first, last):
        begin = indptr[t]
        end = indptr[t + 1]
        if end == begin:
            continue
        if lone_vote and end - begin == 1 and (not has_gold or gold[t] < 0):
            totals[columns[begin] % k] += 1.0
            continue
        row = probas[t]
        posterior = one
        for c in range(k):
            posterior = tuple_setitem(posterior, c, row[c])
        for c in range(k):
            mass = tuple_setitem(mass, c, mass[c] + posterior[c])
        for a in range(begin, end):
            target = counts[columns[a]]
            for c in range(k):
                target[c] += posterior[c]
    for c in range(k):
        totals[c] += mass[c]
    return 0


@njit(**_OPTIONS)
def ds_confusions(counts, pseudo, floor):
    """Dawid-Skene's confusion matrices (n_workers, K, K) from the M-step sums
    ``counts`` (n_workers * K, K; row ``worker * K + label``, column the true class)
    and the pseudo-counts ``pseudo`` (K, K): each row (worker, true class) of
    ``counts + pseudo`` clipped below at ``floor`` and divided by its sum, in one pass
    (NumPy path: the transpose, ``normalise_rows``; a NaN stays NaN)."""
    k = counts.shape[1]
    n_workers = counts.shape[0] // k
    out = np.empty((n_workers, k, k))
    for w in range(n_workers):
        for c in range(k):
            row = out[w, c]
            total = 0.0
            for label in range(k):
                value = counts[w * k + label, c] + pseudo[c, label]
                value = value if not value < floor else floor
                row[label] = value
                total += value
            for label in range(k):
                row[label] = row[label] / total
    return out
