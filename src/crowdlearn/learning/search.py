"""Hyperparameter search without ground truth: one fit per grid point, scored on held-out
crowd annotations (or on labelled instances the user holds out).

:func:`search` is a small grid search over the parameters of a learner built by
:func:`~crowdlearn.learning.make_learner`. Every point is fitted with ``refit=False``
and ranked by its ``selection_score_`` (higher is better): with ``valid="crowd"`` the
held-out annotations' log-likelihood per annotation, with ``valid=(X, y)`` the
validation accuracy (or minus the log-loss). ``data.truth`` is never read.

With ``valid="crowd"`` every point holds out the same tasks: the held-out share is a
deterministic function of the data, ``valid_share``, ``crowd_folds`` and
``random_state`` (see :func:`crowdlearn.learning._validation.crowd_split` and
``crowd_folds``), so the search refuses to vary those in the grid and checks that
every fitted point used the same values; the scores are then comparable.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn._progress import check_progress, progress_bar, progress_scope
from crowdlearn.data import CrowdData
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._registry import make_learner

#: Parameters whose values decide the held-out tasks of ``valid="crowd"``: a grid may
#: not vary them, or the points would be scored on different tasks.
SPLIT_PARAMS = ("random_state", "valid_share", "crowd_folds")
#: Parameters the search sets itself.
RESERVED = ("refit",)


@dataclass
class SearchResult:
    """What :func:`search` found.

    Attributes
    ----------
    results : DataFrame
        One row per grid point, best first: ``rank`` (1 = best), one column per grid
        parameter, ``score`` (the point's ``selection_score_``, higher is better),
        ``selected_epoch``, ``validation`` and ``seconds`` (fit time).
    best_params : dict
        The grid parameters of the best point.
    best_score : float
        Its score.
    best_learner : BaseLearner
        A learner with ``best_params`` fitted on the whole data with the user's
        ``refit`` setting (the learner's default when not given).
    """

    results: pd.DataFrame
    best_params: dict[str, Any]
    best_score: float
    best_learner: BaseLearner


def search(
    spec: str,
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Sequence[Any]]],
    data: CrowdData,
    valid: Any = "crowd",
    *,
    progress: Any = "auto",
    **fixed: Any,
) -> SearchResult:
    """Fit ``spec`` once per point of ``grid`` and keep the best by validation score.

    Parameters
    ----------
    spec : str
        A learner spec for :func:`~crowdlearn.learning.make_learner`, e.g.
        ``"crowdlayer[variant=MW]"``.
    grid : dict of str to list, or list of such dicts
        Parameter name -> values to try; every combination is a point (as scikit-learn's
        ``ParameterGrid``; a list of dicts is the union of their grids). Values may be
        text, converted like ``--param`` on the command line.
    data : CrowdData
        The crowd to learn from (its features or inputs). Its truth is never read.
    valid : "crowd" or (X, y), default "crowd"
        The selection criterion of every fit (see :meth:`BaseLearner.fit`). None is
        refused: without validation there is no score to compare.
    progress : bool or "auto", default "auto"
        A bar over the grid points on stderr; the learners' own epoch bars follow it.
    **fixed
        Parameters of every fit (``max_epochs=10``...). ``refit`` applies to
        ``best_learner`` only: every grid point is fitted with ``refit=False``.

    Returns
    -------
    SearchResult

    Raises
    ------
    ValueError
        An empty grid, a grid value that is not a list, a parameter in both ``grid``
        and ``fixed``, ``refit`` in the grid, ``random_state`` or ``valid_share`` in the
        grid with ``valid="crowd"``, ``valid=None``, or data too small for crowd
        validation. An unknown parameter raises
        :class:`~crowdlearn.data.CrowdDataError` (a ValueError) naming it, before any fit.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.learning import search
    >>> from crowdlearn.simulate import crowd_on_features
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, size=150)
    >>> X = rng.normal(size=(150, 5)) + 2.0 * np.eye(3, 5)[y]
    >>> data = crowd_on_features(X, y, n_workers=10, seed=0)
    >>> found = search("crowdlayer", {"lr": [1e-3, 1e-2]}, data, max_epochs=3, progress=False)
    >>> found.results[["rank", "lr"]].shape
    (2, 2)
    >>> found.best_params["lr"] in (1e-3, 1e-2)
    True
    >>> found.best_learner.predict(X[:4]).shape
    (4,)
    """
    check_progress(progress)
    points = expand_grid(grid)
    _check_valid(valid)
    clashes = sorted({name for point in points for name in point} & set(fixed))
    if clashes:
        raise ValueError(f"{', '.join(clashes)}: given both in the grid and as fixed parameters")
    varied = {name for point in points for name in point}
    reserved = sorted(varied & set(RESERVED))
    if reserved:
        raise ValueError(
            f"the grid may not vary {', '.join(reserved)}: every point is fitted with "
            "refit=False (pass refit=... to set it for the best learner)"
        )
    if _is_crowd(valid):
        split = sorted(varied & set(SPLIT_PARAMS))
        if split:
            raise ValueError(
                f"with valid='crowd' the grid may not vary {', '.join(split)}: they choose "
                "the held-out tasks, and every point must be scored on the same ones"
            )
    refit = fixed.pop("refit", None)
    # build every learner first: an unknown parameter or a bad value fails before any fit
    learners = [make_learner(spec, **fixed, **point, refit=False) for point in points]
    rows: list[dict[str, Any]] = []
    fitted: list[BaseLearner] = []
    split_values: tuple[Any, ...] | None = None
    best = -np.inf
    with progress_scope(progress) as shown:
        bar = progress_bar(learners, progress=shown, desc=f"search {spec}", unit="fit")
        for point, learner in zip(points, bar, strict=True):
            start = time.perf_counter()
            learner.fit(data, valid=valid)
            seconds = time.perf_counter() - start
            if learner.selection_score_ is None:
                raise ValueError(
                    f"the fit was not validated ({learner.validation_}): the data are too "
                    "small for crowd validation, so a search has nothing to compare"
                )
            if _is_crowd(valid):
                used = tuple(getattr(learner, name) for name in SPLIT_PARAMS)
                split_values = used if split_values is None else split_values
                # the held-out tasks depend on these only: equal values, same tasks
                assert used == split_values, "grid points were scored on different tasks"
            score = float(learner.selection_score_)
            best = max(best, score)
            bar.set_postfix(best=f"{best:.4g}")
            rows.append(
                {
                    **_resolved(point, learner),
                    "score": score,
                    "selected_epoch": int(learner.selected_epoch_),
                    "validation": learner.validation_,
                    "seconds": seconds,
                }
            )
            fitted.append(learner)
    results = pd.DataFrame(rows)
    order = np.argsort(-results["score"].to_numpy(), kind="stable")  # ties: grid order
    results = results.iloc[order].reset_index(drop=True)
    results.insert(0, "rank", np.arange(1, len(results) + 1))
    winner = int(order[0])
    best_params = _resolved(points[winner], fitted[winner])
    best_learner = _final(spec, fixed, best_params, refit, fitted[winner], data, valid, progress)
    return SearchResult(results, best_params, float(results["score"].iloc[0]), best_learner)


def expand_grid(
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Sequence[Any]]],
) -> list[dict[str, Any]]:
    """Every point of ``grid`` (a dict of lists, or a list of them), in order: the last
    parameter varies fastest, as in ``itertools.product``."""
    if isinstance(grid, Mapping):
        grids: list[Any] = [grid]
    elif isinstance(grid, Sequence) and not isinstance(grid, str):
        grids = list(grid)
    else:
        raise TypeError(f"grid must be a dict of lists or a list of dicts, got {grid!r}")
    if not grids:
        raise ValueError("the grid is empty: give at least one parameter and value")
    points: list[dict[str, Any]] = []
    for one in grids:
        if not isinstance(one, Mapping):
            raise TypeError(f"grid must be a dict of lists or a list of dicts, got {one!r}")
        if not one:
            raise ValueError("the grid is empty: give at least one parameter and value")
        names = list(one)
        values: list[list[Any]] = []
        for name in names:
            options = one[name]
            if isinstance(options, (str, bytes)) or not isinstance(options, Iterable):
                raise TypeError(f"grid values of {name!r} must be a list, got {options!r}")
            options = list(options)
            if not options:
                raise ValueError(f"grid parameter {name!r} has no values")
            values.append(options)
        points.extend(dict(zip(names, combo, strict=True)) for combo in itertools.product(*values))
    return points


def _is_crowd(valid: Any) -> bool:
    return isinstance(valid, str) and valid == "crowd"


def _check_valid(valid: Any) -> None:
    if valid is None:
        raise ValueError(
            "search needs a selection criterion: valid='crowd' (held-out annotations) or "
            "valid=(X, y); valid=None would keep every point's last epoch with no score"
        )
    if isinstance(valid, str) and not _is_crowd(valid):
        raise ValueError(f"valid must be 'crowd' or an (X, y) pair, got {valid!r}")


def _resolved(point: Mapping[str, Any], learner: BaseLearner) -> dict[str, Any]:
    """The point's parameters as the learner holds them (text converted, names as the
    user wrote them)."""
    params = learner.get_params(deep=False)
    lower = {name.lower(): name for name in params}
    resolved = {}
    for key, value in point.items():
        name = key if key in params else lower.get(key.lower())
        resolved[key] = params[name] if name is not None else value
    return resolved


def _final(
    spec: str,
    fixed: dict[str, Any],
    best_params: dict[str, Any],
    refit: Any,
    winner: BaseLearner,
    data: CrowdData,
    valid: Any,
    progress: Any,
) -> BaseLearner:
    """The best point with the user's ``refit``: the fitted winner itself when that
    setting would not retrain (same seed, same fit), else a new fit."""
    options = {} if refit is None else {"refit": refit}
    learner = make_learner(spec, **fixed, **best_params, **options)
    retrains = (
        bool(learner.refit)
        and _is_crowd(valid)
        and learner._refit_supported
        and learner.crowd_folds == 1  # cross-fitting has no refit
    )
    if not retrains:
        winner.set_params(refit=learner.refit)  # as the user asked; it changes nothing here
        return winner
    with progress_scope(progress):
        return learner.fit(data, valid=valid)
