"""Learning from fixed targets: aggregated crowd labels (two-stage) or the truth.

Two-stage learning first aggregates the crowd labels with any feature-blind method
(majority vote, Dawid-Skene, GLAD, ...), then trains the classifier on the aggregated
labels, as hard labels or as soft labels (the posterior probabilities). ``Supervised``
trains on the ground truth instead: the upper bound of the benchmarks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.base import clone
from torch import nn

from crowdlearn.aggregation import BaseAggregator, MajorityVote
from crowdlearn.data import CrowdData, CrowdDataError, TaskInputs
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatch
from crowdlearn.learning._validation import truth_table


class _TargetLearner(BaseLearner):
    """Cross-entropy against per-task target distributions ``targets_`` (n_tasks, K)."""

    needs_workers = False

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        targets = torch.as_tensor(self.targets_[batch.tasks], device=logits.device)
        return -(targets * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()

    def _method_state(self) -> dict[str, Any]:
        return {"targets_": self.targets_}


class TwoStage(_TargetLearner):
    """Aggregate the crowd labels, then train the classifier on the aggregated labels.

    Parameters
    ----------
    aggregator : aggregation estimator, default MajorityVote()
        Any :class:`~crowdlearn.aggregation.BaseAggregator` (it is cloned, then fitted).
    soft : bool, default False
        Train on the aggregator's probabilities (soft labels) rather than its labels.
    **training
        The shared training parameters (see :class:`BaseLearner`).

    Attributes
    ----------
    aggregator_ : the fitted aggregator
    targets_ : ndarray (n_tasks, K)
        The training targets (one-hot labels, or probabilities with ``soft``).

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> from crowdlearn.aggregation import DawidSkene
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); y = (X[:, 0] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=10, labels_per_task=3, seed=0)
    >>> model = TwoStage(DawidSkene(), soft=True, max_epochs=5).fit(crowd)
    >>> model.predict_proba(X[:3]).shape
    (3, 2)
    """

    def __init__(
        self, aggregator: BaseAggregator | None = None, soft: bool = False, **training: Any
    ) -> None:
        self.aggregator = aggregator
        self.soft = soft
        super().__init__(**training)

    def _prepare(self, data: CrowdData, inputs: TaskInputs) -> None:
        aggregator = MajorityVote() if self.aggregator is None else clone(self.aggregator)
        self.aggregator_ = aggregator.fit(data)
        if self.soft:
            targets = aggregator.predict_proba()
        else:
            targets = np.eye(data.n_classes)[aggregator.predict()]
        self.targets_ = np.asarray(targets, dtype=np.float32)

    def _method_state(self) -> dict[str, Any]:
        return {**super()._method_state(), "aggregator_": self.aggregator_}


class Supervised(_TargetLearner):
    """Train on the ground truth of the training tasks (the upper bound of a benchmark).

    Its labels are the truth, so ``valid="crowd"`` scores the held-out tasks against
    their truth, not against the crowd: the epoch is chosen, and the temperature fitted,
    on the held-out tasks' log-likelihood of the true class (history column
    ``valid_ds_ll``, where the crowd learners write their Dawid-Skene agreement). A
    network trained on clean labels has no reason to be chosen or calibrated by a
    noisier crowd's view of them.

    Parameters
    ----------
    **training
        The shared training parameters (see :class:`BaseLearner`).
    """

    def __init__(self, **training: Any) -> None:
        super().__init__(**training)

    def _prepare(self, data: CrowdData, inputs: TaskInputs) -> None:
        if data.truth is None:
            raise CrowdDataError("Supervised needs the truth of the training tasks")
        known = data.truth >= 0
        self.targets_ = np.zeros((data.n_tasks, data.n_classes), dtype=np.float32)
        self.targets_[np.flatnonzero(known), data.truth[known]] = 1.0

    def _training_tasks(self, data: CrowdData) -> np.ndarray:
        return np.flatnonzero(data.truth >= 0)

    #: crowd validation scores the held-out tasks against their truth
    _held_out_table = staticmethod(truth_table)
