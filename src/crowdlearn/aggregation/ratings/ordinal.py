"""Ordinal Dawid-Skene: confusion rows shaped by the order of the levels.

Dawid & Skene (Applied Statistics 28(1), 1979) give each worker a full confusion matrix
``P(answer = a | true level = l)``; with ordered levels most of its ``L (L - 1)`` free
numbers are noise. Here each worker's row for the true level ``l`` is a discretised
Gaussian centred at ``l + b_j`` with spread ``s_j``:

``P_j(a | l) = exp(-(a - l - b_j)^2 / (2 s_j^2)) / sum_a' exp(-(a' - l - b_j)^2 / (2 s_j^2))``

so a worker is a bias (rates high or low) and a spread (careful or careless; a very
large spread is a spammer), errors to neighbouring levels being likelier than distant
ones. This is our own constrained parameterisation of Dawid-Skene, in the spirit of
the ordinal annotator model of Lakshminarayanan & Teh ("Inferring ground truth from
multi-annotator ordinal data: a probabilistic approach", arXiv:1305.0015, 2013: an
annotator bias and precision on a latent scale), not a reimplementation of that paper.

EM, with the Dawid-Skene steps:

* E-step: ``log T_il = log pi_l + sum_{(i, j, a)} log P_j(a | l)``, normalised in log
  space (Dawid & Skene's eq. 2.5);
* M-step: the class prior ``pi_l = mean_i T_il`` (eq. 2.4), and for each worker the
  ``(b_j, s_j)`` maximising ``sum_{l, a} N_j[l, a] log P_j(a | l)`` with
  ``N_j[l, a] = sum_{i: worker j answered a} T_il`` the expected confusion counts
  (eq. 2.3's statistics); the maximisation is over a fixed grid of biases and spreads,
  all workers at once (one matrix product), refined by a finer grid around each
  worker's best point.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation.ratings._base import BaseRatingAggregator
from crowdlearn.data.errors import CrowdDataError
from crowdlearn.data.ratings import Ratings

#: Between (bias, spread) pairs of equal likelihood (a bias pushing every answer past
#: the top level fits as well as a smaller one), the smallest bias wins.
_TIE = 1e-9
#: Numbers per block of workers in the grid search (float64: 32 MiB).
_BLOCK = 1 << 22


def gaussian_rows(levels: int, bias: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """``log P(a | l)`` for each (bias, spread) pair: shape (n_pairs, levels, levels)."""
    rank = np.arange(levels, dtype=np.float64)
    centre = rank[None, :, None] + bias[:, None, None]
    logits = -((rank[None, None, :] - centre) ** 2) / (2 * spread[:, None, None] ** 2)
    logits -= logits.max(axis=2, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=2, keepdims=True))


def _best_on_grid(
    counts: np.ndarray, levels: int, bias: np.ndarray, spread: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per worker, the (bias, spread) pair of the grid with the largest expected
    log-likelihood ``sum N log P``; ``bias`` and ``spread`` are (n_workers, n_pairs)
    candidate grids (one per worker) or (n_pairs,) shared ones.

    Workers go in blocks of about ``_BLOCK`` (worker, pair, cell) numbers, so that the
    temporary tables stay small whatever the crowd size."""
    n_workers = len(counts)
    flat = counts.reshape(n_workers, -1)
    shared = bias.ndim == 1
    n_pairs = len(bias) if shared else bias.shape[1]
    if shared:
        table = gaussian_rows(levels, bias, spread).reshape(n_pairs, -1)
    step = max(1, _BLOCK // (n_pairs * flat.shape[1]))
    best = np.empty(n_workers, dtype=np.int64)
    for start in range(0, n_workers, step):  # blocks of workers, to bound memory
        block = slice(start, start + step)
        if shared:
            scores = flat[block] @ table.T
            penalty = _TIE * np.abs(bias)[None, :]
        else:
            rows = gaussian_rows(levels, bias[block].ravel(), spread[block].ravel())
            rows = rows.reshape(-1, n_pairs, flat.shape[1])
            scores = np.einsum("wk,wpk->wp", flat[block], rows)
            penalty = _TIE * np.abs(bias[block])
        best[block] = (scores - penalty).argmax(axis=1)
    if shared:
        return bias[best], spread[best]
    index = np.arange(n_workers)
    return bias[index, best], spread[index, best]


class OrdinalDawidSkene(BaseRatingAggregator):
    """Dawid-Skene for ordered levels: each worker a bias and a spread (EM).

    Parameters
    ----------
    max_iter : int, default 100
    tol : float, default 1e-6
        Stop when the log-likelihood per rating changes by less than this.
    smoothing : float, default 0.01
        Added to every expected class count of the prior (keeps unused levels possible).

    Attributes
    ----------
    probas_ : ndarray (n_tasks, n_levels)
        Posterior probability of each level.
    labels_ : ndarray (n_tasks,) of int
        The most probable level (rank), lowest on ties; -1 for a task without ratings.
    values_ : ndarray (n_tasks,)
        Posterior mean rank (NaN for a task without ratings).
    spread_ : ndarray (n_tasks,)
        Posterior standard deviation of the rank.
    bias_, sigma_ : ndarray (n_workers,)
        Each worker's bias (in ranks) and spread.
    priors_ : ndarray (n_levels,)
    n_iter_, converged_

    Examples
    --------
    >>> from crowdlearn.simulate.ratings import simulate_ratings
    >>> data = simulate_ratings(n_tasks=200, n_workers=10, levels=5, random_state=0)
    >>> model = OrdinalDawidSkene().fit(data)
    >>> bool((model.labels_ == data.truth).mean() > 0.8)
    True
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ("bias_", "sigma_")
    param_bounds: ClassVar[dict[str, Bounds]] = {"smoothing": Bounds(0)}

    def __init__(self, max_iter: int = 100, tol: float = 1e-6, smoothing: float = 0.01) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing

    def predict_proba(self) -> Any:
        """Probability of each level (rank) for each task, (n_tasks, n_levels) (a
        DataFrame indexed by task id after a fit on a DataFrame)."""
        self._check_fitted()
        return self.probas_

    def fit_predict_proba(self, data: Any) -> Any:
        """Fit and return :meth:`predict_proba`."""
        return self.fit(data).predict_proba()

    def _fit(self, data: Ratings) -> None:
        if data.levels is None:
            raise CrowdDataError(
                "OrdinalDawidSkene needs ordinal ratings (levels); build them with "
                "Ratings.from_arrays(..., order=[...]) or use a numeric method (e.g. 'median')"
            )
        n_levels = len(data.levels)
        n_tasks, n_workers = data.n_tasks, data.n_workers
        answer = data.value.astype(np.int64)
        ones = np.ones(data.n_annotations)
        # tasks x annotations, and (worker, answer) cells x annotations
        by_task = sp.csr_matrix(
            (ones, (data.task, np.arange(data.n_annotations))),
            shape=(n_tasks, data.n_annotations),
        )
        by_cell = sp.csr_matrix(
            (ones, (data.worker * n_levels + answer, np.arange(data.n_annotations))),
            shape=(n_workers * n_levels, data.n_annotations),
        )
        rated = np.asarray(by_task.sum(axis=1)).ravel() > 0
        span = max(n_levels - 1, 1)
        grid_bias, grid_spread = np.meshgrid(
            np.linspace(-span, span, 4 * span + 1), np.geomspace(0.1, 2.0 * n_levels, 24)
        )
        grid_bias, grid_spread = grid_bias.ravel(), grid_spread.ravel()
        fine = np.meshgrid(np.linspace(-0.25, 0.25, 11), np.linspace(-0.12, 0.12, 9))

        # start from the vote frequencies (soft majority vote)
        votes = np.asarray(
            (
                by_task
                @ sp.csr_matrix(
                    (ones, (np.arange(data.n_annotations), answer)),
                    shape=(data.n_annotations, n_levels),
                )
            ).todense()
        )
        probas = votes + 1e-3
        probas /= probas.sum(axis=1, keepdims=True)

        previous = -np.inf
        self.converged_ = False
        for iteration in range(1, self.max_iter + 1):
            # M-step
            priors = probas[rated].sum(axis=0) + self.smoothing
            priors /= priors.sum()
            # expected counts N[j, l, a]
            expected = (by_cell @ probas[data.task]).reshape(n_workers, n_levels, n_levels)
            counts = expected.transpose(0, 2, 1)
            bias, spread = _best_on_grid(counts, n_levels, grid_bias, grid_spread)
            local_bias = bias[:, None] + fine[0].ravel()[None, :]
            local_spread = spread[:, None] * np.exp(fine[1].ravel())[None, :]
            bias, spread = _best_on_grid(counts, n_levels, local_bias, local_spread)
            # E-step
            log_rows = gaussian_rows(n_levels, bias, spread)  # (workers, l, a)
            per_annotation = log_rows[data.worker, :, answer]  # (annotations, l)
            log_post = np.log(priors)[None, :] + by_task @ per_annotation
            top = log_post.max(axis=1, keepdims=True)
            norm = np.log(np.exp(log_post - top).sum(axis=1, keepdims=True)) + top
            probas = np.exp(log_post - norm)
            objective = float(norm[rated].sum()) / data.n_annotations
            self.n_iter_ = iteration
            if abs(objective - previous) < self.tol:
                self.converged_ = True
                break
            previous = objective
        rank = np.arange(n_levels, dtype=np.float64)
        self.probas_ = probas
        self.priors_ = priors
        self.bias_, self.sigma_ = bias, spread
        mean = probas @ rank
        variance = np.maximum(probas @ rank**2 - mean**2, 0.0)
        self.values_ = np.where(rated, mean, np.nan)
        self.spread_ = np.where(rated, np.sqrt(variance), np.nan)
        self.labels_ = np.where(rated, probas.argmax(axis=1), -1)
