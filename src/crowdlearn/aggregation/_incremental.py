"""New annotations as they arrive: ``partial_fit`` without a refit from scratch.

An incremental aggregator keeps every annotation it has seen (an
:class:`AnnotationStore`: a base sorted by task code plus a tail of appended
annotations, also sorted by task; ``crowd_`` gives them as one CrowdData) and its
learned state. ``partial_fit(new)``

1. merges the new annotations in: the union of the task ids, worker ids and classes,
   kept in sorted id order when the held ids are sorted (as
   :meth:`CrowdData.from_arrays` assigns them), so the merged codes are those a refit
   on all annotations would use. When no held code moves (the fresh ids sort after
   the held ones, no new class) and the update does not need all annotations at once
   (incremental EM with ``refresh=0``), the new rows are merged into the tail only
   (:func:`append_annotations`, O(tail + new)); the tail joins the base when it
   exceeds ``COMPACT_SHARE`` of it (:mod:`crowdlearn.aggregation._annotation_store`),
   or when ``crowd_`` is read. Otherwise
   (:func:`merge_annotations`) new rows are inserted at their task, one
   O(annotations) copy of the code arrays and no sort of the held ones;
2. maps the learned parameters from the old codes to the new ones by id
   (:class:`Merge` carries the maps) and updates them, method by method:

   * vote counts (:class:`VoteCountMixin`): the new votes are added, O(new);
   * refit on the merged data (:class:`RefitMixin`, cheap single-pass methods such as
     TwoThird): exact by construction; Wawa keeps its vote and agreement counts and
     makes one weighted pass over the held and new annotations (``Wawa``);
   * incremental EM (:class:`IncrementalEMMixin`, Dawid-Skene and one-coin), after
     Neal & Hinton (1998): the M-step's sufficient statistics are sums of per-task
     contributions; the contributions of the tasks that received annotations are
     taken out, EM runs on those tasks only (the other tasks' contributions held
     fixed) until it converges, and one E-step over all tasks gives the posteriors
     (``refresh=0``: only the tasks whose label may change, see
     :mod:`crowdlearn.aggregation._incremental_em`).

A batch that holds more than :data:`REFIT_SHARE` (10 %; :data:`VOTE_REFIT_SHARE`, 5 %,
for the vote counts) of all the annotations after it is a refit instead: the
annotations are merged (with the same checks) and ``fit`` runs on all of them, so
the result is that of a plain fit of all annotations and the
update never costs more than one (an update exists to spare a refit the small
batches of a campaign; on a large batch it brings nothing, see
``docs/architecture.md``).

A :class:`~crowdlearn.data.CrowdDataError` refuses a (task, worker) pair already
held and a class unknown to the fitted model (unless ``new_classes=True``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

import crowdlearn.aggregation._incremental_kernels as _ik
from crowdlearn.aggregation._annotation_store import AnnotationStore, _interleave
from crowdlearn.aggregation._base import _as_crowd_data, break_ties, break_ties_rows
from crowdlearn.aggregation._blocks import (
    Block,
    BlockReader,
    is_sorted,
    make_block,
    task_pointer,
)
from crowdlearn.aggregation._frames import restore_arrays
from crowdlearn.aggregation._incremental_ids import (  # split out: module size
    _refuse_held_pairs,
    _repeated_pairs_error,
    _union_ids,
)
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data.errors import show


@dataclass(frozen=True)
class Merge:
    """The result of :func:`merge_annotations` or :func:`append_annotations`.

    Attributes
    ----------
    store : AnnotationStore
        All annotations (old and new).
    task_map, worker_map, class_map : ndarray of int64
        Code of each old task, worker and class in the merged codes (increasing: old
        ids keep their order).
    touched : ndarray of int64
        Sorted codes of the tasks that received new annotations.
    is_new : ndarray of bool
        For the rows of :meth:`block` (the touched tasks' annotations, each task's old
        rows then its new ones), whether the row is one of the new annotations.
    n_new, n_new_tasks, n_new_workers, n_new_classes : int
    touched_block : Block, optional
        The touched tasks' block when the merge built it already.
    """

    store: AnnotationStore
    task_map: np.ndarray
    worker_map: np.ndarray
    class_map: np.ndarray
    touched: np.ndarray
    is_new: np.ndarray
    n_new: int
    n_new_tasks: int
    n_new_workers: int
    n_new_classes: int
    touched_block: Block | None = None

    @property
    def data(self) -> CrowdData:
        """All annotations as one CrowdData, sorted by task (compacts the store)."""
        return self.store.data()

    @property
    def pointer(self) -> np.ndarray:
        """The task pointer of :attr:`data` (sorted by task)."""
        self.store.data()
        assert self.store.pointer is not None
        return self.store.pointer

    @property
    def n_tasks(self) -> int:
        return self.store.n_tasks

    @property
    def n_workers(self) -> int:
        return self.store.n_workers

    @property
    def n_classes(self) -> int:
        return self.store.n_classes

    @property
    def n_annotations(self) -> int:
        return self.store.n_annotations

    def block(self) -> Block:
        """The touched tasks' annotations (local task codes in the order of ``touched``)."""
        if self.touched_block is not None:
            return self.touched_block
        return self.store.block(self.touched)

    def note(self) -> str:
        """One line: what the merge added."""
        return (
            f"{self.n_new} new annotation(s), {self.n_new_tasks} new task(s), "
            f"{self.n_new_workers} new worker(s), {self.n_new_classes} new class(es)"
        )


