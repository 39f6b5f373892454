"""CoNAL: a common and an individual noise adaptation layer, mixed per annotation.

Chu, Ma & Wang, "Learning from Crowds by Modeling Common Confusions", AAAI 2021.
Annotators share some confusions (classes everybody mixes up) and have their own. The
classifier's output ``f_i`` (its class probabilities) goes through two noise adaptation
layers: the common one ``W_g`` (K x K, shared by all annotators) and annotator ``r``'s
own ``W_r``; annotator ``r``'s logits on instance ``i`` mix them with a weight that
depends on both the instance and the annotator (the paper's "Common Noise Adaptation
Layers" section):

* :meth:`CoNALModule.common_rate`: the auxiliary network, ``omega_ir = sigmoid(v_i .
  u_r)``, with the instance embedding ``v_i`` (two linear layers on the flattened
  input, 128 then ``embedding_dim`` units) and the annotator embedding ``u_r`` (a
  learned vector per annotator, i.e. a linear layer on the one-hot annotator), both
  L2-normalised;
* :meth:`CoNALModule.forward`: the annotator's logits
  ``h_ir = omega_ir f_i W_g + (1 - omega_ir) f_i W_r``, whose softmax is the
  distribution of the label annotator ``r`` gives instance ``i``;
* :meth:`CoNAL._loss`: the objective, the cross-entropy of every observed annotation
  (averaged over the batch's annotations) **minus** ``lam * sum_r ||W_r - W_g||_F``
  (Frobenius norm, not squared). The regulariser pushes the individual confusions
  away from the common one, so that ``W_g`` keeps only what annotators share.

As in the paper and its public code, every layer starts at ``2 I`` and the instance
embedding has no activation between its two linear layers. At prediction time only the
classifier is used.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatch
from crowdlearn.learning._validation import independent_log_likelihood

#: Units of the first layer of the instance embedding (the paper's 128).
INSTANCE_HIDDEN = 128


class CoNALModule(nn.Module):
    """CoNAL's noise model: the common and individual layers and the auxiliary network.

    Parameters
    ----------
    n_workers, n_classes : int
    input_size : int
        Number of values of one (flattened) input instance.
    embedding_dim : int
        Size of the instance and annotator embeddings.

    Attributes
    ----------
    common : Parameter (K, K)
        ``W_g``, initialised to ``2 I``.
    individual : Parameter (n_workers, K, K)
        ``W_r`` of each annotator, initialised to ``2 I``.
    instance_embedding : nn.Sequential
        Flatten, Linear(input_size, 128), Linear(128, embedding_dim).
    worker_embedding : Parameter (n_workers, embedding_dim)
        ``u_r`` before normalisation, initialised as the weights of a linear layer on
        the one-hot annotator (uniform in +-1/sqrt(n_workers)).
    """

    def __init__(
        self, n_workers: int, n_classes: int, input_size: int, embedding_dim: int
    ) -> None:
        super().__init__()
        self.n_classes = n_classes
        self.common = nn.Parameter(2.0 * torch.eye(n_classes))
        self.individual = nn.Parameter(2.0 * torch.eye(n_classes).repeat(n_workers, 1, 1))
        self.instance_embedding = nn.Sequential(
            nn.Flatten(),
            nn.Linear(input_size, INSTANCE_HIDDEN),
            nn.Linear(INSTANCE_HIDDEN, embedding_dim),
        )
        bound = 1.0 / math.sqrt(max(n_workers, 1))
        self.worker_embedding = nn.Parameter(
            torch.empty(n_workers, embedding_dim).uniform_(-bound, bound)
        )

    def instance_vectors(self, x: torch.Tensor) -> torch.Tensor:
        """(B, d) normalised instance embeddings ``v_i``."""
        return F.normalize(self.instance_embedding(x), dim=1)

    def worker_vectors(self, workers: torch.Tensor) -> torch.Tensor:
        """(A, d) normalised annotator embeddings ``u_r`` of the given worker codes."""
        return F.normalize(self.worker_embedding[workers], dim=1)

    def common_rate(
        self, x: torch.Tensor, position: torch.Tensor, worker: torch.Tensor
    ) -> torch.Tensor:
        """(A,) weight ``omega`` of the common confusion for each annotation, given the
        batch inputs ``x``, each annotation's row in the batch and its worker."""
        scores = (self.instance_vectors(x)[position] * self.worker_vectors(worker)).sum(dim=1)
        return torch.sigmoid(scores)

    def forward(
        self,
        outputs: torch.Tensor,
        x: torch.Tensor,
        position: torch.Tensor,
        worker: torch.Tensor,
    ) -> torch.Tensor:
        """(A, K) logits of each annotation from the classifier's outputs ``(B, K)`` on
        the batch inputs ``x``: ``omega f W_g + (1 - omega) f W_r``."""
        omega = self.common_rate(x, position, worker)[:, None]
        common = (outputs @ self.common)[position]
        annotation_outputs = outputs[position].unsqueeze(1)
        individual = torch.bmm(annotation_outputs, self.individual[worker]).squeeze(1)
        return omega * common + (1.0 - omega) * individual

    def divergence(self) -> torch.Tensor:
        """``sum_r ||W_r - W_g||_F``, the quantity the regulariser rewards."""
        return torch.linalg.matrix_norm(self.individual - self.common).sum()

    def confusions(self) -> tuple[np.ndarray, np.ndarray]:
        """Row ``k`` of each layer applied to the one-hot of class ``k``, through a softmax:
        the individual confusions (n_workers, K, K) and the common one (K, K)."""
        with torch.no_grad():
            individual = torch.softmax(self.individual, dim=2)
            common = torch.softmax(self.common, dim=1)
        return individual.double().cpu().numpy(), common.double().cpu().numpy()


