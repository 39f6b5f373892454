"""Union-Net: the annotators' labels as one union target through one transition matrix.

Wei, Xie, Feng, Han & An, "Deep Learning From Multiple Noisy Annotators as A Union",
IEEE TNNLS 2022. Instead of one noise model per annotator trained on its own labels,
the labels of all ``R`` annotators are concatenated into one ``RK``-dimensional union
label space: annotation ``(r, l)`` (annotator ``r`` gave label ``l``) is position
``r K + l``. One ``K x RK`` transition matrix ``T = [T_1, ..., T_R]`` maps the
classifier's class probabilities ``f(x)`` to a distribution over the union,
``p(r, l | x) = sum_k f_k(x) T[k, rK + l]``, and the loss is the cross-entropy of
this union output against every observed annotation's position (averaged over the
batch's annotations).

``T`` is parametrised by a softmax of a free parameter; ``normalization`` says over
what:

* ``"union"`` (default): each row of ``T`` is a distribution over the whole union
  (the ``RK`` positions), so the union output is one distribution and the model also
  learns how the labels of each class spread over annotators; this is our reading of
  the paper's single union transition (and what the public re-implementation behind
  the published benchmark numbers does);
* ``"block"``: each ``K x K`` block ``T_r`` is row-stochastic on its own; the union
  output then sums to ``R`` and its cross-entropy is each annotator's own
  cross-entropy plus ``log R``.

Either way the free parameter of every block starts at ``(1 - eps) I + eps / (K - 1)
(1 1^T - I)`` with the paper's ``eps = 1e-5``, the identity up to ``eps``, as in the
public re-implementation behind the published benchmark numbers; the softmax turns it
into a smoothed identity (diagonal ``e / (e + K - 1)`` within each block, 0.58 for
K = 3). Starting instead from the log of that matrix (so that ``T`` itself is the
``eps``-identity) freezes the transition: its off-diagonal logits start near -12 and
Adam moves them by about ``lr`` per step, so within a usual budget the method is plain
cross-entropy on the raw annotations (far less accurate on a simulated crowd with
adversarial workers). At prediction time only the classifier is used.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatch

Normalization = Literal["union", "block"]


class UnionTransition(nn.Module):
    """The concatenated transition matrix ``T`` (stored as ``(R, K, K)`` blocks).

    Parameters
    ----------
    n_workers, n_classes : int
    epsilon : float
        Off-diagonal mass of each block of the parameter at initialisation.
    normalization : {"union", "block"}

    Attributes
    ----------
    weight : Parameter (n_workers, K, K)
        ``weight[r, k, l]`` is ``T[k, rK + l]`` before the softmax; every block is
        initialised to ``(1 - eps) I + eps / (K - 1) (1 1^T - I)``.
    """

    def __init__(
        self, n_workers: int, n_classes: int, epsilon: float, normalization: Normalization
    ) -> None:
        super().__init__()
        eye = torch.eye(n_classes)
        block = (1.0 - epsilon) * eye + epsilon / (n_classes - 1) * (1.0 - eye)
        self.normalization = normalization
        self.weight = nn.Parameter(block.repeat(n_workers, 1, 1))

    def log_transition(self) -> torch.Tensor:
        """(R, K, K) ``log T[k, rK + l]`` at ``[r, k, l]``."""
        if self.normalization == "block":
            return torch.log_softmax(self.weight, dim=2)
        n_workers, k, _ = self.weight.shape
        # One softmax over the whole union (r, l) for each true class k.
        union = self.weight.transpose(0, 1).reshape(k, n_workers * k)
        log_rows = torch.log_softmax(union, dim=1)
        return log_rows.reshape(k, n_workers, k).transpose(0, 1)

    def union_log_proba(
        self, log_proba: torch.Tensor, position: torch.Tensor, worker: torch.Tensor
    ) -> torch.Tensor:
        """(A, K) ``log p(r_a, l | x)`` of each annotation's annotator and every label
        ``l``, from the batch's (B, K) log class probabilities."""
        log_blocks = self.log_transition()[worker]
        return torch.logsumexp(log_proba[position].unsqueeze(2) + log_blocks, dim=1)

    def confusions(self) -> torch.Tensor:
        """(R, K, K) each block with its rows renormalised: ``p(l | class k, r)``."""
        return torch.softmax(self.log_transition(), dim=2)


class UnionNet(BaseLearner):
    """Union-Net (Wei et al., TNNLS 2022).

    Parameters
    ----------
    epsilon : float, default 1e-5
        Off-diagonal mass of each block of the transition's parameter at
        initialisation (the paper's value).
    normalization : {"union", "block"}, default "union"
        Softmax of the transition over each whole row of ``T`` (one distribution over
        the union) or within each annotator's block (see the module docstring).
    **training
        The shared training parameters (see :class:`BaseLearner`).

    Attributes
    ----------
    confusions_ : ndarray (n_workers, K, K)
        Each annotator's block of ``T`` with rows renormalised (row = true class).
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``module_["noise"]`` is a :class:`UnionTransition`.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = UnionNet(max_epochs=5).fit(crowd)
    >>> model.confusions_.shape
    (8, 2, 2)
    """

    def __init__(
        self, epsilon: float = 1e-5, normalization: Normalization = "union", **training: Any
    ) -> None:
        self.epsilon = epsilon
        self.normalization = normalization
        super().__init__(**training)

    @property
    def confusions_(self) -> np.ndarray:
        self._check_fitted()
        with torch.no_grad():
            matrices = self.module_["noise"].confusions()
        return matrices.double().cpu().numpy()

    # ------------------------------------------------------------------ method hooks

    def _noise_model(
        self, n_workers: int, n_classes: int, item_shape: tuple[int, ...]
    ) -> nn.Module:
        if self.normalization not in ("union", "block"):
            raise ValueError(
                f"normalization must be 'union' or 'block', got {self.normalization!r}"
            )
        if not (0 < self.epsilon < 1 and math.isfinite(self.epsilon)):
            raise ValueError(f"epsilon must be in (0, 1), got {self.epsilon}")
        return UnionTransition(n_workers, n_classes, self.epsilon, self.normalization)

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        log_proba = torch.log_softmax(logits, dim=1)
        union = noise.union_log_proba(log_proba, batch.position, batch.worker)
        return -union.gather(1, batch.label[:, None]).mean()

    def _crowd_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None
    ) -> torch.Tensor:
        """(B,) ``sum_a log p(y_a | x, r_a)`` over each task's annotations, with the
        union output renormalised within each annotator's block (conditioning on who
        annotated, as for the other methods)."""
        log_proba = torch.log_softmax(logits, dim=1)
        union = noise.union_log_proba(log_proba, batch.position, batch.worker)
        conditional = union - torch.logsumexp(union, dim=1, keepdim=True)
        per_annotation = conditional.gather(1, batch.label[:, None]).squeeze(1)
        totals = torch.zeros(len(logits), dtype=per_annotation.dtype, device=logits.device)
        return totals.index_add(0, batch.position, per_annotation)