def merge_annotations(
    old: CrowdData,
    new: CrowdData,
    new_classes: bool = False,
    old_pointer: np.ndarray | None = None,
) -> Merge:
    """All annotations of ``old`` and ``new``, sorted by task code, with the code maps.

    Parameters
    ----------
    old : CrowdData
        The annotations held (any row order).
    new : CrowdData
        Annotations that arrived since.
    new_classes : bool, default False
        Accept classes that ``old`` does not have (else a CrowdDataError names them).
    old_pointer : ndarray, optional
        The task pointer of ``old`` when its rows are known to be sorted by task (what
        the previous merge returned): saves a pass over the annotations.

    Raises
    ------
    CrowdDataError
        A (task, worker) pair of ``new`` already in ``old``, an unknown class without
        ``new_classes``, anonymous data, or ids of another type than the held ones.
    """
    if old.is_anonymous or new.is_anonymous:
        raise CrowdDataError("partial_fit needs worker ids; the annotations are anonymous")
    classes, class_map, new_class_codes, fresh_classes = _union_ids(
        old.classes, new.classes, "class"
    )
    if len(fresh_classes) and not new_classes:
        raise CrowdDataError(
            f"class(es) {show(list(fresh_classes))} of the new annotations are not among "
            f"the fitted classes {show(list(old.classes))}; pass new_classes=True "
            "(command line: --new-classes) to add them"
        )
    task_ids, task_map, new_task_codes, fresh_tasks = _union_ids(
        old.task_ids, new.task_ids, "task"
    )
    worker_ids, worker_map, new_worker_codes, fresh_workers = _union_ids(
        old.worker_ids, new.worker_ids, "worker"
    )
    n_tasks, n_workers = len(task_ids), len(worker_ids)
    # Old rows in task order (views when already sorted), with the merged codes.
    rows: slice | np.ndarray = slice(None)
    if old_pointer is None and is_sorted(old.task):
        old_pointer = np.searchsorted(old.task, np.arange(old.n_tasks + 1), side="left")
    elif old_pointer is None:
        rows = old.by_task.order
        old_pointer = task_pointer(old)
    old_task = _mapped(old.task[rows], task_map)
    old_worker = _mapped(old.worker[rows], worker_map)
    old_label = _mapped(old.label[rows], class_map)
    pointer = np.zeros(n_tasks + 1, dtype=np.int64)
    pointer[task_map + 1] = np.diff(old_pointer)
    np.cumsum(pointer, out=pointer)  # the old rows' pointer in the merged task codes

    new_task = new_task_codes[new.task]
    order = np.argsort(new_task, kind="stable")
    new_task = new_task[order].astype(np.int32)
    new_worker = new_worker_codes[new.worker[order]].astype(np.int32)
    new_label = new_class_codes[new.label[order]].astype(np.int32)

    fused = None
    if _ik.wanted(old.n_annotations + new.n_annotations):
        fused = _fused_merge_block(
            pointer, old_worker, old_label, new_task, new_worker, new_label, n_workers
        )
    touched_block = None
    if fused is not None:  # the touched tasks' block and the pair check in one pass
        touched, new_counts, block_parts, repeated, first_repeated = fused
        if repeated:
            _repeated_pairs_error(
                repeated, touched, new_task[first_repeated], new_worker[first_repeated],
                task_ids, worker_ids,
            )  # fmt: skip
        local, block_worker, block_label, is_new = block_parts
        touched_block = make_block(0, len(touched), local, block_worker, block_label)
    else:
        touched = np.unique(new_task).astype(np.int64)
        _refuse_repeated_pairs(
            pointer, old_worker, touched, new_task, new_worker, n_workers, task_ids, worker_ids
        )
        new_counts = np.bincount(np.searchsorted(touched, new_task), minlength=len(touched))
        old_counts = pointer[touched + 1] - pointer[touched]
        # Rows of the touched tasks in the merged data: the old ones, then the new ones.
        sizes = np.ravel([old_counts, new_counts], order="F")
        is_new = np.repeat(np.tile([False, True], len(touched)), sizes)

    # New rows go after the old rows of their task: one pass over each code array.
    slots = pointer[new_task.astype(np.int64) + 1]
    merged = CrowdData.__new__(CrowdData)
    merged._set(
        task=_inserted(old_task, new_task, slots, fused is not None),
        worker=_inserted(old_worker, new_worker, slots, fused is not None),
        label=_inserted(old_label, new_label, slots, fused is not None),
        task_ids=task_ids,
        worker_ids=worker_ids,
        classes=classes,
        features=None,
        truth=_merged_truth(
            old, new, task_map, class_map, new_task_codes, new_class_codes, n_tasks
        ),
        inputs=None,
    )
    counts = np.diff(pointer)
    counts[touched] += new_counts
    pointer[1:] = np.cumsum(counts)
    return Merge(
        store=AnnotationStore(merged, pointer),
        task_map=task_map,
        worker_map=worker_map,
        class_map=class_map,
        touched=touched,
        is_new=is_new,
        n_new=new.n_annotations,
        n_new_tasks=len(fresh_tasks),
        n_new_workers=len(fresh_workers),
        n_new_classes=len(fresh_classes),
        touched_block=touched_block,
    )


