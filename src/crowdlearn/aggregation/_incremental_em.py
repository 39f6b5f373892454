"""Incremental EM for Dawid-Skene and one-coin (Neal & Hinton, 1998).

The M-step of both methods depends on the posteriors only through sufficient
statistics that are sums over tasks (Dawid-Skene: expected (worker, label, class)
counts and class totals; one-coin: per-worker expected correct counts, annotation
counts and class totals). A fit keeps the statistics of its last M-step
(``_statistics``; the parameters are a function of them). When annotations arrive:

1. the statistics move to the merged codes (new workers and classes start at zero,
   so their parameters are the prior's, as in a fit);
2. the contributions of the *touched* tasks (those with new annotations) under their
   current posteriors are subtracted, leaving the untouched tasks' part fixed;
3. EM runs on the touched tasks only: M-step (fixed part + touched part), E-step of
   the touched tasks, until the log-likelihood per touched annotation changes by less
   than ``tol`` (at most ``max_iter`` iterations); touched tasks start from their old
   posteriors, new tasks (and every touched task when a class is new) from their vote
   frequencies, the start of a fit;
4. one E-step over all tasks gives every posterior under the final parameters.

A batch of more than :data:`LARGE_BATCH` (5 %) of all annotations is a refit on the
merged annotations instead (the refit's result; the merge still saves re-reading).

Each local iteration costs O(touched annotations + n_workers K^2); the update as a
whole costs one E-step over all annotations plus the O(annotations) copy of the merge,
instead of the 20-100 iterations of a refit. The untouched tasks' contributions are
those of their posteriors at their last update, not the newest ones: the result is an
approximation of the refit's fixed point, measured by ``python -m benchmarks
incremental`` and tested (tests/aggregation/test_incremental.py).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from crowdlearn.aggregation._blocks import Block, block_vote_counts, frequencies
from crowdlearn.aggregation._incremental import (
    IncrementalMixin,
    Merge,
    gather_tasks,
    remap_table,
    sub_block,
)
from crowdlearn.data import CrowdData

#: A batch of more than this share of all annotations is a refit on all of them:
#: incremental EM's approximation is made for batches that move the parameters
#: little, and a warm start from a small crowd's model can end in a worse local
#: optimum than EM from the votes.
LARGE_BATCH = 0.05


class IncrementalEMMixin(IncrementalMixin):
    """``partial_fit`` by incremental EM (see the module docstring).

    Subclasses define ``_block_statistics(block, probas, n_workers)`` (a tuple of
    arrays summed over tasks), ``_remap_statistics(stats, merge)``,
    ``_set_statistics(stats, n_workers)`` (the M-step from the summed statistics;
    it keeps them in ``_statistics``), ``_block_posteriors(block)`` (E-step of a
    block: posteriors and log-likelihood) and ``_prepare(data)`` (what ``_e_step``
    needs to run over all of ``data``).
    """

    _statistics: tuple[np.ndarray, ...]
    probas_: np.ndarray
    history_: pd.DataFrame
    max_iter: int
    tol: float

    def _partial_update(self, merge: Merge) -> None:
        data = merge.data
        if merge.n_new > LARGE_BATCH * data.n_annotations:
            self._fit(data)  # type: ignore[attr-defined]  # a refit: EM from the votes
            return
        start = time.perf_counter()
        dtype = self.probas_.dtype
        k = data.n_classes
        refresh = int(getattr(self, "_refresh", 1))
        local = touched_posteriors(self.probas_, merge)

        block = gather_tasks(data, merge.pointer, merge.touched)
        old_part = sub_block(block, ~merge.is_new)
        stats = self._remap_statistics(self._statistics, merge)
        held = self._block_statistics(old_part, local, data.n_workers)
        fixed = tuple(a - b for a, b in zip(stats, held, strict=True))

        fresh = np.flatnonzero(~old_part.annotated)
        if merge.n_new_classes:
            fresh = np.arange(block.n_tasks)
        if len(fresh):
            votes = frequencies(block_vote_counts(block, k), dtype)
            local[fresh] = votes[fresh]
        previous = -np.inf
        iterations = 0
        converged = False
        for iterations in range(1, self.max_iter + 1):  # noqa: B007
            part = self._block_statistics(block, local, data.n_workers)
            self._set_statistics(
                tuple(a + b for a, b in zip(fixed, part, strict=True)), data.n_workers
            )
            local, likelihood = self._block_posteriors(block)
            objective = likelihood / max(len(block.task), 1)
            if abs(objective - previous) < self.tol:
                converged = True
                break
            previous = objective

        rows = []
        if refresh >= 1:
            self._prepare(data, merge.pointer)
            self.probas_ = np.empty((data.n_tasks, k), dtype=dtype)
            objective = float(self._e_step(data)) / data.n_annotations  # type: ignore[attr-defined]
            rows.append((iterations, objective))
            for _ in range(refresh - 1):  # full EM iterations, warm-started
                iterations += 1
                self._m_step(data)  # type: ignore[attr-defined]
                objective = float(self._e_step(data)) / data.n_annotations  # type: ignore[attr-defined]
                rows.append((iterations, objective))
        else:  # only the touched tasks' posteriors move (refresh=False)
            probas = remap_table(self.probas_, merge)
            probas[merge.touched] = local
            unlabelled = np.ones(data.n_tasks, dtype=bool)  # new tasks without annotations
            unlabelled[merge.task_map] = False
            unlabelled[merge.touched] = False
            probas[unlabelled] = self.priors_  # the posterior of a task without labels
            self.probas_ = probas
            self._blocks = self._designs = None  # the held ones describe the old data
            rows.append((iterations, np.nan))
        self.converged_ = converged
        self.n_iter_ = iterations
        self._append_history(rows, time.perf_counter() - start)

    def _append_history(self, rows: list[tuple[int, float]], seconds: float) -> None:
        """One history row per full pass of an update, numbered after the fit's."""
        last = self.history_.iloc[-1] if len(self.history_) else None
        first = 0 if last is None else int(last["iteration"])
        previous = np.nan if last is None else float(last["objective"])
        before = 0.0 if last is None else float(last["seconds"])
        table = []
        for iteration, objective in rows:
            table.append(
                {
                    "iteration": first + iteration,
                    "objective": objective,
                    "change": objective - previous,
                    "seconds": before + seconds,
                }
            )
            previous = objective
        self.history_ = pd.concat([self.history_, pd.DataFrame(table)], ignore_index=True)

    # Subclass hooks (documented in the class docstring).
    def _block_statistics(
        self, block: Block, probas: np.ndarray, n_workers: int
    ) -> tuple[np.ndarray, ...]:
        raise NotImplementedError

    def _remap_statistics(
        self, stats: tuple[np.ndarray, ...], merge: Merge
    ) -> tuple[np.ndarray, ...]:
        raise NotImplementedError

    def _set_statistics(self, stats: tuple[np.ndarray, ...], n_workers: int) -> None:
        raise NotImplementedError

    def _block_posteriors(self, block: Block) -> tuple[np.ndarray, float]:
        raise NotImplementedError

    def _prepare(self, data: CrowdData, indptr: np.ndarray | None = None) -> None:
        raise NotImplementedError


