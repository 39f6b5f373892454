"""The base of the per-task answer kinds' aggregators (label sets, ratings, texts,
boxes, masks).

:class:`KindAggregator` owns what their ``fit`` share: the input's type (a TypeError
that says how to build the expected data), the numeric parameters (``_bounds.PARAMS``
and the estimator's own ``param_bounds``), the call to the subclass's ``_fit(data)``
and the ids recorded after it; ``predict`` returns the kind's result attribute.
Comparisons fit per item on rows of their own and keep their own base.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from crowdlearn._bounds import Bounds, check_own_bounds, check_params
from crowdlearn.aggregation._frames import ARRAYS, id_index, keyed_forms, present, restore_arrays


class KindAggregator(BaseEstimator):
    """Base class of the label-set, rating, text, box and mask aggregators.

    Subclasses set ``data_type`` (the kind's data class), ``build_hint`` (how to build
    one, for the TypeError), ``result`` (the fitted attribute ``predict`` returns),
    ``frame_kind`` (the kind :func:`crowdlearn.io.read_kind` reads a DataFrame as) and
    implement ``_fit(data)``; ``_fitted(data)`` adds what a kind records beyond
    ``task_ids_`` and ``worker_ids_``.

    ``fit`` takes the kind's data type (the fitted attributes are then numpy arrays in
    code order) or a pandas DataFrame in the kind's layout (read by ``read_kind``, whose
    errors name the missing columns; the public fitted attributes are then pandas
    objects keyed by the frame's ids: ``task_results`` indexed by task id, with one
    column per class id where they have one per class, ``worker_attributes`` indexed by
    worker id; the arrays stay in ``_fitted_arrays``).
    """

    data_type: ClassVar[type]
    build_hint: ClassVar[str] = ""
    result: ClassVar[str] = ""
    #: The kind of a DataFrame input (``read_kind``'s ``kind``).
    frame_kind: ClassVar[str] = ""
    #: Names the answer column may have in a DataFrame without a ``label`` column.
    label_spellings: ClassVar[tuple[str, ...]] = ()
    #: The per-task fitted attributes keyed by task id after a DataFrame fit.
    task_results: ClassVar[tuple[str, ...]] = ()
    #: The learned per-worker arrays (first axis = worker code), written by the CLI.
    worker_attributes: ClassVar[tuple[str, ...]] = ()
    #: Bounds of the estimator's own numeric parameters (beyond ``_bounds.PARAMS``).
    param_bounds: ClassVar[dict[str, Bounds]] = {}

    def fit(self, data: Any) -> Any:
        """Aggregate the answers of every task of ``data`` (the kind's data type or a
        DataFrame in its layout); returns ``self``."""
        as_frames = isinstance(data, pd.DataFrame)
        if as_frames:
            data = self._from_frame(data)
        if not isinstance(data, self.data_type):
            raise TypeError(
                f"{type(self).__name__}.fit expects a crowdlearn.data.{self.data_type.__name__}"
                f" or a DataFrame, got {type(data).__name__}; {self.build_hint}"
            )
        restore_arrays(self)
        self._fit_data(data)
        self._present(as_frames)
        return self

    def _from_frame(self, frame: pd.DataFrame) -> Any:
        """The kind's data from a DataFrame in its layout (``read_kind``'s reading; an
        answer column spelled as in ``label_spellings`` stands for ``label``)."""
        from crowdlearn.io.kinds import read_kind

        columns = None
        if "label" not in frame.columns:
            spelled = [name for name in self.label_spellings if name in frame.columns]
            if spelled:
                columns = {"label": spelled[0]}
        return read_kind(frame, self.frame_kind, columns=columns)

    def _fit_data(self, data: Any) -> None:
        """The fit proper on the kind's data: parameters, ``_fit``, ids."""
        params = self.get_params(deep=False)
        check_params(type(self).__name__, params)
        check_own_bounds(type(self).__name__, params, self.param_bounds)
        self._fit(data)
        self.task_ids_ = data.task_ids
        self.worker_ids_ = data.worker_ids
        self._fitted(data)

    def _present(self, as_frames: bool) -> None:
        """After a DataFrame fit, the pandas forms of the results (see the class)."""
        if not as_frames:
            present(self, {}, False)
            return
        classes = getattr(self, "classes_", None)
        class_index = None if classes is None else id_index(classes, "label")
        forms = keyed_forms(self, self.task_results, id_index(self.task_ids_, "task"), class_index)
        workers = id_index(self.worker_ids_, "worker")
        forms.update(keyed_forms(self, self.worker_attributes, workers, class_index))
        forms.update(self._other_forms())
        present(self, forms, True)

    def _other_forms(self) -> dict[str, Any]:
        """The pandas forms of a kind's other results (none by default)."""
        return {}

    @property
    def _as_frames(self) -> bool:
        """Whether the last fit was on a DataFrame (the results are pandas objects)."""
        return ARRAYS in self.__dict__

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

    def fit_predict(self, data: Any) -> Any:
        """Fit and return :meth:`predict`: arrays for the kind's data type, pandas
        objects keyed by task id for a DataFrame."""
        return self.fit(data).predict()
