"""Binary reduction ("binary relevance"): one categorical aggregation per class.

Each class ``k`` is aggregated alone as a two-class crowd (selected / not selected,
:meth:`LabelSets.binary <crowdlearn.data.LabelSets.binary>`) by any categorical
strategy of :mod:`crowdlearn.aggregation` (Dawid-Skene, GLAD, one-coin DS, MACE,
majority vote, ...); ``probas_[:, k]`` is that fit's probability of "selected". This is
the reduction every multi-label crowd paper starts from (e.g. Zhang & Wu, KDD 2018,
and Duan, Oyama, Sato & Kurihara, Expert Systems with Applications 2014, call it the
"separate" estimation) and what crowd-kit 1.4.2 calls ``BinaryRelevance``: labels are
inferred independently, so a correlation between classes is not used. With
Dawid-Skene as the base, each worker gets a 2 x 2 confusion matrix per class, i.e. a
sensitivity and a specificity per class.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from crowdlearn.aggregation import BaseAggregator, make_aggregator
from crowdlearn.aggregation.label_sets._base import LabelSetAggregator, posterior_rates
from crowdlearn.data import LabelSets


class BinaryReduction(LabelSetAggregator):
    """One binary aggregation per class with a categorical strategy.

    Parameters
    ----------
    base : str or BaseAggregator, default "ds"
        The categorical strategy fitted on each class: a spec of
        :func:`crowdlearn.aggregation.make_aggregator` (``"ds"``, ``"glad"``,
        ``"onecoin-ds"``, ``"mace"``, ``"mv"``, ``"ds[smoothing=0]"``, ...) or an
        unfitted estimator (cloned for each class).

    Attributes
    ----------
    probas_ : ndarray (n_tasks, n_classes)
        ``probas_[i, k]``: the base model's probability that class ``k`` applies.
    labels_ : ndarray of bool (n_tasks, n_classes)
        ``probas_ > 0.5``.
    sensitivity_, specificity_ : ndarray (n_workers, n_classes)
        Each worker's probability of selecting a class that applies, and of leaving
        out one that does not: the base model's 2 x 2 confusions where it has them
        (``confusions_``), otherwise the rates against ``probas_`` (Laplace-smoothed,
        :func:`~crowdlearn.aggregation.label_sets._base.posterior_rates`).
    estimators_ : list of BaseAggregator
        The fitted per-class estimators.

    Examples
    --------
    >>> from crowdlearn.data import LabelSets
    >>> sets = LabelSets.from_arrays(
    ...     task=[1, 1, 1, 2, 2, 2], worker=["a", "b", "c"] * 2,
    ...     labels=[["x", "y"], ["x"], ["x", "y"], ["z"], ["z"], []],
    ... )
    >>> BinaryReduction(base="mv").fit(sets).labels_.astype(int)
    array([[1, 1, 0],
           [0, 0, 1]])
    """

    worker_attributes = ("sensitivity_", "specificity_")

    def __init__(self, base: str | BaseAggregator = "ds") -> None:
        self.base = base

    def _base_estimator(self) -> BaseAggregator:
        if isinstance(self.base, str):
            estimator = make_aggregator(self.base)
        elif isinstance(self.base, BaseAggregator):
            estimator = clone(self.base)
        else:
            raise TypeError(
                "BinaryReduction: base must be a categorical strategy spec such as 'ds' "
                f"or an aggregator, got {type(self.base).__name__}"
            )
        if "progress" in estimator.get_params():
            estimator.set_params(progress=False)
        return estimator

    def _fit(self, data: LabelSets) -> None:
        self._base_estimator()  # a bad spec fails before the first fit
        self.estimators_ = [
            self._base_estimator().fit(data.binary(k)) for k in range(data.n_classes)
        ]
        self.probas_ = np.column_stack([est.probas_[:, 1] for est in self.estimators_])
        self.sensitivity_, self.specificity_ = self._rates(data)

    def _rates(self, data: LabelSets) -> tuple[np.ndarray, np.ndarray]:
        confusions = [getattr(est, "confusions_", None) for est in self.estimators_]
        if any(c is None for c in confusions):
            return posterior_rates(data, self.probas_)
        stacked = np.stack(confusions, axis=-1)  # (n_workers, 2, 2, n_classes)
        return stacked[:, 1, 1].astype(np.float64), stacked[:, 0, 0].astype(np.float64)
