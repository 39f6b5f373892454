"""Token Dawid-Skene over BIO tags."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdlearn.aggregation.spans._tokens import TokenTable, finish, normalise, worker_frame
from crowdlearn.data.spans import Spans


class TokenDawidSkene:
    """Dawid-Skene on tokens: each worker has a confusion matrix over BIO tags.

    Every (worker, reference token) is one answer: the BIO code the worker gave the
    token (``O`` outside its spans). Worker ``w`` gives code ``l`` to a token whose
    true code is ``k`` with probability ``conf[w, k, l]``; tokens are independent and
    share one prior over codes. EM from the token vote shares, all tokens of all tasks
    at once (one ``bincount`` per true code, no loop per token). The M-step is a MAP
    estimate under a Dirichlet prior: ``prior`` pseudo-counts on every cell of a
    confusion row plus ``prior_correct`` more on its diagonal (so that a worker seen on
    few tokens keeps a confusion close to "mostly right", and no cell is zero).
    The tags are the per-token most probable codes, repaired to valid BIO.

    Parameters
    ----------
    n_iter : int
        Most EM iterations.
    tol : float
        Stop when no token posterior moves more than this.
    prior, prior_correct : float
        Dirichlet pseudo-counts (every cell; added on the diagonal).

    Attributes
    ----------
    confusion_ : ndarray (n_workers, n_tags, n_tags)
        ``[worker, true code, given code]``.
    class_prior_ : ndarray (n_tags,)
    tags_, marginals_, labels_ :
        As :class:`~crowdlearn.aggregation.spans.TokenMajorityVote`.
    worker_scores_ : DataFrame
        Worker id and ``score``: the mean diagonal of the worker's confusion.
    n_iter_ : int
    """

    def __init__(
        self, n_iter: int = 50, tol: float = 1e-5, prior: float = 1.0, prior_correct: float = 1.0
    ) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.prior = prior
        self.prior_correct = prior_correct

    def fit(self, data: Spans) -> TokenDawidSkene:
        """Aggregate ``data`` (a :class:`~crowdlearn.data.Spans`)."""
        table = TokenTable(data)
        k = table.n_tags
        post = table.vote_shares()
        extra = self.prior + self.prior_correct * np.eye(k)
        it = 0
        for step in range(1, self.n_iter + 1):
            it = step
            confusion = normalise(table.confusion_counts(post) + extra)
            class_prior = normalise(post.sum(axis=0) + 1.0)
            log_post = table.loglik(np.log(confusion)) + np.log(class_prior)
            log_post -= log_post.max(axis=1, keepdims=True)
            new = normalise(np.exp(log_post))
            moved = float(np.abs(new - post).max())
            post = new
            if moved < self.tol:
                break
        self.confusion_ = confusion
        self.class_prior_ = class_prior
        self.n_iter_ = it
        finish(self, data, table, post.argmax(axis=1), post)
        self.worker_scores_ = worker_frame(
            data, np.diagonal(confusion, axis1=1, axis2=2).mean(axis=1)
        )
        return self

    def predict(self) -> pd.DataFrame:
        """The aggregated spans (``labels_``)."""
        return self.labels_
