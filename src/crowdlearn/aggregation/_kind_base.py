"""The base of the per-task answer kinds' aggregators (label sets, ratings, texts).

:class:`KindAggregator` owns what their ``fit`` share: the input's type (a TypeError
that says how to build the expected data), the numeric parameters (``_bounds.PARAMS``
and the estimator's own ``param_bounds``), the call to the subclass's ``_fit(data)``
and the ids recorded after it; ``predict`` returns the kind's result attribute.
Comparisons fit per item on rows of their own and keep their own base.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from crowdlearn._bounds import Bounds, check_own_bounds, check_params


class KindAggregator(BaseEstimator):
    """Base class of the label-set, rating and text aggregators.

    Subclasses set ``data_type`` (the kind's data class), ``build_hint`` (how to build
    one, for the TypeError), ``result`` (the fitted attribute ``predict`` returns) and
    implement ``_fit(data)``; ``_fitted(data)`` adds what a kind records beyond
    ``task_ids_`` and ``worker_ids_``.
    """

    data_type: ClassVar[type]
    build_hint: ClassVar[str] = ""
    result: ClassVar[str] = ""
    #: The learned per-worker arrays (first axis = worker code), written by the CLI.
    worker_attributes: ClassVar[tuple[str, ...]] = ()
    #: Bounds of the estimator's own numeric parameters (beyond ``_bounds.PARAMS``).
    param_bounds: ClassVar[dict[str, Bounds]] = {}

    def fit(self, data: Any) -> Any:
        """Aggregate the answers of every task of ``data``; returns ``self``."""
        expected = self.data_type.__name__
        if not isinstance(data, self.data_type):
            raise TypeError(
                f"{type(self).__name__}.fit expects a crowdlearn.data.{expected}, got "
                f"{type(data).__name__}; {self.build_hint}"
            )
        params = self.get_params(deep=False)
        check_params(type(self).__name__, params)
        check_own_bounds(type(self).__name__, params, self.param_bounds)
        self._fit(data)
        self.task_ids_ = data.task_ids
        self.worker_ids_ = data.worker_ids
        self._fitted(data)
        return self

    def _fit(self, data: Any) -> None:
        raise NotImplementedError

    def _fitted(self, data: Any) -> None:
        """What the kind records after ``_fit`` (nothing by default)."""

    def _check_fitted(self) -> None:
        if not hasattr(self, self.result):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")

    def predict(self) -> Any:
        """The aggregated answer of each task (the kind's result attribute)."""
        self._check_fitted()
        return getattr(self, self.result)
