"""Running registered aggregation strategies inside a benchmark.

The strategies are read from :data:`crowdlearn.aggregation.STRATEGIES` at run time, so
a method registered later is benchmarked without editing the benchmark. A spec whose
name is not registered yet (``"DSWC[L=5]"`` before DSWC lands) is reported as such,
and a strategy that cannot run on some data (``KOS`` on non-binary labels) is
recorded as ``n/a`` with the reason, instead of stopping the run.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crowdlearn.aggregation import STRATEGIES, make_aggregator
from crowdlearn.data import CrowdData
from crowdlearn.metrics import acc_train


def spec_name(spec: str) -> str:
    """The registry name of a spec: ``"DSWC[L=5]"`` -> ``"dswc"``."""
    return re.split(r"\[", spec, maxsplit=1)[0].strip().lower()


def is_registered(spec: str) -> bool:
    """Whether the strategy of ``spec`` is in the registry now."""
    return spec_name(spec) in STRATEGIES


def registered_specs(
    parameterised: Iterable[str] = (), only: Sequence[str] | None = None
) -> list[str]:
    """Names of the registered strategies, in registration order.

    Parameters
    ----------
    parameterised : iterable of str
        Specs with parameters (``"DSWC[L=5]"``) that replace their bare name; they are
        listed after the bare names, whether registered or not.
    only : sequence of str, optional
        Keep only these bare names (a quick subset), in this order.
    """
    extra = list(dict.fromkeys(parameterised))
    replaced = {spec_name(spec) for spec in extra}
    names = [name for name in STRATEGIES if name not in replaced]
    if only is not None:
        names = [name for name in only if name in names]
    return names + extra


@dataclass(frozen=True)
class Outcome:
    """One fit of one strategy: accuracy (ties "first" and expected under random
    ties), fit seconds, iterations, the first warning, or the reason it could not run."""

    status: str
    accuracy: float = np.nan
    accuracy_expected_ties: float = np.nan
    fit_seconds: float = np.nan
    n_iter: float = np.nan
    warning: str = ""
    reason: str = ""

    def as_row(self) -> dict[str, Any]:
        return dict(self.__dict__)


def fit_and_score(spec: str, data: CrowdData, seed: int) -> Outcome:
    """Fit ``spec`` on ``data`` and score it against ``data.truth``.

    The estimator's ``random_state`` (when it has one) is ``seed``. Accuracy is AccTrain
    on ``probas_`` with ties to the first class; the expected accuracy under random tie
    breaking uses the vote counts for a method that keeps them (majority vote, whose
    ``probas_`` are already tie-broken) and ``probas_`` otherwise.
    """
    if not is_registered(spec):
        return Outcome("not registered", reason=f"{spec_name(spec)!r} is not registered")
    try:
        model = make_aggregator(spec)
        if "random_state" in model.get_params():
            model.set_params(random_state=seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            model.fit(data)
            seconds = time.perf_counter() - start
    except Exception as error:  # any failure is a result: "n/a" and why
        return Outcome("n/a", reason=f"{type(error).__name__}: {error}")
    scores = getattr(model, "vote_counts_", model.probas_)
    return Outcome(
        "ok",
        accuracy=acc_train(data, model.probas_),
        accuracy_expected_ties=acc_train(data, scores, ties="expected"),
        fit_seconds=seconds,
        n_iter=float(getattr(model, "n_iter_", np.nan)),
        warning=str(caught[0].message) if caught else "",
    )


def mean_std(values: Sequence[float]) -> str:
    """``"0.772 ± 0.031"`` (population std over seeds; just the mean for one value)."""
    array = np.asarray(values, dtype=float)
    if len(array) == 1:
        return f"{array[0]:.3f}"
    return f"{array.mean():.3f} ± {array.std():.3f}"
