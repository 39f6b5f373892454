"""Dawid-Skene out of core: EM over a code store on disk, one pass per iteration.

The annotations stay on disk (:class:`~crowdlearn.stream._store.CodeStore`); each pass
reads them block by block and calls the in-memory engine's per-block functions
(:func:`~crowdlearn.aggregation._blocks.block_design`,
:func:`~crowdlearn.aggregation.dawid_skene.posterior_block`,
:func:`~crowdlearn.aggregation.dawid_skene.confusion_statistics`), so it computes what
:class:`crowdlearn.aggregation.DawidSkene` computes with the same ``chunk_size``, in
the same order of additions.

One pass per iteration instead of two: a block's M-step statistics depend only on the
block's own posteriors, so the pass that computes a block's posteriors (the E-step of
iteration ``t``) sums that block's statistics for the M-step of iteration ``t + 1``
at once, with the same design. :meth:`DawidSkene._m_step` then only sets the
parameters from the sums of the last pass, and the shared EM loop
(:class:`~crowdlearn.aggregation.IterativeAggregator`: tolerance, ``history_``,
progress) runs unchanged. The last pass's statistics are not used.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from crowdlearn._atomic import atomic_directory
from crowdlearn._bounds import check_params
from crowdlearn._progress import progress_bar
from crowdlearn.aggregation import DawidSkene as MemoryDawidSkene
from crowdlearn.aggregation._base import break_ties_rows, float_dtype
from crowdlearn.aggregation._blocks import Block, block_design, block_vote_counts, frequencies
from crowdlearn.aggregation._design import log_confusion_table
from crowdlearn.aggregation.dawid_skene import (
    confusion_statistics,
    posterior_block,
    sum_statistics,
)
from crowdlearn.stream._store import CodeStore, convert_parquet, is_store

#: Annotations per block when ``chunk_size`` is None.
DEFAULT_CHUNK = 4_000_000

Step = Callable[[Block, Any], tuple[np.ndarray, float]]


class DawidSkene(MemoryDawidSkene):
    """Dawid-Skene fitted out of core, from a Parquet crowd or a code store on disk.

    The parameters are those of :class:`crowdlearn.aggregation.DawidSkene`, with
    ``chunk_size`` (annotations per block read from disk; None: 4,000,000). Not
    supported here: gold labels and initial confusions (``fit`` takes neither).

    Memory: the posteriors (``n_tasks x K`` floats, kept for the result), one block
    (about ``chunk_size`` annotations and their design) and the parameters; the
    annotations themselves stay on disk (see :mod:`crowdlearn.stream`).

    Attributes
    ----------
    probas_, labels_, confusions_, priors_, history_, n_iter_, converged_
        As in memory, arrays in code order.
    classes_, task_ids_, worker_ids_ : ndarray
        The ids in code order (sorted).
    crowd_ : CodeStore
        The store fitted (its sizes; it may have been a temporary one, since removed).

    Examples
    --------
    >>> import tempfile
    >>> from crowdlearn.simulate import write_synthetic_parquet
    >>> from crowdlearn.stream import DawidSkene
    >>> folder = tempfile.mkdtemp()
    >>> _ = write_synthetic_parquet(f"{folder}/crowd", 20_000, n_workers=50, seed=1)
    >>> model = DawidSkene(chunk_size=5_000, progress=False).fit(f"{folder}/crowd")
    >>> model.probas_.shape, model.confusions_.shape
    ((2000, 2), (50, 2, 2))
    """

    def fit(  # type: ignore[override]
        self,
        source: str | os.PathLike[str] | CodeStore,
        store: str | os.PathLike[str] | None = None,
    ) -> DawidSkene:
        """Run EM on the annotations at ``source``.

        Parameters
        ----------
        source : str, path-like or CodeStore
            A Parquet file or directory (sorted by task: see
            :func:`~crowdlearn.stream.convert_parquet`), or a code store directory.
        store : str or path-like, optional
            Where to convert a Parquet ``source`` (kept after the fit, for later fits).
            Default: a temporary directory in the system's temporary folder (``TMPDIR``),
            removed after the fit.
        """
        check_params(type(self).__name__, self.get_params(deep=False))
        self._check_options()
        if isinstance(source, CodeStore):
            self._fit_store(source)
        elif is_store(source):
            self._fit_store(CodeStore(source))
        elif store is not None:
            self._fit_store(convert_parquet(source, store, progress=self.progress))
        else:
            with tempfile.TemporaryDirectory(prefix="crowdlearn-store-") as folder:
                self._fit_store(
                    convert_parquet(source, Path(folder) / "store", progress=self.progress)
                )
        return self

    def _fit_store(self, store: CodeStore) -> None:
        self.crowd_ = store
        self._fit(store)  # the shared EM loop: _initialize, then _m_step / _e_step
        self.labels_ = np.empty(store.n_tasks, dtype=np.int64)
        for start, stop in self._ranges:  # block by block: no temporary of the table's size
            self.labels_[start:stop] = break_ties_rows(
                self.probas_[start:stop], np.arange(start, stop), self.tie_break, self.random_state
            )
        self.classes_ = store.classes
        self.worker_ids_ = store.worker_ids
        self.task_ids_ = store.task_ids

    def partial_fit(self, *args: Any, **kwargs: Any) -> DawidSkene:
        """Not available out of core: refit on the grown crowd (the in-memory
        :class:`crowdlearn.aggregation.DawidSkene` updates incrementally)."""
        raise NotImplementedError(
            "the stream engine has no partial_fit; refit on all annotations, or use "
            "crowdlearn.aggregation.DawidSkene for incremental updates"
        )

    # ------------------------------------------------------------------ EM steps

    def _initialize(self, store: CodeStore, **_: Any) -> None:  # type: ignore[override]
        self._dtype = float_dtype(self.dtype)
        self._gold = self._initial = None
        self._ranges = store.task_ranges(self.chunk_size or DEFAULT_CHUNK)
        self.probas_ = np.empty((store.n_tasks, store.n_classes), dtype=self._dtype)
        hard = self.init == "majority_vote"
        k = store.n_classes

        def votes(block: Block, design: Any) -> tuple[np.ndarray, float]:
            return frequencies(block_vote_counts(block, k), self._dtype, hard), 0.0

        self._pending, _ = self._sweep(store, votes, "initial pass")

    def _m_step(self, store: CodeStore) -> None:  # type: ignore[override]
        counts, totals = self._pending
        self._set_parameters(counts, totals, store.n_workers)

    def _e_step(self, store: CodeStore) -> float:  # type: ignore[override]
        table = log_confusion_table(self.confusions_)
        log_prior = np.log(self.priors_)

        def posteriors(block: Block, design: Any) -> tuple[np.ndarray, float]:
            return posterior_block(design, table, log_prior, None, self.hard)

        self._pending, log_likelihood = self._sweep(store, posteriors, "pass")
        return log_likelihood

    def _sweep(
        self, store: CodeStore, step: Step, desc: str
    ) -> tuple[tuple[np.ndarray, ...], float]:
        """One pass over the blocks: each block's posteriors by ``step`` (stored in
        ``probas_``), and the M-step statistics of those posteriors summed over the
        blocks (in block order, as the in-memory M-step sums them)."""
        log_likelihood = 0.0
        bar = progress_bar(
            store.blocks(self._ranges),
            progress=self.progress,
            desc=desc,
            total=len(self._ranges),
            unit="block",
            leave=False,
        )

        def statistics() -> Iterator[tuple[np.ndarray, ...]]:
            nonlocal log_likelihood
            for block in bar:
                design = block_design(block, store.n_workers, store.n_classes, self._dtype)
                probas, block_likelihood = step(block, design)
                rows = slice(block.start, block.stop)
                self.probas_[rows] = probas
                log_likelihood += block_likelihood
                yield confusion_statistics(design, block, self.probas_[rows], self.lone_labels)

        try:
            stats = sum_statistics(statistics())
        finally:
            bar.close()
        return stats, log_likelihood

    # ------------------------------------------------------------------ output

    def write_parquet(self, path: str | os.PathLike[str]) -> Path:
        """Write the posteriors to a Parquet directory, one file per block: columns
        ``task`` (id), ``label`` (class id) and ``proba_<class>`` (the Dask engine's
        layout). The directory appears only complete."""
        self._check_fitted()
        target = Path(path)
        classes = pa.array(self.classes_)
        with atomic_directory(target) as tmp:
            for index, (start, stop) in enumerate(self._ranges):
                columns = {
                    "task": pa.array(self.task_ids_[start:stop]),
                    "label": classes.take(pa.array(self.labels_[start:stop])),
                }
                for code, name in enumerate(self.classes_.tolist()):
                    columns[f"proba_{name}"] = pa.array(self.probas_[start:stop, code])
                pq.write_table(pa.table(columns), tmp / f"part-{index:05d}.parquet")
        return target
