"""Blocks of annotations: the unit of work of the chunked and distributed engines.

A :class:`Block` holds the annotations of a contiguous range of tasks, sorted by task,
with task codes local to the block (``0..n_tasks-1``) and global worker and class
codes. The per-block functions of each method (Dawid-Skene's confusion counts and
log-scores, one-coin's correctness sums, vote counts) return either per-task results
for the block's tasks or sufficient statistics that are summed over blocks. The
in-memory estimators call them on blocks of ``chunk_size`` annotations (one block by
default); :mod:`crowdlearn.distributed` calls the same functions on each partition of
a Dask collection. See docs/scale.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

import crowdlearn.aggregation._kernels as _kernels
from crowdlearn.data import CrowdData


@dataclass(frozen=True)
class Block:
    """Annotations of ``n_tasks`` consecutive tasks, sorted by (local) task code.

    Attributes
    ----------
    start : int
        Global code of the block's first task (0 for a Dask partition, whose tasks are
        identified by ``task_ids`` instead).
    n_tasks : int
        Number of tasks of the block, annotated or not.
    indptr : ndarray (n_tasks + 1,)
        CSR pointer: the annotations of local task ``t`` are rows
        ``indptr[t]:indptr[t + 1]``.
    task, worker, label : ndarray (n,)
        Local task codes (non-decreasing), global worker and class codes.
    """

    start: int
    n_tasks: int
    indptr: np.ndarray
    task: np.ndarray
    worker: np.ndarray
    label: np.ndarray

    @property
    def stop(self) -> int:
        """Global code after the block's last task."""
        return self.start + self.n_tasks

    @property
    def annotated(self) -> np.ndarray:
        """Whether each task of the block has at least one annotation."""
        return np.diff(self.indptr) > 0


