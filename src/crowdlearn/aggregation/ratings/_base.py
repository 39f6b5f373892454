"""What every ratings aggregator shares: the estimator contract and vectorised
per-task statistics (weighted means, medians, trimmed means, spreads).

All per-task statistics are computed without a Python loop over tasks: sums with
``np.bincount``, order statistics from one sort of the annotations by
``(task, value)`` and index arithmetic on the sorted array.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation._kind_base import KindAggregator
from crowdlearn.data.ratings import Ratings

#: 1 / Phi^-1(3/4): scales a median absolute deviation to a normal standard deviation.
MAD_TO_STD = 1.482602218505602
PROBABILITY = Bounds(0, 1, low_open=True, high_open=True)
POSITIVE = Bounds(0, low_open=True)


class BaseRatingAggregator(KindAggregator):
    """Base class of ratings aggregators (scikit-learn estimator contract).

    Subclasses implement ``_fit(data)``, which sets ``values_`` (n_tasks,) and, where
    the method has one, ``spread_`` (n_tasks,). ``fit`` checks the input type and the
    numeric parameters, then records ``task_ids_``, ``worker_ids_`` and ``levels_``.

    Aggregation is transductive: ``predict()`` returns ``values_`` for the tasks of the
    data given to ``fit``. A task without any rating gets ``NaN`` (nothing is known
    about it); every rated task gets a finite value.

    ``worker_attributes`` names the learned per-worker arrays (first axis = worker code).
    Ordinal data (``data.levels`` set) are aggregated on their ranks ``0 .. L-1``.
    """

    data_type = Ratings
    build_hint = (
        "build one with Ratings.from_arrays(task, worker, value) or "
        "Ratings.from_frame(df, label=...)"
    )
    result = "values_"
    frame_kind = "rating"
    label_spellings = ("rating", "value", "score")
    #: After a DataFrame fit: Series (DataFrames for ``probas_``) indexed by task id.
    task_results = ("values_", "spread_", "labels_", "probas_")
    #: The unit of each worker attribute as a power of the ratings' unit (a variance: 2,
    #: a precision or a weight in 1 / rating^2: -2, a bias: 1); 0 (unitless) when absent.
    worker_units: ClassVar[dict[str, int]] = {}

    def _from_frame(self, frame: pd.DataFrame) -> Ratings:
        """Ratings from a (task, worker, label) DataFrame (``rating``, ``value`` or
        ``score`` may name the answer column): numbers, or an ordered
        ``pandas.Categorical`` whose categories, lowest first, are the levels (the
        ratings are then ordinal)."""
        from crowdlearn.io.kinds import read_kind

        name = "label"
        if "label" not in frame.columns:
            name = next((n for n in self.label_spellings if n in frame.columns), "label")
        column = frame[name] if name in frame.columns else None
        order = None
        if isinstance(getattr(column, "dtype", None), pd.CategoricalDtype) and column.cat.ordered:
            order = list(column.cat.categories)
            frame = frame.assign(**{name: column.astype(object)})
        return read_kind(frame, "rating", columns={"label": name}, order=order)

    def _fit_data(self, data: Any) -> None:
        """Aggregate the ratings of every task of ``data``.

        Numbers too large or too small for their squares to be computed in float64
        (largest magnitude ``>= 2**256`` or ``< 2**-256``) are aggregated in a scaled unit
        (a power of two, so the scaling itself is exact) and the results are scaled back:
        ``values_`` and ``spread_`` in the ratings' unit, the worker attributes by their
        ``worker_units``. A worker variance beyond float64's range is then ``inf`` (its
        precision 0); every rated task's value and spread stay finite.
        """
        exponent = rescaling_exponent(data)
        if not exponent:
            super()._fit_data(data)
            return
        super()._fit_data(scaled_ratings(data, -exponent))
        units = {"values_": 1, "spread_": 1, **self.worker_units}
        with np.errstate(over="ignore", under="ignore"):
            for name, power in units.items():
                if power and getattr(self, name, None) is not None:
                    value = np.asarray(getattr(self, name), dtype=np.float64)
                    setattr(self, name, np.ldexp(value, power * exponent))

    def _fitted(self, data: Ratings) -> None:
        self.levels_ = data.levels


#: Ratings whose largest magnitude lies outside [2**-LIMIT, 2**LIMIT) are aggregated scaled.
RESCALE_LIMIT = 256


def rescaling_exponent(data: Ratings) -> int:
    """The power of two by which numeric ratings are divided before aggregation: 0 when
    their largest magnitude is within ``[2**-RESCALE_LIMIT, 2**RESCALE_LIMIT)`` (or they are
    ordinal, or all zero), else the exponent that brings it into ``[0.5, 1)``."""
    if data.levels is not None or data.n_annotations == 0:
        return 0
    largest = float(np.max(np.abs(data.value)))
    if largest == 0.0:
        return 0
    exponent = math.frexp(largest)[1]
    return exponent if abs(exponent) > RESCALE_LIMIT else 0


def scaled_ratings(data: Ratings, exponent: int) -> Ratings:
    """``data`` with its values (and truth) multiplied by ``2**exponent`` (exactly, but
    for values that underflow to 0)."""
    with np.errstate(under="ignore"):
        truth = None if data.truth is None else np.ldexp(data.truth, exponent)
        return Ratings(
            data.task,
            data.worker,
            np.ldexp(data.value, exponent),
            task_ids=data.task_ids,
            worker_ids=data.worker_ids,
            n_tasks=data.n_tasks,
            truth=truth,
            features=data.features,
            duplicates="keep",
        )


# --------------------------------------------------------------------------- statistics


def weighted_task_mean(
    task: np.ndarray, value: np.ndarray, weight: np.ndarray | None, n_tasks: int
) -> np.ndarray:
    """Per-task weighted mean of ``value`` (NaN where a task has no weight)."""
    if weight is None:
        weight = np.ones_like(value)
    totals = np.bincount(task, weights=weight, minlength=n_tasks)
    sums = np.bincount(task, weights=weight * value, minlength=n_tasks)
    out = np.full(n_tasks, np.nan)
    np.divide(sums, totals, out=out, where=totals > 0)
    return out


def task_std(data: Ratings, centre: np.ndarray) -> np.ndarray:
    """Per-task root mean squared deviation from ``centre`` (NaN for unrated tasks)."""
    deviation = (data.value - centre[data.task]) ** 2
    return np.sqrt(weighted_task_mean(data.task, deviation, None, data.n_tasks))


def sorted_by_task(task: np.ndarray, value: np.ndarray, n_tasks: int) -> tuple[np.ndarray, ...]:
    """Values sorted by (task, value), each task's first position and count."""
    order = np.lexsort((value, task))
    counts = np.bincount(task, minlength=n_tasks)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return value[order], starts, counts


