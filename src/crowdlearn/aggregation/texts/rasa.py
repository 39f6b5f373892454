"""RASA and HRRASA: the answer nearest a reliability-weighted centre of embeddings.

RASA: J. Li and F. Fukumoto, "A Dataset of Crowdsourced Word Sequences: Collections
and Answer Aggregation for Ground Truth Creation", Workshop on Aggregating and
Analysing Crowdsourced Annotations for NLP (AnnoNLP, EMNLP-IJCNLP), 2019.
HRRASA: J. Li, "Crowdsourced Text Sequence Aggregation based on Hybrid Reliability and
Representation", SIGIR 2020.

Each answer is embedded as a vector ``e_a`` (:func:`char_embedding` by default:
TF-IDF over character 2- to 4-grams within word boundaries, reduced by truncated SVD;
or any function from a list of texts to an (n, d) array, parameter ``embedding``).

RASA iterates two steps (the papers' reliability-weighted truth estimation):

* the centre of task ``t`` is ``c_t = sum_a beta_w(a) e_a / sum_a beta_w(a)``
  (:func:`weighted_centres`);
* each worker's reliability is ``beta_w = chi2_{alpha/2}(n_w) / sum_{a of w}
  ||e_a - c_t(a)||^2``, ``chi2_{alpha/2}(n_w)`` the upper ``alpha/2`` quantile of the
  chi-squared distribution with ``n_w`` (the worker's number of answers) degrees of
  freedom (the CATD confidence interval, Li et al. VLDB 2014, that RASA adopts);

until the centres' relative squared change is below ``tol``. Each task's text is then
its answer with the smallest cosine distance to the centre (ties: the earliest row).

HRRASA adds a local reliability ``gamma_a`` of each answer within its task: the mean,
over the task's other answers ``b``, of ``lambda_emb * exp(-||e_a - e_b||^2 /
(||e_a||^2 ||e_b||^2)) + lambda_out * GLEU(a, b)`` (:func:`local_reliability`), GLEU
(Wu et al. 2016) over word 1- to 4-grams being ``matches / max(n-grams of a, n-grams
of b)``. Weights become ``beta_w gamma_a`` and the distances in the reliability update
``||e_a - c_t||^2 / gamma_a``. A task with a single answer has ``gamma = 1``.
The iterations are vectorised (sparse task-by-answer products, ``np.bincount``); the
GLEU of each pair of answers of a task is computed once, in Python, before them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.stats import chi2

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation.texts._base import (
    POSITIVE_INT,
    PROBABILITY,
    UNIT,
    BaseTextAggregator,
    best_per_task,
    task_pairs,
)
from crowdlearn.data.texts import Texts

_EPS = 1e-10


def char_embedding(
    texts: Sequence[str], n_components: int = 100, random_state: int | None = 0
) -> np.ndarray:
    """Offline text embedding: TF-IDF of character 2- to 4-grams (``char_wb``,
    sublinear term frequencies) reduced to ``n_components`` dimensions by truncated SVD
    (fitted on ``texts`` themselves). With too few texts or n-grams for the SVD, the
    TF-IDF rows themselves.

    Returns
    -------
    ndarray of shape (len(texts), d), float64
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    matrix = TfidfVectorizer(
        analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True
    ).fit_transform(list(texts))
    k = min(n_components, matrix.shape[1] - 1, matrix.shape[0] - 1)
    if k < 2:
        return matrix.toarray().astype(np.float64)
    svd = TruncatedSVD(n_components=k, random_state=random_state)
    with np.errstate(invalid="ignore", divide="ignore"):  # explained variance of 0 / 0
        return svd.fit_transform(matrix).astype(np.float64)


def _embed(estimator: Any, data: Texts) -> np.ndarray:
    texts = data.text.tolist()
    if estimator.embedding is None:
        out = char_embedding(texts, estimator.n_components, estimator.random_state)
    else:
        out = np.asarray(estimator.embedding(texts), dtype=np.float64)
    if out.ndim != 2 or out.shape[0] != len(texts):
        raise ValueError(
            f"{type(estimator).__name__}: embedding must return an array of shape "
            f"({len(texts)}, d), got {out.shape}"
        )
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{type(estimator).__name__}: embedding returned non-finite values")
    return out


def weighted_centres(
    task: np.ndarray, weight: np.ndarray, embedding: np.ndarray, n_tasks: int
) -> np.ndarray:
    """Per-task weighted mean of the embeddings, shape (n_tasks, d)."""
    rows = np.arange(len(task))
    matrix = sp.csr_matrix((weight, (task, rows)), shape=(n_tasks, len(task)))
    totals = np.bincount(task, weights=weight, minlength=n_tasks)
    return (matrix @ embedding) / np.maximum(totals, _EPS)[:, None]