def make_block(
    start: int, n_tasks: int, task: np.ndarray, worker: np.ndarray, label: np.ndarray
) -> Block:
    """A block from annotations already sorted by local task code."""
    counts = np.bincount(task, minlength=n_tasks)
    indptr = np.zeros(n_tasks + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Block(start, n_tasks, indptr, task, worker, label)


def is_sorted(values: np.ndarray, chunk: int = 1 << 24) -> bool:
    """Whether ``values`` is non-decreasing, checked in chunks (bounded temporaries)."""
    for begin in range(0, max(len(values) - 1, 0), chunk):
        part = values[begin : begin + chunk + 1]
        if np.any(part[1:] < part[:-1]):
            return False
    return True


def task_blocks(
    data: CrowdData, chunk_size: int | None, indptr: np.ndarray | None = None
) -> list[tuple[int, int]]:
    """Task ranges ``(start, stop)`` covering all tasks, each with about ``chunk_size``
    annotations (a task is never split); ``None`` gives one range. ``indptr``: the
    task pointer when already known."""
    if chunk_size is None:
        return [(0, data.n_tasks)]
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size}")
    if indptr is None:
        indptr = task_pointer(data)
    cuts = np.searchsorted(indptr, np.arange(chunk_size, data.n_annotations, chunk_size))
    bounds = np.unique(np.concatenate([[0], cuts, [data.n_tasks]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))


def task_pointer(data: CrowdData) -> np.ndarray:
    """CSR pointer of the annotations grouped by task (sorted order)."""
    counts = np.bincount(data.task, minlength=data.n_tasks)
    indptr = np.zeros(data.n_tasks + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr


class BlockReader:
    """Yields the :class:`Block` of each task range of a CrowdData.

    When the annotations are stored sorted by task (what the Parquet generator and the
    streaming reader produce), a block is a view of the code arrays: no copy. Otherwise
    each block gathers its rows through the cached per-task index (a temporary of the
    block's size).
    """

    def __init__(
        self, data: CrowdData, chunk_size: int | None, indptr: np.ndarray | None = None
    ) -> None:
        self.data = data
        # A given ``indptr`` says that the annotations are sorted by task (partial_fit
        # keeps them so and knows their pointer): no pass over them here.
        self.indptr = task_pointer(data) if indptr is None else indptr
        self.sorted = True if indptr is not None else is_sorted(data.task)
        self.ranges = task_blocks(data, chunk_size, self.indptr)

    def __iter__(self) -> Iterator[Block]:
        data = self.data
        for start, stop in self.ranges:
            begin, end = int(self.indptr[start]), int(self.indptr[stop])
            if self.sorted:
                rows: slice | np.ndarray = slice(begin, end)
            else:
                rows = data.by_task.order[begin:end]
            task = data.task[rows]
            yield Block(
                start,
                stop - start,
                self.indptr[start : stop + 1] - begin,
                task - task.dtype.type(start) if start else task,
                data.worker[rows],
                data.label[rows],
            )


# ------------------------------------------------------------------ shared kernels


def block_design(
    block: Block, n_workers: int, k: int, dtype: np.dtype
) -> sp.csr_matrix | CodesDesign:
    """(block tasks, n_workers * K) design of a block: column ``w * K + l`` counts the
    annotations of worker ``w`` with label ``l`` (see
    :func:`crowdlearn.aggregation._design.worker_label_design`).

    A SciPy CSR matrix, or, where the fused kernels run (:func:`_kernels.active`: a
    block of at least ``MIN_ANNOTATIONS`` and numba available), the same matrix as a
    :class:`CodesDesign` (its CSR pointer and column numbers, no array of ones),
    which the Dawid-Skene steps hand to the kernels."""
    # int32 column numbers when they fit: SciPy then keeps them as the CSR indices
    # instead of copying them to a narrower type.
    index_dtype = np.int32 if n_workers * k < np.iinfo(np.int32).max else np.int64
    columns = block.worker.astype(index_dtype) * index_dtype(k) + block.label
    shape = (block.n_tasks, n_workers * k)
    if _kernels.active(len(columns), _kernels.weight("ds", k)):
        return CodesDesign(block.indptr, columns, shape, np.dtype(dtype))
    return sp.csr_matrix((np.ones(len(columns), dtype=dtype), columns, block.indptr), shape=shape)


@dataclass(frozen=True)
class CodesDesign:
    """A block's design for the fused kernels: the CSR matrix of
    :func:`block_design` without its array of ones (every entry is one annotation).

    ``design @ table`` and ``design.T @ probas`` give what the SciPy matrix gives;
    :meth:`to_sparse` builds that matrix (the NumPy fallback)."""

    indptr: np.ndarray
    columns: np.ndarray
    shape: tuple[int, int]
    dtype: np.dtype

    @property
    def nnz(self) -> int:
        """Number of annotations."""
        return len(self.columns)

    def to_sparse(self) -> sp.csr_matrix:
        """The SciPy CSR matrix of the same design."""
        ones = np.ones(len(self.columns), dtype=self.dtype)
        return sp.csr_matrix((ones, self.columns, self.indptr), shape=self.shape)

    def __matmul__(self, table: np.ndarray) -> np.ndarray:
        if np.ndim(table) == 1:  # a vector: the kernel takes a (columns, K) table
            return (self @ np.asarray(table)[:, None])[:, 0]
        dtype = np.result_type(self.dtype, table.dtype)
        table = np.ascontiguousarray(table, dtype=dtype)
        scores = _kernels.run("ds_scores", self.indptr, self.columns, table)
        if scores is None:
            return np.asarray(self.to_sparse() @ table)
        return scores

    @property
    def T(self) -> _TransposedDesign:
        """The transposed design (only ``@`` a posterior table)."""
        return _TransposedDesign(self)


@dataclass(frozen=True)
class _TransposedDesign:
    design: CodesDesign

    def __matmul__(self, probas: np.ndarray) -> np.ndarray:
        design = self.design
        if np.ndim(probas) == 1:  # a vector: the kernel takes a (tasks, K) table
            return (self @ np.asarray(probas)[:, None])[:, 0]
        probas = np.ascontiguousarray(probas)
        result = _kernels.ds_m_step(
            design.indptr, design.columns, probas, None, False, design.shape[1]
        )
        if result is None:
            return np.asarray(design.to_sparse().T @ probas)
        return result[0]


def block_vote_counts(block: Block, k: int) -> np.ndarray:
    """Votes per class of each task of the block, (block tasks, K) int64."""
    cells = block.task.astype(np.int64) * k + block.label
    return np.bincount(cells, minlength=block.n_tasks * k).reshape(block.n_tasks, k)


def frequencies(counts: np.ndarray, dtype: np.dtype, hard: bool = False) -> np.ndarray:
    """Vote frequencies (or, with ``hard``, the majority classes sharing the mass) of
    each row of vote counts; rows without votes are uniform."""
    counts = counts.astype(dtype)
    if hard:
        counts = (counts == counts.max(axis=1, keepdims=True)).astype(dtype)
    totals = counts.sum(axis=1, keepdims=True)
    uniform = np.full_like(counts, 1.0 / counts.shape[1])
    return np.divide(counts, totals, out=uniform, where=totals > 0)


def block_posteriors(
    blocks: Iterator[Block] | list[Block],
    n_tasks: int,
    k: int,
    dtype: np.dtype,
    hard: bool = False,
) -> np.ndarray:
    """Initial posteriors (n_tasks, K) from the votes, block by block (no (annotations,)
    temporary): :func:`frequencies` of each block's vote counts.

    The table is the leading rows of a buffer with a quarter more (never written, so
    never given memory by the system): ``partial_fit`` appends new tasks' rows there
    instead of copying the table."""
    probas = np.empty((n_tasks + n_tasks // 4, k), dtype=dtype)[:n_tasks]
    for block in blocks:
        probas[block.start : block.stop] = frequencies(block_vote_counts(block, k), dtype, hard)
    return probas


def chunked_vote_counts(data: CrowdData, chunk_size: int | None) -> np.ndarray:
    """Dense (n_tasks, K) int64 vote counts, counted block by block (no temporary of
    the annotations' size); equal to ``data.vote_counts.toarray()``."""
    counts = np.zeros((data.n_tasks, data.n_classes), dtype=np.int64)
    for block in BlockReader(data, chunk_size):
        counts[block.start : block.stop] = block_vote_counts(block, data.n_classes)
    return counts
