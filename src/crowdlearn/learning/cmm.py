"""Crowd Mixture Model (CMM): annotations explained by a few groups of labelling patterns.

Mena & Ñanculef, "Revisiting Machine Learning from Crowds: a Mixture Model for Grouping
Annotations", CIARP 2019 (LNCS 11896). Instead of one confusion matrix per annotator,
every annotation ``y`` of an instance ``x`` comes from one of ``M`` groups (eq. 1-3)::

    p(y = j | x) = sum_{m, k} beta^(m)[k, j] f_k(x) alpha_m,

with group weights ``alpha`` (``p(g = m)``), group confusion matrices ``beta^(m)``
(``p(y = j | g = m, z = k)``) and the classifier ``f`` (``p(z = k | x)``), so the
number of parameters does not grow with the number of annotators. The data are the vote
counts ``r_ij`` (how many annotations of task ``i`` say ``j``), which exist with or
without annotator identities (the paper's Individual and Global settings); all the
arithmetic runs over the observed (task, label) cells, the nonzeros of
:attr:`CrowdData.vote_counts`, never over a task x annotator array.

Each trainer epoch is one EM iteration (see :class:`~crowdlearn.learning._em.EMLearner`):

* M-step of the crowd parameters (:func:`m_step`, eq. 6): ``alpha`` and ``beta`` from
  the posteriors ``q_ij(m, k)`` of the previous E-step;
* M-step of the classifier: one epoch of soft cross-entropy on the consensus
  ``p_bar`` (:func:`consensus`, eq. 7; the paper trains one epoch per M-step). Eq. 7
  is ``J = sum_{i,k} -r_bar_ik log f_k(x_i)`` with ``sum_k r_bar_ik = T_i``, the
  number of annotations of task ``i``, so it weights task ``i``'s cross-entropy
  ``H(p_bar_i, f(x_i))`` by ``T_i``. ``task_weights="labels"`` trains on exactly
  that (:func:`labels_weighted_cross_entropy`, divided by a constant so its scale
  is that of a mean); the default ``"uniform"`` takes the mean over tasks of
  ``H(p_bar_i, f(x_i))``, the right-hand side of eq. 7's proportionality, which is
  the same objective when every task has as many annotations;
* E-step (:func:`e_step`, the E-step of section 3.3, which makes the bound of eq. 5
  tight): ``q_ij(m, k)`` proportional to ``beta^(m)[k, j] f_k(x_i) alpha_m``, in log
  space; it returns the log-likelihood of eq. 4 (without its multinomial constant).

Group assignment (section 3.4, :func:`annotation_group_posteriors`,
:func:`annotator_group_posteriors`): the group of one annotation,
``p(g = m | y, x)`` proportional to ``p_m(y | x) alpha_m``; of an annotator, from all
her annotations, ``p(g = m | a)`` proportional to ``alpha_m prod_l p_m(y_l | x_l)``;
her confusion matrix ``beta_a = sum_m p(g = m | a) beta^(m)``.

The E-step pools the annotations of a cell (they share ``q_ij``), so EM itself never
uses annotator ids: the Individual setting only changes the initialisation and adds the
annotator assignment (the paper's Table 3 reports the same CMM results in both). Note
that eq. 4 depends on the groups only through the mixed confusion
``sum_m alpha_m beta^(m)``: the data do not identify the split into groups, which EM
inherits from its initialisation. The simulated groups are a fixed point of EM (see the
tests), and from the k-means initialisation the Individual setting finds them on the
paper's Setup (1), though its spammer group comes out as a noisier copy of the experts
rather than uniform.

Initialisation, following the authors' public code (github.com/FMena14/MixtureofGroups)
and the paper's "K-means clustering is previously done over annotations": from the
vote frequencies ``mv_i`` (soft majority vote), each cell is put in a group by k-means
(k-means++ seeding), and ``q_ij(m, k) = [group(i, j) = m] mv_i[k]``. In the Global
setting the points clustered are the cells' cross-entropy terms
``-mv_i log(onehot_j)`` (clipped at ``1e-7``), projected on their first ``min(3, K)``
principal components and standardised; in the Individual setting they are the
annotators' confusion matrices against the majority labels (counts + 1,
row-normalised, flattened, standardised), and a cell takes the groups of the
annotators who gave it. The network may first be trained on the soft majority vote
(``pre_train_epochs``, as in the authors' code).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans, MiniBatchKMeans

from crowdlearn.aggregation._design import FLOOR, normalise_log, normalise_rows, vote_posteriors
from crowdlearn.data import CrowdData, CrowdDataError, TaskInputs
from crowdlearn.learning._base import training_inputs
from crowdlearn.learning._em import EMLearner
from crowdlearn.learning._trainer import EpochContext

Setting = Literal["global", "individual"]
Init = Literal["kmeans", "random"]
TaskWeights = Literal["uniform", "labels"]

#: Clip of the one-hot label inside the log of the Global initialisation's points.
ONE_HOT_CLIP = 1e-7
#: The learned crowd state (besides ``targets_`` and ``log_likelihood_``).
_LEARNED = ("group_weights_", "group_confusions_", "annotator_groups_", "confusions_")
#: Above this many points, the initial clustering uses mini-batch k-means.
MINIBATCH_KMEANS_ABOVE = 200_000


@dataclass(frozen=True)
class Cells:
    """The observed (task, label) cells: the nonzeros of the vote counts, by task then
    label.

    Attributes
    ----------
    task, label : ndarray (P,)
        Task and class codes of each cell.
    count : ndarray (P,)
        ``r_ij``, the number of annotations of the cell (float64).
    """

    task: np.ndarray
    label: np.ndarray
    count: np.ndarray

    @classmethod
    def from_data(cls, data: CrowdData) -> Cells:
        """The cells of ``data.vote_counts`` (canonical CSR: sorted by task, label)."""
        counts = data.vote_counts
        task = np.repeat(np.arange(data.n_tasks), np.diff(counts.indptr))
        return cls(task, counts.indices.astype(np.int64), counts.data.astype(np.float64))

    @classmethod
    def from_arrays(cls, task: Any, label: Any, count: Any) -> Cells:
        """Cells given explicitly (each (task, label) pair at most once)."""
        return cls(
            np.asarray(task, dtype=np.int64),
            np.asarray(label, dtype=np.int64),
            np.asarray(count, dtype=np.float64),
        )

    def __len__(self) -> int:
        return len(self.task)

    def index_of(self, task: np.ndarray, label: np.ndarray, n_classes: int) -> np.ndarray:
        """The cell of each annotation (task, label): a search in the sorted keys."""
        keys = self.task * n_classes + self.label
        return np.searchsorted(keys, np.asarray(task, np.int64) * n_classes + label)


# ---------------------------------------------------------------------- EM steps


def e_step(
    proba: np.ndarray, cells: Cells, weights: np.ndarray, confusions: np.ndarray
) -> tuple[np.ndarray, float]:
    """E-step (section 3.3) and log-likelihood (eq. 4).

    ``q_ij(m, k) = beta^(m)[k, j] f_k(x_i) alpha_m / N_ij`` with ``N_ij`` the sum over
    ``(m, k)``, computed in log space over the observed cells.

    Parameters
    ----------
    proba : ndarray (n_tasks, K)
        The classifier's ``f(x_i)``.
    cells : Cells
        The P observed (task, label) cells and their counts ``r_ij``.
    weights : ndarray (M,)
        ``alpha``.
    confusions : ndarray (M, K, K)
        ``beta``; ``confusions[m, k, j] = p(y = j | g = m, z = k)``.

    Returns
    -------
    q : ndarray (P, M, K)
        The posteriors ``q_ij(m, k)`` of each cell.
    log_likelihood : float
        ``sum_ij r_ij log N_ij`` (eq. 4 without the multinomial constant).
    """
    n_groups, n_classes = confusions.shape[:2]
    joint = _log_joint(_safe_log(proba)[cells.task], cells.label, weights, confusions)
    q, log_norm = normalise_log(joint.reshape(len(cells), n_groups * n_classes))
    return q.reshape(len(cells), n_groups, n_classes), float(cells.count @ log_norm)


def m_step(q: np.ndarray, cells: Cells, smoothing: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """M-step of the group weights and confusion matrices (eq. 6).

    ``alpha_m = sum_ij r_ij q_ij(m, .) / sum_ij r_ij`` and ``beta^(m)[k, j] =
    sum_i q_ij(m, k) r_ij / sum_{i, j'} q_ij'(m, k) r_ij'``: the label counts of each
    (group, class) pair, one sparse product over the cells.

    Parameters
    ----------
    q : ndarray (P, M, K)
    cells : Cells
    smoothing : float
        Dirichlet pseudo-count added to every ``beta`` count; counts are floored at
        1e-10 (a (group, class) pair without mass gets a uniform row).

    Returns
    -------
    weights : ndarray (M,)
    confusions : ndarray (M, K, K)
    """
    n_cells, n_groups, n_classes = q.shape
    by_label = sp.csr_matrix(
        (cells.count, (cells.label, np.arange(n_cells))), shape=(n_classes, n_cells)
    )
    # label_counts[j, m * K + k] = sum_i r_ij q_ij(m, k)
    label_counts = by_label @ q.reshape(n_cells, n_groups * n_classes)
    counts = label_counts.reshape(n_classes, n_groups, n_classes).transpose(1, 2, 0)
    weights = normalise_rows(counts.sum(axis=(1, 2)))
    return weights, normalise_rows(counts + smoothing)


def consensus(q: np.ndarray, cells: Cells, n_tasks: int) -> np.ndarray:
    """The network's targets (eq. 7): ``r_bar_ik = sum_j q_ij(., k) r_ij``, normalised
    per task (``p_bar``). Tasks without annotations get the uniform distribution.

    Returns
    -------
    ndarray (n_tasks, K)
    """
    n_classes = q.shape[2]
    by_task = sp.csr_matrix(
        (cells.count, (cells.task, np.arange(len(cells)))), shape=(n_tasks, len(cells))
    )
    r_bar = by_task @ q.sum(axis=1)
    totals = r_bar.sum(axis=1, keepdims=True)
    uniform = np.full_like(r_bar, 1.0 / n_classes)
    return np.divide(r_bar, totals, out=uniform, where=totals > 0)


def labels_weighted_cross_entropy(
    targets: Any, logits: Any, n_labels: Any, mean_labels: float
) -> Any:
    """Eq. 7's loss on a batch: ``sum_i T_i H(p_bar_i, f(x_i)) / (B * mean_labels)``.

    Over an epoch this is eq. 7's ``J(theta)`` divided by a constant (the number of
    training tasks times their mean ``T_i``), so the learning rate keeps the scale of
    an unweighted mean.

    Parameters
    ----------
    targets : Tensor (B, K)
        ``p_bar_i``, the normalised consensus of each task of the batch.
    logits : Tensor (B, K)
        The network's logits.
    n_labels : Tensor (B,)
        ``T_i``, the number of annotations of each task.
    mean_labels : float > 0
        Mean ``T_i`` over the training tasks.

    Returns
    -------
    Tensor (scalar)
    """
    import torch

    entropy = -(targets * torch.log_softmax(logits, dim=1)).sum(dim=1)
    return (n_labels.to(entropy.dtype) * entropy).sum() / (len(entropy) * mean_labels)


# ---------------------------------------------------------------------- group assignment


def group_log_likelihoods(
    proba: np.ndarray, labels: np.ndarray, confusions: np.ndarray
) -> np.ndarray:
    """``log p_m(y | x) = log sum_k beta^(m)[k, y] f_k(x)`` (eq. 2) for each annotation.

    Parameters
    ----------
    proba : ndarray (n, K)
        ``f(x)`` of each annotation's instance.
    labels : ndarray (n,)
        The annotations' labels.
    confusions : ndarray (M, K, K)

    Returns
    -------
    ndarray (n, M)
    """
    n_groups, n_classes = confusions.shape[:2]
    joint = _log_joint(_safe_log(proba), labels, np.ones(n_groups), confusions)
    _, log_norm = normalise_log(joint.reshape(-1, n_classes))
    return log_norm.reshape(len(labels), n_groups)


def annotation_group_posteriors(
    proba: np.ndarray, labels: np.ndarray, weights: np.ndarray, confusions: np.ndarray
) -> np.ndarray:
    """Group of each annotation (section 3.4): ``p(g = m | y, x)`` proportional to
    ``p_m(y | x) alpha_m``.

    Parameters
    ----------
    proba : ndarray (n, K)
        ``f(x)`` of each annotation's instance.
    labels : ndarray (n,)
    weights : ndarray (M,)
    confusions : ndarray (M, K, K)

    Returns
    -------
    ndarray (n, M)
    """
    scores = group_log_likelihoods(proba, labels, confusions) + _safe_log(weights)
    return normalise_log(scores)[0]


def annotator_group_posteriors(
    proba: np.ndarray,
    labels: np.ndarray,
    workers: np.ndarray,
    n_workers: int,
    weights: np.ndarray,
    confusions: np.ndarray,
) -> np.ndarray:
    """Group of each annotator (section 3.4): ``p(g = m | a)`` proportional to
    ``alpha_m prod_{l by a} p_m(y_l | x_l)``, the log-likelihoods summed per annotator
    with one ``bincount``. Annotators without annotations get ``alpha``.

    Parameters
    ----------
    proba : ndarray (n, K)
        ``f(x)`` of each annotation's instance.
    labels, workers : ndarray (n,)
        Label and annotator code of each annotation.
    n_workers : int
    weights : ndarray (M,)
    confusions : ndarray (M, K, K)

    Returns
    -------
    ndarray (n_workers, M)
    """
    n_groups = len(weights)
    log_lik = group_log_likelihoods(proba, labels, confusions)
    slots = np.asarray(workers, dtype=np.int64)[:, None] * n_groups + np.arange(n_groups)
    per_worker = np.bincount(
        slots.ravel(), weights=log_lik.ravel(), minlength=n_workers * n_groups
    ).reshape(n_workers, n_groups)
    return normalise_log(per_worker + _safe_log(weights))[0]


def annotator_confusions(memberships: np.ndarray, confusions: np.ndarray) -> np.ndarray:
    """``beta_a = sum_m p(g = m | a) beta^(m)`` (section 3.4), shape (n_workers, K, K)."""
    n_groups, n_classes = confusions.shape[:2]
    mixed = memberships @ confusions.reshape(n_groups, n_classes * n_classes)
    return mixed.reshape(-1, n_classes, n_classes)


# ---------------------------------------------------------------------- initialisation


def global_initial_groups(
    cells: Cells, majority: np.ndarray, n_groups: int, seed: int
) -> np.ndarray:
    """Global-setting groups of the cells: k-means over the annotations' cross-entropy
    terms against the soft majority vote.

    Cell ``(i, j)`` is the point ``-mv_i * log(clip(onehot_j, 1e-7))``, weighted by
    ``r_ij`` (one point per annotation); the points are projected on their first
    ``min(3, K)`` principal components and standardised before the clustering.

    Returns
    -------
    ndarray (P, M)
        One-hot group of each cell.
    """
    n_classes = majority.shape[1]
    one_hot = np.eye(n_classes)[cells.label]
    points = -majority[cells.task] * np.log(np.clip(one_hot, ONE_HOT_CLIP, 1.0))
    reduced = _principal_components(points, cells.count, min(3, n_classes))
    groups = _kmeans(_standardise(reduced, cells.count), n_groups, seed, cells.count)
    return np.eye(n_groups)[groups]


def individual_initial_groups(
    data: CrowdData, cells: Cells, majority: np.ndarray, n_groups: int, seed: int
) -> np.ndarray:
    """Individual-setting groups of the cells: k-means over the annotators' confusion
    matrices against the majority labels.

    Each annotator's matrix counts her labels against the (hard) majority class of the
    tasks, plus one, row-normalised; the flattened matrices are standardised and
    clustered. A cell's groups are those of its annotators, weighted by their counts.

    Returns
    -------
    ndarray (P, M)
        The share of each group in each cell's annotations.
    """
    n_classes = majority.shape[1]
    worker = data.worker.astype(np.int64)
    majority_label = majority.argmax(axis=1)
    slots = (worker * n_classes + majority_label[data.task]) * n_classes + data.label
    counts = np.bincount(slots, minlength=data.n_workers * n_classes**2) + 1.0
    matrices = normalise_rows(counts.reshape(data.n_workers, n_classes, n_classes))
    active = np.flatnonzero(np.bincount(worker, minlength=data.n_workers) > 0)
    points = matrices[active].reshape(len(active), n_classes**2)
    group = np.zeros(data.n_workers, dtype=np.int64)
    group[active] = _kmeans(_standardise(points, np.ones(len(active))), n_groups, seed)
    cell_of = cells.index_of(data.task, data.label, n_classes)
    shares = np.bincount(
        cell_of * n_groups + group[worker], minlength=len(cells) * n_groups
    ).reshape(len(cells), n_groups)
    return shares / cells.count[:, None]


def random_initial_groups(cells: Cells, n_groups: int, seed: int) -> np.ndarray:
    """Random group shares of each cell (flat Dirichlet), shape (P, M)."""
    return np.random.default_rng(seed).dirichlet(np.ones(n_groups), size=len(cells))


def _principal_components(points: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """Projection on the ``n`` leading principal axes of the weighted points."""
    centered = points - weights @ points / weights.sum()
    covariance = (centered * weights[:, None]).T @ centered / weights.sum()
    _, axes = np.linalg.eigh(covariance)
    return centered @ axes[:, ::-1][:, :n]


def _standardise(points: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Zero weighted mean and unit weighted variance per column (constant columns: 0)."""
    centered = points - weights @ points / weights.sum()
    scale = np.sqrt(weights @ centered**2 / weights.sum())
    return centered / np.where(scale > 0, scale, 1.0)


