"""GeoCrowdNet: coupled cross-entropy with a geometric (volume) regulariser.

Ibrahim, Nguyen & Fu, "Deep Learning From Crowdsourced Labels: Coupled Cross-Entropy
Minimization, Identifiability, and Regularization", ICLR 2023. Annotator ``m`` answers
through a column-stochastic confusion ``A_m`` (``A_m[k', k] = p(label k' | true class
k)``), so the distribution of its label on instance ``x`` is ``A_m f(x)`` with ``f(x)``
the classifier's class probabilities. The training objective (the paper's coupled
cross-entropy minimisation, CCEM, plus the volume regularisers that define GeoCrowdNet
(F) and (W); equation numbers are not cited as the paper was not at hand) is

* the cross-entropy ``-log [A_m f(x_n)]_{y_n^m}`` of every observed annotation
  (averaged over the batch's annotations), plus
* ``lam * R`` with either

  - ``penalty="F"`` (GeoCrowdNet (F)): ``R = -log det(F^T F)``, ``F`` the ``B x K``
    matrix of the batch's classifier outputs; it pushes the outputs to span the
    probability simplex (sufficiently scattered), which makes ``f`` and the ``A_m``
    identifiable;
  - ``penalty="W"`` (GeoCrowdNet (W)): ``R = -log det(W^T W)``, ``W = [A_1; ...; A_M]``
    the ``MK x K`` stack of every annotator's confusion.

As the issue asks (and a public re-implementation does), a batch's regulariser is
dropped when it is not finite or exceeds 100 (e.g. ``F^T F`` singular because the
batch has fewer tasks than classes, or a collapsed batch early in training). ``A_m``
is a softmax over each column of a free ``K x K`` parameter that starts, as in the
code published by the paper's authors, at the identity ``I``: every ``A_m`` starts as
the column-softmax of ``I``, the identity smoothed to a
diagonal of ``e / (e + K - 1)`` (0.58 for K = 3). A sharper start (``6 I - 5``,
diagonal 0.998) leaves the confusions nearly frozen within the default 25 epochs:
the classifier then absorbs the noise (on a simulated crowd whose workers share a
confusion, the estimated confusions stayed near the identity).
The default ``lam = 0.01`` is the value of the authors' experiment scripts. At
prediction time only the classifier is used.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatch

Penalty = Literal["F", "W"]
#: A batch's regulariser larger than this (or not finite) is skipped.
MAX_REGULARISER = 100.0


class ColumnConfusions(nn.Module):
    """Each annotator's column-stochastic confusion ``A_m = softmax(P_m, dim=rows)``.

    Parameters
    ----------
    n_workers, n_classes : int

    Attributes
    ----------
    weight : Parameter (n_workers, K, K)
        The free parameters ``P_m``, initialised to the identity.
    """

    def __init__(self, n_workers: int, n_classes: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.eye(n_classes).repeat(n_workers, 1, 1))

    def matrices(self) -> torch.Tensor:
        """(n_workers, K, K) ``A_m``: entry ``[m, k', k]`` = p(label k' | class k)."""
        return torch.softmax(self.weight, dim=1)

    def log_matrices(self) -> torch.Tensor:
        """``log A_m``, computed stably."""
        return torch.log_softmax(self.weight, dim=1)

    def annotation_log_proba(
        self, log_proba: torch.Tensor, position: torch.Tensor, worker: torch.Tensor
    ) -> torch.Tensor:
        """(A, K) ``log (A_m f(x))`` of each annotation, from the batch's (B, K) log class
        probabilities, each annotation's row in the batch and its worker."""
        # log sum_k A_m[k', k] f_k(x), as a logsumexp over k for numerical stability.
        terms = self.log_matrices()[worker] + log_proba[position].unsqueeze(1)
        return torch.logsumexp(terms, dim=2)


def geometric_penalty(
    penalty: str, proba: torch.Tensor, confusions: torch.Tensor
) -> torch.Tensor | None:
    """``-log det(F^T F)`` (``penalty="F"``, ``F = proba``) or ``-log det(W^T W)``
    (``"W"``, ``W`` the stacked ``confusions``), or None when it is not finite or above
    :data:`MAX_REGULARISER` (the batch then has no regulariser)."""
    if penalty == "F":
        gram = proba.T @ proba
    else:
        stacked = confusions.reshape(-1, confusions.shape[-1])
        gram = stacked.T @ stacked
    value = -torch.logdet(gram)
    checked = value.detach()
    if not bool(torch.isfinite(checked)) or float(checked) > MAX_REGULARISER:
        return None
    return value


class GeoCrowdNet(BaseLearner):
    """GeoCrowdNet (Ibrahim, Nguyen & Fu, ICLR 2023), variants (F) and (W).

    Parameters
    ----------
    penalty : {"F", "W"}, default "F"
        The regulariser: ``-log det(F^T F)`` on the batch's classifier outputs (F) or
        ``-log det(W^T W)`` on the stacked annotator confusions (W).
    lam : float, default 0.01
        Weight ``lambda`` of the regulariser (the authors' experiment scripts).
    **training
        The shared training parameters (see :class:`BaseLearner`).

    Attributes
    ----------
    confusions_ : ndarray (n_workers, K, K)
        Each annotator's confusion with rows = true class (``A_m`` transposed), rows
        summing to one.
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``module_["noise"]`` is a :class:`ColumnConfusions`.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = GeoCrowdNet("W", max_epochs=5).fit(crowd)
    >>> model.confusions_.shape
    (8, 2, 2)
    """

    def __init__(self, penalty: Penalty = "F", lam: float = 0.01, **training: Any) -> None:
        self.penalty = penalty
        self.lam = lam
        super().__init__(**training)

    @property
    def confusions_(self) -> np.ndarray:
        self._check_fitted()
        with torch.no_grad():
            matrices = self.module_["noise"].matrices()
        return matrices.transpose(1, 2).double().cpu().numpy()

    # ------------------------------------------------------------------ method hooks

    def _noise_model(
        self, n_workers: int, n_classes: int, item_shape: tuple[int, ...]
    ) -> nn.Module:
        if self.penalty not in ("F", "W"):
            raise ValueError(f"penalty must be 'F' or 'W', got {self.penalty!r}")
        if not (self.lam >= 0 and math.isfinite(self.lam)):
            raise ValueError(f"lam must be a finite number >= 0, got {self.lam}")
        return ColumnConfusions(n_workers, n_classes)

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        log_proba = torch.log_softmax(logits, dim=1)
        annotation = noise.annotation_log_proba(log_proba, batch.position, batch.worker)
        loss = -annotation.gather(1, batch.label[:, None]).mean()
        if self.lam > 0:
            regulariser = geometric_penalty(self.penalty, log_proba.exp(), noise.matrices())
            if regulariser is not None:
                loss = loss + self.lam * regulariser
        return loss

    def _crowd_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None
    ) -> torch.Tensor:
        """(B,) ``sum_a log [A_{m_a} f(x)]_{y_a}`` over each task's annotations."""
        log_proba = torch.log_softmax(logits, dim=1)
        annotation = noise.annotation_log_proba(log_proba, batch.position, batch.worker)
        per_annotation = annotation.gather(1, batch.label[:, None]).squeeze(1)
        totals = torch.zeros(len(logits), dtype=per_annotation.dtype, device=logits.device)
        return totals.index_add(0, batch.position, per_annotation)
