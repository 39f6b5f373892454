"""MaDL: a ground-truth model and an instance- and annotator-dependent confusion model.

Herde, Huseljic & Sick, "Multi-annotator deep learning: a probabilistic framework for
classification", TMLR 2023. Two models are trained end to end:

* the ground-truth (GT) model, the classifier ``p(y = k | x)`` (any backbone);
* the annotator-performance (AP) model, a confusion matrix ``P(x, a)`` (K x K,
  row-stochastic: ``P[k, z] = p(z | y = k, x, a)``) for every pair of an instance
  ``x`` and an annotator ``a``. Each annotator has a learned embedding (a linear
  layer on its one-hot vector, ``embedding_dim`` = 16 in the paper), the instance is
  represented by the classifier's learned features (the input of its last linear
  layer), both are embedded, concatenated, passed through a hidden layer and mapped
  to K x K logits whose rows go through a softmax.

The likelihood of an annotation ``z`` of annotator ``a`` is
``p(z | x, a) = sum_k p(k | x) P(x, a)[k, z]`` (the class marginalised out); the loss
(eq. 25-26) is the negative log-likelihood of the batch's annotations, each weighted by its
annotator's weight, divided by the number of annotations, minus the log-density of
the kernel bandwidth under its prior.

Readings chosen here (the paper leaves them to the architecture):

* **eta** (0.8): the prior probability of a correct annotation; the AP output layer's
  bias is ``log(eta (K - 1) / (1 - eta))`` on the diagonal and 0 elsewhere (eq. 19),
  so that with a zero input the confusion has ``eta`` on its diagonal and the rest
  spread evenly; the weights keep PyTorch's default initialisation, so at the start
  the confusions are near, not exactly at, that matrix.
* **alpha** (1.25) and **beta** (0.25): the shape and the rate of the Gamma prior
  ``Gam(gamma | alpha, beta)`` on the bandwidth ``gamma`` of the RBF kernel
  ``k(a_m, a_l) = exp(-gamma ||a~_m - a~_l||^2)`` between annotator embeddings
  (eq. 21-23). ``gamma`` is learned, starting at the prior's mode
  ``(alpha - 1) / beta`` = 1. Annotator ``m``'s weight in the loss is
  ``w_m = M (1 / s_m) / sum_l (1 / s_l)`` with ``s_m = sum_l k(a_m, a_l)`` over all
  ``M`` annotators (embeddings detached): an annotator with many similar ones (e.g. a
  large group of look-alike spammers) weighs less, so no cluster of annotators
  dominates the loss. ``alpha=None`` switches the weights and the prior off.
* The AP model: instance embedding and annotator embedding concatenated, one hidden
  ReLU layer of ``embedding_dim`` units, then the K x K output; the paper's optional
  outer-product layer and residual connection are left out.
* The AP model's instance input keeps its gradient (the GT model's features learn
  from both models, as in the paper's default); annot-mix detaches it.
* Prediction uses the GT model only.

The Adam optimiser of the shared trainer replaces the paper's AdamW/RAdam.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from crowdlearn.data import CrowdData
from crowdlearn.learning._base import BaseLearner, training_inputs
from crowdlearn.learning._batches import TaskBatch

#: Training instances over which ``confusions_`` averages the instance-dependent
#: confusions (evenly spaced over the task codes when there are more).
CONFUSION_SAMPLE = 500


class FeatureTap:
    """Records the input of a classifier's last linear layer (its learned features).

    The hook lets the annotator model read the features of the very forward pass that
    produced the logits, whatever the backbone (MLP, CNN or a user module); a backbone
    without any ``nn.Linear`` gives its logits as features.

    Parameters
    ----------
    classifier : nn.Module
    n_classes : int
    """

    def __init__(self, classifier: nn.Module, n_classes: int) -> None:
        self.classifier = classifier
        linears = [m for m in classifier.modules() if isinstance(m, nn.Linear)]
        self.layer = linears[-1] if linears else None
        self.size = self.layer.in_features if self.layer is not None else n_classes
        self.features: torch.Tensor | None = None
        if self.layer is not None:
            self.layer.register_forward_pre_hook(self._store)

    def _store(self, module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        self.features = inputs[0]

    def run(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(features, logits) of the classifier on ``x``."""
        logits = self.classifier(x)
        if self.layer is None:
            return logits, logits
        return self.features.flatten(1), logits