def touched_posteriors(probas: np.ndarray, merge: Merge) -> np.ndarray:
    """The held posteriors of the touched tasks in the merged codes (zeros for new
    tasks and new classes), without moving the whole table."""
    out = np.zeros((len(merge.touched), merge.data.n_classes), dtype=probas.dtype)
    slot = np.searchsorted(merge.task_map, merge.touched)  # task_map is increasing
    slot = np.minimum(slot, len(merge.task_map) - 1)
    held = np.flatnonzero(merge.task_map[slot] == merge.touched)
    out[np.ix_(held, merge.class_map)] = probas[slot[held]]
    return out


def remap_class_totals(totals: np.ndarray, merge: Merge) -> np.ndarray:
    """Per-class statistics moved to the merged class codes (new classes: 0)."""
    out = np.zeros(merge.data.n_classes, dtype=totals.dtype)
    out[merge.class_map] = totals
    return out


def remap_worker_values(values: np.ndarray, merge: Merge) -> np.ndarray:
    """Per-worker statistics moved to the merged worker codes (new workers: 0)."""
    out = np.zeros(merge.data.n_workers, dtype=values.dtype)
    out[merge.worker_map] = values
    return out


def remap_confusion_counts(counts: np.ndarray, merge: Merge) -> np.ndarray:
    """Dawid-Skene's (n_workers * K, K) (worker, label) x class counts moved to the
    merged worker and class codes (new workers and classes: 0)."""
    data = merge.data
    k_old = len(merge.class_map)
    k = data.n_classes
    cube = counts.reshape(len(merge.worker_map), k_old, k_old)
    out = np.zeros((data.n_workers, k, k), dtype=counts.dtype)
    out[np.ix_(merge.worker_map, merge.class_map, merge.class_map)] = cube
    return out.reshape(data.n_workers * k, k)