def task_median(task: np.ndarray, value: np.ndarray, n_tasks: int) -> np.ndarray:
    """Per-task median (mean of the two middle values for an even count; NaN unrated)."""
    ordered, starts, counts = sorted_by_task(task, value, n_tasks)
    rated = counts > 0
    out = np.full(n_tasks, np.nan)
    low = starts[rated] + (counts[rated] - 1) // 2
    high = starts[rated] + counts[rated] // 2
    out[rated] = 0.5 * (ordered[low] + ordered[high])
    return out


def task_trimmed_mean(
    task: np.ndarray, value: np.ndarray, n_tasks: int, proportion: float
) -> np.ndarray:
    """Per-task mean after cutting ``floor(proportion * count)`` values from each end."""
    ordered, starts, counts = sorted_by_task(task, value, n_tasks)
    sorted_task = np.repeat(np.arange(n_tasks), counts)
    rank = np.arange(len(ordered)) - starts[sorted_task]
    cut = np.floor(proportion * counts).astype(np.int64)
    cut = np.minimum(cut, (counts - 1) // 2)  # always keep at least one value
    keep = (rank >= cut[sorted_task]) & (rank < (counts - cut)[sorted_task])
    return weighted_task_mean(sorted_task[keep], ordered[keep], None, n_tasks)


def task_mad(data: Ratings, median: np.ndarray) -> np.ndarray:
    """Per-task median absolute deviation from ``median``, scaled to a normal std."""
    deviation = np.abs(data.value - median[data.task])
    return MAD_TO_STD * task_median(data.task, deviation, data.n_tasks)


def value_scale(value: np.ndarray) -> float:
    """A positive scale of the ratings (their std; 1 when they are all equal).

    Variance floors are expressed relative to it, so that results scale with the data.
    """
    scale = float(np.std(value))
    return scale if scale > 0 else 1.0


def relative_change(new: np.ndarray, old: np.ndarray, scale: float) -> float:
    """Largest change of the rated tasks' values, in units of ``scale``."""
    diff = np.abs(new - old)
    diff = diff[np.isfinite(diff)]
    return float(diff.max() / scale) if len(diff) else 0.0


def squared_errors(
    data: Ratings, values: np.ndarray, weight: np.ndarray, leave_one_out: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Each rating's squared error, and which ratings have something to be compared with.

    Without ``leave_one_out`` the error is against ``values`` (the current truth) and every
    rating counts. With it, the truth of the rating's task is recomputed without the
    rating itself, ``(S_i - w_a y_a) / (W_i - w_a)`` with ``S_i``, ``W_i`` the task's
    weighted sum and total weight under the per-annotation ``weight``: a worker then
    cannot lower its own error by pulling the truth towards itself (the runaway in which
    one worker's weight grows without bound and the truth becomes its ratings). A rating
    alone on its task has nothing to be compared with and does not count.
    """
    if not leave_one_out:
        return (data.value - values[data.task]) ** 2, np.ones(data.n_annotations, dtype=bool)
    sums = np.bincount(data.task, weights=weight * data.value, minlength=data.n_tasks)
    totals = np.bincount(data.task, weights=weight, minlength=data.n_tasks)
    rest = totals[data.task] - weight
    counts = np.bincount(data.task, minlength=data.n_tasks)
    comparable = (counts[data.task] > 1) & (rest > 1e-12 * totals[data.task])
    others = np.zeros(data.n_annotations)
    np.divide(sums[data.task] - weight * data.value, rest, out=others, where=comparable)
    return np.where(comparable, (data.value - others) ** 2, 0.0), comparable


def worker_error_sums(
    data: Ratings, errors: np.ndarray, comparable: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's sum of squared errors and number of comparable ratings."""
    sse = np.bincount(data.worker, weights=errors, minlength=data.n_workers)
    counts = np.bincount(data.worker[comparable], minlength=data.n_workers)
    return sse, counts.astype(np.float64)