def _inserted(old: np.ndarray, new: np.ndarray, slots: np.ndarray, compiled: bool) -> np.ndarray:
    """``old`` with ``new[j]`` before ``old[slots[j]]`` (int32): by the compiled pass
    when ``compiled`` (:func:`_incremental_kernels.interleave`), else a mask."""
    if compiled:
        out = _ik.interleave(old, new, slots)
        if out is not None:
            return out
    at = slots + np.arange(len(new))
    keep = np.ones(len(old) + len(new), dtype=bool)
    keep[at] = False
    return _interleave(old, new, keep, at)


def _fused_merge_block(
    pointer: np.ndarray,
    old_worker: np.ndarray,
    old_label: np.ndarray,
    new_task: np.ndarray,
    new_worker: np.ndarray,
    new_label: np.ndarray,
    n_workers: int,
) -> tuple[Any, ...] | None:
    """For :func:`merge_annotations` (new rows sorted by task, ``pointer`` the old
    rows' in the merged codes): the touched tasks, their new rows' counts, their block
    (local codes, workers, labels, ``is_new``) and the count and first index of the
    new rows that repeat a held pair, by one compiled pass; None where it cannot run."""
    first = np.ones(len(new_task), dtype=bool)
    np.not_equal(new_task[1:], new_task[:-1], out=first[1:])
    touched = new_task[first].astype(np.int64)
    new_start = np.flatnonzero(first)
    new_stop = np.append(new_start[1:], len(new_task))
    none = np.zeros(len(touched), dtype=np.int64)
    empty = np.zeros(0, dtype=np.int32)
    fused = _ik.gather(
        (pointer[touched], pointer[touched + 1], old_worker, old_label),
        (none, none, empty, empty),
        (new_start, new_stop, new_worker, new_label),
        n_workers,
    )
    if fused is None:
        return None
    return touched, new_stop - new_start, fused[:4], fused[4], fused[5]


def _is_identity(mapping: np.ndarray) -> bool:
    """Whether an increasing code map keeps every code (it ends at its length - 1)."""
    return len(mapping) == 0 or int(mapping[-1]) == len(mapping) - 1


def _mapped(codes: np.ndarray, mapping: np.ndarray) -> np.ndarray:
    """Codes through a map, int32; no copy of a view when the map is the identity."""
    if _is_identity(mapping):
        return codes if codes.dtype == np.int32 else codes.astype(np.int32)
    return mapping.astype(np.int32)[codes]


def _refuse_repeated_pairs(
    old_pointer: np.ndarray,
    old_worker: np.ndarray,
    touched: np.ndarray,
    new_task: np.ndarray,
    new_worker: np.ndarray,
    n_workers: int,
    task_ids: np.ndarray,
    worker_ids: np.ndarray,
) -> None:
    """A CrowdDataError when a new (task, worker) pair is already held."""
    rows = gather_rows(old_pointer, touched)
    held_local = np.repeat(
        np.arange(len(touched)), old_pointer[touched + 1] - old_pointer[touched]
    )
    new_local = np.searchsorted(touched, new_task)
    _refuse_held_pairs(
        touched,
        held_local,
        old_worker[rows],
        new_local,
        new_worker,
        n_workers,
        task_ids,
        worker_ids,
    )


