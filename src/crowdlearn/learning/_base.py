"""The learner contract: a backbone, an optional noise model and a recipe.

:class:`BaseLearner` follows the scikit-learn estimator contract. Every learner shares
the training hyperparameters in :data:`TRAINING_PARAMS` (given as keyword arguments
after its own); the shared :class:`~crowdlearn.learning._trainer.Trainer` runs the
loop, and a method only supplies:

* ``_noise_model(n_workers, n_classes, item_shape)``: the ``nn.Module`` modelling the
  crowd, or None;
* ``_loss(batch, logits, noise)``: the training loss of a batch;
* optionally ``_prepare(data, inputs)`` (before training: targets from an aggregator,
  EM initialisation), ``_epoch_start(context)`` / ``_epoch_end(context)`` (EM steps,
  pseudo-labelling rounds...), and ``_method_state()`` / ``_load_method_state(state)``
  for what those steps keep (saved in checkpoints and by :meth:`BaseLearner.save`).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from torch import nn

from crowdlearn._atomic import atomic_path
from crowdlearn.data import CrowdData, CrowdDataError, TaskInputs
from crowdlearn.data.inputs import as_inputs

#: Hyperparameters every learner takes (after its own), with their defaults: the
#: Crowd Layer paper's recipe on LabelMe (MLP with 128 hidden units and dropout 0.5,
#: Adam, learning rate 1e-3, batch size 64) trained for 25 epochs.
TRAINING_PARAMS: dict[str, Any] = {
    "backbone": "mlp",
    "hidden": (128,),
    "dropout": 0.5,
    "batch_norm": False,
    "optimizer": "adam",
    "lr": 1e-3,
    "weight_decay": 0.0,
    "lr_schedule": None,
    "max_epochs": 25,
    "batch_size": 64,
    "patience": None,
    "selection_metric": "accuracy",
    "device": "auto",
    "random_state": 0,
    "progress": "auto",
    "checkpoint_dir": None,
    "resume": False,
}


class BaseLearner(BaseEstimator):
    """Base class of learners from crowds.

    Training hyperparameters (shared by every learner)
    ---------------------------------------------------
    backbone : "mlp", "cnn", nn.Module or callable, default "mlp"
        The classifier network (see :func:`~crowdlearn.learning.build_backbone`).
    hidden : tuple of int, default (128,)
        Hidden layers of the MLP (first entry: the CNN's dense layer).
    dropout : float, default 0.5
    batch_norm : bool, default False
    optimizer : {"adam", "adamw", "sgd"}, default "adam"
    lr : float, default 1e-3
    weight_decay : float, default 0.0
    lr_schedule : {None, "cosine", "step"}, default None
        Cosine annealing over ``max_epochs``, or a tenfold decay at half and three
        quarters of them.
    max_epochs : int, default 25
    batch_size : int, default 64
        Tasks per mini-batch (each with all its annotations).
    patience : int, optional
        Stop when the validation metric has not improved for this many epochs.
    selection_metric : {"accuracy", "loss"}, default "accuracy"
        With validation data, the epoch whose weights are kept (model selection).
    device : {"auto", "cpu", "cuda", ...}, default "auto"
        "auto" uses CUDA when available.
    random_state : int, default 0
        Seed of the weights, dropout and batch order: the same seed gives the same
        weights.
    progress : bool or "auto", default "auto"
        Progress bar on stderr over epochs (and rounds, stages or restarts where the
        method has them) with the loss and validation metrics; "auto" shows it when
        stderr is a terminal (see :mod:`crowdlearn._progress`). It never changes
        the results.
    checkpoint_dir : path, optional
        Write a checkpoint there after every epoch.
    resume : bool, default False
        Continue from the checkpoint in ``checkpoint_dir`` when there is one.

    Attributes (after ``fit``)
    --------------------------
    module_ : nn.ModuleDict
        ``classifier`` (the backbone) and, where the method has one, ``noise``.
    classes_ : ndarray
        The class ids of the training data.
    history_ : DataFrame
        One row per epoch: ``epoch``, ``train_loss``, validation ``valid_accuracy`` and
        ``valid_loss`` (when validation data were given), ``lr``, ``seconds``, and
        method-specific columns.
    best_epoch_ : int
        Epoch whose weights were kept (the last one without validation data).
    """

    #: Whether the method needs worker identities.
    needs_workers: ClassVar[bool] = True

    def __init__(self, **training: Any) -> None:
        unknown = sorted(set(training) - set(TRAINING_PARAMS))
        if unknown:
            raise TypeError(
                f"{type(self).__name__} got unexpected parameters {unknown}; "
                f"the training parameters are {sorted(TRAINING_PARAMS)}"
            )
        for name, default in TRAINING_PARAMS.items():
            setattr(self, name, training.get(name, default))

    @classmethod
    def _get_param_names(cls) -> list[str]:
        own = [
            name
            for name, parameter in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and parameter.kind is not parameter.VAR_KEYWORD
        ]
        return sorted(set(own) | set(TRAINING_PARAMS))

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        defaults = {
            name: p.default
            for name, p in inspect.signature(type(self).__init__).parameters.items()
            if p.default is not p.empty
        }
        defaults.update(TRAINING_PARAMS)
        changed = {
            name: value
            for name, value in self.get_params(deep=False).items()
            if not _same_value(value, defaults.get(name, object()))
        }
        text = ", ".join(f"{name}={value!r}" for name, value in changed.items())
        return f"{type(self).__name__}({text})"

    # ------------------------------------------------------------------ public API

    def fit(self, data: CrowdData, valid: tuple[Any, Any] | None = None) -> BaseLearner:
        """Train on the crowd ``data`` (its ``inputs`` or ``features`` are the instances).

        Parameters
        ----------
        data : CrowdData
        valid : (X, y), optional
            Validation instances and their class codes (as returned by
            :func:`crowdlearn.datasets.load`), for model selection and early stopping.
            Never pass the test split here.
        """
        from crowdlearn.learning._trainer import Trainer

        if not isinstance(data, CrowdData):
            raise TypeError(f"fit expects a CrowdData, got {type(data).__name__}")
        if self.needs_workers and data.is_anonymous:
            raise CrowdDataError(
                f"{type(self).__name__} models each worker and needs worker ids; the data "
                "are anonymous (use TwoStage or CrowdMixture(setting='global'))"
            )
        Trainer(self).fit(data, training_inputs(data), _valid_pair(valid, data.n_classes))
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of new instances, shape (n, n_classes)."""
        self._check_fitted()
        inputs = as_inputs(X)
        module = self.module_["classifier"]
        device = next(module.parameters()).device
        module.eval()
        chunks = []
        with torch.no_grad():
            for start in range(0, len(inputs), 4 * self.batch_size):
                rows = np.arange(start, min(start + 4 * self.batch_size, len(inputs)))
                logits = module(torch.as_tensor(inputs.take(rows), device=device))
                chunks.append(torch.softmax(logits, dim=1).cpu().numpy())
        if not chunks:
            return np.zeros((0, len(self.classes_)))
        return np.concatenate(chunks).astype(np.float64)

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class code of new instances."""
        return self.predict_proba(X).argmax(axis=1)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the fitted learner (parameters, weights, learned state) to one file."""
        self._check_fitted()
        payload = {
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "params": self.get_params(deep=False),
            "module": {k: v.detach().cpu() for k, v in self.module_.state_dict().items()},
            "shape": self._shape_,
            "classes": self.classes_,
            "history": self.history_,
            "best_epoch": self.best_epoch_,
            "method_state": self._method_state(),
        }
        with atomic_path(path) as tmp:
            torch.save(payload, tmp)

    @classmethod
    def load(cls, path: str | os.PathLike[str], device: str = "cpu") -> BaseLearner:
        """A learner saved by :meth:`save` (only load files you trust: they are pickles)."""
        payload = torch.load(Path(path), map_location=device, weights_only=False)
        module_name, _, class_name = payload["class"].rpartition(".")
        learner_class = getattr(__import__(module_name, fromlist=[class_name]), class_name)
        if not issubclass(learner_class, cls):
            raise TypeError(f"{path} holds a {class_name}, not a {cls.__name__}")
        learner = learner_class(**payload["params"])
        learner._shape_ = payload["shape"]
        learner.classes_ = payload["classes"]
        learner.module_ = learner._build_module(*payload["shape"]).to(device)
        learner.module_.load_state_dict(payload["module"])
        learner.history_ = payload["history"]
        learner.best_epoch_ = payload["best_epoch"]
        learner._load_method_state(payload["method_state"])
        return learner

    # ------------------------------------------------------------------ method hooks

    def _noise_model(
        self, n_workers: int, n_classes: int, item_shape: tuple[int, ...]
    ) -> nn.Module | None:
        return None

    def _loss(self, batch: Any, logits: torch.Tensor, noise: nn.Module | None) -> torch.Tensor:
        raise NotImplementedError

    def _prepare(self, data: CrowdData, inputs: TaskInputs) -> None:
        """Before the first epoch (not called again when resuming a checkpoint)."""

    def _training_tasks(self, data: CrowdData) -> np.ndarray:
        """Task codes the epochs iterate over: by default those with annotations."""
        return np.flatnonzero(data.feedback_effort > 0)

    def _epoch_start(self, context: Any) -> None:
        """Before each epoch's mini-batches."""

    def _epoch_end(self, context: Any) -> dict[str, float]:
        """After each epoch; returns extra history columns."""
        return {}

    def _method_state(self) -> dict[str, Any]:
        """Learned state outside ``module_`` (numpy arrays, floats)."""
        return {}

    def _load_method_state(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    # ------------------------------------------------------------------ internals

    def _build_module(
        self, item_shape: tuple[int, ...], n_classes: int, n_workers: int
    ) -> nn.ModuleDict:
        from crowdlearn.learning.backbones import build_backbone

        parts = {
            "classifier": build_backbone(
                self.backbone,
                item_shape,
                n_classes,
                self.hidden,
                self.dropout,
                self.batch_norm,
            )
        }
        noise = self._noise_model(n_workers, n_classes, item_shape)
        if noise is not None:
            parts["noise"] = noise
        return nn.ModuleDict(parts)

    def _check_fitted(self) -> None:
        if not hasattr(self, "module_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")


def training_inputs(data: CrowdData) -> TaskInputs:
    """The instances of the tasks: ``data.inputs``, else ``data.features``."""
    if data.inputs is not None:
        return data.inputs
    if data.features is None:
        raise CrowdDataError(
            "learning needs the tasks' instances: give the data features "
            "(CrowdData.with_features) or inputs (CrowdData.with_inputs)"
        )
    return as_inputs(data.features)


def _valid_pair(valid: Any, n_classes: int) -> tuple[TaskInputs, np.ndarray] | None:
    if valid is None:
        return None
    try:
        features, labels = valid
    except (TypeError, ValueError):
        raise CrowdDataError("valid must be an (X, y) pair") from None
    inputs = as_inputs(features)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (len(inputs),):
        raise CrowdDataError(
            f"valid has {len(inputs)} instances but {labels.shape} labels; y must be 1-D"
        )
    if len(labels) and (labels.min() < 0 or labels.max() >= n_classes):
        raise CrowdDataError(f"valid labels must be class codes 0..{n_classes - 1}")
    return inputs, labels


def _same_value(value: Any, default: Any) -> bool:
    try:
        return bool(value == default) and type(value) is type(default)
    except (TypeError, ValueError):
        return value is default


def history_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The per-epoch history as a DataFrame."""
    return pd.DataFrame(rows)
