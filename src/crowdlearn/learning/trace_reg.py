"""Trace regularisation of annotator confusions ("Anno-Reg").

Tanno, Saeedi, Sankaranarayanan, Alexander & Silberman, "Learning From Noisy Labels By
Regularized Estimation Of Annotator Confusion", CVPR 2019. Annotator ``r`` answers
through a row-stochastic confusion ``A_r`` (row = true class, column = label), so the
distribution of its label on instance ``x`` is ``p(y | x, r) = f(x)^T A_r`` with
``f(x)`` the classifier's class probabilities (the paper's model of each annotator's
noisy label, written with rows as the true class). The loss (the paper's
trace-regularised objective) is

* the cross-entropy ``-log [f(x_i)^T A_r]_{y_i^r}`` of every observed annotation,
  averaged over the batch's annotations, plus
* ``lam * trace`` with the trace ``tr(A_r)`` averaged over all annotators (our reading
  of the paper's ``sum_r tr(A_r)``: divided by the number of annotators, so that
  ``lam`` weighs the trace against a per-annotation average cross-entropy the same way
  whatever the size of the crowd; a public re-implementation does the same).

Minimising the trace makes the confusions absorb as much of the noise as the data
allow, which the paper shows recovers the true confusions when the annotators are on
average more often right than wrong. ``A_r`` is a softmax over each row of a free
``K x K`` parameter that starts at ``6 I - 5`` (as in a public re-implementation), so every
``A_r`` starts close to the identity. The default ``lam = 0.01`` is the paper's. From
that sharp start the confusions move slowly (the softmax is saturated): give the
method more steps than the shared defaults (e.g. 60 epochs at ``lr=0.01``), or the
classifier absorbs the noise and the confusions stay near the identity. At prediction
time only the classifier is used.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatch


class RowConfusions(nn.Module):
    """Each annotator's row-stochastic confusion ``A_r = softmax(P_r, dim=columns)``.

    Parameters
    ----------
    n_workers, n_classes : int

    Attributes
    ----------
    weight : Parameter (n_workers, K, K)
        The free parameters ``P_r``, initialised to ``6 I - 5``.
    """

    def __init__(self, n_workers: int, n_classes: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(6.0 * torch.eye(n_classes).repeat(n_workers, 1, 1) - 5.0)

    def matrices(self) -> torch.Tensor:
        """(n_workers, K, K) ``A_r``: entry ``[r, k, l]`` = p(label l | class k)."""
        return torch.softmax(self.weight, dim=2)

    def annotation_log_proba(
        self, log_proba: torch.Tensor, position: torch.Tensor, worker: torch.Tensor
    ) -> torch.Tensor:
        """(A, K) ``log (f(x)^T A_r)`` of each annotation, from the batch's (B, K) log class
        probabilities, each annotation's row in the batch and its worker."""
        log_matrices = torch.log_softmax(self.weight, dim=2)[worker]
        # log sum_k f_k(x) A_r[k, l], as a logsumexp over k (dimension 1).
        return torch.logsumexp(log_proba[position].unsqueeze(2) + log_matrices, dim=1)

    def mean_trace(self) -> torch.Tensor:
        """``tr(A_r)`` averaged over the annotators."""
        return self.matrices().diagonal(dim1=1, dim2=2).sum(dim=1).mean()


class TraceReg(BaseLearner):
    """Trace-regularised annotator confusions (Tanno et al., CVPR 2019).

    Parameters
    ----------
    lam : float, default 0.01
        Weight ``lambda`` of the mean trace of the confusions (the paper's 0.01).
    **training
        The shared training parameters (see :class:`BaseLearner`).

    Attributes
    ----------
    confusions_ : ndarray (n_workers, K, K)
        Each annotator's confusion ``A_r`` (row = true class, rows sum to one).
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``module_["noise"]`` is a :class:`RowConfusions`.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = TraceReg(max_epochs=5).fit(crowd)
    >>> model.confusions_.shape
    (8, 2, 2)
    """

    def __init__(self, lam: float = 0.01, **training: Any) -> None:
        self.lam = lam
        super().__init__(**training)

    @property
    def confusions_(self) -> np.ndarray:
        self._check_fitted()
        with torch.no_grad():
            matrices = self.module_["noise"].matrices()
        return matrices.double().cpu().numpy()

    # ------------------------------------------------------------------ method hooks

    def _noise_model(
        self, n_workers: int, n_classes: int, item_shape: tuple[int, ...]
    ) -> nn.Module:
        if not (self.lam >= 0 and math.isfinite(self.lam)):
            raise ValueError(f"lam must be a finite number >= 0, got {self.lam}")
        return RowConfusions(n_workers, n_classes)

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        log_proba = torch.log_softmax(logits, dim=1)
        annotation = noise.annotation_log_proba(log_proba, batch.position, batch.worker)
        cross_entropy = -annotation.gather(1, batch.label[:, None]).mean()
        return cross_entropy + self.lam * noise.mean_trace()

    def _crowd_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None
    ) -> torch.Tensor:
        """(B,) ``sum_a log [f(x)^T A_{r_a}]_{y_a}`` over each task's annotations."""
        log_proba = torch.log_softmax(logits, dim=1)
        annotation = noise.annotation_log_proba(log_proba, batch.position, batch.worker)
        per_annotation = annotation.gather(1, batch.label[:, None]).squeeze(1)
        totals = torch.zeros(len(logits), dtype=per_annotation.dtype, device=logits.device)
        return totals.index_add(0, batch.position, per_annotation)
