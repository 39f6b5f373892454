"""Per-task location statistics of the ratings: mean, median, trimmed mean.

These treat every rating alike (no worker model). The median and the trimmed mean
are robust to a minority of outlying ratings per task (the trimmed mean cuts
``floor(proportion * n)`` ratings from each end of a task's ``n``, Tukey's trimmed
mean). All three are computed for every task at once: sums with ``np.bincount``,
order statistics from one sort by ``(task, value)`` (see
:mod:`crowdlearn.aggregation.ratings._base`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation.ratings._base import (
    BaseRatingAggregator,
    task_mad,
    task_median,
    task_std,
    task_trimmed_mean,
    weighted_task_mean,
)
from crowdlearn.data.ratings import Ratings


class Mean(BaseRatingAggregator):
    """The mean rating of each task.

    Attributes
    ----------
    values_ : ndarray (n_tasks,)
        Mean rating (NaN for a task without ratings).
    spread_ : ndarray (n_tasks,)
        Standard deviation of the task's ratings (ddof=0; 0 for one rating).

    Examples
    --------
    >>> from crowdlearn.data import Ratings
    >>> data = Ratings.from_arrays(["a", "a", "b"], ["w1", "w2", "w1"], [4, 5, 2])
    >>> Mean().fit(data).values_
    array([4.5, 2. ])
    """

    def __init__(self) -> None:
        pass

    def _fit(self, data: Ratings) -> None:
        self.values_ = weighted_task_mean(data.task, data.value, None, data.n_tasks)
        self.spread_ = task_std(data, self.values_)


class Median(BaseRatingAggregator):
    """The median rating of each task (the mean of the two middle ones for an even count).

    Attributes
    ----------
    values_ : ndarray (n_tasks,)
    spread_ : ndarray (n_tasks,)
        Median absolute deviation from the median times 1.4826 (a standard deviation
        for normal ratings; 0 when most ratings agree).

    Examples
    --------
    >>> from crowdlearn.data import Ratings
    >>> data = Ratings.from_arrays(["a"] * 3 + ["b"] * 2, list("xyzxy"), [1, 2, 90, 3, 4])
    >>> Median().fit(data).values_
    array([2. , 3.5])
    """

    def __init__(self) -> None:
        pass

    def _fit(self, data: Ratings) -> None:
        self.values_ = task_median(data.task, data.value, data.n_tasks)
        self.spread_ = task_mad(data, self.values_)


class TrimmedMean(BaseRatingAggregator):
    """The mean of each task's ratings after cutting a proportion from each end.

    Parameters
    ----------
    proportion : float, default 0.1
        Share of a task's ratings cut from each end, rounded down (with 10 ratings and
        0.1, the lowest and the highest are dropped); at least one rating is kept.
        0 is the mean; values near 0.5 approach the median.

    Attributes
    ----------
    values_ : ndarray (n_tasks,)
    spread_ : ndarray (n_tasks,)
        Standard deviation of all the task's ratings around ``values_``.

    Examples
    --------
    >>> from crowdlearn.data import Ratings
    >>> data = Ratings.from_arrays(["a"] * 5, list("vwxyz"), [1, 2, 3, 4, 100])
    >>> TrimmedMean(proportion=0.2).fit(data).values_
    array([3.])
    """

    param_bounds: ClassVar[dict[str, Bounds]] = {"proportion": Bounds(0, 0.5, high_open=True)}

    def __init__(self, proportion: float = 0.1) -> None:
        self.proportion = proportion

    def _fit(self, data: Ratings) -> None:
        self.values_ = task_trimmed_mean(data.task, data.value, data.n_tasks, self.proportion)
        self.spread_ = task_std(data, self.values_)
        self.values_ = np.asarray(self.values_, dtype=np.float64)