def _fused_touched_block(
    store: AnnotationStore,
    touched: np.ndarray,
    first: np.ndarray,
    new_worker: np.ndarray,
    new_label: np.ndarray,
    n_workers: int,
) -> tuple[np.ndarray, ...] | None:
    """The touched tasks' block (each task's held rows, then its new ones: local
    codes, workers, labels, ``is_new``) and the count and first index of the new rows
    that repeat a held (task, worker) pair, in one compiled pass
    (:func:`_incremental_kernels.gather`); None where the kernels do not run.
    ``first`` marks the first new row of each touched task (new rows sorted by task)."""
    store.sort()
    n_held = len(store.pointer) - 1
    inside = np.minimum(touched, n_held)
    base_start = store.pointer[inside]
    base_stop = np.where(
        touched < n_held, store.pointer[np.minimum(touched + 1, n_held)], base_start
    )
    tail_task = store.tail[0]
    tail_start = np.searchsorted(tail_task, touched, side="left")
    tail_stop = np.searchsorted(tail_task, touched, side="right")
    new_start = np.flatnonzero(first)
    new_stop = np.append(new_start[1:], len(first))
    base = store.data_base()
    return _ik.gather(
        (base_start, base_stop, base.worker, base.label),
        (tail_start, tail_stop, store.tail[1], store.tail[2]),
        (new_start, new_stop, new_worker, new_label),
        n_workers,
    )


def _merged_truth(
    old: CrowdData,
    new: CrowdData,
    task_map: np.ndarray,
    class_map: np.ndarray,
    new_task_codes: np.ndarray,
    new_class_codes: np.ndarray,
    n_tasks: int,
) -> np.ndarray | None:
    """Known true classes of the merged tasks: the new data's where known, else the old."""
    if old.truth is None and new.truth is None:
        return None
    truth = np.full(n_tasks, -1, dtype=np.int32)
    sources = ((old, task_map, class_map), (new, new_task_codes, new_class_codes))
    for data, tasks, classes in sources:
        if data.truth is not None:
            known = np.flatnonzero(data.truth >= 0)
            truth[tasks[known]] = classes[data.truth[known]]
    return truth


