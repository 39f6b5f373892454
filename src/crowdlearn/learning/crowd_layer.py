"""Crowd Layer: a per-worker layer on top of the classifier, trained end to end.

Rodrigues & Pereira, "Deep learning from crowds", AAAI 2018. The classifier's output
``sigma`` (its class probabilities) goes through a layer of each annotator ``r``
whose result is that annotator's logits; the loss is the cross-entropy of each
observed annotation (Self-Crowd paper, eq. 1-2, for the MW variant:
``p(y^r) = softmax(sigma W_r)``). Variants (with the paper's initialisations):

* ``MW``: a K x K matrix per annotator, ``sigma W_r`` (identity);
* ``VW``: a vector, ``sigma * w_r`` (ones);
* ``VB``: a bias, ``sigma + b_r`` (zeros);
* ``VW+B``: both, ``sigma * w_r + b_r`` (ones, zeros);
* ``SW``: a scalar, ``s_r sigma`` (one).

At prediction time only the classifier is used.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from crowdlearn.data import CrowdData, TaskInputs
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatch
from crowdlearn.learning._validation import independent_log_likelihood

Variant = Literal["MW", "VW", "VB", "VW+B", "SW"]
VARIANTS = ("MW", "VW", "VB", "VW+B", "SW")


class CrowdLayerModule(nn.Module):
    """The annotators' layers: maps per-annotation classifier outputs to logits."""

    def __init__(self, n_workers: int, n_classes: int, variant: Variant) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        self.variant = variant
        self.n_classes = n_classes
        if variant == "MW":
            self.matrix = nn.Parameter(torch.eye(n_classes).repeat(n_workers, 1, 1))
        if variant in ("VW", "VW+B"):
            self.scale = nn.Parameter(torch.ones(n_workers, n_classes))
        if variant in ("VB", "VW+B"):
            self.bias = nn.Parameter(torch.zeros(n_workers, n_classes))
        if variant == "SW":
            self.scalar = nn.Parameter(torch.ones(n_workers))

    def forward(self, outputs: torch.Tensor, worker: torch.Tensor) -> torch.Tensor:
        """Logits of each annotation from the classifier's output on its task."""
        if self.variant == "MW":
            return torch.bmm(outputs.unsqueeze(1), self.matrix[worker]).squeeze(1)
        if self.variant == "SW":
            return outputs * self.scalar[worker, None]
        logits = outputs
        if self.variant in ("VW", "VW+B"):
            logits = logits * self.scale[worker]
        if self.variant in ("VB", "VW+B"):
            logits = logits + self.bias[worker]
        return logits

    def confusions(self, n_workers: int) -> np.ndarray:
        """(n_workers, K, K): row ``k`` is annotator ``r``'s label distribution when the
        classifier is certain the class is ``k`` (its input is the one-hot of ``k``)."""
        k = self.n_classes
        with torch.no_grad():
            certain = torch.eye(k, device=self._device()).repeat(n_workers, 1)
            workers = torch.arange(n_workers, device=certain.device).repeat_interleave(k)
            rows = torch.softmax(self(certain, workers), dim=1)
        return rows.reshape(n_workers, k, k).double().cpu().numpy()

    def _device(self) -> torch.device:
        return next(self.parameters()).device


class CrowdLayer(BaseLearner):
    """Crowd Layer learner (Rodrigues & Pereira, AAAI 2018).

    Parameters
    ----------
    variant : {"MW", "VW", "VB", "VW+B", "SW"}, default "MW"
    on : {"probabilities", "logits"}, default "probabilities"
        What the crowd layer receives: the classifier's probabilities (the paper) or
        its logits.
    trainable : bool, default True
        Learn the crowd layer (False keeps its initialisation; with MW on logits the
        training is then plain cross-entropy on the annotations).
    init : {"paper", "dawid-skene"}, default "paper"
        The crowd layer's starting point. ``"paper"``: the initialisations listed in
        the module doc (MW: the identity, under which an annotator's layer turns a
        certain classifier into a flat distribution, ``e / (e + K - 1)`` on the true
        class). ``"dawid-skene"`` (MW on probabilities only): row ``k`` of annotator
        ``r``'s matrix is ``log pi_r[k, :]``, the log of its Dawid-Skene confusion row
        fitted on the training annotations, so that a certain classifier starts at
        exactly Dawid-Skene's label distribution for that annotator.
    **training
        The shared training parameters (see :class:`BaseLearner`).

    Attributes
    ----------
    confusions_ : ndarray (n_workers, K, K)
        Each annotator's label distribution for each class, read off the crowd layer
        (see :meth:`CrowdLayerModule.confusions`).
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = CrowdLayer("MW", max_epochs=5).fit(crowd)
    >>> model.confusions_.shape
    (8, 2, 2)
    """

    def __init__(
        self,
        variant: Variant = "MW",
        on: Literal["probabilities", "logits"] = "probabilities",
        trainable: bool = True,
        init: Literal["paper", "dawid-skene"] = "paper",
        **training: Any,
    ) -> None:
        self.variant = variant
        self.on = on
        self.trainable = trainable
        self.init = init
        super().__init__(**training)

    def _noise_model(
        self, n_workers: int, n_classes: int, item_shape: tuple[int, ...]
    ) -> nn.Module:
        if self.on not in ("probabilities", "logits"):
            raise ValueError(f"on must be 'probabilities' or 'logits', got {self.on!r}")
        if self.init not in ("paper", "dawid-skene"):
            raise ValueError(f"init must be 'paper' or 'dawid-skene', got {self.init!r}")
        if self.init == "dawid-skene" and (self.variant != "MW" or self.on != "probabilities"):
            raise ValueError(
                "init='dawid-skene' sets an MW layer on probabilities: variant must be 'MW' "
                f"and on 'probabilities', got {self.variant!r} on {self.on!r}"
            )
        layer = CrowdLayerModule(n_workers, n_classes, self.variant)
        layer.requires_grad_(self.trainable)
        self._layer = layer
        return layer

    def _prepare(self, data: CrowdData, inputs: TaskInputs) -> None:
        if self.init != "dawid-skene":
            return
        from crowdlearn.aggregation import DawidSkene

        confusions = DawidSkene().fit(data).confusions_  # (R, K, K): true row, answer column
        with torch.no_grad():
            self._layer.matrix.copy_(
                torch.as_tensor(np.log(np.clip(confusions, 1e-6, None)), dtype=torch.float32)
            )

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        outputs = torch.softmax(logits, dim=1) if self.on == "probabilities" else logits
        annotator_logits = noise(outputs[batch.position], batch.worker)
        return F.cross_entropy(annotator_logits, batch.label)

    def _crowd_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None
    ) -> torch.Tensor:
        """Per task, the sum of its annotations' log-probabilities under the annotators'
        layers (annotations are independent given the instance)."""
        outputs = torch.softmax(logits, dim=1) if self.on == "probabilities" else logits
        annotator_logits = noise(outputs[batch.position], batch.worker)
        return independent_log_likelihood(
            torch.log_softmax(annotator_logits, dim=1),
            batch.position,
            batch.label,
            len(batch.tasks),
        )

    @property
    def confusions_(self) -> np.ndarray:
        self._check_fitted()
        return self.module_["noise"].confusions(self._shape_[2])