def eta_bias(n_classes: int, eta: float) -> torch.Tensor:
    """(K*K,) output bias whose row softmaxes put ``eta`` on the diagonal."""
    if not 0.0 < eta < 1.0:
        raise ValueError(f"eta must be in (0, 1), got {eta}")
    scale = math.log(eta * (n_classes - 1) / (1.0 - eta)) if n_classes > 1 else 0.0
    return (scale * torch.eye(n_classes)).flatten()


class AnnotatorPerformance(nn.Module):
    """The AP model: (instance features, annotator embedding) -> K x K log-confusion.

    Parameters
    ----------
    feature_size : int
        Size of the classifier's features.
    n_workers, n_classes : int
    embedding_dim : int
        Size of the annotator embedding, of the instance embedding and of the hidden
        layer.
    eta : float
        Diagonal of the initial confusions (through the output bias).
    detach : bool
        Stop the AP model's gradient from reaching the classifier's features.
    """

    def __init__(
        self,
        feature_size: int,
        n_workers: int,
        n_classes: int,
        embedding_dim: int,
        eta: float,
        detach: bool,
    ) -> None:
        super().__init__()
        if embedding_dim < 1:
            raise ValueError(f"embedding_dim must be at least 1, got {embedding_dim}")
        self.n_classes = n_classes
        self.detach = detach
        self.instance = nn.Linear(feature_size, embedding_dim)
        # a linear layer on the one-hot annotator: mixing one-hots mixes embeddings
        self.annotator = nn.Linear(n_workers, embedding_dim, bias=False)
        self.hidden = nn.Linear(2 * embedding_dim, embedding_dim)
        self.output = nn.Linear(embedding_dim, n_classes * n_classes)
        with torch.no_grad():
            self.output.bias.copy_(eta_bias(n_classes, eta))
        self.tap: FeatureTap | None = None
        #: MaDL's kernel between annotator embeddings (set by MaDL, None otherwise)
        self.kernel: nn.Module | None = None

    def embeddings(self) -> torch.Tensor:
        """(n_workers, embedding_dim) annotator embeddings ``a~_m``."""
        return self.annotator.weight.T

    def forward(self, features: torch.Tensor, annotators: torch.Tensor) -> torch.Tensor:
        """(A, K, K) log-confusions ``log P[k, z]`` of pairs of instance features (A, F)
        and annotator embeddings (A, E) (rows of :meth:`embeddings`, or mixtures)."""
        if self.detach:
            features = features.detach()
        joint = torch.cat([self.instance(features), annotators], dim=1)
        logits = self.output(F.relu(self.hidden(joint)))
        k = self.n_classes
        return F.log_softmax(logits.reshape(-1, k, k), dim=2)


def annotation_log_likelihood(logits: torch.Tensor, log_confusion: torch.Tensor) -> torch.Tensor:
    """(A, K) ``log p(z | x, a) = log sum_k p(k | x) P[k, z]`` from class logits (A, K)
    and log-confusions (A, K, K)."""
    return torch.logsumexp(F.log_softmax(logits, dim=1)[:, :, None] + log_confusion, dim=1)


