"""A multi-label classifier learned from label-set crowds, with a 2 x 2 noise layer per
worker and class.

The Crowd Layer's idea (Rodrigues & Pereira, "Deep learning from crowds", AAAI 2018:
the classifier's output goes through a layer of each annotator, trained end to end on
the annotations) applied to each label of a multi-label task. The network gives
``p_ik = sigmoid(f_k(x_i))``, the probability that class ``k`` applies to task ``i``;
worker ``j`` selects class ``k`` with probability

    P(y_ijk = 1) = p_ik s_jk + (1 - p_ik) (1 - c_jk)

with ``s_jk = sigmoid(a_jk)`` its sensitivity and ``c_jk = sigmoid(b_jk)`` its
specificity for that class (the per-label two-coin model of the label-set
aggregators, here learned jointly with the network). The loss is the negative
log-likelihood of every observed answer (:func:`answer_log_likelihood`, computed with
``logaddexp`` of log-sigmoids). The noise layer starts at ``init_sensitivity`` and
``init_specificity`` (better than chance, which fixes the meaning of ``p``).
At prediction time only the network is used.

The network is crowdlearn's MLP (:class:`~crowdlearn.learning.backbones.MLP`); the
training is plain mini-batch Adam over the annotations for ``max_epochs`` epochs, on
the CPU by default, with features standardised by the training tasks' mean and
standard deviation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from torch import nn

from crowdlearn._bounds import check_params
from crowdlearn.data import CrowdDataError, LabelSets
from crowdlearn.learning._shared import check_learnable, resolve_device
from crowdlearn.learning.backbones import MLP


class LabelNoise(nn.Module):
    """Per-worker, per-class sensitivity and specificity, as logits."""

    def __init__(self, n_workers: int, n_classes: int, sensitivity: float, specificity: float):
        super().__init__()
        self.sensitivity = nn.Parameter(torch.full((n_workers, n_classes), _logit(sensitivity)))
        self.specificity = nn.Parameter(torch.full((n_workers, n_classes), _logit(specificity)))


def _logit(p: float) -> float:
    return float(np.log(p) - np.log1p(-p))


def answer_log_likelihood(
    logits: torch.Tensor,
    answers: torch.Tensor,
    sensitivity: torch.Tensor,
    specificity: torch.Tensor,
) -> torch.Tensor:
    """``log P(y)`` of each (annotation, class) answer under the noise layer.

    ``logits`` (n, K) of the network for each annotation's task; ``answers`` (n, K) in
    {0, 1}; ``sensitivity`` and ``specificity`` (n, K) logits of the annotation's worker.
    ``P(y = 1) = p s + (1 - p)(1 - c)``; ``P(y = 0) = p (1 - s) + (1 - p) c``.
    """
    log_p, log_not_p = F.logsigmoid(logits), F.logsigmoid(-logits)
    select = torch.logaddexp(
        log_p + F.logsigmoid(sensitivity), log_not_p + F.logsigmoid(-specificity)
    )
    leave = torch.logaddexp(
        log_p + F.logsigmoid(-sensitivity), log_not_p + F.logsigmoid(specificity)
    )
    return torch.where(answers > 0.5, select, leave)


class MultiLabelCrowdLayer(BaseEstimator):
    """Multi-label network with a per-worker, per-class 2 x 2 noise layer.

    Parameters
    ----------
    hidden : tuple of int, default (64,)
        Hidden layers of the MLP (``()``: a linear model).
    dropout : float, default 0.2
    lr : float, default 1e-2
    weight_decay : float, default 1e-4
    max_epochs : int, default 60
    batch_size : int, default 256
        Annotations per mini-batch.
    init_sensitivity, init_specificity : float, default 0.8 and 0.9
        Starting rates of every worker's noise layer (in (0.5, 1)).
    trainable_noise : bool, default True
        Learn the noise layer (False keeps every worker at the initial rates).
    device : str, default "cpu"
    random_state : int, default 0
        Seed of the weights, dropout and batch order.

    Attributes
    ----------
    module_ : nn.Module
        The network (its K outputs are logits of the classes).
    sensitivity_, specificity_ : ndarray (n_workers, n_classes)
    history_ : DataFrame
        ``epoch`` and ``loss`` (mean negative log-likelihood per answered class).
    classes_, worker_ids_ : ndarray

    Examples
    --------
    >>> from crowdlearn.simulate.label_sets import simulate_label_sets
    >>> data = simulate_label_sets(n_tasks=200, n_workers=10, n_features=5, random_state=0)
    >>> model = MultiLabelCrowdLayer(max_epochs=5).fit(data)
    >>> model.predict_proba(data.features).shape
    (200, 8)
    """

    worker_attributes = ("sensitivity_", "specificity_")

    def __init__(
        self,
        hidden: tuple[int, ...] = (64,),
        dropout: float = 0.2,
        lr: float = 1e-2,
        weight_decay: float = 1e-4,
        max_epochs: int = 60,
        batch_size: int = 256,
        init_sensitivity: float = 0.8,
        init_specificity: float = 0.9,
        trainable_noise: bool = True,
        device: str = "cpu",
        random_state: int | None = 0,
    ) -> None:
        self.hidden = hidden
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.init_sensitivity = init_sensitivity
        self.init_specificity = init_specificity
        self.trainable_noise = trainable_noise
        self.device = device
        self.random_state = random_state

    def fit(self, data: LabelSets) -> MultiLabelCrowdLayer:
        """Train on the label sets of ``data`` and its ``features``; returns ``self``."""
        if not isinstance(data, LabelSets):
            raise TypeError(
                f"MultiLabelCrowdLayer.fit expects a LabelSets with features, got "
                f"{type(data).__name__}; build one with LabelSets.from_arrays(task, worker, "
                "labels, features=X)"
            )
        check_params(type(self).__name__, self.get_params(deep=False))
        for name in ("init_sensitivity", "init_specificity"):
            if not 0.5 < getattr(self, name) < 1:
                raise ValueError(f"MultiLabelCrowdLayer: {name} must be in (0.5, 1)")
        if data.features is None:
            raise CrowdDataError("MultiLabelCrowdLayer needs the tasks' features (features=)")
        features = check_learnable(np.asarray(data.features, dtype=np.float64))
        features = features.reshape(len(features), -1)
        self.mean_ = features.mean(axis=0)
        self.scale_ = np.where(features.std(axis=0) > 0, features.std(axis=0), 1.0)
        device = resolve_device(self.device)
        seed = 0 if self.random_state is None else int(self.random_state)
        torch.manual_seed(seed)
        self.module_ = MLP(features.shape[1], data.n_classes, self.hidden, self.dropout).to(device)
        noise = LabelNoise(
            data.n_workers, data.n_classes, self.init_sensitivity, self.init_specificity
        ).to(device)
        parameters = list(self.module_.parameters())
        if self.trainable_noise:
            parameters += list(noise.parameters())
        optimizer = torch.optim.Adam(parameters, lr=self.lr, weight_decay=self.weight_decay)
        x = torch.as_tensor(self._standardised(features), dtype=torch.float32, device=device)
        task = torch.tensor(np.array(data.task), dtype=torch.long, device=device)
        worker = torch.tensor(np.array(data.worker), dtype=torch.long, device=device)
        answers = torch.tensor(np.array(data.answers), dtype=torch.float32, device=device)
        order = torch.Generator().manual_seed(seed)
        losses = []
        self.module_.train()
        for epoch in range(1, self.max_epochs + 1):
            total = 0.0
            for batch in torch.randperm(len(task), generator=order).split(self.batch_size):
                batch = batch.to(device)
                w = worker[batch]
                log_likelihood = answer_log_likelihood(
                    self.module_(x[task[batch]]),
                    answers[batch],
                    noise.sensitivity[w],
                    noise.specificity[w],
                )
                loss = -log_likelihood.mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(batch)
            losses.append({"epoch": epoch, "loss": total / len(task)})
        self.module_.eval()
        self.history_ = pd.DataFrame(losses, columns=["epoch", "loss"])
        with torch.no_grad():
            self.sensitivity_ = torch.sigmoid(noise.sensitivity).double().cpu().numpy()
            self.specificity_ = torch.sigmoid(noise.specificity).double().cpu().numpy()
        self.classes_ = data.classes
        self.worker_ids_ = data.worker_ids
        return self

    def _standardised(self, features: np.ndarray) -> np.ndarray:
        return (features - self.mean_) / self.scale_

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Probability that each class applies to each instance, (n, n_classes)."""
        if not hasattr(self, "module_"):
            raise NotFittedError("MultiLabelCrowdLayer is not fitted yet; call fit(data)")
        rows = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        device = next(self.module_.parameters()).device
        inputs = torch.as_tensor(self._standardised(rows), dtype=torch.float32, device=device)
        with torch.no_grad():
            return torch.sigmoid(self.module_(inputs)).double().cpu().numpy()

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The predicted sets: bool (n, n_classes), a class where its probability > 0.5."""
        return self.predict_proba(X) > 0.5
