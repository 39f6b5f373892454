"""annot-mix: mixup of instances and of (annotator, annotation) pairs.

Herde, Lührs, Huseljic & Sick, "annot-mix: Learning with noisy class labels from
multiple annotators via a mixup extension", ECAI 2024. The model is MaDL's (see
:mod:`crowdlearn.learning.madl`): a classifier ``p(k | x)`` and an annotator model
mapping the classifier's learned features and an annotator embedding (size 128) to an
instance- and annotator-dependent confusion ``P(x, a)``, initialised towards the
identity with ``eta`` = 0.9 on the diagonal. An annotation's likelihood is
``p(z | x, a) = sum_k p(k | x) P(x, a)[k, z]``.

Training mixes annotation triples (the paper's extension of mixup, Zhang et al. 2018):
each observed annotation of the batch is a triple ``(x_n, e_m, z_nm)`` (instance,
one-hot annotator, one-hot label); the triples are shuffled, and triple ``j`` is mixed
with the ``j``-th shuffled one with its own ``lambda_j ~ Beta(alpha, alpha)``:

    x~ = lambda x_j + (1 - lambda) x_pi(j),  e~ = lambda e_j + (1 - lambda) e_pi(j),
    z~ = lambda z_j + (1 - lambda) z_pi(j).

The loss is the cross-entropy ``- sum_c z~_c log p(c | x~, e~)`` averaged over the
triples, where the mixed one-hot annotator goes through the annotator embedding's
linear layer (so it is the mixture of the two embeddings). Prediction uses the
classifier only.

Readings chosen here:

* one ``lambda`` per triple (not one per batch), and the partner drawn from all the
  batch's annotations, including other annotations of the same instance;
* ``eta`` sets the annotator model's output bias, ``log(eta (K - 1) / (1 - eta))`` on
  the diagonal, as in MaDL; the annotator model reads the classifier's features
  *detached* (its gradient does not reach the classifier's features; the classifier
  learns through ``p(k | x~)``);
* ``alpha = 0`` switches mixup off (then the loss is MaDL's unweighted likelihood);
* the shared trainer's Adam replaces the paper's RAdam.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from crowdlearn.learning._batches import TaskBatch
from crowdlearn.learning.madl import AnnotatorModelLearner, annotation_log_likelihood


class AnnotMix(AnnotatorModelLearner):
    """annot-mix (Herde, Lührs, Huseljic & Sick, ECAI 2024).

    Parameters
    ----------
    alpha : float, default 1.0
        Parameter of the ``Beta(alpha, alpha)`` mixing coefficients (the paper's 1.0);
        0 disables mixup.
    eta : float, default 0.9
        Diagonal of the initial confusions (the paper's 0.9).
    embedding_dim : int, default 128
        Size of the annotator embeddings (the paper's benchmark: 128), also of the
        annotator model's instance embedding and hidden layer.
    **training
        The shared training parameters (see :class:`BaseLearner`).

    Attributes
    ----------
    confusions_ : ndarray (n_workers, K, K)
        The instance-dependent confusions averaged over the training instances (see
        :meth:`confusions` for those of given instances).
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``module_["noise"]`` is the annotator model.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = AnnotMix(max_epochs=5).fit(crowd)
    >>> model.predict_proba(X[:2]).shape, model.confusions_.shape
    ((2, 2), (8, 2, 2))
    """

    _detach_features = True

    def __init__(
        self,
        alpha: float = 1.0,
        eta: float = 0.9,
        embedding_dim: int = 128,
        **training: Any,
    ) -> None:
        self.alpha = alpha
        self.eta = eta
        self.embedding_dim = embedding_dim
        super().__init__(**training)

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        if self.alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {self.alpha}")
        if self.alpha == 0:
            return -self._annotation_log_likelihood(batch, logits, noise).mean()
        n, k = len(batch.label), noise.n_classes
        x = batch.x[batch.position]
        annotators = F.one_hot(batch.worker, noise.annotator.in_features).to(x.dtype)
        labels = F.one_hot(batch.label, k).to(x.dtype)
        x_mix, annotators_mix, labels_mix = mix_triples(x, annotators, labels, self.alpha)
        features, mixed_logits = noise.tap.run(x_mix)
        log_conf = noise(features, noise.annotator(annotators_mix))
        log_p = annotation_log_likelihood(mixed_logits, log_conf)
        return -(labels_mix * log_p).sum() / n


def mix_triples(
    x: torch.Tensor, annotators: torch.Tensor, labels: torch.Tensor, alpha: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mix each triple with a shuffled partner, ``lambda ~ Beta(alpha, alpha)`` each.

    Parameters
    ----------
    x : Tensor (A, ...)
        Instances of the annotations.
    annotators : Tensor (A, M)
        One-hot annotators.
    labels : Tensor (A, K)
        One-hot labels.
    alpha : float > 0

    Returns
    -------
    (x~, e~, z~) : the mixed triples, same shapes.
    """
    n = len(x)
    # torch's generator (seeded by the trainer) keeps fits reproducible
    concentration = torch.full((n,), float(alpha), device=x.device)
    lam = torch.distributions.Beta(concentration, concentration).sample()
    partner = torch.randperm(n, device=x.device)

    def mix(values: torch.Tensor) -> torch.Tensor:
        weight = lam.reshape(-1, *([1] * (values.dim() - 1))).to(values.dtype)
        return weight * values + (1.0 - weight) * values[partner]

    return mix(x), mix(annotators), mix(labels)
