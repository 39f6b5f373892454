"""New annotations as they arrive: ``partial_fit`` without a refit from scratch.

An incremental aggregator keeps every annotation it has seen (``crowd_``, a
CrowdData stored sorted by task code) and its learned state. ``partial_fit(new)``

1. merges the new annotations into ``crowd_`` (:func:`merge_annotations`): the union
   of the task ids, worker ids and classes, kept in sorted id order when the held ids
   are sorted (as :meth:`CrowdData.from_arrays` assigns them), so the merged codes are
   those a refit on all annotations would use; new rows are inserted at their task,
   one O(annotations) copy of the code arrays and no sort of the held ones;
2. maps the learned parameters from the old codes to the new ones by id
   (:class:`Merge` carries the maps) and updates them, method by method:

   * vote counts (:class:`VoteCountMixin`): the new votes are added, O(new);
   * refit on the merged data (:class:`RefitMixin`, cheap single-pass methods such as
     Wawa): exact by construction;
   * incremental EM (:class:`IncrementalEMMixin`, Dawid-Skene and one-coin), after
     Neal & Hinton (1998): the M-step's sufficient statistics are sums of per-task
     contributions; the contributions of the tasks that received annotations are
     taken out, EM runs on those tasks only (the other tasks' contributions held
     fixed) until it converges, and one E-step over all tasks gives the posteriors.

A :class:`~crowdlearn.data.CrowdDataError` refuses a (task, worker) pair already
held and a class unknown to the fitted model (unless ``new_classes=True``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from crowdlearn.aggregation._base import _as_crowd_data, break_ties
from crowdlearn.aggregation._blocks import (
    Block,
    BlockReader,
    is_sorted,
    make_block,
    task_pointer,
)
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data.errors import plain, show


@dataclass(frozen=True)
class Merge:
    """The result of :func:`merge_annotations`.

    Attributes
    ----------
    data : CrowdData
        All annotations, sorted by task code.
    pointer : ndarray of int64
        Its task pointer: the annotations of task ``t`` are rows
        ``pointer[t]:pointer[t + 1]``.
    task_map, worker_map, class_map : ndarray of int64
        Code of each old task, worker and class in ``data`` (increasing: old ids keep
        their order).
    touched : ndarray of int64
        Sorted codes (in ``data``) of the tasks that received new annotations.
    is_new : ndarray of bool
        For the rows of ``touched`` tasks in ``data`` (in the order of
        :func:`gather_tasks`), whether the row is one of the new annotations.
    n_new, n_new_tasks, n_new_workers, n_new_classes : int
    """

    data: CrowdData
    pointer: np.ndarray
    task_map: np.ndarray
    worker_map: np.ndarray
    class_map: np.ndarray
    touched: np.ndarray
    is_new: np.ndarray
    n_new: int
    n_new_tasks: int
    n_new_workers: int
    n_new_classes: int

    def note(self) -> str:
        """One line: what the merge added."""
        return (
            f"{self.n_new} new annotation(s), {self.n_new_tasks} new task(s), "
            f"{self.n_new_workers} new worker(s), {self.n_new_classes} new class(es)"
        )


def _union_ids(old: np.ndarray, new: np.ndarray, what: str) -> tuple[np.ndarray, ...]:
    """Merged ids, the merged code of each old id, of each new id, and the fresh ids.

    Fresh ids are inserted in sorted position when the old ids are sorted (the order
    :meth:`CrowdData.from_arrays` gives), else appended.
    """
    if len(old) and len(new) and _id_kind(old) != _id_kind(new):
        raise CrowdDataError(
            f"the new annotations' {what} ids are {_id_kind(new)}s, the fitted ones "
            f"{_id_kind(old)}s (e.g. {show(old[:3])}): annotations of another dataset?"
        )
    ordered = _is_increasing(old)
    if ordered and old.dtype.kind in "iufb":
        # sorted numbers: a binary search per new id, no hash table of the old ones
        slot = np.minimum(np.searchsorted(old, new), max(len(old) - 1, 0))
        position = np.where(old[slot] == new, slot, -1) if len(old) else np.full(len(new), -1)
    else:
        position = pd.Index(old).get_indexer(new)
    fresh_rows = np.flatnonzero(position < 0)
    if len(fresh_rows) == 0:
        return old, np.arange(len(old)), position.astype(np.int64), new[:0]
    fresh = new[fresh_rows]
    if ordered and _is_increasing(fresh):
        slots = np.searchsorted(old, fresh)
        merged = np.insert(old, slots, fresh)
        shift = np.zeros(len(old) + 1, dtype=np.int64)
        np.add.at(shift, slots, 1)
        old_map = np.arange(len(old)) + np.cumsum(shift)[: len(old)]
        fresh_codes = slots + np.arange(len(fresh))
    else:
        merged = np.concatenate([old, fresh])
        old_map = np.arange(len(old))
        fresh_codes = len(old) + np.arange(len(fresh))
    new_map = np.zeros(len(new), dtype=np.int64)
    known = position >= 0
    new_map[known] = old_map[position[known]]
    new_map[fresh_rows] = fresh_codes
    return merged, old_map, new_map, fresh


def _id_kind(ids: np.ndarray) -> str:
    if ids.dtype.kind == "O":
        return pd.api.types.infer_dtype(ids, skipna=True)
    return {"i": "integer", "u": "integer", "f": "floating", "b": "boolean"}.get(
        ids.dtype.kind, ids.dtype.kind
    )


def _is_increasing(ids: np.ndarray) -> bool:
    try:
        return bool(pd.Index(ids).is_monotonic_increasing)
    except TypeError:
        return False


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

    touched = np.unique(new_task).astype(np.int64)
    _refuse_repeated_pairs(
        pointer, old_worker, touched, new_task, new_worker, n_workers, task_ids, worker_ids
    )
    old_counts = pointer[touched + 1] - pointer[touched]
    new_counts = np.bincount(np.searchsorted(touched, new_task), minlength=len(touched))

    # New rows go after the old rows of their task: one pass over each code array.
    slots = pointer[new_task.astype(np.int64) + 1]
    at = slots + np.arange(len(new_task))
    keep = np.ones(len(old_task) + len(new_task), dtype=bool)
    keep[at] = False
    merged = CrowdData.__new__(CrowdData)
    merged._set(
        task=_interleave(old_task, new_task, keep, at),
        worker=_interleave(old_worker, new_worker, keep, at),
        label=_interleave(old_label, new_label, keep, at),
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
    # Rows of the touched tasks in the merged data: the old ones, then the new ones.
    sizes = np.ravel([old_counts, new_counts], order="F")
    is_new = np.repeat(np.tile([False, True], len(touched)), sizes)
    return Merge(
        data=merged,
        pointer=pointer,
        task_map=task_map,
        worker_map=worker_map,
        class_map=class_map,
        touched=touched,
        is_new=is_new,
        n_new=new.n_annotations,
        n_new_tasks=len(fresh_tasks),
        n_new_workers=len(fresh_workers),
        n_new_classes=len(fresh_classes),
    )


def _interleave(old: np.ndarray, new: np.ndarray, keep: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``old`` at the ``keep`` positions and ``new`` at ``at``, in one array."""
    out = np.empty(len(keep), dtype=np.int32)
    out[keep] = old
    out[at] = new
    return out


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
    held_task = np.repeat(touched, old_pointer[touched + 1] - old_pointer[touched])
    held = np.sort(held_task * n_workers + old_worker[rows])
    keys = new_task.astype(np.int64) * n_workers + new_worker
    if len(held) == 0:
        return
    found = held[np.minimum(np.searchsorted(held, keys), len(held) - 1)] == keys
    repeated = np.flatnonzero(found)
    if len(repeated):
        first = repeated[0]
        raise CrowdDataError(
            f"{len(repeated)} new annotation(s) repeat a (task, worker) pair already held, "
            f"e.g. task {plain(task_ids[new_task[first]])} by worker "
            f"{plain(worker_ids[new_worker[first]])}; send only the annotations that arrived "
            "since the last update"
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
    out = np.zeros((merge.data.n_tasks, merge.data.n_classes), dtype=values.dtype)
    if len(merge.class_map) == merge.data.n_classes and _is_identity(merge.task_map):
        out[: len(values)] = values  # tasks and classes kept their codes
    elif len(merge.class_map) == merge.data.n_classes:  # same classes: whole rows
        out[merge.task_map] = values
    else:
        out[np.ix_(merge.task_map, merge.class_map)] = values
    return out


# ------------------------------------------------------------------ mixins


class IncrementalMixin:
    """``partial_fit`` for aggregators; subclasses implement ``_partial_update(merge)``.

    ``fit`` keeps the annotations (``crowd_``); ``partial_fit`` merges the new ones in
    and calls ``_partial_update``, which sets ``probas_`` and the learned parameters
    for the merged data; labels, ids and classes are then re-derived for all tasks.
    """

    crowd_: CrowdData
    #: Learned attributes a state file holds (besides probas_, labels_ and crowd_).
    state_attributes: ClassVar[tuple[str, ...]] = ()

    def fit(self, data: CrowdData, **fit_params: Any) -> Any:
        """Fit on ``data`` and keep it (``crowd_``) for :meth:`partial_fit`."""
        super().fit(data, **fit_params)  # type: ignore[misc]
        self.crowd_ = data
        # The task pointer of sorted data, when the fit's block reader has it (free).
        reader = getattr(self, "_reader", None)
        sorted_rows = isinstance(reader, BlockReader) and reader.sorted
        self._pointer = reader.indptr if sorted_rows else None
        return self

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
            posterior is computed under the final parameters. 0 (or False): only the
            tasks that received annotations move (the others keep the posteriors of
            their last update, as in Neal & Hinton's incremental EM), no pass over
            all annotations besides the merge. ``n > 1``: then ``n - 1`` full EM
            iterations, warm-started (closer to a refit, each as costly as one of
            its iterations).

        After the call every fitted attribute describes all annotations so far;
        ``crowd_`` holds them (sorted by task) and ``last_update_`` says what was
        added and how long the update took.
        """
        if not 0 <= int(refresh) == refresh:
            raise ValueError(f"refresh must be a non-negative integer, got {refresh!r}")
        crowd = _as_crowd_data(new)
        if not isinstance(crowd, CrowdData):
            raise TypeError(f"partial_fit expects a CrowdData or a DataFrame, got {type(new)}")
        start = time.perf_counter()
        if not hasattr(self, "crowd_"):
            self.fit(crowd)
            self._pointer = None
            self.last_update_ = {
                "n_new": crowd.n_annotations,
                "n_new_tasks": crowd.n_tasks,
                "n_new_workers": crowd.n_workers,
                "n_new_classes": crowd.n_classes,
                "seconds": time.perf_counter() - start,
            }
            return self
        pointer = getattr(self, "_pointer", None)
        merge = merge_annotations(self.crowd_, crowd, new_classes, old_pointer=pointer)
        self._refresh = int(refresh)
        self._partial_update(merge)
        self._pointer = merge.pointer  # crowd_ is now sorted by task
        data = merge.data
        self.labels_ = break_ties(self.probas_, self.tie_break, self.random_state)  # type: ignore[attr-defined]
        self.classes_ = data.classes
        self.task_ids_ = data.task_ids
        self.worker_ids_ = data.worker_ids
        self.crowd_ = data
        self.last_update_ = {
            "n_new": merge.n_new,
            "n_new_tasks": merge.n_new_tasks,
            "n_new_workers": merge.n_new_workers,
            "n_new_classes": merge.n_new_classes,
            "seconds": time.perf_counter() - start,
        }
        return self

    def _partial_update(self, merge: Merge) -> None:
        raise NotImplementedError


class RefitMixin(IncrementalMixin):
    """Incremental by refitting on the merged annotations: for single-pass methods
    (a few vote counts over the annotations), where a refit is as cheap as any update
    and gives exactly the refit's result."""

    def _partial_update(self, merge: Merge) -> None:
        self._fit(merge.data)  # type: ignore[attr-defined]


class VoteCountMixin(IncrementalMixin):
    """Incremental vote counts: the held (n_tasks, K) counts get the new votes, O(new)
    plus the copy into the merged task and class codes; exact."""

    state_attributes = ("vote_counts_",)

    def _partial_update(self, merge: Merge) -> None:
        data = merge.data
        counts = remap_table(self.vote_counts_, merge)
        rows = gather_rows(merge.pointer, merge.touched)[merge.is_new]
        np.add.at(counts, (data.task[rows], data.label[rows]), 1)
        self.vote_counts_ = counts
        self._from_counts(data)

    vote_counts_: np.ndarray

    def _from_counts(self, data: CrowdData) -> None:
        raise NotImplementedError
