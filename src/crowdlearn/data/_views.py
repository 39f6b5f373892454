"""CrowdData's derived views: vote counts, per-task and per-worker indexes, sizes per
task and per worker.

Each view is computed on first use from the code arrays and cached on the (immutable)
object; none builds a dense task x worker array. :class:`GroupIndex` is the CSR form of
a grouping (``indptr`` plus a stable ``order`` of the annotation rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from crowdlearn.data._validation import _readonly
from crowdlearn.data.errors import CrowdDataError


@dataclass(frozen=True)
class GroupIndex:
    """Annotations grouped by task or by worker, in CSR form.

    ``order`` lists annotation rows sorted by group (stable, so rows keep their
    original order inside a group); the rows of group ``g`` are
    ``order[indptr[g]:indptr[g + 1]]``.
    """

    indptr: np.ndarray
    order: np.ndarray

    def rows(self, group: int) -> np.ndarray:
        """Annotation rows of one group."""
        return self.order[self.indptr[group] : self.indptr[group + 1]]

    @property
    def sizes(self) -> np.ndarray:
        """Number of annotations of each group."""
        return np.diff(self.indptr)


class _CrowdDataViews:
    """The cached derived views of :class:`~crowdlearn.data.CrowdData` (a base class of it)."""

    @cached_property
    def vote_counts(self) -> sp.csr_matrix:
        """Sparse (n_tasks, n_classes) matrix of votes per task and class (int64)."""
        ones = np.ones(self.n_annotations, dtype=np.int64)
        counts = sp.csr_matrix(
            (ones, (self.task, self.label)), shape=(self.n_tasks, self.n_classes)
        )
        counts.sum_duplicates()
        return counts

    @cached_property
    def by_task(self) -> GroupIndex:
        """Annotations grouped by task."""
        return _group_index(self.task, self.n_tasks)

    @cached_property
    def by_worker(self) -> GroupIndex:
        """Annotations grouped by worker."""
        if self.worker is None:
            raise CrowdDataError("anonymous data has no workers to group by")
        return _group_index(self.worker, self.n_workers)

    @cached_property
    def feedback_effort(self) -> np.ndarray:
        """Number of annotations of each task (peerannot's feedback effort)."""
        return _readonly(np.bincount(self.task, minlength=self.n_tasks))

    @cached_property
    def workload(self) -> np.ndarray:
        """Number of annotations of each worker (empty when anonymous)."""
        if self.worker is None:
            return _readonly(np.zeros(0, dtype=np.int64))
        return _readonly(np.bincount(self.worker, minlength=self.n_workers))


def _group_index(codes: np.ndarray, n_groups: int) -> GroupIndex:
    index_dtype = np.int32 if len(codes) < np.iinfo(np.int32).max else np.int64
    order = np.argsort(codes, kind="stable").astype(index_dtype, copy=False)
    indptr = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=n_groups), out=indptr[1:])
    return GroupIndex(indptr=_readonly(indptr), order=_readonly(order))