class AnnotatorModelLearner(BaseLearner):
    """Shared plumbing of MaDL and annot-mix: the AP model on the classifier's features,
    per-instance confusions, the average confusions and the crowd log-likelihood."""

    embedding_dim: int
    eta: float
    _detach_features = False

    def _build_module(
        self, item_shape: tuple[int, ...], n_classes: int, n_workers: int
    ) -> nn.ModuleDict:
        module = super()._build_module(item_shape, n_classes, n_workers)
        # the AP model's input size is the classifier's feature size, known only now
        tap = FeatureTap(module["classifier"], n_classes)
        noise = AnnotatorPerformance(
            tap.size, n_workers, n_classes, self.embedding_dim, self.eta, self._detach_features
        )
        noise.tap = tap
        module["noise"] = noise
        return module

    def _fit(self, data: CrowdData, valid: Any) -> None:
        """Train on ``data``, then average the learned confusions over the training
        instances into ``confusions_`` (over at most :data:`CONFUSION_SAMPLE` of them,
        evenly spaced, to bound the cost)."""
        super()._fit(data, valid)
        inputs = training_inputs(data)
        count = min(len(inputs), CONFUSION_SAMPLE)
        rows = np.unique(np.linspace(0, len(inputs) - 1, count).round().astype(np.int64))
        self._mean_confusions = self._confusions(inputs.subset(rows)).mean(axis=0)

    def confusions(self, X: Any, workers: Any = None) -> np.ndarray:
        """Instance-dependent confusions, shape (n_instances, n_workers, K, K).

        Parameters
        ----------
        X : array-like or inputs
            Instances, as for :meth:`predict_proba`.
        workers : array-like of int, optional
            Worker codes (axis 1 of the result); default all workers.

        Returns
        -------
        ndarray
            ``[i, m, k, z]`` = p(annotator m answers z | true class k, instance i).
        """
        self._check_fitted()
        return self._confusions(self._user_inputs(X), workers)

    def _confusions(self, inputs: Any, workers: Any = None) -> np.ndarray:
        """:meth:`confusions` of inputs as the classifier sees them (standardised)."""
        n_workers, k = self._shape_[2], self._shape_[1]
        codes = np.arange(n_workers) if workers is None else np.asarray(workers, dtype=np.int64)
        if codes.ndim != 1 or (len(codes) and (codes.min() < 0 or codes.max() >= n_workers)):
            raise ValueError(f"workers must be a 1-D array of worker codes 0..{n_workers - 1}")
        noise = self.module_["noise"]
        device = noise.output.bias.device
        self.module_.eval()
        chunk = max(1, min(4 * self.batch_size, 2**22 // max(len(codes) * k * k, 1)))
        out = np.zeros((len(inputs), len(codes), k, k))
        with torch.no_grad():
            annotators = noise.embeddings()[torch.as_tensor(codes, device=device)]
            for start in range(0, len(inputs), chunk):
                rows = np.arange(start, min(start + chunk, len(inputs)))
                features, _ = noise.tap.run(torch.as_tensor(inputs.take(rows), device=device))
                pairs_f = features.repeat_interleave(len(codes), dim=0)
                pairs_a = annotators.repeat(len(rows), 1)
                log_conf = noise(pairs_f, pairs_a).reshape(len(rows), len(codes), k, k)
                out[rows] = log_conf.exp().double().cpu().numpy()
        return out

    @property
    def confusions_(self) -> np.ndarray:
        """(n_workers, K, K): the confusions averaged over the training instances."""
        self._check_fitted()
        return self._mean_confusions

    def _method_state(self) -> dict[str, Any]:
        return {"_mean_confusions": getattr(self, "_mean_confusions", None)}

    def _annotation_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module
    ) -> torch.Tensor:
        """(A,) log p(z_a | x, annotator) of the batch's annotations; ``logits`` must
        come from the classifier's last forward pass (whose features the tap holds)."""
        features = noise.tap.features if noise.tap.layer is not None else logits
        features = features.flatten(1)[batch.position]
        log_conf = noise(features, noise.embeddings()[batch.worker])
        log_p = annotation_log_likelihood(logits[batch.position], log_conf)
        return log_p.gather(1, batch.label[:, None]).squeeze(1)

    def _crowd_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module
    ) -> torch.Tensor:
        """(B,) for each task, ``sum_a log p(z_a | x, a)`` (annotations independent given
        the instance). The classifier runs again on ``batch.x`` for its features."""
        noise.tap.run(batch.x)
        per_annotation = self._annotation_log_likelihood(batch, logits, noise)
        total = torch.zeros(len(batch.tasks), dtype=per_annotation.dtype, device=logits.device)
        return total.index_add(0, batch.position, per_annotation)