def cosine_to_centre(embedding: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Cosine distance of each answer to its task's centre (inf for a zero vector)."""
    dot = np.einsum("ij,ij->i", embedding, centre)
    norms = np.linalg.norm(embedding, axis=1) * np.linalg.norm(centre, axis=1)
    out = np.full(len(dot), np.inf)
    np.divide(dot, norms, out=out, where=norms > 0)
    return np.where(norms > 0, 1.0 - out, np.inf)


def _ngrams(words: list[str]) -> Counter:
    grams: Counter = Counter()
    for n in range(1, 5):
        grams.update(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
    return grams


def gleu(a: Counter, b: Counter) -> float:
    """Sentence GLEU of two answers' n-gram counts (symmetric: matches / the larger
    total)."""
    larger = max(sum(a.values()), sum(b.values()))
    return sum((a & b).values()) / larger if larger else 0.0


def local_reliability(
    data: Texts, embedding: np.ndarray, lambda_emb: float, lambda_out: float
) -> np.ndarray:
    """HRRASA's local reliability of each answer within its task (1 when alone)."""
    first, second = task_pairs(data)
    return pair_local_reliability(
        first,
        second,
        embedding,
        gleu_of_pairs(data.text.tolist(), first, second),
        lambda_emb,
        lambda_out,
    )


def gleu_of_pairs(texts: Sequence[Any], first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Word GLEU of each pair ``(texts[first[k]], texts[second[k]])`` (each unordered
    pair computed once; texts split on whitespace)."""
    grams = [_ngrams(str(t).split()) for t in texts]
    cache: dict[tuple[int, int], float] = {}
    seq_sim = np.empty(len(first))
    for k, (a, b) in enumerate(zip(first.tolist(), second.tolist(), strict=True)):
        key = (a, b) if a < b else (b, a)
        value = cache.get(key)
        if value is None:
            value = cache[key] = gleu(grams[a], grams[b])
        seq_sim[k] = value
    return seq_sim


def pair_local_reliability(
    first: np.ndarray,
    second: np.ndarray,
    embedding: np.ndarray,
    seq_sim: np.ndarray,
    lambda_emb: float,
    lambda_out: float,
) -> np.ndarray:
    """HRRASA's local reliability from the ordered pairs of answers of a task and their
    output similarities ``seq_sim``: the mean over the other answers of ``lambda_emb *
    exp(-||e_a - e_b||^2 / (||e_a||^2 ||e_b||^2)) + lambda_out * seq_sim`` (1 for an
    answer alone in its task)."""
    n = len(embedding)
    squared = np.einsum("ij,ij->i", embedding, embedding)
    diff = embedding[first] - embedding[second]
    scale = np.maximum(squared[first] * squared[second], _EPS)
    emb_sim = np.exp(-np.einsum("ij,ij->i", diff, diff) / scale)
    others = np.bincount(first, minlength=n).astype(np.float64)
    total = np.bincount(first, weights=lambda_emb * emb_sim + lambda_out * seq_sim, minlength=n)
    out = np.ones(n)
    np.divide(total, others, out=out, where=others > 0)
    return np.maximum(out, _EPS)


def reliability_iterations(
    task: np.ndarray,
    worker: np.ndarray,
    embedding: np.ndarray,
    local: np.ndarray,
    shape: tuple[int, int],
    alpha: float,
    max_iter: int,
    tol: float,
    fixed: tuple[np.ndarray, np.ndarray] | None = None,
    strict: bool = False,
) -> tuple[np.ndarray, np.ndarray, int, list[float]]:
    """The (HR)RASA iterations on coded arrays (``shape`` = (n_tasks, n_workers)).

    Alternates the weighted centres (weights ``beta_w * local``) and the reliabilities
    ``beta_w = chi2_{alpha/2}(n_w) / max(sum ||e_a - c_t||^2 / local_a, 1e-5)``. The
    loss after each iteration but the first is ``||c - c_prev||^2 / ||c||^2``; the loop
    stops when it is ``<= tol`` (``< tol`` with ``strict``, crowd-kit's rule).
    ``fixed = (task codes, vectors)`` pins those tasks' centres (known true answers).

    Returns
    -------
    centres (n_tasks, d), reliability (n_workers,), iterations run, loss history
    """
    n_tasks, n_workers = shape
    answers = np.bincount(worker, minlength=n_workers)
    prior = chi2.isf(alpha / 2, np.maximum(answers, 1))
    reliability = np.ones(n_workers)
    centres = np.zeros((n_tasks, embedding.shape[1]))
    losses: list[float] = []
    n_iter = 0
    for iteration in range(1, max_iter + 1):
        previous = centres
        centres = weighted_centres(task, reliability[worker] * local, embedding, n_tasks)
        if fixed is not None:
            centres[fixed[0]] = fixed[1]
        residual = embedding - centres[task]
        distance = np.einsum("ij,ij->i", residual, residual) / local
        spent = np.bincount(worker, weights=distance, minlength=n_workers)
        reliability = prior / np.maximum(spent, 1e-5)
        n_iter = iteration
        if iteration > 1:
            change = float(np.sum((centres - previous) ** 2))
            scale = max(float(np.sum(centres**2)), _EPS)
            losses.append(change / scale)
            if change < tol * scale or (not strict and change <= tol * scale):
                break
    return centres, reliability, n_iter, losses


class RASA(BaseTextAggregator):
    """Reliability-aware sequence aggregation (Li and Fukumoto 2019): the answer
    nearest the reliability-weighted centre of its task's embeddings (see the module
    docstring).

    Parameters
    ----------
    embedding : callable, optional
        A function from a list of texts to an (n, d) array. Default:
        :func:`char_embedding` with ``n_components`` and ``random_state``.
    n_components : int, default 100
    alpha : float, default 0.05
        Confidence level of the chi-squared quantile in the reliabilities.
    max_iter : int, default 100
    tol : float, default 1e-5
        Stop when the centres' relative squared change is below it (crowd-kit 1.4.2's
        TextRASA default: with the same embeddings the two choose the same answers).
    random_state : int, default 0
        Seed of the default embedding's SVD.

    Attributes
    ----------
    texts_ : ndarray of object, shape (n_tasks,)
    reliability_ : ndarray of shape (n_workers,)
    centres_ : ndarray of shape (n_tasks, d)
    chosen_ : ndarray of shape (n_tasks,)
        The row of the answer chosen for each task.
    n_iter_ : int

    Examples
    --------
    >>> from crowdlearn.data import Texts
    >>> data = Texts.from_arrays(
    ...     ["t"] * 3, ["a", "b", "c"], ["the cat sat", "the cat sat", "a dog ran"])
    >>> RASA().fit(data).texts_.tolist()
    ['the cat sat']
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ("reliability_",)
    param_bounds: ClassVar[dict[str, Bounds]] = {
        "n_components": POSITIVE_INT,
        "alpha": PROBABILITY,
    }

    def __init__(
        self,
        embedding: Callable[[list[str]], Any] | None = None,
        n_components: int = 100,
        alpha: float = 0.05,
        max_iter: int = 100,
        tol: float = 1e-5,
        random_state: int | None = 0,
    ) -> None:
        self.embedding = embedding
        self.n_components = n_components
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _local(self, data: Texts, embedding: np.ndarray) -> np.ndarray:
        return np.ones(data.n_annotations)

    def _fit(self, data: Texts) -> None:
        embedding = _embed(self, data)
        local = self._local(data, embedding)
        centres, reliability, self.n_iter_, _ = reliability_iterations(
            data.task,
            data.worker,
            embedding,
            local,
            (data.n_tasks, data.n_workers),
            self.alpha,
            self.max_iter,
            self.tol,
        )
        self.centres_ = centres
        self.reliability_ = reliability
        self.chosen_ = best_per_task(
            data.task, cosine_to_centre(embedding, centres[data.task]), data.n_tasks
        )
        self.texts_ = data.text[self.chosen_].copy()


class HRRASA(RASA):
    """Hybrid reliability and representation aggregation (Li 2020): RASA with each
    answer's local reliability among its task's answers (embedding similarity and
    GLEU; see the module docstring).

    Parameters
    ----------
    embedding, n_components, alpha, max_iter, tol, random_state
        As in :class:`RASA`.
    lambda_emb, lambda_out : float, default 0.5
        Weights of the embedding similarity and of the GLEU in the local reliability.

    Attributes
    ----------
    texts_, reliability_, centres_, chosen_, n_iter_
        As in :class:`RASA`.
    local_reliability_ : ndarray of shape (n_annotations,)

    Examples
    --------
    >>> from crowdlearn.data import Texts
    >>> data = Texts.from_arrays(
    ...     ["t"] * 3, ["a", "b", "c"], ["the cat sat", "the cat sat", "a dog ran"])
    >>> HRRASA().fit(data).texts_.tolist()
    ['the cat sat']
    """

    param_bounds: ClassVar[dict[str, Bounds]] = {
        **RASA.param_bounds,
        "lambda_emb": UNIT,
        "lambda_out": UNIT,
    }

    def __init__(
        self,
        embedding: Callable[[list[str]], Any] | None = None,
        n_components: int = 100,
        alpha: float = 0.05,
        max_iter: int = 100,
        tol: float = 1e-5,
        random_state: int | None = 0,
        lambda_emb: float = 0.5,
        lambda_out: float = 0.5,
    ) -> None:
        super().__init__(embedding, n_components, alpha, max_iter, tol, random_state)
        self.lambda_emb = lambda_emb
        self.lambda_out = lambda_out

    def _local(self, data: Texts, embedding: np.ndarray) -> np.ndarray:
        local = local_reliability(data, embedding, self.lambda_emb, self.lambda_out)
        self.local_reliability_ = local
        return local
