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

This module holds the estimator (its stages, the DL-CL+InG expansion, the checks);
the networks G, D and Q and :func:`lca_matrix` are in
:mod:`crowdlearn.learning._crowding_nets`, the loss, the split, the selection and the
training rounds in :mod:`crowdlearn.learning._crowding_train`. Their public names are
importable from here.
"""

from __future__ import annotations

import copy
import time
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch
from torch import nn

from crowdlearn._progress import format_postfix, progress_bar, progress_scope
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.learning._base import (
    TRAINING_PARAMS,
    BaseLearner,
    training_inputs,
)
from crowdlearn.learning._crowding_nets import Discriminator, Generator, lca_matrix
from crowdlearn.learning._crowding_train import (
    _chunks,  # noqa: F401  (re-exported: the tests import it from here)
    _CrowdInGRounds,
    _pairs_of,  # noqa: F401  (re-exported: the tests import it from here)
    _State,
    crm_loss,
    entropy_split,
    normalised_entropy,
    select_generated,
    share_split,
)
from crowdlearn.learning._trainer import predict_in_batches, resolve_device
from crowdlearn.learning.backbones import build_backbone
from crowdlearn.learning.crowd_layer import CrowdLayer

# with the public names of the method's private modules
__all__ = [
    "MU_GRID",
    "VARIANTS",
    "CrowdInG",
    "Discriminator",
    "Generator",
    "crm_loss",
    "entropy_split",
    "lca_matrix",
    "normalised_entropy",
    "select_generated",
    "share_split",
]

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


# ---------------------------------------------------------------------- the learner


class CrowdInG(_CrowdInGRounds, BaseLearner):
    """CrowdInG (Chu & Wang, KDD 2021): GAN annotation augmentation (see the module doc).

    Parameters
    ----------
    lam : float, default 0.1
        ``lambda``, the weight of the information loss (eq. 4); the benchmark's
        sensitivity sweep (paper Fig. 6) covers 0.1..1. The defaults of ``lam``,
        ``t``, ``mu``, ``gan_lr`` and ``expand`` are the values the ``crowding``
        benchmark's coordinate search chose on LabelMe's validation split (seed 0,
        the paper's 40 x 5 CrowdInG stage); on that split every lambda and t
        scored within 2 of its 500 images (benchmarks/pages/crowding.md).
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
        (benchmarks/pages/learning.md, the leaderboard's reading) at a quarter of the
        GAN epochs.
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


def _copy_state(module: nn.Module) -> dict[str, torch.Tensor]:
    return copy.deepcopy({k: v.detach().clone() for k, v in module.state_dict().items()})
