"""One-coin Dawid-Skene: each worker has a single accuracy.

The restriction of Dawid & Skene (1979) in which worker ``j`` answers the true class
with probability ``s_j`` and each wrong class with probability ``(1 - s_j) / (K - 1)``
(the "one-coin" model, e.g. Zhang, Chen, Zhou & Jordan, "Spectral methods meet EM",
NeurIPS 2014). EM:

* M-step: ``s_j`` = mean over worker ``j``'s annotations of the posterior probability
  that the given label is the true class; ``rho`` = mean posterior.
* E-step: ``log T_ik = log rho_k + sum_a log P(y_a | z_i = k)`` (see
  :mod:`crowdlearn.aggregation._correctness`).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

import crowdlearn.aggregation._kernels as _kernels
from crowdlearn.aggregation._base import IterativeAggregator, TieBreak, float_dtype
from crowdlearn.aggregation._blocks import Block, BlockReader, block_posteriors
from crowdlearn.aggregation._correctness import correctness_scores
from crowdlearn.aggregation._design import (
    FLOOR,
    normalise_log,
    normalise_rows,
)
from crowdlearn.aggregation._frames import array_attribute
from crowdlearn.aggregation._incremental import Merge
from crowdlearn.aggregation._incremental_em import (
    IncrementalEMMixin,
    remap_class_totals,
    remap_worker_values,
)
from crowdlearn.aggregation.dawid_skene import Init, sum_statistics
from crowdlearn.data import CrowdData


class OneCoinDawidSkene(IncrementalEMMixin, IterativeAggregator):
    """Dawid-Skene with one accuracy per worker, errors spread evenly.

    Parameters
    ----------
    max_iter : int, default 100
    tol : float, default 1e-5
        Stop when the log-likelihood per annotation changes by less than this.
    init : {"naive_soft", "majority_vote"}, default "naive_soft"
    dtype : {"float64", "float32"}, default "float64"
    chunk_size : int, optional
        Run both EM steps over blocks of about this many annotations (a task is never
        split) to bound temporary memory; None (default) is one block. See
        :class:`~crowdlearn.aggregation.DawidSkene` and docs/scale.md.
    tie_break : {"random", "lowest"}, default "random"
    random_state : int, default 0
    progress : bool or "auto", default "auto"
        Show a progress bar over the iterations; "auto": when stderr is a terminal
        (see :mod:`crowdlearn._progress`).

    Attributes
    ----------
    probas_, labels_
    skills_ : ndarray (n_workers,)
        Probability that each worker answers the true class (clipped to [1e-10, 1 - 1e-10]).
    confusions_ : ndarray (n_workers, n_classes, n_classes)
        The matrices those accuracies imply.
    priors_ : ndarray (n_classes,)
    history_, n_iter_, converged_
    crowd_ : CrowdData
        The annotations fitted so far (kept for :meth:`partial_fit`).

    Notes
    -----
    :meth:`partial_fit` adds annotations by incremental EM, as
    :class:`~crowdlearn.aggregation.DawidSkene` does (``refresh=0``: labels those of a
    full E-step, see there). Tested tolerance (same crowds):
    labels equal to a refit's on at least 98 % of the tasks, class probabilities within
    0.05 on at least 95 % (``refresh=3``: 99 % and 95 %).

    Examples
    --------
    >>> from crowdlearn.simulate import hammer_spammer
    >>> data = hammer_spammer(n_worker=10, n_task=200, n_classes=3, ratio=0.3, feedback=4)
    >>> skills = OneCoinDawidSkene().fit(data).skills_
    >>> bool(skills[:7].min() > 0.9 and skills[7:].max() < 0.6)  # hammers, then spammers
    True
    """

    worker_attributes = ("skills_", "confusions_")
    accepts_anonymous = False
    per_worker_confusions = True
    state_attributes = ("skills_", "priors_")

    def __init__(
        self,
        max_iter: int = 100,
        tol: float = 1e-5,
        init: Init = "naive_soft",
        dtype: str = "float64",
        chunk_size: int | None = None,
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
        progress: bool | Literal["auto"] = "auto",
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.dtype = dtype
        self.chunk_size = chunk_size
        self.tie_break = tie_break
        self.random_state = random_state
        self.progress = progress

    def _initialize(self, data: CrowdData, **_: Any) -> None:
        self._prepare(data)
        hard = self.init == "majority_vote"
        self.probas_ = block_posteriors(
            self._blocks, data.n_tasks, data.n_classes, self._dtype, hard
        )

    def _prepare(self, data: CrowdData, indptr: np.ndarray | None = None) -> None:
        """The blocks of ``data`` the EM steps run over."""
        self._dtype = float_dtype(self.dtype)
        self._blocks = self._reader = BlockReader(data, self.chunk_size, indptr)
        if self.chunk_size is None:
            self._blocks = list(self._blocks)  # one block, gathered once

    def _m_step(self, data: CrowdData) -> None:
        sums, totals, class_totals = sum_statistics(
            skill_statistics(block, self.probas_[block.start : block.stop], data.n_workers)
            for block in self._blocks
        )
        self._set_parameters(sums, totals, class_totals)

    def _set_parameters(
        self, sums: np.ndarray, totals: np.ndarray, class_totals: np.ndarray
    ) -> None:
        """The M-step from the summed statistics of :func:`skill_statistics`."""
        self._statistics = (sums, totals, class_totals)  # kept for partial_fit
        skills = np.divide(sums, totals, out=np.full(len(sums), 0.5), where=totals > 0)
        self.skills_ = np.clip(skills, FLOOR, 1 - FLOOR).astype(self._dtype)
        self.priors_ = normalise_rows(class_totals).astype(self._dtype)

    def _e_step(self, data: CrowdData) -> float:
        log_likelihood = 0.0
        for block in self._blocks:
            rows = self.probas_[block.start : block.stop]
            probas, block_likelihood = one_coin_posterior_block(
                block, self.skills_, self.priors_, rows
            )
            if probas is not rows:
                rows[...] = probas
            log_likelihood += block_likelihood
        return log_likelihood

    # ------------------------------------------------------------------ partial_fit hooks

    def _block_statistics(
        self, block: Block, probas: np.ndarray, n_workers: int
    ) -> tuple[np.ndarray, ...]:
        return skill_statistics(block, probas, n_workers)

    def _remap_statistics(
        self, stats: tuple[np.ndarray, ...], merge: Merge
    ) -> tuple[np.ndarray, ...]:
        sums, totals, class_totals = stats
        return (
            remap_worker_values(sums, merge),
            remap_worker_values(totals, merge),
            remap_class_totals(class_totals, merge),
        )

    def _set_statistics(self, stats: tuple[np.ndarray, ...], n_workers: int) -> None:
        self._dtype = float_dtype(self.dtype)
        self._set_parameters(*stats)

    def _block_log_scores(self, block: Block) -> np.ndarray:
        k = len(self.priors_)
        skill = self.skills_[block.worker]
        log_wrong = np.log((1 - skill) / max(k - 1, 1))
        return correctness_scores(
            block.task,
            block.label,
            block.n_tasks,
            k,
            np.log(skill),
            log_wrong,
            np.log(self.priors_),
        )

    def _store_scores(
        self,
    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None] | None:
        """The E-step over the store (``refresh=1``) with the logarithms of
        :func:`one_coin_posterior_block`'s kernel path (the table is not read)."""
        k = len(self.priors_)
        log_right = np.log(self.skills_)
        log_wrong = np.log((1 - self.skills_) / max(k - 1, 1))
        return np.log(self.priors_), np.empty((0, k)), (log_right, log_wrong)

    def _log_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """The log prior and the (n_workers * K, K) table of ``log P(label l | class
        k)`` in row ``worker * K + l``: log skill where ``k == l``, else the log of
        the share of an error."""
        k = len(self.priors_)
        log_right = np.log(self.skills_)
        log_wrong = np.log((1 - self.skills_) / max(k - 1, 1))
        table = np.repeat(log_wrong, k * k).reshape(-1, k, k)
        table[:, np.arange(k), np.arange(k)] = log_right[:, None]
        return np.log(self.priors_), table.reshape(-1, k)

    @property
    def confusions_(self) -> np.ndarray:
        """(n_workers, K, K) matrices with ``skills_`` on the diagonal (keyed by
        (worker, true class) after a fit on a DataFrame)."""
        skills = np.asarray(array_attribute(self, "skills_"))
        k = len(array_attribute(self, "priors_"))
        off = (1 - skills) / max(k - 1, 1)
        matrices = np.repeat(off[:, None, None], k, axis=1).repeat(k, axis=2)
        matrices[:, np.arange(k), np.arange(k)] = skills[:, None]
        return self._derived("confusions_", matrices, "worker")


