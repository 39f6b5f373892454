"""Weighted Doctor Net (WDN): Doctor Net's heads averaged with learned weights.

Guan, Gulshan, Dai & Hinton, "Who said what: modeling individual labelers improves
classification", AAAI 2018, the "WDN" model. First Doctor Net is trained as in
:class:`~crowdlearn.learning.DoctorNet` (a shared trunk, one softmax head per
annotator, each annotation training its annotator's head). Then the trunk and the
heads are frozen and one averaging logit ``v_r`` per head is learned; the prediction
is the weighted average of the heads' distributions

    p(k | x) = sum_r w_r p_r(k | x),   w = softmax(v),

and the weights are fitted on the training tasks' annotations by minimising the
cross-entropy of that average against every observed annotation,
``- mean_a log sum_r w_r p_r(y_a | x_a)``.

Readings chosen here: the weights are image-independent (WDN, not the paper's
image-specific IWDN); heads of annotators without any annotation are left out
(weight 0); ``v`` starts at 0 (uniform over the other heads) and is fitted by Adam
(learning rate ``weight_lr``) for ``weight_epochs`` passes over the training tasks in
mini-batches of the trainer's size, the heads in evaluation mode (no dropout).

What the objective implies: the weights are mixture proportions that explain *all*
training annotations, spammers' included, so they favour heads whose annotators are
numerous or consistent, not necessarily accurate ones: in a check on the simulated
crowd of the tests (half spammers, seed 0) the experts' heads got on average about the
same weight as the spammers' heads, which the agreement weights of
:class:`~crowdlearn.learning.DoctorNet` tell apart. The heads are fitted on the same annotations,
which also favours heads that memorised their annotator's training labels.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from crowdlearn.data import CrowdData
from crowdlearn.learning._base import training_inputs
from crowdlearn.learning._batches import TaskBatch, TaskBatcher
from crowdlearn.learning.doctor_net import DoctorNet

#: Logit given to heads excluded from the average (annotators without annotations).
EXCLUDED = -1e4


def head_probabilities(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """(B, n_workers, K) every head's class distribution for the inputs ``x``."""
    hidden = net.trunk(x)
    logits = torch.einsum("bh,rhk->brk", hidden, net.head_weight) + net.head_bias
    return torch.softmax(logits, dim=2)


class DoctorNetWeighted(DoctorNet):
    """Weighted Doctor Net (Guan et al., AAAI 2018): learned averaging weights.

    Parameters
    ----------
    weight_epochs : int, default 50
        Passes over the training tasks to fit the averaging weights.
    weight_lr : float, default 0.05
        Adam's learning rate for the averaging logits.
    vote : {"soft", "hard"}, default "soft"
        As in :class:`DoctorNet`; the weights are learned on the soft average.
    **training
        The shared training parameters (:class:`BaseLearner`); the backbone must be
        ``"mlp"``.

    Attributes
    ----------
    vote_weights_ : ndarray (n_workers,)
        The learned averaging weights ``w`` (they sum to 1).
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``history_`` gains ``weight_loss``, the weights'
        training loss of the last pass, on its last row.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = DoctorNetWeighted(max_epochs=5).fit(crowd)
    >>> round(float(model.vote_weights_.sum()), 6)
    1.0
    """

    def __init__(
        self,
        weight_epochs: int = 50,
        weight_lr: float = 0.05,
        vote: Literal["soft", "hard"] = "soft",
        **training: Any,
    ) -> None:
        self.weight_epochs = weight_epochs
        self.weight_lr = weight_lr
        # the agreement weights of DoctorNet are only the starting vote during training
        super().__init__(weights="agreement", vote=vote, **training)

    def _fit(self, data: CrowdData, valid: Any) -> None:
        """Train Doctor Net, then learn the averaging weights on the training
        annotations with the heads frozen."""
        super()._fit(data, valid)
        if self.weight_epochs < 0:
            raise ValueError(f"weight_epochs must be >= 0, got {self.weight_epochs}")
        weights, loss = self._learn_weights(data)
        net = self.module_["classifier"]
        with torch.no_grad():
            net.vote_weights.copy_(torch.as_tensor(weights, dtype=net.vote_weights.dtype))
        self._weights = weights
        if len(self.history_):
            self.history_.loc[self.history_.index[-1], "weight_loss"] = loss

    def _learn_weights(self, data: CrowdData) -> tuple[np.ndarray, float]:
        """The averaging weights (n_workers,) and the last pass's mean loss."""
        net = self.module_["classifier"]
        device = net.head_bias.device
        net.eval()
        present = torch.as_tensor(np.bincount(data.worker, minlength=data.n_workers) > 0)
        mask = torch.where(present, 0.0, EXCLUDED).to(device)
        logits = torch.zeros(data.n_workers, device=device, requires_grad=True)
        optimizer = torch.optim.Adam([logits], lr=self.weight_lr)
        tasks = self._training_tasks(data)
        batcher = TaskBatcher(data, training_inputs(data), tasks, self.batch_size, device)
        rng = np.random.default_rng(self.random_state)
        loss_value = float("nan")
        for _ in range(self.weight_epochs):
            total, count = 0.0, 0
            for batch in batcher.epoch(rng):
                with torch.no_grad():
                    heads = head_probabilities(net, batch.x)
                loss = weighted_vote_loss(heads, batch, logits + mask)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(batch.label)
                count += len(batch.label)
            loss_value = total / max(count, 1)
        with torch.no_grad():
            weights = torch.softmax(logits + mask, dim=0)
        return weights.double().cpu().numpy(), loss_value

    def _crowd_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None
    ) -> torch.Tensor:
        """(B,) for each task ``sum_a log p_{r_a}(y_a | x)``: each annotation under its
        annotator's own head (annotations independent given the instance)."""
        net = self._current
        hidden = net.trunk(batch.x)[batch.position]
        log_p = F.log_softmax(net.head_logits(hidden, batch.worker), dim=1)
        picked = log_p.gather(1, batch.label[:, None]).squeeze(1)
        total = torch.zeros(len(batch.tasks), dtype=picked.dtype, device=picked.device)
        return total.index_add(0, batch.position, picked)


def weighted_vote_loss(
    heads: torch.Tensor, batch: TaskBatch, weight_logits: torch.Tensor
) -> torch.Tensor:
    """``- mean_a log sum_r softmax(v)_r p_r(y_a | x_a)`` from the heads (B, R, K)."""
    log_w = F.log_softmax(weight_logits, dim=0)
    per_head = heads[batch.position, :, batch.label].clamp_min(1e-12).log()  # (A, R)
    return -torch.logsumexp(per_head + log_w, dim=1).mean()
