"""Two-third agreement: accept a task's label only when a clear majority agrees.

peerannot's ``TwoThird`` strategy (Lefort et al., "Peerannot: learning from crowdsourced
image datasets with Python", Computo 2024): a task is labelled when it has at least two
votes and its most voted class holds at least two thirds of them,

    s_i = 1{|A(i)| >= 2 and max_k n_ik >= (2/3) |A(i)|},

and left undecided otherwise. Only vote counts are used, so anonymous data works.
"""

from __future__ import annotations

import numpy as np

from crowdlearn.aggregation._base import BaseAggregator, TieBreak
from crowdlearn.aggregation._incremental import RefitMixin
from crowdlearn.aggregation.majority_vote import vote_frequencies
from crowdlearn.data import CrowdData


class TwoThird(RefitMixin, BaseAggregator):
    """Labels of the tasks where at least 2 votes and a two-thirds majority agree.

    Where there is no such consensus, peerannot answers -1; here ``consensus_`` marks
    the decided tasks and the other tasks keep their vote frequencies, so ``labels_``
    is their majority vote. ``np.where(model.consensus_, model.labels_, -1)`` gives
    peerannot's output.

    Parameters
    ----------
    tie_break : {"random", "lowest"}, default "random"
        How ``labels_`` breaks majority-vote ties on tasks without consensus (a
        consensus class is always unique).
    random_state : int, default 0
        Seed of the random tie-break.

    Attributes
    ----------
    probas_ : ndarray of shape (n_tasks, n_classes)
        One-hot on the consensus class where there is consensus, the vote frequencies
        elsewhere (uniform for tasks without annotations).
    labels_ : ndarray of shape (n_tasks,)
    consensus_ : ndarray of bool, shape (n_tasks,)
        Tasks with at least two votes of which at least two thirds agree.
    crowd_ : CrowdData
        The annotations fitted so far.

    Notes
    -----
    :meth:`partial_fit` merges the new annotations with the held ones and counts the
    votes again: the result equals a refit's.

    Examples
    --------
    >>> from crowdlearn import CrowdData
    >>> data = CrowdData.from_arrays(
    ...     task=[0, 0, 0, 1, 1, 2], worker=[0, 1, 2, 0, 1, 0], label=[1, 1, 0, 0, 1, 1]
    ... )
    >>> model = TwoThird().fit(data)
    >>> model.consensus_
    array([ True, False, False])
    >>> model.predict_proba()
    array([[0. , 1. ],
           [0.5, 0.5],
           [0. , 1. ]])
    """

    task_attributes = ("consensus_",)

    state_attributes = ("consensus_",)

    def __init__(self, tie_break: TieBreak = "random", random_state: int | None = 0) -> None:
        self.tie_break = tie_break
        self.random_state = random_state

    def _fit(self, data: CrowdData) -> None:
        counts = data.vote_counts
        n_votes = data.feedback_effort
        top = counts.max(axis=1).toarray().ravel()
        # 3 * top >= 2 * n in integers: no rounding at the two-thirds boundary.
        self.consensus_ = (n_votes >= 2) & (3 * top >= 2 * n_votes)
        probas = vote_frequencies(data)
        winners = probas[self.consensus_].argmax(axis=1)
        # One-hot rows set in place: np.eye(K)[...] would first build a K x K array.
        rows = np.flatnonzero(self.consensus_)
        probas[rows] = 0.0
        probas[rows, winners] = 1.0
        self.probas_ = probas
