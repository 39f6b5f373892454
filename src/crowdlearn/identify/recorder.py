"""The learner behind AUM and WAUM (:mod:`crowdlearn.identify.difficulty`).

A module of its own because it subclasses a torch learner: ``import crowdlearn.identify``
(which ``crowdlearn next`` and ``crowdlearn identify`` need) does not load torch until a
score trains a classifier.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crowdlearn.data import CrowdData
from crowdlearn.identify._margins import margins
from crowdlearn.learning.two_stage import TwoStage


class MarginRecorder(TwoStage):
    """A :class:`TwoStage` learner that records, after every epoch, the margin of every
    candidate label of every training task (for AUM/WAUM).

    Attributes
    ----------
    margin_sum_ : ndarray (n_tasks, K)
        Sum over epochs of :func:`margins` of the classifier's probabilities.
    n_recorded_ : int
        Number of epochs recorded.
    last_proba_ : ndarray (n_tasks, K)
        The classifier's probabilities after the last epoch.
    """

    def _prepare(self, data: CrowdData, inputs: Any) -> None:
        super()._prepare(data, inputs)
        self.margin_sum_ = np.zeros((data.n_tasks, data.n_classes))
        self.n_recorded_ = 0

    def _epoch_end(self, context: Any) -> dict[str, float]:
        proba = context.classifier_proba()
        self.margin_sum_ += margins(proba)
        self.n_recorded_ += 1
        self.last_proba_ = proba
        return super()._epoch_end(context)

    @property
    def aum_table_(self) -> np.ndarray:
        """AUM of every (task, candidate label): ``margin_sum_ / n_recorded_``."""
        return self.margin_sum_ / max(self.n_recorded_, 1)
