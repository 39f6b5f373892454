"""Doctor Net: one output head per annotator, combined by a weighted vote at test time.

Guan, Gulshan, Dai & Hinton, "Who said what: modeling individual labelers improves
classification", AAAI 2018 (a baseline of the CrowdInG paper, Table 1). A shared trunk
(the backbone's hidden layers) feeds one softmax head per annotator; each observed
annotation trains its annotator's head by cross-entropy. At test time the heads'
class distributions are averaged with one weight per annotator.

Choice left open here (a parameter): the weights. ``weights="agreement"`` (default)
gives annotator ``r`` the weight ``(a_r + 1) / (n_r + 2)``, ``a_r`` the number of its
annotations that agree with the majority vote of the *other* annotators of the same
task and ``n_r`` the annotations that have other annotators (a smoothed leave-one-out
accuracy); ``weights="count"`` weighs heads by their number of annotations;
``"uniform"`` averages all heads of annotators with at least one annotation. Guan et al.
also learn the weights in a second training stage (WDN); that variant is not
implemented (the CrowdInG paper's baseline is described only as a weighted majority
vote of the annotator networks).
``vote="soft"`` averages the heads' probabilities, ``"hard"`` their one-hot argmaxes
(then a weighted vote; a little of the soft average breaks ties).
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
from crowdlearn.learning.backbones import MLP


class DoctorNetModule(nn.Module):
    """Trunk (MLP hidden layers) + one linear head per annotator + vote weights."""

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        n_workers: int,
        hidden: tuple[int, ...],
        dropout: float,
        batch_norm: bool,
        vote: str,
    ) -> None:
        super().__init__()
        mlp = MLP(in_features, n_classes, hidden, dropout, batch_norm)
        self.trunk = nn.Sequential(*list(mlp.layers)[:-1])
        width = hidden[-1] if hidden else in_features
        self.head_weight = nn.Parameter(torch.randn(n_workers, width, n_classes) / width**0.5)
        self.head_bias = nn.Parameter(torch.zeros(n_workers, n_classes))
        self.register_buffer("vote_weights", torch.ones(n_workers) / n_workers)
        self.vote = vote
        self.last_hidden: torch.Tensor | None = None

    def head_logits(self, hidden: torch.Tensor, worker: torch.Tensor) -> torch.Tensor:
        """Logits of each annotation's own head, (A, K)."""
        return (
            torch.einsum("ah,ahk->ak", hidden, self.head_weight[worker]) + self.head_bias[worker]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Log of the weighted average of the heads' distributions (used as logits)."""
        hidden = self.trunk(x)
        self.last_hidden = hidden
        logits = torch.einsum("bh,rhk->brk", hidden, self.head_weight) + self.head_bias
        proba = torch.softmax(logits, dim=2)
        if self.vote == "hard":
            votes = F.one_hot(proba.argmax(dim=2), proba.shape[2]).to(proba.dtype)
            proba = votes + 1e-3 * proba
        mixed = torch.einsum("brk,r->bk", proba, self.vote_weights)
        mixed = mixed / mixed.sum(dim=1, keepdim=True).clamp_min(1e-12)
        return torch.log(mixed.clamp_min(1e-12))


def vote_weights(data: CrowdData, rule: str) -> np.ndarray:
    """Per-annotator vote weights (normalised to sum to 1), see the module doc."""
    r, k = data.n_workers, data.n_classes
    n_per = np.bincount(data.worker, minlength=r).astype(float)
    if rule == "uniform":
        weights = (n_per > 0).astype(float)
    elif rule == "count":
        weights = n_per
    elif rule == "agreement":
        task = data.task.astype(np.int64)
        counts = np.zeros((data.n_tasks, k))
        np.add.at(counts, (task, data.label), 1.0)
        others = counts[task].copy()
        others[np.arange(len(task)), data.label] -= 1.0
        has_others = others.sum(axis=1) > 0
        agree = has_others & (others.argmax(axis=1) == data.label)
        a = np.bincount(data.worker[agree], minlength=r).astype(float)
        m = np.bincount(data.worker[has_others], minlength=r).astype(float)
        weights = np.where(n_per > 0, (a + 1.0) / (m + 2.0), 0.0)
    else:
        raise ValueError(f"weights must be 'agreement', 'count' or 'uniform', got {rule!r}")
    if weights.sum() <= 0:
        weights = np.ones(r)
    return weights / weights.sum()


class DoctorNet(BaseLearner):
    """Doctor Net (Guan et al., AAAI 2018): a head per annotator, weighted vote.

    Parameters
    ----------
    weights : {"agreement", "count", "uniform"}, default "agreement"
        Vote weight of each annotator's head (see the module doc).
    vote : {"soft", "hard"}, default "soft"
        Average the heads' probabilities or their votes.
    **training
        The shared training parameters (:class:`BaseLearner`); the backbone must be
        ``"mlp"`` (the trunk is its hidden layers).

    Attributes
    ----------
    vote_weights_ : ndarray (n_workers,)
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``predict_proba`` is the weighted vote of the heads.
    """

    def __init__(
        self,
        weights: Literal["agreement", "count", "uniform"] = "agreement",
        vote: Literal["soft", "hard"] = "soft",
        **training: Any,
    ) -> None:
        self.weights = weights
        self.vote = vote
        super().__init__(**training)

    #: the heads' likelihood reads the trunk's output, not the vote's logits
    _likelihood_reads_logits = False

    def _build_module(
        self, item_shape: tuple[int, ...], n_classes: int, n_workers: int
    ) -> nn.ModuleDict:
        if self.backbone != "mlp":
            raise ValueError("DoctorNet builds its own MLP trunk: backbone must be 'mlp'")
        if self.vote not in ("soft", "hard"):
            raise ValueError(f"vote must be 'soft' or 'hard', got {self.vote!r}")
        net = DoctorNetModule(
            int(np.prod(item_shape)),
            n_classes,
            n_workers,
            tuple(self.hidden),
            self.dropout,
            self.batch_norm,
            self.vote,
        )
        self._current = net
        return nn.ModuleDict({"classifier": net})

    def _prepare(self, data: CrowdData, inputs: TaskInputs) -> None:
        self._weights = vote_weights(data, self.weights)

    def _epoch_start(self, context: Any) -> None:
        net = context.module["classifier"]
        net.vote_weights.copy_(torch.as_tensor(self._weights, dtype=net.vote_weights.dtype))

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        net = self._current
        hidden = net.last_hidden[batch.position]
        return F.cross_entropy(net.head_logits(hidden, batch.worker), batch.label)

    def _crowd_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None
    ) -> torch.Tensor:
        """Per task, the sum of its annotations' log-probabilities under their
        annotators' heads (the forward pass that gave ``logits`` left the trunk's
        output in ``last_hidden``)."""
        net = self._current
        head = net.head_logits(net.last_hidden[batch.position], batch.worker)
        return independent_log_likelihood(
            torch.log_softmax(head, dim=1), batch.position, batch.label, len(batch.tasks)
        )

    def _method_state(self) -> dict[str, Any]:
        return {"_weights": getattr(self, "_weights", None)}

    @property
    def vote_weights_(self) -> np.ndarray:
        self._check_fitted()
        return self._last_classifier().vote_weights.cpu().numpy().astype(np.float64)