def skill_statistics(
    block: Block, probas: np.ndarray, n_workers: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-coin M-step sums of one block: per worker, the posterior mass of the given
    labels and the number of annotations; per class, the posterior mass of the
    annotated tasks. Summed over blocks. Large blocks run the fused kernel
    (:mod:`crowdlearn.aggregation._kernels`; same sums to rounding)."""
    if _kernels.active(len(block.worker), _kernels.weight("onecoin", probas.shape[1])):
        probas = np.ascontiguousarray(probas)
        fused = _kernels.skill_sums(block.indptr, block.worker, block.label, probas, n_workers)
        if fused is not None:
            return fused
    right = probas[block.task, block.label]
    sums = np.bincount(block.worker, weights=right, minlength=n_workers)
    totals = np.bincount(block.worker, minlength=n_workers)
    class_totals = block.annotated.astype(probas.dtype) @ probas
    return sums, totals, class_totals


def one_coin_posterior_block(
    block: Block, skills: np.ndarray, priors: np.ndarray, out: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """One-coin E-step of one block: posteriors of its tasks and their log-likelihood
    (the fused kernel on large blocks, see :func:`skill_statistics`). The kernel writes
    into ``out`` (block tasks, K) when given, of the right dtype and contiguous."""
    k = len(priors)
    if _kernels.active(len(block.worker), _kernels.weight("onecoin", k)):
        log_right = np.log(skills)
        log_wrong = np.log((1 - skills) / max(k - 1, 1))
        if out is None or out.dtype != log_right.dtype or not out.flags.c_contiguous:
            out = np.empty((block.n_tasks, k), dtype=log_right.dtype)
        log_likelihood = _kernels.correctness_e_step(
            block.indptr, block.worker, block.label, log_right, log_wrong, np.log(priors), out
        )
        if log_likelihood is not None:
            return out, float(log_likelihood)
    skill = skills[block.worker]
    log_wrong = np.log((1 - skill) / max(k - 1, 1))
    log_scores = correctness_scores(
        block.task, block.label, block.n_tasks, k, np.log(skill), log_wrong, np.log(priors)
    )
    probas, log_norm = normalise_log(log_scores)
    return probas, float(log_norm.sum())
