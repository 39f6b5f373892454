"""Wawa: Worker Agreement With Aggregate.

The heuristic of crowd-kit's ``Wawa`` (Toloka; also peerannot's ``WAWA``, Lefort et
al., Computo 2024, which writes it as one step of iterative weighted majority voting):

1. the majority vote ``MV_i`` of each task, ties going to the lowest class code
   (crowd-kit takes the first tied class in the order pandas' ``value_counts`` lists
   the labels, which is not always the lowest; without ties the two agree exactly);
2. each worker's skill ``s_j``: the share of its annotations that equal the majority
   vote (peerannot's ``beta_j`` equation for WAWA);
3. a weighted majority vote with the skills as weights
   (:mod:`crowdlearn.aggregation.weighted_vote`).
"""

from __future__ import annotations

import numpy as np

import crowdlearn.aggregation._incremental_kernels as _ik
from crowdlearn.aggregation._base import BaseAggregator, TieBreak
from crowdlearn.aggregation._blocks import BlockReader, chunked_vote_counts
from crowdlearn.aggregation._incremental import Merge, RefitMixin, _grown, _is_identity
from crowdlearn.aggregation.weighted_vote import (
    vote_shares,
    weighted_scores,
)
from crowdlearn.data import CrowdData


class Wawa(RefitMixin, BaseAggregator):
    """Majority vote weighted by each worker's agreement with the plain majority vote.

    Parameters
    ----------
    tie_break : {"random", "lowest"}, default "random"
        How ``labels_`` breaks ties of the final weighted vote. The first, unweighted
        vote that measures the skills always breaks ties to the lowest class code,
        so the skills do not depend on a random draw.
    random_state : int, default 0
        Seed of the random tie-break.
    chunk_size : int, optional
        Run the three vote passes over blocks of about this many annotations (bounded
        temporaries, docs/scale.md); None (default) runs them on all annotations at
        once. Same results either way.

    Attributes
    ----------
    probas_ : ndarray of shape (n_tasks, n_classes)
        Share of the task's skill-weighted votes for each class; uniform for tasks
        without annotations or whose voters all have skill 0.
    labels_ : ndarray of shape (n_tasks,)
    skills_ : ndarray of shape (n_workers,)
        Share of each worker's annotations that agree with the majority vote (0 for
        workers without annotations).
    crowd_ : CrowdData
        The annotations fitted so far.

    Notes
    -----
    :meth:`partial_fit` adds the new votes to the held vote counts of the tasks that
    received them (a new label can change a majority, hence the skill of every worker
    of that task), moves those tasks' annotations' agreement counts to the new
    majorities, and runs the weighted vote of all tasks again (one pass over the held
    and new annotations, without merging them when the new ids sort after the held
    ones): the arithmetic of a refit on the merged annotations, so its result (equal
    to a refit on the annotations in another row order up to floating-point
    rounding). Without the held counts (a loaded state, ``chunk_size``) or when held
    codes move, it refits on the merged annotations.

    Examples
    --------
    >>> from crowdlearn import CrowdData
    >>> data = CrowdData.from_arrays(
    ...     task=[0, 0, 0, 1, 1, 1, 2, 2],
    ...     worker=["a", "b", "c", "a", "b", "c", "a", "c"],
    ...     label=[0, 0, 1, 1, 1, 1, 0, 1],
    ... )
    >>> model = Wawa().fit(data)
    >>> model.skills_.round(3)  # task 2 is a 1-1 tie, so its majority vote is class 0
    array([1.   , 1.   , 0.333])
    >>> model.predict_proba()[2]
    array([0.75, 0.25])
    """

    worker_attributes = ("skills_",)
    accepts_anonymous = False
    state_attributes = ("skills_",)

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
        self._votes = None
        if self.chunk_size is None:
            # majority_labels(data), with its vote counts kept for partial_fit
            votes = weighted_scores(data, np.ones(data.n_workers))
            agree = data.label == votes.argmax(axis=1)[data.task]
            self._agree = np.bincount(data.worker, weights=agree, minlength=data.n_workers)
            self._workload = np.asarray(data.workload).copy()
            self._votes = votes
            self.skills_ = _skills(self._agree, self._workload)
            self.probas_ = vote_shares(weighted_scores(data, self.skills_))
            return
        majority = chunked_vote_counts(data, self.chunk_size).argmax(axis=1)
        agree = np.zeros(data.n_workers)
        blocks = BlockReader(data, self.chunk_size)
        for block in blocks:
            right = block.label == majority[block.start : block.stop][block.task]
            agree += np.bincount(block.worker, weights=right, minlength=data.n_workers)
        totals = data.workload
        self.skills_ = np.divide(agree, totals, out=np.zeros(data.n_workers), where=totals > 0)
        scores = np.zeros((data.n_tasks, data.n_classes))
        for block in blocks:
            cells = block.task.astype(np.int64) * data.n_classes + block.label
            weights = self.skills_[block.worker]
            part = np.bincount(cells, weights=weights, minlength=block.n_tasks * data.n_classes)
            scores[block.start : block.stop] = part.reshape(block.n_tasks, data.n_classes)
        self.probas_ = vote_shares(scores)

    def _appends(self, refresh: int) -> bool:
        return self.chunk_size is None

    def _partial_update(self, merge: Merge) -> None:
        """The three passes of a refit, the first two on the touched tasks only: their
        vote counts get the new votes, their majority may change, and so the
        agreement counts of the workers of their annotations (held ones: the old
        majority's agreement out, the new one's in); the skills follow, then the
        weighted vote of all tasks (one pass over the held annotations and the new
        ones, without merging them: :func:`_incremental_kernels.store_votes`). The
        same arithmetic as a refit on the merged annotations (integer counts; the
        weighted sums in the same row order), so the same result. A refit where the
        counts are not held (a state file, a chunked fit) or held codes moved."""
        votes = getattr(self, "_votes", None)
        kept = len(merge.class_map) == merge.n_classes and _is_identity(merge.task_map)
        if (
            votes is None
            or not kept
            or not _is_identity(merge.worker_map)
            or len(votes) != len(self.probas_)
        ):
            RefitMixin._partial_update(self, merge)
            return
        k, n_workers, touched = merge.n_classes, merge.n_workers, merge.touched
        block, new = merge.block(), merge.is_new
        n_old = len(votes)
        votes = _grown(votes, merge.n_tasks)
        votes[n_old:] = 0.0
        before = votes[touched].argmax(axis=1)
        cells = block.task[new].astype(np.int64) * k + block.label[new]
        added = np.bincount(cells, minlength=len(touched) * k).reshape(len(touched), k)
        votes[touched] += added
        after = votes[touched].argmax(axis=1)
        agree = np.zeros(n_workers)
        agree[: len(self._agree)] = self._agree
        workload = np.zeros(n_workers, dtype=self._workload.dtype)
        workload[: len(self._workload)] = self._workload
        held = ~new
        was = block.label[held] == before[block.task[held]]
        agree -= np.bincount(block.worker[held], weights=was, minlength=n_workers)
        now = block.label == after[block.task]
        agree += np.bincount(block.worker, weights=now, minlength=n_workers)
        workload += np.bincount(block.worker[new], minlength=n_workers)
        skills = _skills(agree, workload)
        probas = None
        store = merge.store
        if _ik.wanted(store.n_annotations):  # the weighted votes and their shares
            store.sort()
            base = store.data_base()
            probas = _ik.store_votes(
                store.pointer, base.worker, base.label, store.tail, skills, merge.n_tasks, k,
                shares=True,
            )  # fmt: skip
        if probas is None:
            probas = vote_shares(weighted_scores(merge.data, skills))
        self._votes, self._agree, self._workload = votes, agree, workload
        self.skills_ = skills
        self.probas_ = probas


def _skills(agree: np.ndarray, workload: np.ndarray) -> np.ndarray:
    """Each worker's share of annotations equal to the majority vote (0 without
    annotations): ``weighted_vote.worker_accuracy``'s division, from the counts."""
    return np.divide(agree, workload, out=np.zeros(len(agree)), where=workload > 0)
