"""Incremental EM for Dawid-Skene and one-coin (Neal & Hinton, 1998).

The M-step of both methods depends on the posteriors only through sufficient
statistics that are sums over tasks (Dawid-Skene: expected (worker, label, class)
counts and class totals; one-coin: per-worker expected correct counts, annotation
counts and class totals). A fit keeps the statistics of its last M-step
(``_statistics``; the parameters are a function of them). When annotations arrive:

1. the statistics move to the merged codes (new workers and classes start at zero,
   so their parameters are the prior's, as in a fit);
2. the contributions of the *touched* tasks (those with new annotations) under their
   current posteriors are subtracted, leaving the untouched tasks' part fixed (computed
   from each touched task's labels before the batch, so that under Dawid-Skene's
   ``lone_labels="vote"`` a task that gains its second label leaves the class-prior
   votes and joins the confusion counts, as in a refit);
3. EM runs on the touched tasks only: M-step (fixed part + touched part), E-step of
   the touched tasks, until the log-likelihood per touched annotation changes by less
   than ``tol`` (at most ``max_iter`` iterations); touched tasks start from their old
   posteriors, new tasks (and every touched task when a class is new) from their vote
   frequencies, the start of a fit;
4. one E-step over all tasks gives every posterior under the final parameters.

``refresh=0`` replaces step 4 by a bounded one that keeps the labels exact.
A task's unnormalised log-posterior for class ``k`` is ``log rho_k + sum over its
annotations (w, l) of log P_w(l | k)``; when the parameters move, the log-odds of any
two classes change by at most ``B_i = range_k(delta log rho_k) + sum over the task's
annotations of range_k(delta log P_w(l | k))`` (``range`` = max - min over classes;
one-coin's ``log P_w(l | k)`` is ``log s_w`` for ``k == l``, else ``log((1 - s_w) / (K
- 1))``). Each task keeps ``_margins``, a lower bound of its label's log-odds against
the next class under the current parameters. A task whose bound exceeds ``B_i`` (by
:data:`MARGIN_SLACK`, for rounding and break_ties' tie tolerance) cannot change label:
its posterior is kept (stale) and its bound lowered by ``B_i``, so it stays valid over
consecutive updates. The other tasks, the touched ones and new ones get an E-step on
their rows (their margins are then exact). ``B_i`` is first bounded with no pass over
annotations (``range + n_i * max`` of the per-cell ranges); when that leaves more than
:data:`DESIGN_SHARE` of the tasks unsure (Dawid-Skene: a few sparse confusion cells
move much), the exact ``B_i`` of all tasks is one sparse product with the base's
(worker, label) design. Unknown margins come from ``probas_`` when these are the
posteriors under the current parameters (after a fit without gold, or a full
E-step), else every task is recomputed once.

A batch of more than :data:`LARGE_BATCH` (10 %) of all annotations is a refit on the
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

import crowdlearn.aggregation._incremental_kernels as _ik
from crowdlearn.aggregation._blocks import Block, block_vote_counts, frequencies
from crowdlearn.aggregation._design import normalise_log, one_hot_argmax
from crowdlearn.aggregation._incremental import (
    IncrementalMixin,
    Merge,
    _grown,
    _is_identity,
    remap_table,
    sub_block,
)
from crowdlearn.data import CrowdData

#: A batch of more than this share of all annotations is a refit on all of them: past
#: it an update is no cheaper than a refit (measured with ``REFIT_SHARE``, whose
#: comment in :mod:`crowdlearn.aggregation._incremental` gives the command and the
#: ratios: the crossing is at 10-20 % at 50k and 2M annotations), and incremental EM's
#: approximation is made for batches that move the parameters little (a warm start
#: from a small crowd's model can end in a worse local optimum than EM from the votes;
#: the same run's labels equal to the refit's: Dawid-Skene at 2M 99.6 % at 5 %, 99.4 %
#: at 10 %; at 50k, 4,000 workers with about 12 labels each, 96.9 % and 95.4 %).
LARGE_BATCH = 0.1


class IncrementalEMMixin(IncrementalMixin):
    """``partial_fit`` by incremental EM (see the module docstring).

    Subclasses define ``_block_statistics(block, probas, n_workers)`` (a tuple of
    arrays summed over tasks), ``_remap_statistics(stats, merge)``,
    ``_set_statistics(stats, n_workers)`` (the M-step from the summed statistics;
    it keeps them in ``_statistics``), ``_block_log_scores(block)`` (the unnormalised
    log-posteriors ``log rho_k + sum log P(label | class k)`` of a block's tasks),
    ``_log_tables()`` (the log prior and the (n_workers * K, K) table of ``log P(label
    l | class k)`` in row ``worker * K + l``, from which those scores are sums) and
    ``_prepare(data)`` (what ``_e_step`` needs to run over all of ``data``).
    """

    _statistics: tuple[np.ndarray, ...]
    probas_: np.ndarray
    history_: pd.DataFrame
    max_iter: int
    tol: float
    #: Per task, a lower bound on the log-odds of its label against the next class
    #: under the current parameters (None: unknown, see :meth:`_held_margins`).
    _margins: np.ndarray | None = None
    #: Whether ``probas_`` are the posteriors of every task under the current
    #: parameters (after a fit or a full E-step; not after a ``refresh=0`` update).
    _probas_exact: bool = False

    def _after_fit(self) -> None:
        gold = getattr(self, "_gold", None)
        clamped = gold is not None and bool(np.any(gold >= 0))
        self._margins = None
        self._probas_exact = not (clamped or getattr(self, "hard", False))
        designs = getattr(self, "_designs", None)  # Dawid-Skene's, unchunked: all tasks
        store = self.__dict__.get("_store")
        if store is not None and designs is not None and len(designs) == 1:
            design = designs[0][1]
            if design.shape[0] == store.n_tasks and store.n_annotations == design.nnz:
                store.design = design  # the base's design, kept for the label bound

    def _appends(self, refresh: int) -> bool:
        return refresh == 0 or (refresh == 1 and self._store_e_step_applies())

    def _store_e_step_applies(self) -> bool:
        """Whether a ``refresh=1`` update's E-step over all tasks can read the store
        as it is (:meth:`_store_e_step`): Dawid-Skene, soft EM, no gold, float64, not
        chunked, on the compiled kernels; one-coin too (:meth:`_store_scores`)."""
        store = self.__dict__.get("_store")
        return (
            self._store_scores() is not None
            and store is not None
            and not getattr(self, "hard", False)
            and getattr(self, "_gold", None) is None
            and getattr(self, "chunk_size", None) is None
            and self.probas_.dtype == np.float64
            and _ik.wanted(store.n_annotations)
        )

    def _store_scores(
        self,
    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None] | None:
        """What :meth:`_store_e_step` scores with, as the fit's compiled E-step does:
        (log prior, the (workers * K, K) log table, None) for Dawid-Skene; a subclass
        whose E-step scores otherwise gives its own (one-coin: the per-worker log
        terms as third item) or None (no E-step over the store)."""
        if not self._design_statistics:
            return None
        log_prior, table = self._log_tables()
        return log_prior, table, None

    def _store_e_step(self, merge: Merge) -> float | None:
        """The E-step over all tasks of ``refresh=1`` by one compiled pass over the
        store's base and tail (:func:`_incremental_kernels.store_e_step`), so that the
        new annotations need not be merged into the held ones: the posteriors of
        Dawid-Skene's fused E-step on the merged annotations (the same arithmetic in
        the same row order). Sets ``probas_`` (with spare rows, as a fit leaves);
        returns the objective (log-likelihood per annotation), None where it cannot
        run."""
        store = merge.store
        store.sort()
        scores = self._store_scores()
        assert scores is not None
        log_prior, table, correctness = scores
        n_tasks = merge.n_tasks
        out = np.empty((n_tasks + n_tasks // 4, merge.n_classes))[:n_tasks]
        base = store.data_base()
        total = _ik.store_e_step(
            store.pointer, base.worker, base.label, store.tail, table, log_prior, out,
            correctness,
        )  # fmt: skip
        if total is None:
            return None
        self.probas_ = out
        # as after the merge of the path it replaces: no design of the base is kept
        store.design = None
        self._blocks = self._designs = None  # the held ones describe the old data
        return total / merge.n_annotations

    def _partial_update(self, merge: Merge) -> None:
        if merge.n_new > LARGE_BATCH * merge.n_annotations:
            self._fit(merge.data)  # type: ignore[attr-defined]  # a refit: EM from the votes
            self._store = merge.store
            self._after_fit()
            return
        start = time.perf_counter()
        dtype = self.probas_.dtype
        k = merge.n_classes
        n_workers = merge.n_workers
        refresh = int(getattr(self, "_refresh", 1))
        before = self._log_tables() if refresh == 0 else None
        local = touched_posteriors(self.probas_, merge)

        block = merge.block()
        old_part = sub_block(block, ~merge.is_new)
        stats = self._remap_statistics(self._statistics, merge)
        held = self._block_statistics(old_part, local, n_workers)
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
        margins = np.zeros(0)
        part = None
        for iterations in range(1, self.max_iter + 1):  # noqa: B007
            if part is None:
                part = self._block_statistics(block, local, n_workers)
            self._set_statistics(tuple(a + b for a, b in zip(fixed, part, strict=True)), n_workers)
            # the next iteration's sums come with the E-step where a kernel adds them
            local, likelihood, margins, part = self._local_posteriors(block)
            objective = likelihood / max(len(block.task), 1)
            if abs(objective - previous) < self.tol:
                converged = True
                break
            previous = objective

        rows = []
        objective = None
        if refresh == 1 and self._store_e_step_applies():
            objective = self._store_e_step(merge)
        if objective is not None:  # the E-step over all tasks without a merge
            rows.append((iterations, objective))
            self._margins = None
            self._probas_exact = True
        elif refresh >= 1:
            data = merge.data
            self._prepare(data, merge.pointer)
            self.probas_ = np.empty((data.n_tasks, k), dtype=dtype)
            objective = float(self._e_step(data)) / data.n_annotations  # type: ignore[attr-defined]
            rows.append((iterations, objective))
            for _ in range(refresh - 1):  # full EM iterations, warm-started
                iterations += 1
                self._m_step(data)  # type: ignore[attr-defined]
                objective = float(self._e_step(data)) / data.n_annotations  # type: ignore[attr-defined]
                rows.append((iterations, objective))
            self._margins = None
            self._probas_exact = not getattr(self, "hard", False)
        else:
            assert before is not None
            self._settle(merge, before, local, margins)
            self._blocks = self._designs = None  # the held ones describe the old data
            rows.append((iterations, np.nan))
        self._local_design = None  # the local EM's block design (Dawid-Skene)
        self.converged_ = converged
        self.n_iter_ = iterations
        self._append_history(rows, time.perf_counter() - start)

    #: The statistics of ``_block_statistics`` are Dawid-Skene's (confusion counts by
    #: (worker, label) and class totals): the local E-step's kernel can sum them too.
    _design_statistics: bool = False

    def _local_posteriors(
        self, block: Block
    ) -> tuple[np.ndarray, float, np.ndarray, tuple[np.ndarray, ...] | None]:
        """:meth:`_block_posteriors` of the local EM's block and, when its compiled
        E-step adds them in the same pass (Dawid-Skene, soft EM), the next M-step's
        statistics of the posteriors it writes (else None)."""
        lone = getattr(self, "lone_labels", None)
        if self._design_statistics and not getattr(self, "hard", False):
            fused = self._fused_posteriors(block, "vote" if lone == "vote" else "em")
            if fused is not None:
                return fused
        return (*self._block_posteriors(block), None)

    def _block_posteriors(self, block: Block) -> tuple[np.ndarray, float, np.ndarray]:
        """E-step of a block: posteriors, log-likelihood and the log-odds margins (the
        top class against the next) of its tasks."""
        fused = self._fused_posteriors(block)
        if fused is not None:
            probas, likelihood, margins, _ = fused
        else:
            scores = self._block_log_scores(block)
            margins = top_margins(scores)
            probas, log_norm = normalise_log(scores)
            likelihood = float(log_norm.sum())
        if getattr(self, "hard", False):
            probas = one_hot_argmax(probas)
        return probas, likelihood, margins

    def _fused_posteriors(
        self, block: Block, statistics: str | None = None
    ) -> tuple[np.ndarray, float, np.ndarray, tuple[np.ndarray, ...] | None] | None:
        """:meth:`_block_posteriors`' scores, margins and softmax in one compiled pass
        over the block from :meth:`_log_tables` (float64 models on data large enough
        for the kernels, see :func:`_incremental_kernels.wanted`), with Dawid-Skene's
        statistics when ``statistics`` names its ``lone_labels``; None otherwise."""
        store = self.__dict__.get("_store")
        if self.probas_.dtype != np.float64 or store is None:
            return None
        if not _ik.wanted(store.n_annotations):
            return None
        log_prior, table = self._log_tables()
        k = table.shape[1]
        columns = block.worker.astype(np.int64) * k + block.label
        return _ik.local_e_step(block.indptr, columns, table, log_prior, statistics)

    def _settle(
        self,
        merge: Merge,
        before: tuple[np.ndarray, np.ndarray],
        local: np.ndarray,
        local_margins: np.ndarray,
    ) -> None:
        """``refresh=0``: the posteriors that a full E-step under the final parameters
        could move to another label, recomputed; the others kept (module docstring).

        Sets ``probas_`` (in place when no task is new), ``_margins`` and
        ``_changed`` (the recomputed task codes, whose labels are re-derived).
        """
        k = merge.n_classes
        eps = MARGIN_SLACK[np.dtype(self.probas_.dtype).name]
        # Bound on the change of any task's log-odds: c0 from the prior, r per
        # (worker, label) row (new workers: 0, their rows are all in touched tasks).
        prior_before, table_before = before
        prior_after, table_after = self._log_tables()
        if merge.n_new_classes:
            c0, spread = 0.0, np.zeros(len(table_after))
        else:
            held = _remap_table_rows(table_before, merge.worker_map, table_after)
            delta = table_after - held
            spread = delta.max(axis=1) - delta.min(axis=1) if k else np.zeros(len(delta))
            shift = prior_after - prior_before
            c0 = float(shift.max() - shift.min()) if k else 0.0
        fused = None
        chunked = getattr(self, "chunk_size", None) is not None
        if not chunked and not merge.n_new_classes:
            fused = self._fused_bound(merge, spread, c0, eps)
        if fused is not None:  # held margins, exact bound and test in one pass
            margins, unsure = fused
            unsure[merge.touched] = False
            recompute = [np.flatnonzero(unsure)]
        else:
            margins, recompute = self._bound(merge, spread, c0, eps, chunked)
        extra = np.sort(np.concatenate(recompute))
        probas = self._grown_probas(merge)
        probas[merge.touched] = local
        margins[merge.touched] = local_margins
        if len(extra):
            posteriors, _, extra_margins = self._block_posteriors(merge.store.block(extra))
            probas[extra] = posteriors
            margins[extra] = extra_margins
        self.probas_ = probas
        self._margins = margins
        self._probas_exact = False
        self._changed = np.sort(np.concatenate([merge.touched, extra]))  # disjoint

    def _bound(
        self, merge: Merge, spread: np.ndarray, c0: float, eps: float, chunked: bool
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """:meth:`_settle`'s margins lowered by the bound, and the tasks to recompute
        (NumPy passes; :meth:`_fused_bound` is the compiled one)."""
        n_tasks, k = merge.n_tasks, merge.n_classes
        margins = self._held_margins(merge)
        if merge.n_new_classes:
            margins[:] = -np.inf  # every task gains a class: recompute all
        largest = float(spread.max()) if len(spread) else 0.0
        store = merge.store
        if store.design is not None and not chunked:
            known, crude = np.zeros(0, dtype=np.int64), None  # the exact bound below
            recompute: list[np.ndarray] = []
        else:  # crude bound without a pass over the annotations: c0 + n_i * max r
            crude = store.task_counts() * largest
            crude += c0
            unsure = margins - crude <= eps
            unsure[merge.touched] = False
            candidates = np.flatnonzero(unsure)
            finite = np.isfinite(margins[candidates])
            known = candidates[finite]
            recompute = [candidates[~finite]]
        if crude is None or (len(known) > DESIGN_SHARE * n_tasks and not chunked):
            # the exact bound of every task in one sparse product with the base's
            # (worker, label) design (Dawid-Skene's fit hands it over)
            bound = store.cell_sums(spread, k)
            bound += c0
            margins -= bound
            unsure = margins <= eps
            unsure[merge.touched] = False
            recompute = [np.flatnonzero(unsure)]
        else:
            margins -= crude  # the skipped tasks' new lower bound (others overwritten)
            if len(known):  # the exact bound c0 + sum of r over the task's annotations
                held_margins = margins[known] + crude[known]
                cand_local, cand_worker, cand_label = merge.store.rows_of(known)
                weights = spread[cand_worker.astype(np.int64) * k + cand_label]
                bound = c0 + np.bincount(cand_local, weights=weights, minlength=len(known))
                sure = held_margins - bound > eps
                margins[known[sure]] = held_margins[sure] - bound[sure]
                recompute.append(known[~sure])
        return margins, recompute

    def _fused_bound(
        self, merge: Merge, spread: np.ndarray, c0: float, eps: float
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`_settle`'s exact bound by one compiled pass over all tasks
        (:func:`_incremental_kernels.settle`): the held margins (from ``probas_``
        when unknown, as :meth:`_held_margins`) lowered by each task's exact bound,
        and the mask of the tasks left unsure. None where the kernels do not run, the
        held margins need moving (tasks that changed codes), or, without the base's
        design (one-coin), where :meth:`_bound` would take the crude bound (few tasks
        near it: the same pass counts them), whose margins differ."""
        store = merge.store
        if not _ik.wanted(store.n_annotations):
            return None
        n_old, k = self.probas_.shape
        n_tasks = merge.n_tasks
        exact = store.design is not None
        computed = self._margins is None or len(self._margins) != n_old
        if computed and not (self._probas_exact and _is_identity(merge.task_map) and k >= 2):
            return None
        held = self._held_margins(merge)  # from the posteriors: a compiled pass
        # the result: in place of the held margins (exact, or computed here), else a
        # new buffer with room to grow (the held ones stay as they are if the NumPy
        # path runs)
        out = held if exact or computed else np.empty(n_tasks + n_tasks // 4)[:n_tasks]
        store.sort()
        tail_task, tail_worker, tail_label = store.tail
        tails = tail_counts = crude = None
        if len(tail_task):
            weights = spread[tail_worker.astype(np.int64) * k + tail_label]
            tails = np.bincount(tail_task, weights=weights, minlength=n_tasks)
        if not exact:
            if len(tail_task):
                tail_counts = np.bincount(tail_task, minlength=n_tasks)
            skip = np.zeros(n_tasks, dtype=bool)
            skip[merge.touched] = True
            largest = float(spread.max()) if len(spread) else 0.0
            crude = (largest, tail_counts, skip)
        base = store.data_base()
        done = _ik.settle(
            store.pointer, base.worker, base.label, spread, k, c0, eps, tails, held, None,
            0.0, crude, out,
        )  # fmt: skip
        if done is None:
            return None
        unsure, known = done
        if not exact and not known > DESIGN_SHARE * n_tasks:
            return None  # the crude bound's branch of _bound
        return out, unsure

    def _held_margins(self, merge: Merge) -> np.ndarray:
        """The margins' lower bounds before this update, in the merged task codes
        (new tasks: -inf, recomputed). Unknown margins come from ``probas_`` when
        those are exact posteriors (after a fit or a full E-step), else are -inf
        (every task recomputed: one E-step, once)."""
        n_old = len(self.probas_)
        held = self._margins
        if held is None or len(held) != n_old:
            if self._probas_exact:  # room for the new tasks: no copy below
                held = probas_margins(self.probas_, merge.n_tasks + merge.n_tasks // 4)
            else:
                held = np.full(n_old, -np.inf)
        if _is_identity(merge.task_map):
            margins = _grown(held, merge.n_tasks)
            margins[n_old:] = -np.inf
        else:
            margins = np.full(merge.n_tasks, -np.inf)
            margins[merge.task_map] = held
        return margins

    def _grown_probas(self, merge: Merge) -> np.ndarray:
        """``probas_`` in the merged codes: the same array (or its buffer) when tasks
        and classes kept their codes, else a new one; new tasks' rows are filled by
        the caller (they are recomputed)."""
        if len(merge.class_map) == merge.n_classes and _is_identity(merge.task_map):
            return _grown(self.probas_, merge.n_tasks)
        return remap_table(self.probas_, merge)

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

    def _block_log_scores(self, block: Block) -> np.ndarray:
        raise NotImplementedError

    def _log_tables(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _prepare(self, data: CrowdData, indptr: np.ndarray | None = None) -> None:
        raise NotImplementedError


def touched_posteriors(probas: np.ndarray, merge: Merge) -> np.ndarray:
    """The held posteriors of the touched tasks in the merged codes (zeros for new
    tasks and new classes), without moving the whole table."""
    out = np.zeros((len(merge.touched), merge.n_classes), dtype=probas.dtype)
    if _is_identity(merge.task_map) and len(merge.class_map) == merge.n_classes:
        held = merge.touched[merge.touched < len(probas)]  # codes kept: no search
        out[: len(held)] = probas[held]  # touched is sorted: the held ones first
        return out
    slot = np.searchsorted(merge.task_map, merge.touched)  # task_map is increasing
    slot = np.minimum(slot, len(merge.task_map) - 1)
    held = np.flatnonzero(merge.task_map[slot] == merge.touched)
    out[np.ix_(held, merge.class_map)] = probas[slot[held]]
    return out


def remap_class_totals(totals: np.ndarray, merge: Merge) -> np.ndarray:
    """Per-class statistics moved to the merged class codes (new classes: 0)."""
    out = np.zeros(merge.n_classes, dtype=totals.dtype)
    out[merge.class_map] = totals
    return out


def remap_worker_values(values: np.ndarray, merge: Merge) -> np.ndarray:
    """Per-worker statistics moved to the merged worker codes (new workers: 0)."""
    out = np.zeros(merge.n_workers, dtype=values.dtype)
    out[merge.worker_map] = values
    return out


def remap_confusion_counts(counts: np.ndarray, merge: Merge) -> np.ndarray:
    """Dawid-Skene's (n_workers * K, K) (worker, label) x class counts moved to the
    merged worker and class codes (new workers and classes: 0)."""
    k_old = len(merge.class_map)
    k = merge.n_classes
    if k_old == k and _is_identity(merge.worker_map):
        out = np.zeros((merge.n_workers * k, k), dtype=counts.dtype)
        out[: len(counts)] = counts
        return out
    cube = counts.reshape(len(merge.worker_map), k_old, k_old)
    out = np.zeros((merge.n_workers, k, k), dtype=counts.dtype)
    out[np.ix_(merge.worker_map, merge.class_map, merge.class_map)] = cube
    return out.reshape(merge.n_workers * k, k)


#: When the crude bound leaves more than this share of the tasks unsure, the exact
#: bound of every task is one sparse product (cheaper than gathering their rows).
DESIGN_SHARE = 0.02

#: Safety margin of the label test, by dtype: a task is skipped only when its bound
#: leaves more than this (covers the rounding of the log-odds and break_ties' 1e-12
#: tie tolerance on probabilities).
MARGIN_SLACK = {"float64": 1e-7, "float32": 1e-3}


def top_margins(scores: np.ndarray) -> np.ndarray:
    """Per row, the largest score minus the next one (inf with one column)."""
    n, k = scores.shape
    if k < 2:
        return np.full(n, np.inf)
    top, second = _top_two(scores)
    top -= second
    return top


def _top_two(table: np.ndarray, top: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The largest and the next largest value of each row (float64, k >= 2), column
    by column on transposed chunks that fit in cache (a column of a C-ordered table
    is a strided read; ``np.partition`` along a short axis costs several times more).
    ``top``: a float64 buffer of one value per row to write the largest into."""
    n = len(table)
    top = np.empty(n) if top is None else top
    second = np.empty(n)
    for start in range(0, n, _MARGIN_CHUNK):
        columns = table[start : start + _MARGIN_CHUNK].T.astype(np.float64)  # (k, m)
        high = top[start : start + len(columns[0])]
        low = second[start : start + len(columns[0])]
        np.maximum(columns[0], columns[1], out=high)
        np.minimum(columns[0], columns[1], out=low)
        for values in columns[2:]:
            np.maximum(low, np.minimum(high, values), out=low)
            np.maximum(high, values, out=high)
    return top, second


def probas_margins(probas: np.ndarray, capacity: int = 0) -> np.ndarray:
    """Lower bounds of the log-odds margins from normalised posteriors: ``log p_top -
    log p_next``, the next one floored at a normal number (a smaller stored value
    means a smaller true one, so the floor only lowers the bound).

    The result (float64, one per row) is the leading part of a buffer of
    ``capacity`` rows when that is larger (see ``_grown``)."""
    n, k = probas.shape
    out = np.empty(max(n, capacity))[:n]
    if k < 2:
        out[:] = np.inf
        return out
    floor = 1e-300 if probas.dtype == np.float64 else 1e-37
    if _ik.wanted(probas.size) and _ik.probas_margins(probas, floor, out):
        return out  # one parallel pass
    for start in range(0, n, _MARGIN_CHUNK):  # chunk by chunk: no (n,) temporary
        rows = out[start : start + _MARGIN_CHUNK]
        top, second = _top_two(probas[start : start + _MARGIN_CHUNK], rows)
        np.maximum(second, floor, out=second)
        np.divide(top, second, out=rows)
    return np.log(out, out=out)  # one log of the ratio: top / floor stays finite


#: Rows of a table transposed at once by :func:`_top_two` (cache-sized chunks).
_MARGIN_CHUNK = 1 << 14


def _remap_table_rows(table: np.ndarray, worker_map: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The old (workers * K, K) table moved to the merged worker codes; a new
    worker's rows are those of ``after`` (a zero change: all its annotations are
    in touched tasks, which are recomputed)."""
    k = table.shape[1]
    if _is_identity(worker_map) and table.shape == after.shape:
        return table
    out = after.copy().reshape(-1, k, k)
    out[worker_map] = table.reshape(len(worker_map), k, k)
    return out.reshape(-1, k)