def gather_rows(pointer: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """Row numbers of the given tasks' annotations, task after task, from a CSR
    pointer of annotations sorted by task."""
    starts, stops = pointer[tasks], pointer[tasks + 1]
    lengths = stops - starts
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return offsets + np.arange(int(lengths.sum()))


def gather_tasks(data: CrowdData, pointer: np.ndarray, tasks: np.ndarray) -> Block:
    """A block of the given tasks' annotations (``data`` sorted by task), with local
    task codes ``0..len(tasks)-1`` in the order of ``tasks``."""
    rows = gather_rows(pointer, tasks)
    local = np.repeat(np.arange(len(tasks), dtype=np.int32), pointer[tasks + 1] - pointer[tasks])
    return make_block(0, len(tasks), local, data.worker[rows], data.label[rows])


def sub_block(block: Block, keep: np.ndarray) -> Block:
    """The block's rows where ``keep`` is true (same local tasks)."""
    return make_block(0, block.n_tasks, block.task[keep], block.worker[keep], block.label[keep])


def remap_table(values: np.ndarray, merge: Merge) -> np.ndarray:
    """A (tasks, classes) table moved to the merged task and class codes (zeros for
    new tasks and classes)."""
    out = np.zeros((merge.n_tasks, merge.n_classes), dtype=values.dtype)
    if len(merge.class_map) == merge.n_classes and _is_identity(merge.task_map):
        out[: len(values)] = values  # tasks and classes kept their codes
    elif len(merge.class_map) == merge.n_classes:  # same classes: whole rows
        out[merge.task_map] = values
    else:
        out[np.ix_(merge.task_map, merge.class_map)] = values
    return out


# ------------------------------------------------------------------ the annotations held


def _grouped_positions(
    n_groups: int, group_a: np.ndarray, group_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Positions of two group-sorted sequences merged group by group, each group's
    ``a`` rows before its ``b`` rows."""
    counts_a = np.bincount(group_a, minlength=n_groups)
    counts_b = np.bincount(group_b, minlength=n_groups)
    b_before = np.concatenate([[0], np.cumsum(counts_b)])
    a_through = np.cumsum(counts_a)
    at_a = np.arange(len(group_a)) + b_before[group_a]
    at_b = np.arange(len(group_b)) + a_through[group_b]
    return at_a, at_b


def append_annotations(
    store: AnnotationStore, new: CrowdData, new_classes: bool = False
) -> Merge | None:
    """The merge of ``new`` into ``store`` by appending (O(new + tail)), or None when
    the new ids would move held codes (a task, worker or class id that sorts before a
    held one, or new classes): :func:`merge_annotations` then does the full merge.

    Raises the same CrowdDataError as :func:`merge_annotations`.
    """
    if new.is_anonymous:
        raise CrowdDataError("partial_fit needs worker ids; the annotations are anonymous")
    _, class_map, new_class_codes, fresh_classes = _union_ids(store.classes, new.classes, "class")
    if len(fresh_classes):
        return None
    task_ids, task_map, new_task_codes, fresh_tasks = _union_ids(
        store.task_ids, new.task_ids, "task"
    )
    worker_ids, worker_map, new_worker_codes, fresh_workers = _union_ids(
        store.worker_ids, new.worker_ids, "worker"
    )
    if not (_is_identity(task_map) and _is_identity(worker_map)):
        return None
    store.sort()
    n_tasks, n_workers = len(task_ids), len(worker_ids)
    new_task = new_task_codes[new.task]
    order = np.argsort(new_task, kind="stable")
    new_task = new_task[order].astype(np.int32)
    new_worker = new_worker_codes[new.worker[order]].astype(np.int32)
    new_label = new_class_codes[new.label[order]].astype(np.int32)
    first = np.ones(len(new_task), dtype=bool)  # new_task is sorted: no hash table
    np.not_equal(new_task[1:], new_task[:-1], out=first[1:])
    touched = new_task[first].astype(np.int64)
    fused = None
    if _ik.wanted(store.n_annotations):
        fused = _fused_touched_block(store, touched, first, new_worker, new_label, n_workers)
    if fused is not None:  # the block and the check in one pass
        local, worker, label, is_new, repeated, first_repeated = fused
        if repeated:
            _repeated_pairs_error(
                repeated, touched, new_task[first_repeated], new_worker[first_repeated],
                task_ids, worker_ids,
            )  # fmt: skip
    else:
        held_local, held_worker, held_label = store.rows_of(touched)
        new_local = np.searchsorted(touched, new_task).astype(np.int32)
        _refuse_held_pairs(
            touched, held_local, held_worker, new_local, new_worker, n_workers, task_ids,
            worker_ids,
        )  # fmt: skip
        # the touched tasks' block: each task's held rows, then its new ones
        at_held, at_new = _grouped_positions(len(touched), held_local, new_local)
        size = len(held_local) + len(new_local)
        is_new = np.zeros(size, dtype=bool)
        is_new[at_new] = True
        local = np.empty(size, dtype=np.int32)
        worker = np.empty(size, dtype=np.int32)
        label = np.empty(size, dtype=np.int32)
        for out, held, fresh in (
            (local, held_local, new_local),
            (worker, held_worker, new_worker),
            (label, held_label, new_label),
        ):
            out[at_held] = held
            out[at_new] = fresh
    truth = store.truth
    if truth is not None or new.truth is not None:
        truth = np.full(n_tasks, -1, dtype=np.int32)
        if store.truth is not None:
            truth[: len(store.truth)] = store.truth
        if new.truth is not None:
            known = np.flatnonzero(new.truth >= 0)
            truth[new_task_codes[known]] = new_class_codes[new.truth[known]]
    merged = store.appended(new_task, new_worker, new_label, task_ids, worker_ids, truth)
    return Merge(
        store=merged,
        task_map=task_map,
        worker_map=worker_map,
        class_map=class_map,
        touched=touched,
        is_new=is_new,
        n_new=new.n_annotations,
        n_new_tasks=len(fresh_tasks),
        n_new_workers=len(fresh_workers),
        n_new_classes=0,
        touched_block=make_block(0, len(touched), local, worker, label),
    )


# ------------------------------------------------------------------ mixins


#: A batch holding more than this share of all annotations (held + new) is a refit on
#: all of them (:meth:`IncrementalMixin.partial_fit`): where an update stops being
#: cheaper than a refit. Measured by ``python benchmarks/speed/_refit_share.py
#: --sizes 50000 2000000 --repeats 3`` (one process, both thresholds lifted; machine
#: shared by three agents, 2026-11-27). Update / fit of all annotations: at 50k (NumPy
#: path) Dawid-Skene 0.46-0.78 up to 5 %, 0.69-0.90 at 10 %, 1.27-1.31 at 19 %;
#: one-coin 0.13-0.44 up to 10 %, 0.78-0.82 at 19 %; GLAD 0.29-0.73 up to 10 %; at 2M
#: (compiled kernels) Dawid-Skene 0.11-0.31 up to 5 %, 0.48-0.49 at 10 %, 0.84-1.12 at
#: 19 %; one-coin 0.20-0.48 up to 5 %, 0.69-0.85 at 10 %, 1.47-2.08 at 19 %. Against
#: the refit path itself (``refit_path_s``: the merge, then a fit) the EM updates are
#: cheaper up to 10 % at both sizes and about equal at 19 % (GLAD at 50k: equal at
#: 10 %), Wawa up to 10 % at 50k and 2M (and at 10M: ``--sizes 10000000 --repeats 2
#: --shares 0.01 0.05 0.1 --methods mv wawa``, 0.46 s against 0.48 s at 10 %). The
#: crossing is at 10-20 % on both sizes, so one share, not size-dependent.
REFIT_SHARE = 0.1

#: The same for the vote counts (majority vote, naive soft labels): their update reads
#: every touched task's rows and breaks their ties again, which past a few percent
#: costs more than the refit path's merge and one counting pass. The same commands'
#: update against ``refit_path_s``, majority vote: at 2M 0.012 s / 0.027 s at 1 %,
#: 0.027 / 0.026 at 5 %, 0.058 / 0.033 at 10 %; at 10M 0.062 / 0.132, 0.139 / 0.155,
#: 0.344 / 0.237; at 50k the crossing is between 2 and 5 %.
VOTE_REFIT_SHARE = 0.05


class IncrementalMixin:
    """``partial_fit`` for aggregators; subclasses implement ``_partial_update(merge)``.

    ``fit`` keeps the annotations (``crowd_``, held in an :class:`AnnotationStore`);
    ``partial_fit`` merges the new ones in and calls ``_partial_update``, which sets
    ``probas_`` and the learned parameters for the merged data. Labels are then
    re-derived for all tasks, or, when ``_partial_update`` leaves ``_changed`` (the
    task codes whose posteriors it recomputed), for those tasks only (the others'
    labels are known not to change).
    """

    #: Learned attributes a state file holds (besides ``probas_``, ``labels_`` and ``crowd_``).
    state_attributes: ClassVar[tuple[str, ...]] = ()
    _store: AnnotationStore

    @property
    def crowd_(self) -> CrowdData:
        """All annotations fitted so far, sorted by task code (a pending tail of
        appended annotations is merged in first: one pass over them)."""
        store = self.__dict__.get("_store")
        if store is None:
            if "_other_crowd" in self.__dict__:  # e.g. the Dask engine's DistributedCrowd
                return self.__dict__["_other_crowd"]
            raise AttributeError("crowd_")
        return store.data()

    @crowd_.setter
    def crowd_(self, data: CrowdData) -> None:
        if isinstance(data, CrowdData):
            self._store = AnnotationStore(data)
        else:  # another engine's collection: kept as it is, not for partial_fit
            self.__dict__.pop("_store", None)
            self.__dict__["_other_crowd"] = data

    def _fit_arrays(self, data: CrowdData, **fit_params: Any) -> None:
        """Fit on ``data`` and keep it (``crowd_``) for :meth:`partial_fit`."""
        super()._fit_arrays(data, **fit_params)  # type: ignore[misc]
        # The task pointer of sorted data, when the fit's block reader has it (free).
        reader = getattr(self, "_reader", None)
        sorted_rows = isinstance(reader, BlockReader) and reader.sorted
        self._store = AnnotationStore(data, reader.indptr if sorted_rows else None)
        self._after_fit()

    def _after_fit(self) -> None:
        """Hook: what a subclass records after a fit (or a refit within an update)."""

    def _refit_share(self) -> float:
        """The batch share past which an update is a refit (:data:`REFIT_SHARE`)."""
        return REFIT_SHARE

    def _appends(self, refresh: int) -> bool:
        """Whether an update with this ``refresh`` may append to the store (it does not
        need all annotations as one CrowdData)."""
        return False

    def partial_fit(
        self, new: CrowdData | pd.DataFrame, *, new_classes: bool = False, refresh: int = 1
    ) -> Any:
        """Add annotations that arrived since the last fit; returns ``self``.

        Parameters
        ----------
        new : CrowdData or DataFrame
            The new annotations only (a DataFrame with columns ``task``, ``worker``,
            ``label``). On an estimator not fitted yet, this is :meth:`fit`.
        new_classes : bool, default False
            Accept classes the fitted model does not know (else CrowdDataError).
        refresh : int, default 1
            Incremental EM (Dawid-Skene, one-coin) only: how many passes over all
            annotations end the update. 1: one E-step over all tasks, so that every
            posterior is computed under the final parameters. 0 (or False): no pass
            over all annotations; the labels are still exactly those of a full E-step
            under the final parameters (ties broken as ``break_ties`` does): only the
            tasks whose label a bound on the change of their log-odds cannot rule
            out are recomputed, with the touched ones; the other tasks keep the
            posteriors of their last update (see
            :mod:`crowdlearn.aggregation._incremental_em`). ``n > 1``: then ``n - 1``
            full EM iterations, warm-started (closer to a refit, each as costly as
            one of its iterations).

        After the call every fitted attribute describes all annotations so far;
        ``crowd_`` holds them and ``last_update_`` says what was added and how long
        the update took. With ``refresh=0``, ``probas_`` and ``labels_`` may be
        updated in place (arrays read from them before the call can change), as may
        the vote counts' ``vote_counts_``, ``probas_`` and ``labels_`` (majority
        vote, naive soft labels) whatever ``refresh``.
        """
        if not 0 <= int(refresh) == refresh:
            raise ValueError(f"refresh must be a non-negative integer, got {refresh!r}")
        if not isinstance(new, (CrowdData, pd.DataFrame)):
            raise TypeError(f"partial_fit expects a CrowdData or a DataFrame, got {type(new)}")
        crowd = _as_crowd_data(new)
        as_frames = isinstance(new, pd.DataFrame)  # the results follow this call's input
        restore_arrays(self)
        self._update(crowd, new_classes, int(refresh))
        self._present(as_frames)  # type: ignore[attr-defined]
        return self

    def _update(self, crowd: CrowdData, new_classes: bool, refresh: int) -> Any:
        """The body of :meth:`partial_fit` on arrays."""
        start = time.perf_counter()
        if "_store" not in self.__dict__:
            self.fit(crowd)
            self.last_update_ = {
                "n_new": crowd.n_annotations,
                "n_new_tasks": crowd.n_tasks,
                "n_new_workers": crowd.n_workers,
                "n_new_classes": crowd.n_classes,
                "seconds": time.perf_counter() - start,
            }
            return self
        store = self._store
        if crowd.n_annotations > self._refit_share() * (store.n_annotations + crowd.n_annotations):
            return self._refit_with(crowd, new_classes, start)
        merge = None
        if self._appends(int(refresh)):
            merge = append_annotations(store, crowd, new_classes)
        if merge is None:
            merge = _merged(store, crowd, new_classes)
        self._refresh = int(refresh)
        self._changed: np.ndarray | None = None
        self._partial_update(merge)
        self._store = merge.store
        changed = self._changed
        if changed is None:
            self.labels_ = break_ties(self.probas_, self.tie_break, self.random_state)  # type: ignore[attr-defined]
        else:
            if _is_identity(merge.task_map):
                labels = _grown(self.labels_, merge.n_tasks)
            else:  # held tasks moved: their labels move with them
                labels = np.empty(merge.n_tasks, dtype=self.labels_.dtype)
                labels[merge.task_map] = self.labels_
            known = self.__dict__.pop("_changed_labels", None)  # set by the update
            labels[changed] = (
                known
                if known is not None
                else break_ties_rows(
                    self.probas_[changed],
                    changed,
                    self.tie_break,  # type: ignore[attr-defined]
                    self.random_state,  # type: ignore[attr-defined]
                )
            )
            self.labels_ = labels
        self.classes_ = merge.store.classes
        self.task_ids_ = merge.store.task_ids
        self.worker_ids_ = merge.store.worker_ids
        self.last_update_ = {
            "n_new": merge.n_new,
            "n_new_tasks": merge.n_new_tasks,
            "n_new_workers": merge.n_new_workers,
            "n_new_classes": merge.n_new_classes,
            "seconds": time.perf_counter() - start,
        }
        if changed is not None:
            self.last_update_["n_recomputed"] = len(changed)
        return self

    def _refit_with(self, crowd: CrowdData, new_classes: bool, start: float) -> Any:
        """A large batch: merge it in (the usual checks) and fit on all annotations."""
        merge = _merged(self._store, crowd, new_classes)
        self.fit(merge.data)
        self.last_update_ = {
            "n_new": merge.n_new,
            "n_new_tasks": merge.n_new_tasks,
            "n_new_workers": merge.n_new_workers,
            "n_new_classes": merge.n_new_classes,
            "seconds": time.perf_counter() - start,
            "refit": True,
        }
        return self

    def _partial_update(self, merge: Merge) -> None:
        raise NotImplementedError


def _merged(store: AnnotationStore, crowd: CrowdData, new_classes: bool) -> Merge:
    """:func:`merge_annotations` of the store's annotations and ``crowd`` (the store's
    task pointer found first by the compiled pass where the kernels run)."""
    if store.pointer is None and _ik.wanted(store.n_annotations):
        store.sort()
    return merge_annotations(store.data(), crowd, new_classes, old_pointer=store.pointer)


def _grown(values: np.ndarray, n_rows: int) -> np.ndarray:
    """``values`` with ``n_rows`` rows: the same array when it has them, the leading
    rows of its base when that has room (a buffer left by an earlier growth), else a
    new buffer with room for a quarter more rows (amortised O(1) growth). The rows
    after the held ones are left uninitialised."""
    if len(values) == n_rows:
        return values
    base = values.base
    if (
        isinstance(base, np.ndarray)
        and base.shape[1:] == values.shape[1:]
        and base.dtype == values.dtype
        and base.flags.c_contiguous
        and values.flags.c_contiguous
        and len(base) >= n_rows
        and base.__array_interface__["data"][0] == values.__array_interface__["data"][0]
    ):
        return base[:n_rows]
    buffer = np.empty((n_rows + n_rows // 4, *values.shape[1:]), dtype=values.dtype)
    buffer[: len(values)] = values
    return buffer[:n_rows]


class RefitMixin(IncrementalMixin):
    """Incremental by refitting on the merged annotations: for single-pass methods
    (a few vote counts over the annotations), where a refit is as cheap as any update
    and gives exactly the refit's result."""

    def _partial_update(self, merge: Merge) -> None:
        self._fit(merge.data)  # type: ignore[attr-defined]