def _kmeans(
    points: np.ndarray, n_groups: int, seed: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """k-means (k-means++ seeding) labels in ``0..n_groups-1``; at most as many
    clusters as distinct points (the other groups start empty)."""
    n_clusters = min(n_groups, len(np.unique(points, axis=0)))
    if n_clusters <= 1:
        return np.zeros(len(points), dtype=np.int64)
    if len(points) > MINIBATCH_KMEANS_ABOVE:
        model: KMeans | MiniBatchKMeans = MiniBatchKMeans(
            n_clusters, init="k-means++", n_init=3, batch_size=4096, random_state=seed
        )
    else:
        model = KMeans(n_clusters, init="k-means++", n_init=4, random_state=seed)
    return model.fit_predict(points, sample_weight=weights).astype(np.int64)


def _log_joint(
    log_proba: np.ndarray, labels: np.ndarray, weights: np.ndarray, confusions: np.ndarray
) -> np.ndarray:
    """``log beta^(m)[k, y_n] + log f_k(x_n) + log alpha_m``, shape (n, M, K)."""
    log_confusions = _safe_log(confusions).transpose(2, 0, 1)  # [j, m, k]
    joint = log_confusions[labels] + log_proba[:, None, :]
    joint += _safe_log(weights)[None, :, None]
    return joint


def _safe_log(values: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(values, FLOOR))


# ---------------------------------------------------------------------- the learner


class CrowdMixture(EMLearner):
    """Crowd Mixture Model (Mena & Ñanculef, CIARP 2019): a classifier and ``M`` groups of
    annotation patterns, learned by EM with the network in the loop.

    Parameters
    ----------
    n_groups : int, default 3
        ``M``, the number of groups (the paper uses 3 on LabelMe).
    setting : {"individual", "global"}, default "individual"
        ``"global"`` uses only the vote counts, so anonymous data
        (:meth:`CrowdData.from_counts`, :meth:`CrowdData.anonymous`) work;
        ``"individual"`` needs annotator ids, initialises the groups from the
        annotators' confusion matrices and also estimates each annotator's group
        (section 3.4). EM is the same in both.
    init : {"kmeans", "random"}, default "kmeans"
        Initial group of each cell: k-means as described in the module docstring, or
        random shares (flat Dirichlet). Either way ``q_ij(m, k) = share_ij(m) mv_i[k]``.
    pre_train_epochs : int, default 0
        The first ``pre_train_epochs`` of the ``max_epochs`` epochs train the network on
        the soft majority vote; the remaining ones are EM iterations.
    task_weights : {"uniform", "labels"}, default "uniform"
        Weight of a task in the network's loss: ``"labels"`` weights it by its
        number of annotations ``T_i``, as eq. 7 does
        (:func:`labels_weighted_cross_entropy`); ``"uniform"`` weights every task
        alike (the mean cross-entropy; the same when every ``T_i`` is equal). Both
        apply to the pre-training epochs too.
    smoothing : float, default 0.0
        Dirichlet pseudo-count added to the confusion counts in the M-step.
    tol : float, default 1e-4
        Stop when the log-likelihood per annotation changes by less than this.
    n_restarts : int, default 1
        Run EM with seeds ``random_state, random_state + 1, ...`` (network weights,
        k-means seeding, random initialisation) and keep the run of highest final
        log-likelihood (the paper uses 20 restarts).
    **training
        The shared training parameters (see :class:`BaseLearner`); ``max_epochs`` is the
        number of epochs, one EM iteration each (the paper: up to 50, one network epoch
        per M-step, Adam).

    Attributes
    ----------
    group_weights_ : ndarray (M,)
        ``alpha``, the share of annotations of each group.
    group_confusions_ : ndarray (M, K, K)
        ``beta``; ``[m, k, j]``: probability that group ``m`` labels class ``k`` as
        ``j``.
    targets_ : ndarray (n_tasks, K)
        The consensus ``p_bar`` of eq. 7 after the last E-step.
    annotator_groups_ : ndarray (n_workers, M)
        Individual setting: ``p(g = m | a)`` for each annotator.
    confusions_ : ndarray (n_workers, K, K)
        Individual setting: ``beta_a = sum_m p(g = m | a) beta^(m)``.
    log_likelihood_ : float
        Final log-likelihood per annotation (eq. 4 without its constant).
    restart_log_likelihoods_ : list of float
        The final log-likelihood of every restart.
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``history_`` also has a ``log_likelihood`` column
        (empty during pre-training).

    Examples
    --------
    >>> from crowdlearn.simulate import cmm_gaussians
    >>> crowd = cmm_gaussians(n_per_class=60, n_annotators=20, mean_labels=3, seed=0)
    >>> model = CrowdMixture(n_groups=2, max_epochs=3).fit(crowd)
    >>> model.group_confusions_.shape, model.annotator_groups_.shape
    ((2, 3, 3), (20, 2))
    >>> glob = CrowdMixture(setting="global", max_epochs=3).fit(crowd.anonymous())
    >>> round(float(glob.group_weights_.sum()), 6)
    1.0
    """

    needs_workers: ClassVar[bool] = False  # the Individual setting checks in ``fit``

    def __init__(
        self,
        n_groups: int = 3,
        setting: Setting = "individual",
        init: Init = "kmeans",
        pre_train_epochs: int = 0,
        task_weights: TaskWeights = "uniform",
        smoothing: float = 0.0,
        tol: float = 1e-4,
        n_restarts: int = 1,
        **training: Any,
    ) -> None:
        self.n_groups = n_groups
        self.setting = setting
        self.init = init
        self.pre_train_epochs = pre_train_epochs
        self.task_weights = task_weights
        self.smoothing = smoothing
        self.tol = tol
        self.n_restarts = n_restarts
        super().__init__(**training)

    def _fit(self, data: CrowdData, valid: Any) -> None:
        """Run EM on the crowd ``data`` (``n_restarts`` times, keeping the most likely run);
        the Individual setting needs worker ids."""
        self._check_parameters()
        if self.setting == "individual" and isinstance(data, CrowdData) and data.is_anonymous:
            raise CrowdDataError(
                "CrowdMixture(setting='individual') needs worker ids and the data are "
                "anonymous; use setting='global'"
            )
        for name in _LEARNED:  # no state of an earlier fit leaks into checkpoints
            vars(self).pop(name, None)
        self._posteriors: np.ndarray | None = None
        super()._fit(data, valid)
        self._posteriors = None  # (P, M, K): only needed during training

    def _loss(self, batch: Any, logits: Any, noise: Any) -> Any:
        """Soft cross-entropy on ``targets_``; with ``task_weights="labels"``, each
        task weighted by its number of annotations (eq. 7)."""
        if self.task_weights == "uniform":
            return super()._loss(batch, logits, noise)
        import torch

        targets = torch.as_tensor(self.targets_[batch.tasks], device=logits.device)
        # a batch holds every annotation of its tasks, so these counts are the T_i
        n_labels = torch.bincount(batch.position, minlength=len(batch.tasks))
        return labels_weighted_cross_entropy(targets, logits, n_labels, self._mean_labels)

    def _crowd_log_likelihood(self, batch: Any, logits: Any, noise: Any) -> Any:
        """Per task, the sum over its annotations of ``log p(y | x)`` of eq. 1-3, with the
        mixed confusion ``sum_m alpha_m beta^(m)`` of the last M-step (each annotation
        has its own group and class in the model)."""
        import torch

        weights = getattr(self, "group_weights_", None)
        groups = getattr(self, "group_confusions_", None)
        if weights is None or groups is None:  # pre-training epochs: no crowd model yet
            return torch.full((len(batch.tasks),), -torch.inf, device=logits.device)
        mixed = np.einsum("m,mkj->kj", np.asarray(weights), np.asarray(groups))
        mixed_t = torch.as_tensor(mixed, device=logits.device).double()
        proba = torch.softmax(logits.double(), dim=1)
        log_annotation = torch.log((proba[batch.position] @ mixed_t).clamp_min(1e-12))
        picked = log_annotation.gather(1, batch.label[:, None]).squeeze(1)
        total = torch.zeros(len(batch.tasks), dtype=picked.dtype, device=picked.device)
        return total.index_add_(0, batch.position, picked)

    # ------------------------------------------------------------------ public API

    def annotation_groups(self, data: CrowdData) -> np.ndarray:
        """``p(g = m | annotation)`` of each annotation of ``data`` (section 3.4), with
        the trained classifier on ``data``'s instances; shape (n_annotations, M), rows
        in ``data``'s annotation order."""
        proba = self._task_proba(data)
        return annotation_group_posteriors(
            proba[data.task], data.label, self.group_weights_, self.group_confusions_
        )

    def annotator_groups(self, data: CrowdData) -> np.ndarray:
        """``p(g = m | a)`` of each annotator of ``data`` from all her annotations
        (section 3.4); shape (n_workers, M)."""
        if data.is_anonymous:
            raise CrowdDataError("annotator groups need worker ids; the data are anonymous")
        proba = self._task_proba(data)
        return annotator_group_posteriors(
            proba[data.task],
            data.label,
            data.worker,
            data.n_workers,
            self.group_weights_,
            self.group_confusions_,
        )

    # ------------------------------------------------------------------ EM steps

    def _initial_targets(self, data: CrowdData, inputs: TaskInputs) -> np.ndarray:
        cells = Cells.from_data(data)
        self._posteriors = self._initial_posteriors(data, cells)
        return consensus(self._posteriors, cells, data.n_tasks)

    def _m_step(self, context: EpochContext) -> None:
        """Group weights and confusions (eq. 6) from the last posteriors; nothing
        during pre-training (but the mean ``T_i`` of the loss is set every epoch)."""
        effort = context.data.feedback_effort
        self._mean_labels = float(effort.sum() / max(np.count_nonzero(effort), 1))
        if context.epoch < self.pre_train_epochs:
            return
        cells = Cells.from_data(context.data)
        if self._posteriors is None:
            self._posteriors = self._resumed_posteriors(context, cells)
        self.group_weights_, self.group_confusions_ = m_step(
            self._posteriors, cells, self.smoothing
        )

    def _e_step(self, context: EpochContext) -> float:
        """Posteriors (section 3.3), the consensus targets (eq. 7) and, in the
        Individual setting, the annotators' groups (section 3.4); returns the
        log-likelihood of eq. 4."""
        data = context.data
        cells = Cells.from_data(data)
        proba = context.classifier_proba()
        self._posteriors, total = e_step(proba, cells, self.group_weights_, self.group_confusions_)
        self.targets_ = consensus(self._posteriors, cells, data.n_tasks).astype(np.float32)
        if self.setting == "individual":
            self.annotator_groups_ = annotator_group_posteriors(
                proba[data.task],
                data.label,
                data.worker,
                data.n_workers,
                self.group_weights_,
                self.group_confusions_,
            )
            self.confusions_ = annotator_confusions(self.annotator_groups_, self.group_confusions_)
        return total

    # ------------------------------------------------------------------ trainer hooks

    def _epoch_end(self, context: EpochContext) -> dict[str, float]:
        if context.epoch < self.pre_train_epochs:
            return {}
        return super()._epoch_end(context)

    def _method_state(self) -> dict[str, Any]:
        learned = {name: getattr(self, name) for name in _LEARNED if hasattr(self, name)}
        return {**super()._method_state(), **learned}

    # ------------------------------------------------------------------ internals

    def _initial_posteriors(self, data: CrowdData, cells: Cells) -> np.ndarray:
        """``q_ij(m, k) = share_ij(m) mv_i[k]`` from the chosen initialisation."""
        majority = vote_posteriors(data, np.dtype(np.float64))
        if self.init == "random":
            shares = random_initial_groups(cells, self.n_groups, self.random_state)
        elif self.setting == "global":
            shares = global_initial_groups(cells, majority, self.n_groups, self.random_state)
        else:
            shares = individual_initial_groups(
                data, cells, majority, self.n_groups, self.random_state
            )
        return shares[:, :, None] * majority[cells.task][:, None, :]

    def _resumed_posteriors(self, context: EpochContext, cells: Cells) -> np.ndarray:
        """The posteriors a checkpoint did not store: they are recomputed exactly, from
        the initialisation (first EM iteration) or by the E-step of the checkpointed
        parameters and network (which are those the last E-step used)."""
        if context.epoch == self.pre_train_epochs:
            return self._initial_posteriors(context.data, cells)
        proba = context.classifier_proba()
        return e_step(proba, cells, self.group_weights_, self.group_confusions_)[0]

    def _task_proba(self, data: CrowdData) -> np.ndarray:
        self._check_fitted()
        if data.n_classes != len(self.classes_):
            raise CrowdDataError(
                f"the model has {len(self.classes_)} classes but the data have {data.n_classes}"
            )
        return self.predict_proba(training_inputs(data))

    def _check_parameters(self) -> None:
        if not isinstance(self.n_groups, int | np.integer) or self.n_groups < 1:
            raise ValueError(f"n_groups must be a positive integer, got {self.n_groups!r}")
        if self.setting not in ("global", "individual"):
            raise ValueError(f"setting must be 'global' or 'individual', got {self.setting!r}")
        if self.init not in ("kmeans", "random"):
            raise ValueError(f"init must be 'kmeans' or 'random', got {self.init!r}")
        if self.task_weights not in ("uniform", "labels"):
            raise ValueError(
                f"task_weights must be 'uniform' or 'labels', got {self.task_weights!r}"
            )
        if self.smoothing < 0:
            raise ValueError(f"smoothing must be non-negative, got {self.smoothing}")
        if not 0 <= self.pre_train_epochs < self.max_epochs:
            raise ValueError(
                f"pre_train_epochs ({self.pre_train_epochs}) must be >= 0 and smaller than "
                f"max_epochs ({self.max_epochs}): the other epochs are the EM iterations"
            )
