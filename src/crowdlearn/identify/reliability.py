"""Worker reliability: scores computed from a confusion model, GLAD, CMM groups or gold.

Every function returns an array aligned with the worker codes (``data.worker_ids``).
Scores where higher means a more reliable worker: :func:`confusion_trace`,
:func:`spammer_score`, :func:`glad_ability`, :func:`gold_accuracy`.

Spammer score (Raykar & Yu, "Ranking annotators for crowdsourced labeling tasks",
NIPS 2011, section 3): a spammer's label does not depend on the true class, so all rows
of his confusion matrix ``A`` (row = true class) are equal: ``A = e v^T`` is rank one.
The score is the squared Frobenius distance to the closest such matrix, whose rows are
the mean row ``a_bar``, normalised by ``K - 1``::

    S = ||A - e a_bar^T||_F^2 / (K - 1) = 1 / (K (K - 1)) sum_{c < c'} ||a_c - a_c'||^2

``S = 0`` for a spammer (any constant-label or random worker) and ``S = 1`` for a perfect
worker, the largest value a row-stochastic matrix can reach (a worker whose rows are
distinct one-hot vectors, e.g. a systematic permuter, reaches it too: he is informative).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crowdlearn.data import CrowdData

#: Methods that give a confusion matrix per worker, by the names the CLI accepts.
CONFUSION_MODELS = ("ds", "crowdlayer", "conal", "cmm")


def fit_confusion_model(data: CrowdData, model: str = "ds", **params: Any) -> Any:
    """Fit a model with a per-worker ``confusions_`` attribute (n_workers, K, K).

    Parameters
    ----------
    data : CrowdData
        Crowd data; the learners (``crowdlayer``, ``conal``, ``cmm``) need features.
    model : {"ds", "crowdlayer", "conal", "cmm"}
        Dawid-Skene (aggregation, no features), Crowd Layer (``MW`` variant), CoNAL,
        or the Crowd Mixture Model (individual setting).
    **params
        Passed to the model's constructor.

    Returns
    -------
    the fitted model
    """
    if model == "ds":
        from crowdlearn.aggregation import DawidSkene

        return DawidSkene(**params).fit(data)
    if model not in CONFUSION_MODELS:
        raise ValueError(f"confusion model must be one of {CONFUSION_MODELS}, got {model!r}")
    if data.features is None and data.inputs is None:
        raise ValueError(f"the {model!r} confusion model trains a classifier: data need features")
    from crowdlearn.learning import CoNAL, CrowdLayer, CrowdMixture

    learner = {"crowdlayer": CrowdLayer, "conal": CoNAL, "cmm": CrowdMixture}[model]
    # one share and a refit: the confusions read off the noise model are then fitted on
    # every annotation (with crowd_folds they would be the last fold's)
    return learner(**{"crowd_folds": 1, **params}).fit(data)


def _confusions(data: CrowdData, confusions: Any) -> np.ndarray:
    """Confusion matrices from an array, a fitted model, or a model name to fit."""
    if confusions is None or isinstance(confusions, str):
        confusions = fit_confusion_model(data, confusions or "ds")
    if hasattr(confusions, "confusions_"):
        confusions = confusions.confusions_
    matrices = np.asarray(confusions, dtype=np.float64)
    if matrices.ndim != 3 or matrices.shape[1] != matrices.shape[2]:
        raise ValueError(f"confusions must have shape (n_workers, K, K), got {matrices.shape}")
    if matrices.shape[0] != data.n_workers:
        raise ValueError(f"{matrices.shape[0]} confusion matrices for {data.n_workers} workers")
    return matrices


def confusion_trace(data: CrowdData, confusions: Any = None) -> np.ndarray:
    """Trace of each worker's confusion matrix (``K`` for a perfect worker, 1 for a
    uniform spammer).

    Parameters
    ----------
    data : CrowdData
    confusions : array (n_workers, K, K), fitted model, model name or None
        Row-stochastic matrices (row = true class), a fitted model with ``confusions_``
        (DawidSkene, CrowdLayer, CoNAL, CrowdMixture), or the name of one of
        :data:`CONFUSION_MODELS` to fit (default ``"ds"``).

    Returns
    -------
    ndarray of shape (n_workers,)

    Examples
    --------
    >>> data = CrowdData.from_arrays([0, 1], [0, 1], [0, 1])
    >>> confusion_trace(data, np.stack([np.eye(2), np.full((2, 2), 0.5)]))
    array([2., 1.])
    """
    return np.trace(_confusions(data, confusions), axis1=1, axis2=2)


def spammer_scores_of(confusions: np.ndarray) -> np.ndarray:
    """Raykar & Yu's spammer score of each matrix of a (n, K, K) stack (see module doc)."""
    matrices = np.asarray(confusions, dtype=np.float64)
    k = matrices.shape[-1]
    centred = matrices - matrices.mean(axis=-2, keepdims=True)
    return np.sum(centred**2, axis=(-2, -1)) / max(k - 1, 1)