class MaDLKernel(nn.Module):
    """The learned bandwidth ``gamma`` of the RBF kernel between annotator embeddings."""

    def __init__(self, alpha: float, beta: float) -> None:
        super().__init__()
        if alpha <= 0 or beta <= 0:
            raise ValueError(f"alpha and beta must be positive, got {alpha}, {beta}")
        self.alpha, self.beta = float(alpha), float(beta)
        self.gamma = nn.Parameter(torch.tensor(max(0.0, (alpha - 1.0) / beta)))

    def weights(self, embeddings: torch.Tensor) -> torch.Tensor:
        """(M,) annotator weights ``M (1/s_m) / sum_l (1/s_l)``, ``s_m = sum_l k(a_m, a_l)``."""
        gamma = self.gamma.clamp_min(1e-5)
        similarity = torch.exp(-gamma * torch.cdist(embeddings, embeddings) ** 2)
        inverse = 1.0 / similarity.sum(dim=0)
        return len(inverse) * inverse / inverse.sum()

    def log_prior(self) -> torch.Tensor:
        """``log Gam(gamma | alpha, beta)`` (shape alpha, rate beta)."""
        a, b = self.alpha, self.beta
        gamma = self.gamma.clamp_min(1e-3)
        return a * math.log(b) - math.lgamma(a) + (a - 1.0) * torch.log(gamma) - b * gamma


class MaDL(AnnotatorModelLearner):
    """Multi-annotator deep learning (Herde, Huseljic & Sick, TMLR 2023).

    Parameters
    ----------
    embedding_dim : int, default 16
        Size of the annotator embeddings (the paper's 16), also of the AP model's
        instance embedding and hidden layer.
    eta : float, default 0.8
        Prior probability of a correct annotation: the initial confusions' diagonal.
    alpha : float or None, default 1.25
        Shape of the Gamma prior on the RBF kernel's bandwidth (None: no annotator
        weights, no prior).
    beta : float, default 0.25
        Rate of that Gamma prior (its mode ``(alpha - 1) / beta`` is 1).
    **training
        The shared training parameters (see :class:`BaseLearner`).

    Attributes
    ----------
    confusions_ : ndarray (n_workers, K, K)
        The instance-dependent confusions averaged over the training instances (at most
        :data:`CONFUSION_SAMPLE`, evenly spaced; see :meth:`confusions` for those of
        given instances).
    annotator_weights_ : ndarray (n_workers,)
        The loss weights of the annotators from the learned kernel (ones when
        ``alpha`` is None).
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``module_["noise"]`` is the AP model.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = MaDL(max_epochs=5).fit(crowd)
    >>> model.confusions_.shape, model.confusions(X[:3]).shape
    ((8, 2, 2), (3, 8, 2, 2))
    """

    def __init__(
        self,
        embedding_dim: int = 16,
        eta: float = 0.8,
        alpha: float | None = 1.25,
        beta: float = 0.25,
        **training: Any,
    ) -> None:
        self.embedding_dim = embedding_dim
        self.eta = eta
        self.alpha = alpha
        self.beta = beta
        super().__init__(**training)

    def _build_module(
        self, item_shape: tuple[int, ...], n_classes: int, n_workers: int
    ) -> nn.ModuleDict:
        module = super()._build_module(item_shape, n_classes, n_workers)
        if self.alpha is not None:
            module["noise"].kernel = MaDLKernel(self.alpha, self.beta)
        return module

    @property
    def annotator_weights_(self) -> np.ndarray:
        self._check_fitted()
        noise = self.module_["noise"]
        if noise.kernel is None:
            return np.ones(noise.annotator.in_features)
        with torch.no_grad():
            weights = noise.kernel.weights(noise.embeddings())
        return weights.double().cpu().numpy()

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        log_p = self._annotation_log_likelihood(batch, logits, noise)
        if noise.kernel is None:
            return -log_p.mean()
        # embeddings detached: the kernel only sets weights, it does not move annotators
        weights = noise.kernel.weights(noise.embeddings().detach())
        return -(weights[batch.worker] * log_p).sum() / len(log_p) - noise.kernel.log_prior()
