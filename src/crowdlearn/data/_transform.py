"""CrowdData's transformations: copies with other truth, features, inputs or workers, and
subsets of annotations, tasks or workers; conversion to a DataFrame and the truth as a
Series.

They live in :class:`_CrowdDataTransformations`, a base class of
:class:`~crowdlearn.data.CrowdData`, and return new objects through ``_replace``
without re-validating what is unchanged (the parts they change are checked here).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from crowdlearn.data._ids import CODE_DTYPE, as_id_array
from crowdlearn.data._validation import (
    _check_range,
    _features_by_task,
    _normalise_truth,
    _readonly,
    _truth_by_task,
    _truth_codes,
    _validate_features,
    _validate_truth_codes,
)
from crowdlearn.data.errors import CrowdDataError, show

if TYPE_CHECKING:
    from crowdlearn.data.crowddata import CrowdData


class _CrowdDataTransformations:
    """The transformations of :class:`~crowdlearn.data.CrowdData` (a base class of it)."""

    def with_truth(self, truth: Any) -> CrowdData:
        """A copy with ``truth`` (user class ids; array, Mapping or Series as in
        :meth:`from_arrays`), or without truth when ``truth`` is None."""
        if truth is None:
            return self._replace(truth=None)
        values = _truth_by_task(truth, self.task_ids)
        codes = _truth_codes(values, self.classes)
        return self._replace(truth=_validate_truth_codes(codes, self.n_tasks, self.n_classes))

    def with_features(self, features: Any) -> CrowdData:
        """A copy with ``features`` (array aligned with task codes, or a DataFrame
        indexed by task id), or without features when ``features`` is None."""
        features = _features_by_task(features, self.task_ids)
        return self._replace(features=_validate_features(features, self.n_tasks))

    def with_inputs(self, inputs: Any) -> CrowdData:
        """A copy whose tasks have ``inputs`` (one item per task, in task-code order),
        e.g. :class:`~crowdlearn.data.inputs.ImageFolderInputs`; ``None`` removes them.

        Inputs are objects referring to files: :meth:`equals` compares them by identity.
        """
        if inputs is not None:
            from crowdlearn.data.inputs import as_inputs

            inputs = as_inputs(inputs)
            if len(inputs) != self.n_tasks:
                raise CrowdDataError(
                    f"inputs have {len(inputs)} items but there are {self.n_tasks} tasks"
                )
        return self._replace(inputs=inputs)

    def anonymous(self) -> CrowdData:
        """A copy without worker identities (the Global setting)."""
        return self._replace(worker=None, worker_ids=_readonly(np.empty(0, dtype=np.int64)))

    def subsample(
        self, fraction: float, seed: int | None = 0, keep_one_per_task: bool = True
    ) -> CrowdData:
        """Keep a random ``fraction`` of the annotations (sparsity experiments).

        Parameters
        ----------
        fraction : float in (0, 1]
            Share of annotations kept (``round(fraction * n_annotations)`` of them).
            To *remove* a fraction ``p``, pass ``1 - p``.
        seed : int or None
            Seed of the random draw; the same seed keeps the same annotations.
        keep_one_per_task : bool, default True
            Every task that has annotations keeps at least one, chosen at random;
            if that needs more annotations than ``fraction`` allows, it wins.

        Returns
        -------
        CrowdData
            Same tasks, workers and classes; annotations keep their relative order.
        """
        if not 0 < fraction <= 1:
            raise CrowdDataError(f"fraction must be in (0, 1], got {fraction}")
        rng = np.random.default_rng(seed)
        n = self.n_annotations
        n_keep = round(fraction * n)
        order = rng.permutation(n)
        if keep_one_per_task:
            _, first = np.unique(self.task[order], return_index=True)
            chosen_first = np.zeros(n, dtype=bool)
            chosen_first[first] = True
            extra = max(n_keep - len(first), 0)
            kept = np.concatenate([order[chosen_first], order[~chosen_first][:extra]])
        else:
            if n_keep == 0:
                raise CrowdDataError(f"fraction={fraction} keeps no annotation out of {n}")
            kept = order[:n_keep]
        kept.sort()
        return self._take_annotations(kept)

    def split(
        self, test_size: float = 0.2, seed: int | None = 0, stratify: bool = False
    ) -> tuple[CrowdData, CrowdData]:
        """Split the tasks in two (e.g. train and validation), with their annotations.

        Workers and classes keep their codes in both parts, so per-worker parameters
        learned on one part apply to the other.

        Parameters
        ----------
        test_size : float in (0, 1) or int
            Share (or number) of tasks in the second part.
        seed : int or None
        stratify : bool
            Keep the class proportions of the known truth in both parts.
        """
        from sklearn.model_selection import train_test_split

        tasks = np.arange(self.n_tasks)
        labels = None
        if stratify:
            if self.truth is None or np.any(self.truth < 0):
                raise CrowdDataError("stratify=True needs the truth of every task")
            labels = self.truth
        try:
            first, second = train_test_split(
                tasks, test_size=test_size, random_state=seed, stratify=labels
            )
        except ValueError as exc:
            raise CrowdDataError(f"cannot split {self.n_tasks} tasks: {exc}") from exc
        return self.select_tasks(np.sort(first)), self.select_tasks(np.sort(second))

    def select_tasks(self, tasks: Any) -> CrowdData:
        """Keep some tasks (codes, or a boolean mask of length n_tasks) and their
        annotations; tasks are re-coded in the given order."""
        codes = np.asarray(tasks)
        if codes.dtype == bool:
            if codes.shape != (self.n_tasks,):
                raise CrowdDataError(
                    f"task mask has shape {codes.shape}, expected ({self.n_tasks},)"
                )
            codes = np.flatnonzero(codes)
        codes = codes.astype(np.int64, copy=False)
        _check_range(codes, self.n_tasks, "selected task")
        if len(np.unique(codes)) != len(codes):
            raise CrowdDataError("selected tasks repeat some task codes")
        new_code = np.full(self.n_tasks, -1, dtype=np.int64)
        new_code[codes] = np.arange(len(codes))
        kept = np.flatnonzero(new_code[self.task] >= 0)
        if len(kept) == 0:
            raise CrowdDataError("empty data: the selected tasks have no annotations")
        return self._replace(
            task=_readonly(new_code[self.task[kept]].astype(CODE_DTYPE)),
            worker=None if self.worker is None else _readonly(self.worker[kept]),
            label=_readonly(self.label[kept]),
            task_ids=_readonly(self.task_ids[codes]),
            features=None if self.features is None else _readonly(self.features[codes]),
            inputs=None if self.inputs is None else self.inputs.subset(codes),
            truth=_normalise_truth(None if self.truth is None else self.truth[codes]),
        )

    def restrict_to_workers(
        self, workers: Iterable[Any], drop_empty_tasks: bool = False
    ) -> CrowdData:
        """Keep only the annotations of the given workers (by worker id).

        Workers are re-coded in the order of their current codes. Tasks are kept,
        even those left without annotations, unless ``drop_empty_tasks``.
        """
        if self.worker is None:
            raise CrowdDataError("anonymous data has no workers to restrict to")
        wanted = as_id_array(list(workers))
        positions = pd.Index(self.worker_ids).get_indexer(wanted)
        if np.any(positions < 0):
            raise CrowdDataError(f"unknown worker ids: {show(wanted[positions < 0])}")
        keep_worker = np.zeros(self.n_workers, dtype=bool)
        keep_worker[positions] = True
        new_code = np.cumsum(keep_worker) - 1
        kept = np.flatnonzero(keep_worker[self.worker])
        if len(kept) == 0:
            raise CrowdDataError("empty data: the selected workers have no annotations")
        data = self._replace(
            task=_readonly(self.task[kept]),
            worker=_readonly(new_code[self.worker[kept]].astype(CODE_DTYPE)),
            label=_readonly(self.label[kept]),
            worker_ids=_readonly(self.worker_ids[keep_worker]),
        )
        if drop_empty_tasks:
            data = data.select_tasks(data.feedback_effort > 0)
        return data

    def to_frame(self, truth: bool = False) -> pd.DataFrame:
        """One row per annotation with the user's ids: columns task, worker, label
        (no worker column when anonymous), and a ``truth`` column if asked
        (missing where unknown)."""
        columns: dict[str, Any] = {"task": self.task_ids[self.task]}
        if self.worker is not None:
            columns["worker"] = self.worker_ids[self.worker]
        columns["label"] = self.classes[self.label]
        if truth:
            columns["truth"] = self._truth_column()
        return pd.DataFrame(columns)

    def _truth_column(self) -> Any:
        """Each annotation's task truth; nullable dtypes keep int and bool classes exact
        where some truth is missing (a float column would round ids above 2**53)."""
        codes = np.full(self.n_annotations, -1) if self.truth is None else self.truth[self.task]
        known = codes >= 0
        values = self.classes[np.where(known, codes, 0)]
        if self.classes.dtype.kind == "b":
            return pd.arrays.BooleanArray(values, ~known)
        if self.classes.dtype.kind in "iu":
            return pd.arrays.IntegerArray(values.astype(np.int64), ~known)
        column = values.astype(object)
        column[~known] = None
        return column

    def truth_series(self) -> pd.Series:
        """Known truth as a Series of class ids indexed by task id."""
        if self.truth is None:
            return pd.Series(
                [], dtype=object, index=pd.Index(self.task_ids[:0], name="task"), name="truth"
            )
        known = self.truth >= 0
        return pd.Series(
            self.classes[self.truth[known]],
            index=pd.Index(self.task_ids[known], name="task"),
            name="truth",
        )

    def _take_annotations(self, rows: np.ndarray) -> CrowdData:
        return self._replace(
            task=self.task[rows],
            worker=None if self.worker is None else self.worker[rows],
            label=self.label[rows],
        )