class VoteCountMixin(IncrementalMixin):
    """Incremental vote counts: the held (n_tasks, K) counts get the new votes; exact.

    When no held code moves (the new ids sort after the held ones, no new class), the
    new annotations are appended to the store (no pass over the held ones) and only
    the touched tasks' rows of ``vote_counts_``, ``probas_`` and ``labels_`` are
    rewritten, in place (O(new), plus a copy into a larger buffer when new tasks
    outgrow it): a refit of a vote count costs one pass over all annotations, which an
    update must not. Otherwise the counts move to the merged codes and every task's
    row is derived again (O(tasks))."""

    state_attributes = ("vote_counts_",)

    def _appends(self, refresh: int) -> bool:
        return True

    def _refit_share(self) -> float:
        return VOTE_REFIT_SHARE

    def _partial_update(self, merge: Merge) -> None:
        block = merge.block()
        new = merge.is_new
        rows, labels = merge.touched[block.task[new]], block.label[new]
        held = len(merge.class_map) == merge.n_classes and _is_identity(merge.task_map)
        if held and len(self.probas_) == len(self.vote_counts_):
            n_old = len(self.vote_counts_)
            counts = _grown(self.vote_counts_, merge.n_tasks)
            counts[n_old:] = 0
            touched = merge.touched
            k = merge.n_classes  # the block's new votes per touched task and class
            cells = block.task[new].astype(np.int64) * k + labels
            added = np.bincount(cells, minlength=len(touched) * k)
            counts[touched] += added.reshape(len(touched), k).astype(counts.dtype)
            probas = _grown(self.probas_, merge.n_tasks)
            probas[touched], self._changed_labels = self._rows_from_counts(
                counts[touched], touched
            )
            self.vote_counts_, self.probas_ = counts, probas
            self._changed = touched  # the other tasks' rows and labels are unchanged
            return
        data = merge.data
        counts = remap_table(self.vote_counts_, merge)
        np.add.at(counts, (rows, labels), 1)
        self.vote_counts_ = counts
        self._from_counts(data)

    vote_counts_: np.ndarray

    def _from_counts(self, data: CrowdData) -> None:
        raise NotImplementedError

    def _rows_from_counts(
        self, counts: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The ``probas_`` rows ``rows`` of the tasks with these vote counts (what
        :meth:`_from_counts` gives them), and their labels when known (else None:
        derived from the rows)."""
        raise NotImplementedError
