"""Where an incremental aggregator keeps its annotations: :class:`AnnotationStore`.

A base sorted by task code (with its task pointer) plus a tail of the annotations
appended since, merged into the base now and then (:data:`COMPACT_SHARE`); split out of
:mod:`crowdlearn.aggregation._incremental`, which merges new annotations into it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

import crowdlearn.aggregation._incremental_kernels as _ik
from crowdlearn.aggregation._blocks import Block, is_sorted, make_block, task_pointer
from crowdlearn.data import CrowdData


def _interleave(old: np.ndarray, new: np.ndarray, keep: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``old`` at the ``keep`` positions and ``new`` at ``at``, in one array."""
    out = np.empty(len(keep), dtype=np.int32)
    out[keep] = old
    out[at] = new
    return out


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The integers of the ranges ``starts[g]:stops[g]``, range after range."""
    lengths = stops - starts
    before = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=before[1:])
    return np.repeat(starts - before, lengths) + np.arange(int(lengths.sum()))


class AnnotationStore:
    """Every annotation an incremental aggregator holds, kept so that new ones cost O(new).

    The annotations are a *base*, sorted by task code with its task pointer, and a
    *tail* of the annotations added since, also sorted by task (each task's newer rows
    after its older ones). Appending merges the new rows into the tail only: O(tail +
    new), no copy of the base. When the tail grows past :data:`COMPACT_SHARE` of the
    base, or when anything asks for all annotations as one CrowdData (:meth:`data`:
    ``crowd_``, a state file, a refit, a full E-step), the tail is merged into the base
    (one O(annotations) pass, what every update cost before).

    The store is persistent: :meth:`appended` returns a new store that shares the base,
    so a failed update leaves the held one as it was. Codes are always those a refit
    on all annotations would assign (appending is only used when the new ids sort
    after the held ones, so that no held code moves).
    """

    def __init__(self, base: CrowdData, pointer: np.ndarray | None = None) -> None:
        self._base = base
        # The base's task pointer; None when not known to be sorted by task (yet).
        self.pointer = pointer
        self.task_ids, self.worker_ids, self.classes = base.task_ids, base.worker_ids, base.classes
        self.truth = base.truth
        empty = np.zeros(0, dtype=np.int32)
        self.tail = (empty, empty, empty)
        self._counts: np.ndarray | None = None
        # Sparse (base tasks, workers * K) design of the base's (worker, label) cells,
        # when built (or handed over by a fit): per-task sums of a per-cell value in
        # one sparse product.
        self.design: Any = None
        # How many per-task sums (cell_sums) this base has served: the first is a
        # bincount pass, the design is built from the second on (a state loaded in a
        # fresh process for one update never pays for a design it uses once).
        self.bounds = 0

    # sizes
    @property
    def n_tasks(self) -> int:
        return len(self.task_ids)

    @property
    def n_workers(self) -> int:
        return len(self.worker_ids)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def n_annotations(self) -> int:
        return self._base.n_annotations + len(self.tail[0])

    @property
    def n_base(self) -> int:
        return self._base.n_annotations

    def data(self) -> CrowdData:
        """All annotations as one CrowdData (merging the tail into the base first)."""
        if len(self.tail[0]):
            self.compact()
        base = self._base
        if len(base.task_ids) != self.n_tasks or base.truth is not self.truth:
            base = base._replace(task_ids=self.task_ids, truth=self.truth)
            self._base = base
        return base

    def data_base(self) -> CrowdData:
        """The base's annotations as held (without the tail; sorted by task after
        :meth:`sort`)."""
        return self._base

    def sort(self) -> None:
        """Put the base in task order (once: the user's data may come in any order)."""
        if self.pointer is not None:
            return
        base = self._base
        if _ik.wanted(base.n_annotations):  # the check and the pointer in one pass
            pointer = _ik.sorted_pointer(base.task, base.n_tasks)
            if pointer is not None:
                self.pointer = pointer
                return
        if is_sorted(base.task):  # counts per task, summed: one pass, no search
            self.pointer = np.zeros(base.n_tasks + 1, dtype=np.int64)
            np.cumsum(np.bincount(base.task, minlength=base.n_tasks), out=self.pointer[1:])
            return
        order = base.by_task.order
        self._base = base._replace(
            task=base.task[order], worker=base.worker[order], label=base.label[order]
        )
        self.pointer = task_pointer(self._base)

    def compact(self) -> None:
        """Merge the tail into the base: one sorted pass over all annotations."""
        self.sort()
        everything = np.arange(self.n_tasks)
        codes = self.rows_of(everything)
        counts = self.task_counts()  # before the pointer changes
        self._base = self._base._replace(
            task=codes[0].astype(np.int32),
            worker=codes[1],
            label=codes[2],
            task_ids=self.task_ids,
            truth=self.truth,
        )
        self.pointer = np.zeros(self.n_tasks + 1, dtype=np.int64)
        np.cumsum(counts, out=self.pointer[1:])
        empty = np.zeros(0, dtype=np.int32)
        self.tail = (empty, empty, empty)
        self.design = None

    def cell_sums(self, values: np.ndarray, k: int) -> np.ndarray:
        """Per task, the sum over its annotations of ``values[worker * K + label]``
        (float64, all tasks): a pass over the tail, and over the base one parallel
        pass of a compiled kernel (:func:`_incremental_kernels.cell_sums`) where the
        kernels run, else a bincount the first time, then one sparse product with its
        design (built on the second call, then kept: sequences of updates amortise it,
        a single one does not pay it)."""
        self.sort()
        self.bounds += 1
        base = self._base
        sums = np.empty(self.n_tasks, dtype=np.float64)
        held = len(self.pointer) - 1
        sums[held:] = 0.0
        fused = None
        if _ik.wanted(self.n_annotations):  # one parallel pass, no design
            fused = _ik.cell_sums(self.pointer, base.worker, base.label, values, k, sums[:held])
        if fused is None and self.design is None and self.bounds == 1:
            table = np.asarray(values, dtype=np.float64).reshape(-1, k)
            if (table == table[:, :1]).all():  # one value per worker (one-coin)
                weights = table[:, 0][base.worker]
            else:
                weights = table.reshape(-1)[base.worker.astype(np.int64) * k + base.label]
            # the base is in task order: one segment sum per task with annotations
            starts = self.pointer[:-1]
            filled = np.flatnonzero(np.diff(self.pointer) > 0)
            sums[:] = 0.0
            if len(filled):
                sums[filled] = np.add.reduceat(weights, starts[filled])
        elif fused is None:
            sums = self._design_sums(values, k)
        tail_task, tail_worker, tail_label = self.tail
        if len(tail_task):
            weights = values[tail_worker.astype(np.int64) * k + tail_label]
            sums += np.bincount(tail_task, weights=weights, minlength=self.n_tasks)
        return sums

    def _design_sums(self, values: np.ndarray, k: int) -> np.ndarray:
        """The base's part of :meth:`cell_sums` by its sparse design (built once)."""
        if self.design is None:
            base = self._base
            held = len(self.pointer) - 1
            columns = base.worker.astype(np.int64) * k + base.label
            if not is_sorted(base.task):
                columns = columns[base.by_task.order]
            self.design = sp.csr_matrix(
                (np.ones(len(columns)), columns, self.pointer),
                shape=(held, max(len(values), int(columns.max(initial=-1)) + 1)),
            )
        design = self.design
        width = design.shape[1]
        part = values[:width] if len(values) >= width else np.pad(values, (0, width - len(values)))
        sums = np.zeros(self.n_tasks, dtype=np.float64)
        sums[: design.shape[0]] = design @ part.astype(design.dtype)
        return sums

    def task_counts(self) -> np.ndarray:
        """Annotations per task (int64, cached)."""
        if self._counts is None:
            self.sort()
            counts = np.zeros(self.n_tasks, dtype=np.int64)
            base = np.diff(self.pointer)
            counts[: len(base)] = base
            if len(self.tail[0]):
                counts += np.bincount(self.tail[0], minlength=self.n_tasks)
            self._counts = counts
        return self._counts

    def rows_of(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The annotations of the given tasks, task after task (each task's base rows,
        then its tail rows): local task codes (position in ``tasks``), workers, labels."""
        self.sort()
        tasks = np.asarray(tasks, dtype=np.int64)
        n_held = len(self.pointer) - 1  # tasks after those have no base row
        inside = np.minimum(tasks, n_held)
        base_start, base_stop = self.pointer[inside], self.pointer[np.minimum(tasks + 1, n_held)]
        base_stop = np.where(tasks < n_held, base_stop, base_start)
        tail_task = self.tail[0]
        tail_start = np.searchsorted(tail_task, tasks, side="left")
        tail_stop = np.searchsorted(tail_task, tasks, side="right")
        everything = len(tasks) == self.n_tasks
        if _ik.wanted(self.n_annotations):  # one pass, no index temporaries
            none = np.zeros(len(tasks), dtype=np.int64)
            empty = none[:0].astype(np.int32)
            fused = _ik.gather(
                (base_start, base_stop, self._base.worker, self._base.label),
                (tail_start, tail_stop, self.tail[1], self.tail[2]),
                (none, none, empty, empty),
                None,
            )
            if fused is not None:
                local, worker, label = fused[:3]
                if everything and len(local) == self.n_annotations:
                    return tasks.astype(np.int32)[local], worker, label
                return local, worker, label
        n_base, n_tail = base_stop - base_start, tail_stop - tail_start
        offsets = np.zeros(len(tasks), dtype=np.int64)
        np.cumsum((n_base + n_tail)[:-1], out=offsets[1:])
        total = int(n_base.sum() + n_tail.sum())
        local = np.repeat(np.arange(len(tasks), dtype=np.int32), n_base + n_tail)
        worker = np.empty(total, dtype=np.int32)
        label = np.empty(total, dtype=np.int32)
        at_base = _ranges(offsets, offsets + n_base)
        rows = _ranges(base_start, base_stop)
        worker[at_base] = self._base.worker[rows]
        label[at_base] = self._base.label[rows]
        if len(tail_task):
            at_tail = _ranges(offsets + n_base, offsets + n_base + n_tail)
            rows = _ranges(tail_start, tail_stop)
            worker[at_tail] = self.tail[1][rows]
            label[at_tail] = self.tail[2][rows]
        if everything and total == self.n_annotations:
            return tasks.astype(np.int32)[local], worker, label  # everything: global codes
        return local, worker, label

    def block(self, tasks: np.ndarray) -> Block:
        """A block of the given tasks' annotations, local task codes in their order."""
        local, worker, label = self.rows_of(tasks)
        return make_block(0, len(tasks), local, worker, label)

    def appended(
        self,
        task: np.ndarray,
        worker: np.ndarray,
        label: np.ndarray,
        task_ids: np.ndarray,
        worker_ids: np.ndarray,
        truth: np.ndarray | None,
    ) -> AnnotationStore:
        """A new store with these annotations added (codes in this store's code space
        extended by ``task_ids``/``worker_ids``, sorted by task); shares the base.
        Compacts when the tail outgrows :data:`COMPACT_SHARE` of the base."""
        self.sort()
        out = AnnotationStore.__new__(AnnotationStore)
        out._base, out.pointer, out.design = self._base, self.pointer, self.design
        out.bounds = self.bounds
        out.task_ids, out.worker_ids, out.classes = task_ids, worker_ids, self.classes
        out.truth = truth
        old_tail = self.tail
        n_tasks = len(task_ids)
        # new rows after the held tail rows of their task: positions in the merged tail
        held_before = np.searchsorted(old_tail[0], task, side="right")
        at_new = held_before + np.arange(len(task))
        keep = np.ones(len(old_tail[0]) + len(task), dtype=bool)
        keep[at_new] = False
        out.tail = tuple(
            _interleave(held, fresh, keep, at_new)
            for held, fresh in zip(old_tail, (task, worker, label), strict=True)
        )
        counts = np.zeros(n_tasks, dtype=np.int64)
        if self._counts is not None:
            counts[: len(self._counts)] = self._counts
            counts += np.bincount(task, minlength=n_tasks)
            out._counts = counts
        else:
            out._counts = None
        if len(out.tail[0]) > COMPACT_SHARE * max(out.n_base, 1):
            out.compact()
        return out


#: The tail of an :class:`AnnotationStore` is merged into its base when it holds more
#: than this share of the base's annotations (amortised: with 1 % updates, one full
#: pass every 10 updates).
COMPACT_SHARE = 0.1