class CoNAL(BaseLearner):
    """Common Noise Adaptation Layers (Chu, Ma & Wang, AAAI 2021).

    Parameters
    ----------
    embedding_dim : int, default 20
        Size of the instance and annotator embeddings of the auxiliary network (the
        paper's 20).
    lam : float, default 1e-5
        Weight ``lambda`` of the regulariser ``- lam * sum_r ||W_r - W_g||_F`` (the
        paper's 1e-5).
    on : {"probabilities", "logits"}, default "probabilities"
        What the noise adaptation layers receive: the classifier's probabilities (the
        paper) or its logits.
    **training
        The shared training parameters (see :class:`BaseLearner`).

    Attributes
    ----------
    confusions_ : ndarray (n_workers, K, K)
        Each annotator's individual confusion: softmax of its layer ``W_r`` applied to
        the one-hot class (row = true class).
    common_confusion_ : ndarray (K, K)
        The common confusion read off ``W_g`` in the same way.
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``module_["noise"]`` is a :class:`CoNALModule`.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = CoNAL(max_epochs=5).fit(crowd)
    >>> model.confusions_.shape, model.common_confusion_.shape
    ((8, 2, 2), (2, 2))
    >>> model.common_rates(X[:3]).shape
    (3, 8)
    """

    def __init__(
        self,
        embedding_dim: int = 20,
        lam: float = 1e-5,
        on: Literal["probabilities", "logits"] = "probabilities",
        **training: Any,
    ) -> None:
        self.embedding_dim = embedding_dim
        self.lam = lam
        self.on = on
        super().__init__(**training)

    def common_rates(self, X: Any, workers: Any = None) -> np.ndarray:
        """Weights ``omega`` of the common confusion, shape (n_instances, n_workers).

        Parameters
        ----------
        X : array-like or inputs
            Instances, as for :meth:`predict_proba`.
        workers : array-like of int, optional
            Worker codes (columns of the result); default all workers.
        """
        self._check_fitted()
        n_workers = self._shape_[2]
        codes = np.arange(n_workers) if workers is None else np.asarray(workers, dtype=np.int64)
        if codes.ndim != 1 or (len(codes) and (codes.min() < 0 or codes.max() >= n_workers)):
            raise ValueError(f"workers must be a 1-D array of worker codes 0..{n_workers - 1}")
        inputs = self._user_inputs(X)
        noise = self.module_["noise"]
        device = noise.common.device
        chunk = 4 * self.batch_size
        rates = np.zeros((len(inputs), len(codes)))
        with torch.no_grad():
            annotators = noise.worker_vectors(torch.as_tensor(codes, device=device))
            for start in range(0, len(inputs), chunk):
                rows = np.arange(start, min(start + chunk, len(inputs)))
                x = torch.as_tensor(inputs.take(rows), device=device)
                scores = noise.instance_vectors(x) @ annotators.T
                rates[rows] = torch.sigmoid(scores).double().cpu().numpy()
        return rates

    @property
    def confusions_(self) -> np.ndarray:
        self._check_fitted()
        return self.module_["noise"].confusions()[0]

    @property
    def common_confusion_(self) -> np.ndarray:
        self._check_fitted()
        return self.module_["noise"].confusions()[1]

    # ------------------------------------------------------------------ method hooks

    def _noise_model(
        self, n_workers: int, n_classes: int, item_shape: tuple[int, ...]
    ) -> nn.Module:
        if self.on not in ("probabilities", "logits"):
            raise ValueError(f"on must be 'probabilities' or 'logits', got {self.on!r}")
        if self.embedding_dim < 1:
            raise ValueError(f"embedding_dim must be at least 1, got {self.embedding_dim}")
        # The auxiliary network reads the inputs, hence the input size.
        return CoNALModule(n_workers, n_classes, math.prod(item_shape), self.embedding_dim)

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        outputs = torch.softmax(logits, dim=1) if self.on == "probabilities" else logits
        annotator_logits = noise(outputs, batch.x, batch.position, batch.worker)
        return F.cross_entropy(annotator_logits, batch.label) - self.lam * noise.divergence()

    def _crowd_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None
    ) -> torch.Tensor:
        """Per task, the sum of its annotations' log-probabilities under the common and
        individual confusions (without the divergence regulariser)."""
        outputs = torch.softmax(logits, dim=1) if self.on == "probabilities" else logits
        annotator_logits = noise(outputs, batch.x, batch.position, batch.worker)
        return independent_log_likelihood(
            torch.log_softmax(annotator_logits, dim=1),
            batch.position,
            batch.label,
            len(batch.tasks),
        )
