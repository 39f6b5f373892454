"""CrowdInG: learning from crowds through informative generative augmentation.

Chu & Wang, "Improve Learning from Crowds via Generative Augmentation", KDD 2021
(../shared/papers/crowding.md). A GAN fills in the missing annotations of the sparse
(task x annotator) matrix, and the classifier is trained through the generator:

* **generative module**: the classifier ``C(z | x)`` (the backbone) and the generator
  ``G(y | x, e_r, eps, z_hat)`` (eq. 1), a two-layer network (64 hidden units) on the
  concatenation of the instance features, the annotator's one-hot vector, Gaussian
  noise ``eps`` and the classifier's output ``z_hat``;
* **discriminative module**: the discriminator ``D(y = c | x, e_r) = sigmoid(u_r^T
  M_c v_n)`` (eq. 2), a bilinear multi-label scorer with annotator and instance
  encoders ``u_r = W_u e_r + b_u``, ``v_n = W_v x_n + b_v``, and the label-correlation
  aggregation (LCA) decoder ``M_hat = D^-1/2 (A + I) D^-1/2 M W`` (the class matrices
  ``M_c`` flattened as the K nodes of a one-layer GCN, see :func:`lca_matrix`); an L2
  penalty on D's outputs (sparsity); and the auxiliary network ``Q(z_hat | x, e_r, y)``
  (two layers, 128 hidden units) on the discriminator's encodings and a low-dimension
  embedding of the flattened ``M_hat_y`` (eq. 3);
* **entropy-based selection** (sec. 3.3.1): per annotator, as many generated
  annotations as the annotator has authentic ones, drawn without replacement among the
  pairs it did not annotate with probability proportional to ``1 / H(G(...))``
  (:func:`select_generated`);
* **counterfactual risk minimisation** (sec. 3.3.2): each epoch the generator of the
  previous epoch is the logging policy ``G_0``; one annotation is sampled from it for
  every (task, annotator) pair; the generator minimises eq. 5
  ``mean((delta - mu) G(y) / G_0(y))`` with ``delta = log(1 - D(y)) - lambda L_I``, and
  the classifier eq. 6 (the same with ``delta = log(1 - D(y))`` and the gradient going
  through ``z_hat``) (:func:`crm_loss`);
* **two-step training** (sec. 3.3.3): tasks whose classifier entropy is below ``t``
  update the generator, the others the classifier (:func:`entropy_split`); the
  classifier is pre-trained with the Crowd Layer (DL-CL, MW on probabilities), then the
  generator and the discriminator are pre-trained.

Choices the paper leaves open (each a parameter):

* ``t`` applies to the classifier's *normalised* entropy ``H / log K`` in [0, 1] (the
  paper sweeps t in 0.2..0.8 without saying what scale);
* ``mu`` (the Lagrange multiplier of eq. 5-6): the paper follows BanditNet (Joachims et
  al. 2018) and searches it; ``mu="mean"`` (default) sets it, per update, to the mean of
  the logged losses ``delta`` (the value BanditNet's search converges to, where the
  self-normalised estimator's control variate is one), and a float fixes it;
  :data:`MU_GRID` is the grid the benchmark searches on the validation split;
* the co-occurrence adjacency ``A[c, c']`` counts pairs of different annotators giving
  ``c`` and ``c'`` to the same instance, divided by ``sqrt(n_c n_c')`` (symmetric
  frequency), with a zero diagonal before ``+ I``;
* the generator is pre-trained by maximum likelihood on the observed annotations
  (classifier fixed) with the classifier's recipe (``max_epochs`` passes, Adam at
  ``lr``, batches of ``batch_size`` annotations), then the discriminator and Q against
  it for ``gan_pretrain_epochs`` passes (batches of ``2 * batch_size`` annotations, as
  in the CrowdInG stage);
* authentic annotations train D through the entry of their label only (binary
  cross-entropy); generated ones the same with target 0; Q is trained on the selected
  generated annotations with the classifier's soft output as target;
* the classifier kept is that of the epoch (0 = after pre-training) with the best
  validation accuracy when ``valid`` is given, else the last one;
  ``select_from_gan=True`` leaves epoch 0 (the pre-trained Crowd Layer, DL-CL) out of
  that choice, so that the kept classifier is always one the CrowdInG stage trained;
* ``t`` fixes the threshold; ``crm_share`` instead fixes the share of tasks whose
  classifier entropy is highest and which update the classifier (eq. 6) each epoch
  (:func:`share_split`): at the default ``t`` on LabelMe nearly every task falls below
  ``t`` after the Crowd Layer pre-training, so eq. 6 sees a few dozen tasks;
* the paper uses batch normalisation "in each layer" of the classifier: the shared
  training parameter ``batch_norm=True`` gives the MLP backbone a batch-norm layer
  after each hidden layer, for the Crowd Layer pre-training and the CrowdInG stage
  alike (off by default, as in every other learner here);
* ``shuffle_signal=True`` is a diagnostic control, not part of the method: the
  classifier's update (eq. 6) uses the discriminator's losses ``log(1 - D(y))``
  permuted at random across the pairs of each batch, the same values and hence the
  same step sizes, with the link between an annotation and its plausibility cut.

Variants of the paper's Table 2 are options: ``info_loss=False`` (CrowdG),
``instance_features=False`` (CrowdInGU), ``annotator_features=False`` (CrowdInGI),
``selection="random"`` (CrowdInGR); ``final="crowdlayer"`` gives DL-CL+InG (a fresh
Crowd Layer trained on "the expanded dataset provided by CrowdInG", which the paper
does not define further: the observed annotations plus the generator's most probable
annotation (noise 0) of either the missing pairs the entropy selection picks, as many
per annotator as it has authentic ones (``expand="selected"``, the default, chosen on
LabelMe's validation split by the ``crowding`` benchmark), or of every missing pair
(``expand="all"``; on LabelMe 56k generated against 2.5k authentic annotations)).
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from crowdlearn._progress import format_postfix, progress_bar, progress_scope
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.learning._base import (
    TRAINING_PARAMS,
    BaseLearner,
    training_inputs,
)
from crowdlearn.learning._trainer import predict_in_batches, resolve_device
from crowdlearn.learning.backbones import build_backbone
from crowdlearn.learning.crowd_layer import CrowdLayer

#: The values of ``mu`` the benchmark searches on LabelMe's validation split.
MU_GRID: tuple[Any, ...] = ("mean", 0.0, -0.5, -1.0)

#: Variants of the paper's Table 2 (and DL-CL+InG) as constructor options.
VARIANTS: dict[str, dict[str, Any]] = {
    "CrowdInG": {},
    "CrowdG": {"info_loss": False},
    "CrowdInGU": {"instance_features": False},
    "CrowdInGI": {"annotator_features": False},
    "CrowdInGR": {"selection": "random"},
    "DL-CL+InG": {"final": "crowdlayer"},
}

_EPS = 1e-6


# ---------------------------------------------------------------------- pure helpers


def lca_matrix(task: Any, worker: Any, label: Any, n_classes: int) -> np.ndarray:
    """The GCN-normalised label co-occurrence matrix ``D^-1/2 (A + I) D^-1/2``.

    ``A[c, c']`` (``c != c'``) is the number of pairs of annotations by different
    annotators on the same task with labels ``c`` and ``c'``, divided by
    ``sqrt(n_c n_c')`` (``n_c``: the annotations of class ``c``); the diagonal of ``A``
    is zero. ``D`` is the diagonal degree matrix of ``A + I``.

    Parameters
    ----------
    task, worker, label : array of int (n_annotations,)
    n_classes : int

    Returns
    -------
    ndarray (n_classes, n_classes)
        Symmetric, non-negative, with spectral radius 1.

    Examples
    --------
    >>> m = lca_matrix([0, 0, 1], [0, 1, 0], [0, 1, 1], 3)
    >>> bool(np.allclose(m, m.T)), float(m[2, 2])
    (True, 1.0)
    """
    task = np.asarray(task, dtype=np.int64)
    worker = np.asarray(worker, dtype=np.int64)
    label = np.asarray(label, dtype=np.int64)
    counts = np.zeros((n_classes, n_classes))
    order = np.argsort(task, kind="stable")
    task, worker, label = task[order], worker[order], label[order]
    bounds = np.flatnonzero(np.diff(task)) + 1
    for labels, workers in zip(np.split(label, bounds), np.split(worker, bounds), strict=True):
        if len(labels) < 2:
            continue
        different = workers[:, None] != workers[None, :]
        np.add.at(counts, (labels[:, None], labels[None, :]), different.astype(float))
    np.fill_diagonal(counts, 0.0)
    per_class = np.bincount(label, minlength=n_classes).astype(float)
    scale = np.sqrt(np.outer(per_class, per_class))
    adjacency = np.divide(counts, scale, out=np.zeros_like(counts), where=scale > 0)
    adjacency = adjacency + np.eye(n_classes)
    degree = adjacency.sum(axis=1)
    inv_sqrt = 1.0 / np.sqrt(degree)
    return inv_sqrt[:, None] * adjacency * inv_sqrt[None, :]


def crm_loss(
    delta: torch.Tensor, mu: float, current: torch.Tensor, logged: torch.Tensor
) -> torch.Tensor:
    """Counterfactual risk of eq. 5 / 6: ``mean((delta - mu) * current / logged)``.

    Parameters
    ----------
    delta : Tensor (n,)
        Loss of each logged annotation (no gradient).
    mu : float
        Lagrange multiplier.
    current : Tensor (n,)
        Probability of each logged annotation under the policy being trained.
    logged : Tensor (n,)
        Its probability under the logging policy ``G_0`` (no gradient).
    """
    return torch.mean((delta.detach() - mu) * current / logged.detach().clamp_min(_EPS))


def normalised_entropy(proba: np.ndarray) -> np.ndarray:
    """Row entropies divided by ``log K`` (in [0, 1])."""
    proba = np.clip(np.asarray(proba, dtype=np.float64), 1e-12, 1.0)
    k = proba.shape[1]
    return -(proba * np.log(proba)).sum(axis=1) / math.log(k) if k > 1 else np.zeros(len(proba))


def entropy_split(proba: np.ndarray, t: float) -> np.ndarray:
    """The two-step split: True for tasks whose normalised classifier entropy is below
    ``t`` (they update the generator), False for the others (they update the
    classifier)."""
    return normalised_entropy(proba) < t


def share_split(proba: np.ndarray, share: float) -> tuple[np.ndarray, float]:
    """The two-step split with the classifier's share fixed instead of ``t``.

    The ``round(share * n)`` tasks with the highest normalised classifier entropy update
    the classifier (False), the others the generator (True); ties are broken by task
    order, so the share is met exactly whatever the entropies.

    Parameters
    ----------
    proba : ndarray (n, K)
        The classifier's probabilities.
    share : float in [0, 1]
        Share of the tasks that update the classifier.

    Returns
    -------
    low : ndarray of bool (n,)
        True for the tasks that update the generator.
    t : float
        The threshold this split amounts to: the smallest normalised entropy among the
        classifier's tasks (1.0 when there are none).

    Examples
    --------
    >>> low, t = share_split(np.array([[0.9, 0.1], [0.5, 0.5], [0.6, 0.4]]), 1 / 3)
    >>> low.tolist(), round(t, 3)
    ([True, False, True], 1.0)
    """
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"crm_share must be in [0, 1], got {share}")
    entropy = normalised_entropy(proba)
    n = len(entropy)
    n_high = round(share * n)
    # stable sort of -entropy: the highest entropies first, ties in task order
    order = np.argsort(-entropy, kind="stable")
    low = np.ones(n, dtype=bool)
    low[order[:n_high]] = False
    t = float(entropy[order[n_high - 1]]) if n_high > 0 else 1.0
    return low, t


def select_generated(
    pair_worker: np.ndarray,
    entropy: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
    rule: Literal["entropy", "random"] = "entropy",
) -> np.ndarray:
    """Indices of the generated annotations the discriminator sees.

    For each annotator ``r``, ``counts[r]`` candidates among those with
    ``pair_worker == r`` (all of them when fewer), without replacement, with probability
    proportional to ``1 / entropy`` (``rule="entropy"``) or uniformly (``"random"``).
    """
    pair_worker = np.asarray(pair_worker, dtype=np.int64)
    entropy = np.asarray(entropy, dtype=np.float64)
    if rule not in ("entropy", "random"):
        raise ValueError(f"selection must be 'entropy' or 'random', got {rule!r}")
    order = np.argsort(pair_worker, kind="stable")
    starts = np.searchsorted(pair_worker[order], np.arange(len(counts) + 1))
    chosen = []
    for r, wanted in enumerate(np.asarray(counts, dtype=np.int64)):
        pool = order[starts[r] : starts[r + 1]]
        if wanted <= 0 or len(pool) == 0:
            continue
        size = min(int(wanted), len(pool))
        weights = None
        if rule == "entropy":
            weights = 1.0 / np.maximum(entropy[pool], 1e-8)
            weights = weights / weights.sum()
        chosen.append(rng.choice(pool, size=size, replace=False, p=weights))
    return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)


# ---------------------------------------------------------------------- networks


class Generator(nn.Module):
    """``G(y | x, e_r, eps, z_hat)`` (eq. 1): a two-layer network to K logits.

    The first layer acts on the concatenation ``[eps, z_hat, x, one_hot(r)]``; it is
    stored in parts (``x_in`` for the instance features, ``worker_in`` for the
    annotator's one-hot column, ``rest_in`` for noise and classifier output, each
    initialised with the fan-in of the whole concatenation) so that ``W_x x`` is
    computed once per task and broadcast to its annotator pairs (``task=`` in
    :meth:`forward`), and the one-hot product is a column look-up.
    """

    def __init__(
        self,
        x_dim: int,
        n_workers: int,
        n_classes: int,
        noise_dim: int,
        hidden: int,
        instance_features: bool,
        annotator_features: bool,
    ) -> None:
        super().__init__()
        self.use_x = instance_features
        self.use_e = annotator_features
        self.n_workers = n_workers
        width = noise_dim + n_classes + (x_dim if instance_features else 0)
        width += n_workers if annotator_features else 0
        bound = 1.0 / math.sqrt(width)
        self.rest_in = nn.Linear(noise_dim + n_classes, hidden)
        self.x_in = nn.Linear(x_dim, hidden, bias=False) if instance_features else None
        self.worker_in = (
            nn.Parameter(torch.empty(n_workers, hidden)) if annotator_features else None
        )
        for weight in (self.rest_in.weight, self.rest_in.bias, self.worker_in):
            if weight is not None:
                nn.init.uniform_(weight, -bound, bound)
        if self.x_in is not None:
            nn.init.uniform_(self.x_in.weight, -bound, bound)
        self.out = nn.Sequential(nn.ReLU(), nn.Linear(hidden, n_classes))

    def forward(
        self,
        x: torch.Tensor,
        worker: torch.Tensor,
        eps: torch.Tensor,
        zhat: torch.Tensor,
        task: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (n, K) for n (task, annotator) pairs.

        ``x`` holds one row per pair, or, with ``task`` (n,), one row per distinct
        task with ``task`` indexing its rows (the same result, computed once per task).
        """
        h = self.rest_in(torch.cat([eps, zhat], dim=1))
        if self.x_in is not None:
            hx = self.x_in(x)
            h = h + (hx if task is None else hx[task])
        if self.worker_in is not None:
            h = h + self.worker_in[worker]
        return self.out(h)


class Discriminator(nn.Module):
    """Bilinear multi-label discriminator with the LCA decoder (eq. 2) and the
    auxiliary network Q (eq. 3) sharing its encoders."""

    def __init__(
        self,
        x_dim: int,
        n_workers: int,
        n_classes: int,
        embed: int,
        q_hidden: int,
        lca: bool,
    ) -> None:
        super().__init__()
        self.n_workers = n_workers
        self.encode_worker = nn.Linear(n_workers, embed)
        self.encode_x = nn.Linear(x_dim, embed)
        flat = embed * embed
        self.M = nn.Parameter(torch.randn(n_classes, flat) / embed)
        self.W = nn.Parameter(torch.eye(flat))
        self.lca = lca
        self.register_buffer("adjacency", torch.eye(n_classes))
        self.embed = embed
        self.label_embedding = nn.Linear(flat, embed)
        self.q = nn.Sequential(
            nn.Linear(3 * embed, q_hidden), nn.ReLU(), nn.Linear(q_hidden, n_classes)
        )

    def class_matrices(self) -> torch.Tensor:
        """``M_hat`` (K, embed * embed): with LCA ``A_norm M W``, else ``M``."""
        if not self.lca:
            return self.M
        return self.adjacency @ self.M @ self.W

    def encode(
        self, x: torch.Tensor, worker: torch.Tensor, task: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``u_r = W_u e_r + b_u`` (a column look-up of the one-hot product) and
        ``v_n = W_v x_n + b_v``; with ``task``, ``x`` has one row per distinct task and
        ``task`` indexes it (see :meth:`Generator.forward`)."""
        u = self.encode_worker.weight.t()[worker] + self.encode_worker.bias
        v = self.encode_x(x)
        return u, (v if task is None else v[task])

    def scores(
        self, x: torch.Tensor, worker: torch.Tensor, task: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits of ``D(y = c | x, e_r)`` for every class c, (n, K)."""
        return self.scores_and_q(x, worker, task=task)[0]

    def q_logits(
        self,
        x: torch.Tensor,
        worker: torch.Tensor,
        label: torch.Tensor,
        task: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits of ``P_Q(z_hat | x, e_r, y)``, (n, K)."""
        u, v = self.encode(x, worker, task)
        return self._q(u, v, self.class_matrices(), label)

    def scores_and_q(
        self,
        x: torch.Tensor,
        worker: torch.Tensor,
        label: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,
        task: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """:meth:`scores` of every pair and, with ``label``, :meth:`q_logits` of the
        pairs ``rows`` selects (a boolean mask; all pairs when None), from one encoding
        and one ``M_hat``: the same values as the two calls, at half the encoder work."""
        u, v = self.encode(x, worker, task)
        matrices = self.class_matrices()
        scores = torch.einsum("nd,kde,ne->nk", u, matrices.view(-1, self.embed, self.embed), v)
        if label is None:
            return scores, None
        if rows is not None:
            u, v, label = u[rows], v[rows], label[rows]
        return scores, self._q(u, v, matrices, label)

    def _q(
        self, u: torch.Tensor, v: torch.Tensor, matrices: torch.Tensor, label: torch.Tensor
    ) -> torch.Tensor:
        m = self.label_embedding(matrices[label])
        return self.q(torch.cat([u, v, m], dim=1))


# ---------------------------------------------------------------------- the learner


class CrowdInG(BaseLearner):
    """CrowdInG (Chu & Wang, KDD 2021): GAN annotation augmentation (see the module doc).

    Parameters
    ----------
    lam : float, default 0.1
        ``lambda``, the weight of the information loss (eq. 4); the benchmark's
        sensitivity sweep (paper Fig. 6) covers 0.1..1. The defaults of ``lam``,
        ``t``, ``mu``, ``gan_lr`` and ``expand`` are the values the ``crowding``
        benchmark's coordinate search chose on LabelMe's validation split (seed 0,
        the paper's 40 x 5 CrowdInG stage); on that split every lambda and t
        scored within 2 of its 500 images (BENCHMARKS.md).
    t : float, default 0.4
        Normalised-entropy threshold of the two-step update (tasks below update G).
    crm_share : float in (0, 1] or None, default None
        When set, replaces ``t``: each epoch the threshold is placed so that this share
        of the tasks (those with the most uncertain classifier) update the classifier
        by eq. 6 and the rest the generator (:func:`share_split`).
    select_from_gan : bool, default False
        With validation data, choose the kept classifier among the CrowdInG epochs
        1..``gan_epochs`` only, leaving out epoch 0 (the pre-trained Crowd Layer, so
        that the result is never DL-CL itself); False: epoch 0 competes too.
    shuffle_signal : bool, default False
        Diagnostic control (not the method): the classifier's CRM update uses the
        discriminator's losses permuted across the pairs of each batch (module doc).
    mu : "mean" or float, default "mean"
        Lagrange multiplier of eq. 5-6 (see the module doc).
    gan_epochs : int, default 10
        CrowdInG epochs after pre-training. The paper runs 40 (the ``crowding``
        benchmark passes 40); the default is 10 for cost. The CrowdInG stage was most
        of a 40-epoch fit, and in our measurements it never raised test accuracy
        over its pre-trained Crowd Layer start: at the paper's rate 2e-4 the accuracy
        falls epoch by epoch on LabelMe and Music (``crowding-drift``), and at the
        default 1e-5 the 10-epoch and 40-epoch fits score the same on four datasets
        (BENCHMARKS.md, the leaderboard's reading) at a quarter of the GAN epochs.
    updates_per_epoch : int, default 5
        Updates of the generative and discriminative modules per epoch (the paper's 5);
        each is one pass of D/Q, then of G over the low-entropy tasks, then of C over
        the others.
    gan_pretrain_epochs : int, default 5
        Passes of discriminator pre-training (the generator's pre-training runs
        ``max_epochs`` passes, see the module doc).
    gan_lr : float, default 1e-5
        Adam learning rate of G, D/Q and of the classifier in the CrowdInG stage (the
        paper searches {3e-4, 2e-4, 1e-4, 1e-5}; on LabelMe validation no CrowdInG
        epoch improved on the pre-trained Crowd Layer at the three larger rates).
    noise_dim : int, default 8
    g_hidden : int, default 64
    q_hidden : int, default 128
    embed : int, default 16
        Size of D's annotator and instance encodings.
    sparsity : float, default 0.01
        Weight of the L2 penalty on D's outputs.
    lca : bool, default True
        The label-correlation-aggregation decoder (the paper disables it on Music).
    info_loss : bool, default True
        False: CrowdG.
    instance_features, annotator_features : bool, default True
        False: CrowdInGU / CrowdInGI (the generator does not see them).
    selection : {"entropy", "random"}, default "entropy"
        "random": CrowdInGR.
    final : {"crowding", "crowdlayer"}, default "crowding"
        "crowdlayer": DL-CL+InG, a Crowd Layer retrained on the expanded annotations.
    expand : {"selected", "all"}, default "selected"
        The generated annotations DL-CL+InG adds (:meth:`expanded_annotations`):
        entropy-selected, as many per annotator as it has authentic ones, or all the
        missing pairs.
    **training
        Shared training parameters (:class:`BaseLearner`): they drive the Crowd Layer
        pre-training (``max_epochs`` epochs) and the DL-CL+InG retraining; the CrowdInG
        stage uses ``batch_size`` tasks per batch (all their annotator pairs).
        ``checkpoint_dir``/``resume`` are not used: CrowdInG fits are not
        checkpointed. ``progress`` shows a bar over the stages (Crowd Layer
        pre-training, generator and discriminator pre-training, the CrowdInG epochs
        counted in updates, the DL-CL+InG retraining) with each stage's bar nested.
        ``batch_norm=True`` puts batch normalisation in the MLP classifier (the paper's
        "in each layer"), in the pre-training and the CrowdInG stage.

    Attributes
    ----------
    history_ : DataFrame
        One row per CrowdInG epoch (0 = after pre-training): ``d_loss``, ``g_loss``,
        ``c_loss``, ``info_loss`` (mean ``log P_Q(z_hat | x, e, y)`` on the generated
        annotations, the first term of eq. 3), ``n_low`` (tasks updating G), ``mu``,
        ``valid_accuracy`` (with validation data), ``train_loss`` (= ``c_loss``),
        ``seconds``; ``n_classifier`` (tasks updating the classifier), ``share_low``
        (``n_low`` over the tasks: the share below the threshold) and ``t_used`` (the
        threshold of the epoch: ``t``, or the one ``crm_share`` gives). With a
        batch-norm classifier, a batch of one task cannot update it and is merged into
        the previous batch (or skipped when it is the only one).
    pretrain_history_ : DataFrame
        The Crowd Layer pre-training's history.
    lca_ : ndarray (K, K)
        The normalised co-occurrence matrix.
    module_ : nn.ModuleDict
        ``classifier``, ``generator``, ``discriminator``.
    """

    _refit_supported = False  # rounds or stages: their epochs do not add up

    def __init__(
        self,
        lam: float = 0.1,
        t: float = 0.4,
        mu: Any = "mean",
        gan_epochs: int = 10,
        updates_per_epoch: int = 5,
        gan_pretrain_epochs: int = 5,
        gan_lr: float = 1e-5,
        noise_dim: int = 8,
        g_hidden: int = 64,
        q_hidden: int = 128,
        embed: int = 16,
        sparsity: float = 0.01,
        lca: bool = True,
        info_loss: bool = True,
        instance_features: bool = True,
        annotator_features: bool = True,
        selection: Literal["entropy", "random"] = "entropy",
        final: Literal["crowding", "crowdlayer"] = "crowding",
        expand: Literal["selected", "all"] = "selected",
        crm_share: float | None = None,
        select_from_gan: bool = False,
        shuffle_signal: bool = False,
        **training: Any,
    ) -> None:
        self.lam = lam
        self.t = t
        self.mu = mu
        self.gan_epochs = gan_epochs
        self.updates_per_epoch = updates_per_epoch
        self.gan_pretrain_epochs = gan_pretrain_epochs
        self.gan_lr = gan_lr
        self.noise_dim = noise_dim
        self.g_hidden = g_hidden
        self.q_hidden = q_hidden
        self.embed = embed
        self.sparsity = sparsity
        self.lca = lca
        self.info_loss = info_loss
        self.instance_features = instance_features
        self.annotator_features = annotator_features
        self.selection = selection
        self.final = final
        self.expand = expand
        self.crm_share = crm_share
        self.select_from_gan = select_from_gan
        self.shuffle_signal = shuffle_signal
        super().__init__(**training)

    # ------------------------------------------------------------------ modules

    def _build_module(
        self, item_shape: tuple[int, ...], n_classes: int, n_workers: int
    ) -> nn.ModuleDict:
        x_dim = int(np.prod(item_shape))
        return nn.ModuleDict(
            {
                "classifier": build_backbone(
                    self.backbone,
                    item_shape,
                    n_classes,
                    self.hidden,
                    self.dropout,
                    self.batch_norm,
                ),
                "generator": Generator(
                    x_dim,
                    n_workers,
                    n_classes,
                    self.noise_dim,
                    self.g_hidden,
                    self.instance_features,
                    self.annotator_features,
                ),
                "discriminator": Discriminator(
                    x_dim, n_workers, n_classes, self.embed, self.q_hidden, self.lca
                ),
            }
        )

    def _method_state(self) -> dict[str, Any]:
        state = {}
        for name in ("lca_", "pretrain_history_"):
            if hasattr(self, name):
                state[name] = getattr(self, name)
        return state

    # ------------------------------------------------------------------ fit

    def _fit(self, data: CrowdData, valid: Any) -> None:
        """Pre-train (Crowd Layer, G, D), then run the CrowdInG epochs (module doc)."""
        self._check(data)
        with progress_scope(self.progress) as show:
            self._fit_stages(data, valid, show)

    def _fit_stages(self, data: CrowdData, valid: Any, show: bool) -> None:
        stages = ["Crowd Layer pre-training", "G pre-training", "D pre-training", "CrowdInG"]
        if self.final == "crowdlayer":
            stages.append("DL-CL+InG retraining")
        # the stage bar; each stage's own bar (epochs, passes, updates) nests under it
        stage_bar = progress_bar(
            total=len(stages), progress=show, desc=type(self).__name__, unit="stage"
        )
        stage_bar.set_postfix(stage=stages[0])
        inputs = training_inputs(data)
        device = resolve_device(self.device)
        torch.manual_seed(self.random_state)
        rng = np.random.default_rng(self.random_state)
        n, r, k = data.n_tasks, data.n_workers, data.n_classes
        shape = (tuple(inputs.item_shape), k, r)
        module = self._build_module(*shape).to(device)
        # 1. classifier pre-training with the Crowd Layer (DL-CL)
        pre = CrowdLayer("MW", **self._training(checkpoint_dir=None, resume=False))
        pre.fit(data, valid)
        module["classifier"].load_state_dict(pre.module_["classifier"].state_dict())
        self.pretrain_history_ = pre.history_
        stage_bar.update()
        stage_bar.set_postfix(stage=stages[1])
        self.lca_ = lca_matrix(data.task, data.worker, data.label, k)
        disc: Discriminator = module["discriminator"]  # type: ignore[assignment]
        disc.adjacency.copy_(torch.as_tensor(self.lca_, dtype=torch.float32))
        x_all = torch.as_tensor(inputs.take(np.arange(n)), device=device).float().flatten(1)
        observed = np.zeros(n * r, dtype=bool)
        observed[data.task.astype(np.int64) * r + data.worker] = True
        state = _State(
            data=data,
            x=x_all,
            inputs_x=torch.as_tensor(inputs.take(np.arange(n)), device=device),
            observed=observed,
            counts=np.bincount(data.worker, minlength=r),
            device=device,
        )
        opt_g = torch.optim.Adam(module["generator"].parameters(), lr=self.gan_lr, foreach=True)
        opt_d = torch.optim.Adam(disc.parameters(), lr=self.gan_lr, foreach=True)
        opt_c = torch.optim.Adam(module["classifier"].parameters(), lr=self.gan_lr, foreach=True)
        # 2. generator and discriminator pre-training
        self._pretrain_gan(module, state, opt_g, opt_d, rng, show, stage_bar, stages)
        stage_bar.set_postfix(stage=stages[3])
        rows: list[dict[str, Any]] = []
        best: tuple[float, int, dict[str, torch.Tensor]] | None = None
        bar = progress_bar(
            total=self.gan_epochs * self.updates_per_epoch,
            progress=show,
            desc="CrowdInG epochs",
            unit="update",
        )
        for epoch in range(self.gan_epochs + 1):
            start = time.perf_counter()
            row: dict[str, Any] = {"epoch": epoch}
            if epoch > 0:
                row.update(self._epoch(module, state, opt_g, opt_d, opt_c, rng, bar))
            else:
                row.update(d_loss=np.nan, g_loss=np.nan, c_loss=np.nan, info_loss=np.nan)
                row.update(n_low=np.nan, n_classifier=np.nan, share_low=np.nan)
                row.update(t_used=np.nan, mu=np.nan)
            row["train_loss"] = row["c_loss"]
            if valid is not None:
                row.update(valid.evaluate(self, module, device))
                score = valid.score(row, self)
                eligible = epoch > 0 or not self.select_from_gan
                if eligible and (best is None or score > best[0]):
                    best = (score, epoch, _copy_state(module["classifier"]))
            row["seconds"] = time.perf_counter() - start
            rows.append(row)
            shown = ("d_loss", "g_loss", "c_loss", "valid_accuracy")
            bar.set_postfix(
                format_postfix(
                    {"epoch": f"{epoch}/{self.gan_epochs}", **{k: row.get(k) for k in shown}}
                )
            )
            for value in (row["d_loss"], row["g_loss"], row["c_loss"]):
                if epoch > 0 and not np.isfinite(value):
                    bar.close()
                    stage_bar.close()
                    raise FloatingPointError(f"CrowdInG produced a non-finite loss at {epoch}")
        bar.close()
        stage_bar.update()
        if best is not None:
            module["classifier"].load_state_dict(best[2])
            self.best_epoch_ = best[1]
            self.valid_score_ = best[0]
        else:
            self.best_epoch_ = self.gan_epochs
            self.valid_score_ = None
        self.module_ = module
        self._shape_ = shape
        self.classes_ = data.classes
        self.history_ = pd.DataFrame(rows)
        if self.final == "crowdlayer":
            stage_bar.set_postfix(stage=stages[4])
            expanded = self.expanded_annotations(data, self.expand)
            retrained = CrowdLayer("MW", **self._training(checkpoint_dir=None, resume=False))
            retrained.fit(expanded, valid)
            module["classifier"].load_state_dict(retrained.module_["classifier"].state_dict())
            self.best_epoch_ = retrained.best_epoch_
            stage_bar.update()
        stage_bar.close()

    def expanded_annotations(
        self, data: CrowdData, expand: Literal["selected", "all"] | None = None
    ) -> CrowdData:
        """``data`` plus the generator's most probable annotation (noise 0) for
        (task, annotator) pairs without an observed annotation.

        ``expand`` (default: the learner's ``expand``) ``"all"``: every missing
        pair; ``"selected"``: per annotator, as many
        missing pairs as it has observed annotations, drawn without replacement with
        probability proportional to ``1 / H`` (the entropy of the generator's
        distribution on the pair), as the discriminator's selection (sec. 3.3.1);
        the draw is seeded by ``random_state``.
        """
        self._check_fitted()
        expand = self.expand if expand is None else expand
        if expand not in ("selected", "all"):
            raise ValueError(f"expand must be 'selected' or 'all', got {expand!r}")
        inputs = self._user_inputs(training_inputs(data))
        module = self.module_
        device = next(module.parameters()).device
        n, r = data.n_tasks, data.n_workers
        observed = np.zeros(n * r, dtype=bool)
        observed[data.task.astype(np.int64) * r + data.worker] = True
        free = np.flatnonzero(~observed)
        zhat = torch.as_tensor(
            predict_in_batches(
                module["classifier"], inputs, np.arange(n), 4 * self.batch_size, device
            ),
            dtype=torch.float32,
            device=device,
        )
        x = torch.as_tensor(inputs.take(np.arange(n)), device=device).float().flatten(1)
        labels = np.empty(len(free), dtype=np.int64)
        entropy = np.empty(len(free))
        generator = module["generator"]
        generator.eval()
        with torch.no_grad():
            for s in range(0, len(free), 65536):
                part = free[s : s + 65536]
                task = torch.as_tensor(part // r, device=device)
                worker = torch.as_tensor(part % r, device=device)
                eps = torch.zeros(len(part), self.noise_dim, device=device)
                logits = generator(x, worker, eps, zhat[task], task=task)
                labels[s : s + len(part)] = logits.argmax(dim=1).cpu().numpy()
                proba = torch.softmax(logits, dim=1)
                h = -(proba * torch.log(proba.clamp_min(1e-12))).sum(dim=1)
                entropy[s : s + len(part)] = h.cpu().numpy()
        if expand == "selected":
            counts = np.bincount(data.worker, minlength=r)
            rng = np.random.default_rng(self.random_state)
            keep = np.sort(select_generated(free % r, entropy, counts, rng, "entropy"))
            free, labels = free[keep], labels[keep]
        return data._replace(
            task=np.concatenate([data.task, (free // r).astype(data.task.dtype)]),
            worker=np.concatenate([data.worker, (free % r).astype(data.worker.dtype)]),
            label=np.concatenate([data.label, labels.astype(data.label.dtype)]),
        )

    # ------------------------------------------------------------------ internals

    def _check(self, data: CrowdData) -> None:
        if not isinstance(data, CrowdData):
            raise TypeError(f"fit expects a CrowdData, got {type(data).__name__}")
        if data.is_anonymous:
            raise CrowdDataError("CrowdInG generates each annotator's annotations: needs ids")
        if self.selection not in ("entropy", "random"):
            raise ValueError(f"selection must be 'entropy' or 'random', got {self.selection!r}")
        if self.final not in ("crowding", "crowdlayer"):
            raise ValueError(f"final must be 'crowding' or 'crowdlayer', got {self.final!r}")
        if self.expand not in ("selected", "all"):
            raise ValueError(f"expand must be 'selected' or 'all', got {self.expand!r}")
        if not (self.mu == "mean" or isinstance(self.mu, (int, float))):
            raise ValueError(f"mu must be 'mean' or a number, got {self.mu!r}")
        if not 0.0 <= self.t <= 1.0:
            raise ValueError(f"t must be in [0, 1], got {self.t}")
        if self.crm_share is not None and not 0.0 < self.crm_share <= 1.0:
            raise ValueError(f"crm_share must be None or in (0, 1], got {self.crm_share}")
        if self.select_from_gan and self.gan_epochs < 1:
            raise ValueError("select_from_gan needs gan_epochs >= 1 (epoch 0 is left out)")

    def _training(self, **override: Any) -> dict[str, Any]:
        params = {name: getattr(self, name) for name in TRAINING_PARAMS}
        params.update(override)
        return params

    def _zhat(self, module: nn.ModuleDict, state: _State) -> torch.Tensor:
        classifier = module["classifier"]
        was = classifier.training
        classifier.eval()
        with torch.no_grad():
            out = torch.softmax(classifier(state.inputs_x).float(), dim=1)
        classifier.train(was)
        return out

    def _log(self, module: nn.ModuleDict, state: _State, rng: np.random.Generator) -> _Logged:
        """The logging policy's sample: one annotation for every pair, from ``G_0``."""
        n, r = state.data.n_tasks, state.data.n_workers
        zhat = self._zhat(module, state)
        device = state.device
        eps = torch.randn(n * r, self.noise_dim, device=device)
        pairs = torch.arange(n * r, device=device)
        task, worker = pairs // r, pairs % r
        generator = module["generator"]
        with torch.no_grad():
            logits = torch.cat(
                [
                    generator(
                        state.x,
                        worker[s : s + 65536],
                        eps[s : s + 65536],
                        zhat[task[s : s + 65536]],
                        task=task[s : s + 65536],
                    )
                    for s in range(0, n * r, 65536)
                ]
            )
            proba = torch.softmax(logits, dim=1)
            label = torch.multinomial(proba, 1).squeeze(1)
            logged = proba.gather(1, label[:, None]).squeeze(1)
            entropy = -(proba * torch.log(proba.clamp_min(1e-12))).sum(dim=1)
        return _Logged(zhat, eps, label, logged, entropy.cpu().numpy())

    def _d_pass(
        self,
        module: nn.ModuleDict,
        state: _State,
        logged: _Logged,
        chosen: np.ndarray,
        opt_d: torch.optim.Optimizer,
        rng: np.random.Generator,
    ) -> tuple[float, float]:
        """One pass of D (authentic vs selected generated) and Q; returns the mean D
        loss and the mean ``log P_Q(z_hat | x, e, y)`` on the generated annotations."""
        data, r, device = state.data, state.data.n_workers, state.device
        disc: Discriminator = module["discriminator"]  # type: ignore[assignment]
        real_pairs = data.task.astype(np.int64) * r + data.worker
        pairs = np.concatenate([real_pairs, chosen])
        labels = np.concatenate([data.label.astype(np.int64), logged.label[chosen].cpu().numpy()])
        target = np.concatenate([np.ones(len(real_pairs)), np.zeros(len(chosen))])
        order = rng.permutation(len(pairs))
        step = 2 * self.batch_size
        d_total, info_total, info_count, batches = 0.0, 0.0, 0, 0
        for s in range(0, len(order), step):
            idx = order[s : s + step]
            p = torch.as_tensor(pairs[idx], device=device)
            task, worker = p // r, p % r
            y = torch.as_tensor(labels[idx], device=device)
            tgt = torch.as_tensor(target[idx], dtype=torch.float32, device=device)
            fake = tgt == 0
            any_fake = bool(fake.any())
            # one encoding serves D's scores and Q (on the generated pairs)
            scores, q = disc.scores_and_q(
                state.x[task], worker, y if any_fake else None, rows=fake
            )
            picked = scores.gather(1, y[:, None]).squeeze(1)
            loss = F.binary_cross_entropy_with_logits(picked, tgt)
            loss = loss + self.sparsity * torch.sigmoid(scores).pow(2).sum(dim=1).mean()
            if any_fake:
                q_log = torch.log_softmax(q, dim=1)
                info = (logged.zhat[task[fake]] * q_log).sum(dim=1).mean()
                loss = loss - info  # Q maximises the lower bound of eq. 3
                info_total += float(info.detach()) * int(fake.sum())
                info_count += int(fake.sum())
            opt_d.zero_grad(set_to_none=True)
            loss.backward()
            opt_d.step()
            d_total += float(loss.detach())
            batches += 1
        return d_total / max(batches, 1), info_total / max(info_count, 1)

    def _deltas(
        self,
        module: nn.ModuleDict,
        state: _State,
        logged: _Logged,
        pairs: torch.Tensor,
        xs: torch.Tensor,
        local: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``L_G = log(1 - D(y))`` and ``delta = L_G - lambda L_I`` of logged pairs
        (``xs``: the features of their distinct tasks, ``local`` indexes it)."""
        r = state.data.n_workers
        disc: Discriminator = module["discriminator"]  # type: ignore[assignment]
        task, worker = pairs // r, pairs % r
        y = logged.label[pairs]
        with torch.no_grad():
            scores, q = disc.scores_and_q(xs, worker, y if self.info_loss else None, task=local)
            d = torch.sigmoid(scores.gather(1, y[:, None]).squeeze(1))
            lg = torch.log((1 - d).clamp_min(_EPS))
            delta = lg
            if q is not None:
                q_log = torch.log_softmax(q, dim=1)
                delta = lg - self.lam * (logged.zhat[task] * q_log).sum(dim=1)
        return lg, delta

    def _mu(self, delta: torch.Tensor) -> float:
        return float(delta.mean()) if self.mu == "mean" else float(self.mu)

    def _g_pass(
        self,
        module: nn.ModuleDict,
        state: _State,
        logged: _Logged,
        tasks: np.ndarray,
        opt_g: torch.optim.Optimizer,
        rng: np.random.Generator,
    ) -> tuple[float, float]:
        """Eq. 5 over all pairs of ``tasks`` (classifier fixed)."""
        r, device = state.data.n_workers, state.device
        generator = module["generator"]
        total, batches, mus = 0.0, 0, []
        for chunk in _chunks(rng.permutation(tasks), self.batch_size):
            pairs = _pairs_of(chunk, r, device)
            xs = state.x[torch.as_tensor(chunk, device=device)]
            local = torch.arange(len(chunk), device=device).repeat_interleave(r)
            _, delta = self._deltas(module, state, logged, pairs, xs, local)
            task, worker = pairs // r, pairs % r
            logits = generator(xs, worker, logged.eps[pairs], logged.zhat[task], task=local)
            current = torch.softmax(logits, dim=1).gather(1, logged.label[pairs, None]).squeeze(1)
            mu = self._mu(delta)
            loss = crm_loss(delta, mu, current, logged.logged[pairs])
            opt_g.zero_grad(set_to_none=True)
            loss.backward()
            opt_g.step()
            total += float(loss.detach())
            batches += 1
            mus.append(mu)
        return total / max(batches, 1), float(np.mean(mus)) if mus else np.nan

    def _c_pass(
        self,
        module: nn.ModuleDict,
        state: _State,
        logged: _Logged,
        tasks: np.ndarray,
        opt_c: torch.optim.Optimizer,
        rng: np.random.Generator,
    ) -> float:
        """Eq. 6 over all pairs of ``tasks``: gradients reach C through ``z_hat``."""
        r, device = state.data.n_workers, state.device
        generator, classifier = module["generator"], module["classifier"]
        generator.requires_grad_(False)
        classifier.train()
        total, batches = 0.0, 0
        # batch norm cannot train on one task: merge a last batch of one, or skip
        norm = any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in classifier.modules())
        chunks = _chunks(rng.permutation(tasks), self.batch_size, min_last=2 if norm else 1)
        try:
            for chunk in chunks:
                if norm and len(chunk) < 2:
                    continue
                pairs = _pairs_of(chunk, r, device)
                xs = state.x[torch.as_tensor(chunk, device=device)]
                local = torch.arange(len(chunk), device=device).repeat_interleave(r)
                lg, _ = self._deltas(module, state, logged, pairs, xs, local)
                if self.shuffle_signal:
                    lg = lg[torch.as_tensor(rng.permutation(len(lg)), device=device)]
                worker = pairs % r
                zhat = torch.softmax(classifier(state.inputs_x[chunk]).float(), dim=1)[local]
                logits = generator(xs, worker, logged.eps[pairs], zhat, task=local)
                current = (
                    torch.softmax(logits, dim=1).gather(1, logged.label[pairs, None]).squeeze(1)
                )
                loss = crm_loss(lg, self._mu(lg), current, logged.logged[pairs])
                opt_c.zero_grad(set_to_none=True)
                loss.backward()
                opt_c.step()
                total += float(loss.detach())
                batches += 1
        finally:
            generator.requires_grad_(True)
        return total / max(batches, 1)

    def _select(self, state: _State, logged: _Logged, rng: np.random.Generator) -> np.ndarray:
        free = np.flatnonzero(~state.observed)
        r = state.data.n_workers
        picked = select_generated(
            free % r, logged.entropy[free], state.counts, rng, self.selection
        )
        return free[picked]

    def _pretrain_gan(
        self,
        module: nn.ModuleDict,
        state: _State,
        opt_g: torch.optim.Optimizer,
        opt_d: torch.optim.Optimizer,
        rng: np.random.Generator,
        show: bool = False,
        stage_bar: Any = None,
        stages: list[str] | None = None,
    ) -> None:
        data, device = state.data, state.device
        zhat = self._zhat(module, state)
        generator = module["generator"]
        task_all = data.task.astype(np.int64)
        # maximum likelihood on the observed annotations, with the classifier's recipe
        opt_pre = torch.optim.Adam(generator.parameters(), lr=self.lr, foreach=True)
        bar = progress_bar(
            range(self.max_epochs), progress=show, desc="G pre-training", unit="epoch"
        )
        for _ in bar:
            order = rng.permutation(data.n_annotations)
            # summed on the device: one synchronisation per epoch, for the bar only
            total = torch.zeros((), device=device)
            for s in range(0, len(order), self.batch_size):
                idx = order[s : s + self.batch_size]
                task = torch.as_tensor(task_all[idx], device=device)
                worker = torch.as_tensor(data.worker[idx], dtype=torch.long, device=device)
                y = torch.as_tensor(data.label[idx], dtype=torch.long, device=device)
                eps = torch.randn(len(idx), self.noise_dim, device=device)
                loss = F.cross_entropy(generator(state.x[task], worker, eps, zhat[task]), y)
                opt_pre.zero_grad(set_to_none=True)
                loss.backward()
                opt_pre.step()
                total += loss.detach()
            if show:
                batches = max(math.ceil(len(order) / self.batch_size), 1)
                bar.set_postfix(format_postfix({"loss": float(total) / batches}))
        bar.close()
        if stage_bar is not None and stages is not None:
            stage_bar.update()
            stage_bar.set_postfix(stage=stages[2])
        bar = progress_bar(
            range(self.gan_pretrain_epochs), progress=show, desc="D pre-training", unit="pass"
        )
        for _ in bar:
            logged = self._log(module, state, rng)
            d_loss, _ = self._d_pass(
                module, state, logged, self._select(state, logged, rng), opt_d, rng
            )
            bar.set_postfix(format_postfix({"d_loss": d_loss}))
        bar.close()
        if stage_bar is not None:
            stage_bar.update()

    def _epoch(
        self,
        module: nn.ModuleDict,
        state: _State,
        opt_g: torch.optim.Optimizer,
        opt_d: torch.optim.Optimizer,
        opt_c: torch.optim.Optimizer,
        rng: np.random.Generator,
        bar: Any = None,
    ) -> dict[str, float]:
        logged = self._log(module, state, rng)  # G_0: the generator of the last epoch
        proba = logged.zhat.cpu().numpy()
        if self.crm_share is None:
            low, t_used = entropy_split(proba, self.t), float(self.t)
        else:
            low, t_used = share_split(proba, self.crm_share)
        low_tasks, high_tasks = np.flatnonzero(low), np.flatnonzero(~low)
        d_losses, infos, g_losses, c_losses, mus = [], [], [], [], []
        for _ in range(self.updates_per_epoch):
            chosen = self._select(state, logged, rng)
            d_loss, info = self._d_pass(module, state, logged, chosen, opt_d, rng)
            g_loss, mu = self._g_pass(module, state, logged, low_tasks, opt_g, rng)
            c_loss = self._c_pass(module, state, logged, high_tasks, opt_c, rng)
            d_losses.append(d_loss)
            infos.append(info)
            g_losses.append(g_loss)
            c_losses.append(c_loss)
            mus.append(mu)
            if bar is not None:
                bar.update()
        return {
            "d_loss": float(np.mean(d_losses)),
            "g_loss": float(np.mean(g_losses)),
            "c_loss": float(np.mean(c_losses)),
            "info_loss": float(np.mean(infos)),
            "n_low": len(low_tasks),
            "n_classifier": len(high_tasks),
            "share_low": len(low_tasks) / max(len(low), 1),
            "t_used": t_used,
            "mu": float(np.nanmean(mus)) if np.isfinite(mus).any() else np.nan,
        }


class _State:
    """Fixed tensors of one fit."""

    def __init__(
        self,
        data: CrowdData,
        x: torch.Tensor,
        inputs_x: torch.Tensor,
        observed: np.ndarray,
        counts: np.ndarray,
        device: torch.device,
    ) -> None:
        self.data = data
        self.x = x
        self.inputs_x = inputs_x
        self.observed = observed
        self.counts = counts
        self.device = device


class _Logged:
    """One epoch's logged sample from ``G_0``, over all (task, annotator) pairs."""

    def __init__(
        self,
        zhat: torch.Tensor,
        eps: torch.Tensor,
        label: torch.Tensor,
        logged: torch.Tensor,
        entropy: np.ndarray,
    ) -> None:
        self.zhat = zhat
        self.eps = eps
        self.label = label
        self.logged = logged
        self.entropy = entropy


def _chunks(values: np.ndarray, size: int, min_last: int = 1) -> list[np.ndarray]:
    """``values`` in consecutive chunks of ``size``; a last chunk shorter than
    ``min_last`` joins the previous one (when there is one)."""
    chunks = [values[s : s + size] for s in range(0, len(values), size)]
    if len(chunks) > 1 and len(chunks[-1]) < min_last:
        chunks[-2:] = [np.concatenate(chunks[-2:])]
    return chunks


def _pairs_of(tasks: np.ndarray, n_workers: int, device: torch.device) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(tasks, dtype=np.int64), device=device)
    return (t[:, None] * n_workers + torch.arange(n_workers, device=device)[None, :]).reshape(-1)


def _copy_state(module: nn.Module) -> dict[str, torch.Tensor]:
    return copy.deepcopy({k: v.detach().clone() for k, v in module.state_dict().items()})
