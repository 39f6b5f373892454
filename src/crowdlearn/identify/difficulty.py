"""Task difficulty: vote entropy, GLAD's difficulty, AUM and WAUM.

Every function returns an array aligned with the task codes. For :func:`vote_entropy`
and :func:`glad_difficulty` a higher value means a harder task; for :func:`aum` and
:func:`waum` a *lower* value means a more ambiguous (or mislabelled) task, the ones the
WAUM paper prunes.

AUM (Pleiss, Zhang, Elenberg & Weinberger, "Identifying mislabeled data using the area
under the margin ranking", NeurIPS 2020, eq. 1-2): the margin of a task ``x`` with
assigned label ``y`` at epoch ``t`` is ``M_t(x, y) = z_t(x)_y - max_{k != y} z_t(x)_k``
and ``AUM(x, y) = (1/T) sum_t M_t(x, y)``. As in the WAUM paper, ``z`` are the softmax
probabilities of the classifier (Pleiss et al. use logits), so margins lie in [-1, 1].

WAUM (Lefort, Charlier, Joly & Salmon, "Identify ambiguous tasks combining crowdsourced
labels by weighting areas under the margin", 2022, eq. 3-5): the classifier is trained on
every (task, given label) pair; each annotation gets its own ``AUM(x_i, y_i^j)``, and the
annotations of a task are averaged with the trust of their worker in that task::

    s_j(x_i) = sum_k sigma(x_i)_k pi^j_kk        (trust; pi^j: worker j's confusion)
    WAUM(x_i) = sum_j s_j(x_i) AUM(x_i, y_i^j) / sum_j s_j(x_i)

where ``sigma(x_i)`` is the classifier's softmax output after the last epoch and ``pi^j``
comes from Dawid-Skene by default. Training on the vote frequencies (soft labels) gives
each task the mean cross-entropy of its annotations, which is training on the pairs
with each task weighted once. The margins of all candidate labels are accumulated per
task (an n_tasks x K array), so per-annotation AUMs are one gather.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crowdlearn.data import CrowdData


def vote_entropy(data: CrowdData) -> np.ndarray:
    """Entropy (in nats) of each task's vote frequencies (the NaiveSoft distribution).

    0 when all labels agree, ``log K`` at most; NaN for tasks without a label.

    Examples
    --------
    >>> data = CrowdData.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], [0, 0, 0, 1])
    >>> vote_entropy(data).round(4)
    array([0.    , 0.6931])
    """
    counts = data.vote_counts.tocoo()
    sizes = np.asarray(data.feedback_effort, dtype=np.float64)
    shares = counts.data / sizes[counts.row]
    terms = np.bincount(counts.row, weights=-shares * np.log(shares), minlength=data.n_tasks)
    return np.where(sizes > 0, terms + 0.0, np.nan)


def glad_difficulty(data: CrowdData, model: Any = None) -> np.ndarray:
    """GLAD's task difficulty ``1 / beta_i`` (Whitehill et al., NIPS 2009); larger is harder.

    Parameters
    ----------
    data : CrowdData
    model : fitted GLAD, optional
        Fitted on ``data``; fitted here with default parameters when None.
    """
    if model is None:
        from crowdlearn.aggregation import GLAD

        model = GLAD().fit(data)
    return 1.0 / np.asarray(model.betas_, dtype=np.float64)


def _train_recorder(data: CrowdData, aggregator: Any, soft: bool, training: dict) -> Any:
    if data.features is None and data.inputs is None:
        raise ValueError("AUM and WAUM train a classifier: the data need features")
    # one share and a refit: the margins are those of one run over every task (with
    # crowd_folds the last fold's run would see only (k - 1) / k of them)
    params = {"max_epochs": 20, "random_state": 0, "crowd_folds": 1, **training}
    # torch loads here, not at ``import crowdlearn.identify`` (the campaign's ``next``)
    from crowdlearn.identify.recorder import MarginRecorder

    return MarginRecorder(aggregator, soft=soft, **params).fit(data)


def aum(data: CrowdData, aggregator: Any = None, **training: Any) -> np.ndarray:
    """Area under the margin (Pleiss et al. 2020) of each task's aggregated label.

    A classifier is trained on the hard labels of ``aggregator`` (majority vote by
    default); low (negative) AUM flags tasks whose aggregated label the network keeps
    disagreeing with.

    Parameters
    ----------
    data : CrowdData
        With features.
    aggregator : aggregation estimator, optional
        Default :class:`~crowdlearn.aggregation.MajorityVote`.
    **training
        Training parameters of the classifier (``max_epochs`` default 20,
        ``random_state`` default 0; see :class:`~crowdlearn.learning.BaseLearner`).

    Returns
    -------
    ndarray of shape (n_tasks,)
        In [-1, 1]; NaN for unannotated tasks.
    """
    recorder = _train_recorder(data, aggregator, False, training)
    labels = recorder.aggregator_.predict()
    scores = recorder.aum_table_[np.arange(data.n_tasks), labels]
    return np.where(data.feedback_effort > 0, scores, np.nan)


def waum_trust(confusions: np.ndarray, proba: np.ndarray, data: CrowdData) -> np.ndarray:
    """Trust ``s_j(x_i) = sum_k sigma(x_i)_k pi^j_kk`` of each annotation's worker in its
    task (shape ``(n_annotations,)``)."""
    diagonals = np.diagonal(np.asarray(confusions, dtype=np.float64), axis1=1, axis2=2)
    return np.einsum("ak,ak->a", np.asarray(proba)[data.task], diagonals[data.worker])


def waum(
    data: CrowdData, confusions: Any = None, return_details: bool = False, **training: Any
) -> np.ndarray | tuple[np.ndarray, dict[str, np.ndarray]]:
    """WAUM (Lefort et al. 2022): the trust-weighted mean AUM of each task's annotations.

    Parameters
    ----------
    data : CrowdData
        With features and worker ids.
    confusions : array (n_workers, K, K), fitted model, model name or None
        Worker confusion matrices for the trust scores, as in
        :func:`~crowdlearn.identify.confusion_trace` (default: Dawid-Skene).
    return_details : bool
        Also return a dict with the per-annotation ``aum`` and ``trust``.
    **training
        Training parameters of the classifier (``max_epochs`` default 20).

    Returns
    -------
    ndarray of shape (n_tasks,), and the details dict when ``return_details``
        Lower is more ambiguous; NaN for unannotated tasks.
    """
    from crowdlearn.aggregation import NaiveSoft
    from crowdlearn.identify.reliability import _confusions

    if data.is_anonymous:
        raise ValueError("WAUM weights annotations by worker: the data need worker ids")
    matrices = _confusions(data, confusions)
    recorder = _train_recorder(data, NaiveSoft(), True, training)
    per_annotation = recorder.aum_table_[data.task, data.label]
    trust = waum_trust(matrices, recorder.last_proba_, data)
    weight = np.bincount(data.task, weights=trust, minlength=data.n_tasks)
    total = np.bincount(data.task, weights=trust * per_annotation, minlength=data.n_tasks)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(weight > 0, total / weight, np.nan)
    if return_details:
        return scores, {"aum": per_annotation, "trust": trust}
    return scores