def spammer_score(data: CrowdData, confusions: Any = None) -> np.ndarray:
    """Spammer score (Raykar & Yu 2011): distance of each worker's confusion matrix to the
    closest rank-one matrix ``e v^T``; 0 for spammers, 1 for a perfect worker.

    Parameters
    ----------
    data : CrowdData
    confusions : array (n_workers, K, K), fitted model, model name or None
        As in :func:`confusion_trace`.

    Returns
    -------
    ndarray of shape (n_workers,)

    Examples
    --------
    >>> data = CrowdData.from_arrays([0, 1], [0, 1], [0, 1])
    >>> always_first = np.array([[1.0, 0.0], [1.0, 0.0]])
    >>> spammer_score(data, np.stack([np.eye(2), always_first]))
    array([1., 0.])
    """
    return spammer_scores_of(_confusions(data, confusions))


def glad_ability(data: CrowdData, model: Any = None) -> np.ndarray:
    """GLAD's worker ability ``alpha_j`` (Whitehill et al., NIPS 2009): larger is better,
    0 is random guessing, negative is adversarial.

    Parameters
    ----------
    data : CrowdData
    model : fitted GLAD, optional
        Fitted on ``data``; fitted here with default parameters when None.

    Returns
    -------
    ndarray of shape (n_workers,)
    """
    if model is None:
        from crowdlearn.aggregation import GLAD

        model = GLAD().fit(data)
    return np.asarray(model.alphas_, dtype=np.float64)


def cmm_membership(data: CrowdData, model: Any = None, **params: Any) -> np.ndarray:
    """CMM group membership ``p(g = m | worker)`` of each worker (Mena & Ñanculef 2019).

    Parameters
    ----------
    data : CrowdData
        With features (CMM trains a classifier).
    model : fitted CrowdMixture (individual setting), optional
        Fitted here with ``params`` when None.

    Returns
    -------
    ndarray of shape (n_workers, n_groups)
    """
    if model is None:
        model = fit_confusion_model(data, "cmm", **params)
    return np.asarray(model.annotator_groups_, dtype=np.float64)


def cmm_group(data: CrowdData, model: Any = None, **params: Any) -> np.ndarray:
    """Most probable CMM group of each worker (integer codes, shape ``(n_workers,)``)."""
    return cmm_membership(data, model, **params).argmax(axis=1)


def gold_accuracy(data: CrowdData) -> np.ndarray:
    """Accuracy of each worker against the known truth (``data.truth``).

    Returns
    -------
    ndarray of shape (n_workers,)
        NaN for workers with no task of known truth.

    Examples
    --------
    >>> data = CrowdData.from_arrays([0, 1, 0], [0, 0, 1], [0, 1, 1], truth=[0, 1])
    >>> gold_accuracy(data)
    array([1., 0.])
    """
    from crowdlearn.identify.agreement import agreement_with_labels

    if data.truth is None:
        raise ValueError("gold accuracy needs data with a known truth")
    return agreement_with_labels(data, data.truth)
