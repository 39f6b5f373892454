"""HMM-Crowd (Nguyen et al., ACL 2017): a hidden tag chain with per-worker confusions."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import digamma

from crowdlearn.aggregation.spans._tokens import (
    TINY,
    Chains,
    TokenTable,
    allowed_transitions,
    finish,
    normalise,
    worker_frame,
)
from crowdlearn.data.spans import Spans


def _expected_log(counts: np.ndarray) -> np.ndarray:
    """``E[log p]`` of Dirichlet(``counts``) rows (the variational-Bayes weights)."""
    return digamma(np.maximum(counts, TINY)) - digamma(
        np.maximum(counts.sum(axis=-1, keepdims=True), TINY)
    )


class _ChainCrowd:
    """EM (or variational Bayes) for a hidden BIO chain observed through workers.

    Subclasses set :attr:`_sequential` (confusion conditioned on the worker's previous
    code) and :attr:`_bayes` (variational Bayes instead of MAP EM).
    """

    _sequential = False
    _bayes = False
    _text_prior = 0.1
    _backoff = 0.0
    _confusion = "vector"

    def __init__(
        self,
        n_iter: int = 30,
        tol: float = 1e-4,
        prior: float = 1.0,
        prior_correct: float = 1.0,
        transition_prior: float = 1.0,
        text: bool = True,
        text_prior: float | None = None,
        decode: str = "viterbi",
        backoff: float | None = None,
        confusion: str | None = None,
    ) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.prior = prior
        self.prior_correct = prior_correct
        self.transition_prior = transition_prior
        self.text = text
        self.text_prior = self._text_prior if text_prior is None else text_prior
        self.decode = decode
        self.backoff = self._backoff if backoff is None else backoff
        self.confusion = self._confusion if confusion is None else confusion

    # ------------------------------------------------------------------ pieces
    def _confusion_prior(self, k: int, sequential: bool) -> np.ndarray:
        eye = np.eye(k)
        if sequential:  # [true, previous given, given]
            return self.prior + self.prior_correct * eye[:, None, :]
        return self.prior + self.prior_correct * eye

    def _confusion_mean(self, counts: np.ndarray, sequential: bool) -> np.ndarray:
        """The confusion matrices the counts give (a confusion vector spreads each
        row's errors evenly over the other codes)."""
        if sequential or self.confusion == "full":
            return normalise(counts)
        k = counts.shape[-1]
        accuracy = np.diagonal(counts, axis1=1, axis2=2) / np.maximum(counts.sum(axis=2), TINY)
        wrong = (1.0 - accuracy) / max(k - 1, 1)
        return np.where(np.eye(k, dtype=bool), accuracy[:, :, None], wrong[:, :, None])

    def _confusion_log(self, counts: np.ndarray, sequential: bool) -> np.ndarray:
        """Log-confusions used in the E-step."""
        if sequential or self.confusion == "full":
            return self._log_params(counts)
        return np.log(np.maximum(self._confusion_mean(counts, sequential), TINY))

    def _log_params(self, counts: np.ndarray) -> np.ndarray:
        """Log-probabilities used in the E-step: MAP (normalised counts) or VB."""
        if self._bayes:
            return _expected_log(counts)
        return np.log(np.maximum(normalise(counts), TINY))

    def fit(self, data: Spans) -> _ChainCrowd:
        """Aggregate ``data`` (a :class:`~crowdlearn.data.Spans`)."""
        if self.decode not in ("viterbi", "marginal"):
            raise ValueError(f"decode must be 'viterbi' or 'marginal', got {self.decode!r}")
        if self.confusion not in ("vector", "full"):
            raise ValueError(f"confusion must be 'vector' or 'full', got {self.confusion!r}")
        table = TokenTable(data)
        k = table.n_tags
        chains = Chains(table.lengths, table.offsets)
        allowed = allowed_transitions(k)
        first = table.first_tokens()
        words = None
        if self.text:
            vocab: dict[str, int] = {}
            words = np.fromiter(
                (vocab.setdefault(w, len(vocab)) for toks in data.tokens for w in toks),
                dtype=np.int64,
                count=table.n_total,
            )
            n_words = len(vocab)
        # initial posteriors: the token vote shares; transitions from consecutive shares
        post = table.vote_shares()
        xi = post[:-1][~first[1:]].T @ post[1:][~first[1:]]
        start = post[first].sum(axis=0)
        # Stages: the plain confusions first; then (BSC) the confusions conditioned on
        # the worker's previous code, started from that consensus (from the vote alone
        # they can explain a worker's span continuation by habit and lose the true I
        # tags); then the word model, which refines the consensus rather than locking
        # in the initial vote. Each stage runs until the likelihood settles, at most
        # n_iter iterations.
        stages = (
            ["plain"]
            + (["sequential"] if self._sequential else [])
            + (["words"] if words is not None else [])
        )
        it = 0
        counts = table.confusion_counts(post)
        for stage_index, stage in enumerate(stages):
            sequential = stage_index >= 1 and self._sequential
            use_words = stage == "words"
            conf_prior = self._confusion_prior(k, sequential)
            if sequential and self.backoff > 0 and stage_index == 1:
                # back-off prior: each previous-code row starts from the worker's plain
                # confusion, worth `backoff` answers, so that a worker seen on few
                # tokens keeps its plain confusion
                plain = normalise(counts)  # the last plain M-step
                conf_prior = conf_prior + self.backoff * plain[:, :, None, :]
            previous_ll = -np.inf
            for _ in range(self.n_iter):
                it += 1
                # M-step
                counts = (
                    table.seq_confusion_counts(post) if sequential
                    else table.confusion_counts(post)
                ) + conf_prior  # fmt: skip
                log_conf = self._confusion_log(counts, sequential)
                trans_counts = np.where(allowed, xi + self.transition_prior, 0.0)
                log_trans = np.where(allowed, self._log_params(trans_counts), -np.inf)
                start_counts = np.where(allowed[0], start + self.transition_prior, 0.0)
                log_start = np.where(allowed[0], self._log_params(start_counts), -np.inf)
                log_emission = table.loglik(log_conf)
                if use_words:
                    word_counts = np.stack(
                        [np.bincount(words, weights=post[:, c], minlength=n_words)
                         for c in range(k)]
                    ) + self.text_prior  # fmt: skip
                    log_emission += self._log_params(word_counts)[:, words].T
                # E-step
                shifted = log_emission - log_emission.max(axis=1, keepdims=True)
                post, xi, start, ll = chains.forward_backward(
                    np.exp(shifted), np.exp(log_trans), np.exp(log_start)
                )
                ll += float(log_emission.max(axis=1).sum())
                converged = abs(ll - previous_ll) <= self.tol * abs(ll)
                previous_ll = ll
                if converged:
                    break
        self.n_iter_ = it
        self.log_likelihood_ = ll
        self.transitions_ = normalise(trans_counts)
        self.confusion_ = self._confusion_mean(counts, sequential)
        if self.decode == "viterbi":
            codes = chains.viterbi(log_emission, log_trans, log_start)
        else:
            codes = post.argmax(axis=1)
        finish(self, data, table, codes, post)
        diag = np.diagonal(
            self.confusion_.mean(axis=2) if self._sequential else self.confusion_,
            axis1=1, axis2=2,
        )  # fmt: skip
        self.worker_scores_ = worker_frame(data, diag.mean(axis=1))
        return self

    def predict(self) -> pd.DataFrame:
        """The aggregated spans (``labels_``)."""
        return self.labels_


class HMMCrowd(_ChainCrowd):
    """HMM-Crowd (Nguyen, Wallace, Li, Nenkova and Lease, ACL 2017).

    The true BIO tags of a task form a hidden Markov chain (a transition matrix over
    tags, BIO's forbidden steps ``O -> I-X`` and ``I-Y -> I-X`` held at zero); each
    worker's code on a token depends on the token's true tag through the worker's
    confusion (``confusion="vector"``, the paper's default: one accuracy per true tag,
    errors spread evenly over the other tags; ``"full"``: a full matrix), and
    (``text=True``, as in the paper) each token's word is
    emitted by its true tag through a smoothed word distribution per tag. EM: the
    E-step is forward-backward over every task at once (:class:`Chains`: one
    vectorised step per token position), the M-step a MAP estimate (Dirichlet
    pseudo-counts ``prior`` on every confusion cell plus ``prior_correct`` on the
    diagonal, ``transition_prior`` on allowed transitions, ``text_prior`` on words).
    Initialised from the token vote shares; the word model joins once the worker
    confusions have converged without it (``backoff`` is for :class:`BSCSeq` only and
    is 0 here). Decoded by Viterbi (``decode="viterbi"``,
    valid BIO by construction) or per-token maximum marginal (``"marginal"``,
    repaired to valid BIO).

    Differences from the paper's code: the word emission uses
    the token string only (the paper adds capitalisation features), initialisation
    from vote shares (the paper runs a few Dawid-Skene iterations first), Dirichlet
    pseudo-counts instead of its 0.001 smoothing, the word model held back until the
    worker model has converged, and a document is one chain (no break at sentence
    ends).

    Attributes
    ----------
    confusion_ : ndarray (n_workers, n_tags, n_tags)
    transitions_ : ndarray (n_tags, n_tags)
    tags_, marginals_, labels_, worker_scores_, n_iter_, log_likelihood_
    """

    _sequential = False
    _bayes = False


class BSCSeq(_ChainCrowd):
    """A sequential worker model in the spirit of BSC-seq (Simpson and Gurevych,
    EMNLP 2019), by variational Bayes.

    As :class:`HMMCrowd`, a hidden BIO chain with a transition matrix, but each
    worker's confusion is conditioned on the code that worker gave the previous token
    (the paper's "seq" annotator model, ``A[w, true, previous given, given]``): a worker
    who opened a span tends to continue it, one who said ``O`` tends to stay out, and
    the model learns how far each worker's boundaries follow the truth. Inference is
    mean-field variational Bayes: Dirichlet priors on every confusion row (``prior``
    on every cell, ``prior_correct`` more on the diagonal), on the transitions
    (``transition_prior``) and on the words per tag (``text_prior``); the E-step uses
    the expected log-parameters ``E[log p]`` in forward-backward. The sequential
    confusions start from a plain confusion fitted first, and their prior backs off to
    it: each previous-code row gets ``backoff`` pseudo-answers spread as the worker's
    plain confusion, so that a worker seen on few tokens keeps its plain confusion
    (without it, on small crowds the model explained a worker's span continuation by
    habit and lost the true ``I-`` tags).

    What is simplified against the paper: no integrated LSTM tagger (the text model is
    the independent word distribution per tag, the paper's default), fixed
    hyperparameters (the paper tunes three of them on its dev split), no separate
    prior for "disallowed" worker transitions (a worker's codes here are always valid
    BIO, read from spans), initialisation from vote shares, Viterbi on the expected
    log-parameters instead of the paper's most-likely-sequence on the posterior mean.

    Attributes
    ----------
    confusion_ : ndarray (n_workers, n_tags, n_tags, n_tags)
        Posterior mean of ``[worker, true, previous given, given]``.
    transitions_, tags_, marginals_, labels_, worker_scores_, n_iter_
    """

    _sequential = True
    _bayes = True
    _text_prior = 0.1
    _backoff = 10.0
    _confusion = "full"
