"""Majority vote and naive soft labels: the counting baselines.

Majority vote (MV) gives each task the class most of its annotators chose; naive
soft labels (NS) give the vote frequencies themselves (peerannot paper, sec. 3.1,
the two equations for MV and NS). Both ignore who the workers are.
"""

from __future__ import annotations

import numpy as np

import crowdlearn.aggregation._kernels as _kernels
from crowdlearn.aggregation._base import BaseAggregator, TieBreak, break_ties, break_ties_rows
from crowdlearn.aggregation._blocks import chunked_vote_counts
from crowdlearn.aggregation._incremental import VoteCountMixin
from crowdlearn.aggregation.weighted_vote import fused_votes
from crowdlearn.data import CrowdData


def vote_frequencies(data: CrowdData, chunk_size: int | None = None) -> np.ndarray:
    """Share of each task's votes per class, shape (n_tasks, K); uniform for tasks
    without annotations. With ``chunk_size``, the votes are counted block by block."""
    return _frequencies(_counts(data, chunk_size), data.n_classes)


def _frequencies(counts: np.ndarray, n_classes: int) -> np.ndarray:
    counts = counts.astype(np.float64)
    totals = counts.sum(axis=1, keepdims=True)
    uniform = np.full_like(counts, 1.0 / n_classes)
    return np.divide(counts, totals, out=uniform, where=totals > 0)


def _counts(data: CrowdData, chunk_size: int | None) -> np.ndarray:
    if chunk_size is None:
        # The cached sparse counts when the data has them, else (large data) one
        # fused pass (crowdlearn.aggregation._kernels), else the sparse counts.
        if "vote_counts" not in data.__dict__ and _kernels.active(data.n_annotations):
            counts = fused_votes(data)
            if counts is not None:
                return counts
        return data.vote_counts.toarray()
    return chunked_vote_counts(data, chunk_size)


class MajorityVote(VoteCountMixin, BaseAggregator):
    """Majority vote: the most frequent label of each task.

    Parameters
    ----------
    tie_break : {"random", "lowest"}, default "random"
        Ties between classes are broken uniformly at random with ``random_state``,
        or in favour of the lowest class code. Tasks without annotations are a tie
        between all classes.
    random_state : int, default 0
        Seed of the random tie-break (``None`` is refused: results stay reproducible).
    chunk_size : int, optional
        Count the votes in blocks of about this many annotations (dense counts, no
        sparse matrix of the annotations' size); None (default) uses the data's cached
        sparse vote counts. Same results either way (docs/scale.md).

    Attributes
    ----------
    labels_ : ndarray of shape (n_tasks,)
        The chosen class code of each task.
    probas_ : ndarray of shape (n_tasks, n_classes)
        One-hot encoding of ``labels_`` (majority vote is a hard label; see
        :class:`NaiveSoft` for the vote frequencies).
    vote_counts_ : ndarray of shape (n_tasks, n_classes)
        Number of votes for each class.
    crowd_ : CrowdData
        The annotations fitted so far.

    Notes
    -----
    :meth:`partial_fit` adds new annotations to the held vote counts (O(new), plus
    the copy into the merged codes): the result equals a refit on all annotations.

    Examples
    --------
    >>> from crowdlearn import CrowdData
    >>> data = CrowdData.from_arrays([0, 0, 0, 1, 1], [0, 1, 2, 0, 1], [1, 1, 0, 0, 1])
    >>> MajorityVote(tie_break="lowest").fit(data).predict()
    array([1, 0])
    """

    def __init__(
        self,
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
        chunk_size: int | None = None,
    ) -> None:
        self.tie_break = tie_break
        self.random_state = random_state
        self.chunk_size = chunk_size

    def _fit(self, data: CrowdData) -> None:
        if self._fused_fit(data):
            return
        self.vote_counts_ = _counts(data, self.chunk_size)
        self._from_counts(data)

    def _fused_fit(self, data: CrowdData) -> bool:
        """The whole fit in one parallel pass over the annotations (large data sorted
        by task, its vote counts not cached: the counts, the class with the same
        tie-break and random keys, the one-hot rows; the labels are kept for
        ``labels_``); False where it does not apply (see _kernels.majority_vote)."""
        if self.chunk_size is not None or "vote_counts" in data.__dict__:
            return False
        if not _kernels.active(data.n_annotations):
            return False
        fused = _kernels.majority_vote(
            data.task, data.label, data.n_tasks, data.n_classes, self.tie_break, self.random_state
        )
        if fused is None:
            return False
        self.vote_counts_, self.probas_, self._fit_labels = fused
        return True

    def _from_counts(self, data: CrowdData) -> None:
        majority = break_ties(self.vote_counts_, self.tie_break, self.random_state)
        if _kernels.ready(majority.size):  # large: one parallel pass
            probas = _kernels.one_hot(majority, data.n_classes)
            if probas is not None:
                self.probas_ = probas
                return
        # One-hot rows built in place: np.eye(K)[...] would first build a K x K array.
        self.probas_ = np.zeros((len(majority), data.n_classes))
        self.probas_[np.arange(len(majority)), majority] = 1.0

    def _rows_from_counts(
        self, counts: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        scores = counts.astype(np.float64)  # exact: small integers
        majority = break_ties_rows(scores, rows, self.tie_break, self.random_state)
        probas = np.zeros(counts.shape)
        probas[np.arange(len(majority)), majority] = 1.0
        return probas, majority  # the labels: the one-hot rows' classes


class NaiveSoft(VoteCountMixin, BaseAggregator):
    """Naive soft labels: the vote frequencies of each task.

    Parameters
    ----------
    tie_break : {"random", "lowest"}, default "random"
        How ``labels_`` (the argmax) breaks ties; see :class:`MajorityVote`.
    random_state : int, default 0
    chunk_size : int, optional
        Count the votes in blocks of about this many annotations, as in
        :class:`MajorityVote`; None (default) uses the data's cached sparse vote
        counts. Same results either way (docs/scale.md).

    Attributes
    ----------
    probas_ : ndarray of shape (n_tasks, n_classes)
        Share of each task's votes for each class (uniform when a task has none).
    labels_ : ndarray of shape (n_tasks,)
    vote_counts_ : ndarray of shape (n_tasks, n_classes)
        Number of votes for each class.
    crowd_ : CrowdData
        The annotations fitted so far.

    Notes
    -----
    :meth:`partial_fit` updates the vote counts, as :class:`MajorityVote` does (exact).

    Examples
    --------
    >>> from crowdlearn import CrowdData
    >>> data = CrowdData.from_arrays([0, 0, 0, 1], [0, 1, 2, 0], [1, 1, 0, 0])
    >>> NaiveSoft().fit(data).predict_proba().round(3)
    array([[0.333, 0.667],
           [1.   , 0.   ]])
    """

    def __init__(
        self,
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
        chunk_size: int | None = None,
    ) -> None:
        self.tie_break = tie_break
        self.random_state = random_state
        self.chunk_size = chunk_size

    def _fit(self, data: CrowdData) -> None:
        self.vote_counts_ = _counts(data, self.chunk_size)
        self._from_counts(data)

    def _from_counts(self, data: CrowdData) -> None:
        self.probas_ = _frequencies(self.vote_counts_, data.n_classes)

    def _rows_from_counts(
        self, counts: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        return _frequencies(counts, counts.shape[1]), None
