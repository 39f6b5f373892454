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

import contextlib
import contextvars
import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from torch import nn

from crowdlearn._bounds import check_params
from crowdlearn.data import CrowdData, CrowdDataError, TaskInputs
from crowdlearn.data.inputs import as_inputs
from crowdlearn.learning._model_file import (
    ModelFileError,
    check_payload,
    learner_class_named,
    model_meta,
    read_model_file,
    training_summary,
    write_model_file,
)
from crowdlearn.learning._shared import (  # noqa: F401  (re-exported)
    TIMING_COLUMNS,
    check_learnable,
    history_frame,
    training_inputs,
    without_timings,
)
from crowdlearn.learning._trainer import Trainer
from crowdlearn.learning._validation import (
    CrowdValidation,
    TruthValidation,
    as_validator,
    crowd_folds,
    crowd_split,
    ds_table,
    joint_temperature,
    pooled_temperature,
    warn_too_small,
)

#: True while a learner's top-level fit runs: learners fitted inside it (rounds,
#: pre-trainings, restarts) skip standardisation, crowd validation and calibration.
_INSIDE_FIT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "crowdlearn_inside_fit", default=False
)

#: Hyperparameters every learner takes (after its own), with their defaults: the
#: Crowd Layer paper's recipe on LabelMe (MLP with 128 hidden units and dropout 0.5,
#: Adam, learning rate 1e-3, batch size 64), for at most 100 epochs with the epoch chosen
#: by crowd validation (early stop after 20 epochs without improvement), chosen against
#: the first design's 25 epochs without selection by ``python -m benchmarks
#: learning-defaults`` (BENCHMARKS.md).
TRAINING_PARAMS: dict[str, Any] = {
    "backbone": "mlp",
    "hidden": (128,),
    "dropout": 0.5,
    "batch_norm": False,
    "optimizer": "adam",
    "lr": 1e-3,
    "weight_decay": 0.0,
    "lr_schedule": None,
    "max_epochs": 100,
    "batch_size": 64,
    "patience": 20,
    "selection_metric": "accuracy",
    "device": "auto",
    "random_state": 0,
    "progress": "auto",
    "checkpoint_dir": None,
    "resume": False,
    "standardize": "auto",
    "valid_share": 0.2,
    "crowd_folds": 5,
    "crowd_criterion": "agreement",
    "refit": True,
    "calibrate": True,
}


class BaseLearner(BaseEstimator):
    """Base class of learners from crowds.

    Parameters
    ----------
    backbone : "mlp", "cnn", nn.Module or callable, default "mlp"
        The classifier network (see :func:`~crowdlearn.learning.build_backbone`).
    hidden : tuple of int, default (128,)
        Hidden layers of the MLP (first entry: the CNN's dense layer).
    dropout : float, default 0.5
    batch_norm : bool, default False
    optimizer : {"adam", "adamw", "radam", "sgd"}, default "adam"
    lr : float, default 1e-3
    weight_decay : float, default 0.0
    lr_schedule : {None, "cosine", "step"}, default None
        Cosine annealing over ``max_epochs``, or a tenfold decay at half and three
        quarters of them.
    max_epochs : int, default 100
    batch_size : int, default 64
        Tasks per mini-batch (each with all its annotations).
    patience : int or None, default 20
        With validation, stop when the validation score has not improved for this
        many epochs (None: run every epoch).
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
    standardize : bool or "auto", default "auto"
        Standardise the inputs with the mean and standard deviation of the training
        instances (a constant feature is only centred); the fitted scaler is kept in
        ``scaler_`` and applied by ``predict_proba``. "auto" standardises flat feature
        vectors whose columns are on very different scales or far from unit scale
        (see :func:`needs_scaling`), and leaves images (inputs of more than one
        dimension) and features already on one scale (embeddings, pixels) as they are.
    valid_share : float, default 0.2
        With ``valid="crowd"`` and ``crowd_folds=1``: the share of the annotated
        training tasks held out (stratified by their majority-vote class, seeded by
        ``random_state``).
    crowd_folds : int, default 5
        With ``valid="crowd"``: ``k >= 2`` cross-fits: the annotated tasks are split
        into ``k`` folds (stratified by majority-vote class, seeded by
        ``random_state``), ``k`` classifiers each train on the other folds with the
        epoch chosen on their own fold (seeds ``random_state + 7919 * fold``), and
        ``predict_proba`` averages their probabilities, each at one temperature fitted
        on every fold's held-out tasks (see :class:`FoldAverage`). Every task is used
        for selection and for training, and the average smooths the seed and
        selection noise of one fit; ``valid_share`` and ``refit`` do not apply. 1
        holds out one share (``valid_share``) to choose the epoch, then refits (the
        default before 5 folds; ``python -m benchmarks labelme|music --protocol
        no-truth-share`` runs it). Five folds cost five fits on 80% of the tasks:
        1.6x (Music) to 2.9x (LabelMe) the wall time of one share and a refit.
    crowd_criterion : {"agreement", "likelihood"}, default "agreement"
        With ``valid="crowd"``: score epochs by the classifier's agreement with
        Dawid-Skene on the held-out tasks, or by the held-out annotations'
        likelihood under the learner's own noise model (see
        :mod:`crowdlearn.learning._validation` for why the agreement is the default).
    refit : bool, default True
        With ``valid="crowd"`` and ``crowd_folds=1``: after choosing the number of
        epochs on the held-out share, train again on every task for that many epochs
        (learners with rounds or stages, Self-Crowd, DL-CL+Self, CrowdInG and ICED,
        keep the model trained on the training share). It costs about twice the
        time; ``python -m benchmarks learning-defaults`` compares it with keeping the
        training share's model.
        Fitted attributes about the training tasks (``targets_``...) refer to the data
        given to the last training: every task after a refit, the training share
        otherwise.
    calibrate : bool or {"joint", "agreement", "likelihood"}, default True
        Temperature scaling of ``predict_proba`` on the validation data. With
        ``valid="crowd"`` the temperature maximises a truth-free likelihood of the
        held-out annotations, the classifier's probabilities at ``T`` as each task's
        class prior: ``"joint"`` (what True means) re-estimates every annotator's
        confusions together with ``T`` (see
        :func:`~crowdlearn.learning._validation.joint_temperature`); ``"agreement"``
        keeps the confusions Dawid-Skene estimated on every annotation; ``"likelihood"``
        uses the learner's own noise model (the agreement for learners without one).
        The agreement inherits Dawid-Skene's errors: on simulated crowds where
        Dawid-Skene labels 71-73% of the tasks right it holds classifiers 88-96% right
        at about Dawid-Skene's confidence (test ECE 0.20-0.30, against 0.03 with
        ``"joint"``); on LabelMe it is the better of the two (0.034 against 0.051).
        ``python -m benchmarks crowd-calibration`` measures all three. With ``valid=(X, y)``
        the temperature minimises the log-loss. ``temperature_`` holds the one used
        (1.0 without validation or with ``calibrate=False``); ``set_temperature``
        switches to another.

    Attributes
    ----------
    module_ : nn.ModuleDict
        ``classifier`` (the backbone) and, where the method has one, ``noise``.
    classes_ : ndarray
        The class ids of the training data.
    history_ : DataFrame
        One row per epoch: ``epoch``, ``train_loss``, validation ``valid_accuracy`` and
        ``valid_loss`` (when validation data were given), ``lr``, ``seconds``, and
        method-specific columns.
    best_epoch_ : int
        Epoch whose weights were kept (the last one without validation data; with
        ``refit``, the number of epochs of the refit; with ``crowd_folds``, the median
        over the folds).
    scaler_ : (ndarray, ndarray) or None
        Mean and scale the inputs were standardised with (see ``standardize``).
    temperature_ : float
        Temperature of ``predict_proba`` (see ``calibrate``).
    temperatures_ : dict or None
        With ``valid="crowd"``: every truth-free temperature, ``{"agreement": T,
        "likelihood": T, "joint": T}``, whichever ``calibrate`` chose (None otherwise).
    validation_ : str
        How the epoch was chosen: "crowd", "truth", "none", or "none (too few tasks)".
    selection_score_ : float or None
        The best validation score of the selection (higher is better: the held-out
        log-likelihood per annotation with ``valid="crowd"``, the accuracy or minus
        the log-loss with ``(X, y)``); None without validation.
    selected_epoch_ : int
        The epoch chosen by the validation (before any refit).
    selection_history_ : DataFrame or None
        With ``refit``: the history of the fit on the training share that chose the
        number of epochs.
    fold_epochs_ : list of int or None
        With ``crowd_folds >= 2``: the epoch chosen on each fold (``history_`` then
        holds every fold's epochs, with a ``fold`` column; ``selection_score_`` is the
        folds' mean; the noise model and the other fitted attributes are the last
        fold's).
    featurizer_ : featuriser or None
        Set by :func:`~crowdlearn.learning.featurizers.fit_on_items` (raw texts or
        image paths): ``predict_proba`` then featurises raw items with it, and
        ``save`` writes its fitted state into the model file.
    training_summary_ : dict
        The training data's sizes and the fit's date (UTC), saved in the model file's
        metadata (``meta_`` after ``load``: see :mod:`crowdlearn.learning._model_file`).
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

    def fit(self, data: CrowdData, valid: Any = "crowd") -> BaseLearner:
        """Train on the crowd ``data`` (its ``inputs`` or ``features`` are the instances).

        Parameters
        ----------
        data : CrowdData
        valid : "crowd", None or (X, y), default "crowd"
            How the epoch (and, in EM learners, the restart) whose weights are kept is
            chosen:

            * ``"crowd"``: without any truth, on held-out training tasks (each of
              ``crowd_folds`` folds in turn, or one share, ``valid_share``, with
              ``crowd_folds=1``), by the classifier's agreement with Dawid-Skene
              there, or by the held-out annotations' likelihood under the learner's
              noise model (``crowd_criterion``; see
              :mod:`crowdlearn.learning._validation`); with one share ``refit`` then
              trains again on every task; ``calibrate`` fits the temperature;
            * ``None``: no selection, the last epoch is kept;
            * ``(X, y)``: validation instances and their class codes (as returned by
              :func:`crowdlearn.datasets.load`). Never pass the test split here.
        """
        if not isinstance(data, CrowdData):
            raise TypeError(f"fit expects a CrowdData, got {type(data).__name__}")
        check_params(type(self).__name__, self.get_params(deep=False))
        if self.needs_workers and data.is_anonymous:
            raise CrowdDataError(
                f"{type(self).__name__} models each worker and needs worker ids; the data "
                "are anonymous (use TwoStage or CrowdMixture(setting='global'))"
            )
        if _INSIDE_FIT.get():
            # a learner trained inside another one's fit (a round, a pre-training, a
            # restart): the outer fit has standardised the data and handles validation
            inner = None if isinstance(valid, str) and valid == "crowd" else valid
            self._fit(data, as_validator(inner, data.n_classes))
            return self
        self.featurizer_ = None  # fit_on_items sets it after the fit
        self.training_summary_ = training_summary(data)
        token = _INSIDE_FIT.set(True)
        try:
            self._fit_outer(data, valid)
        finally:
            _INSIDE_FIT.reset(token)
        return self

    def _fit(self, data: CrowdData, valid: Any) -> None:
        """Train on ``data`` with a validator (or None); methods with their own loop
        (rounds, stages, restarts) override this."""
        Trainer(self).fit(data, training_inputs(data), valid)

    def _fit_outer(self, data: CrowdData, valid: Any) -> None:
        if self.refit not in (True, False):
            raise ValueError(f"refit must be True or False, got {self.refit!r}")
        if self.calibrate not in CALIBRATIONS:
            raise ValueError(
                f"calibrate must be one of {', '.join(map(repr, CALIBRATIONS))}, "
                f"got {self.calibrate!r}"
            )
        data, scaler = standardised(data, self.standardize)
        self.scaler_, self.temperature_ = None, 1.0  # during training: raw outputs
        self.selection_history_, self.temperatures_, self.fold_epochs_ = None, None, None
        temperature = 1.0
        folds = _check_folds(self.crowd_folds)
        if not 0 < self.valid_share < 1:  # refused even where the folds make it unused
            raise ValueError(f"valid_share must be in (0, 1), got {self.valid_share}")
        if isinstance(valid, str):
            if valid != "crowd":
                raise CrowdDataError(
                    f"valid must be 'crowd', None or an (X, y) pair, got {valid!r}"
                )
            if folds > 1:
                self._cross_fit(data, folds)
                self.scaler_ = scaler
                return
            split = crowd_split(
                data, self.valid_share, self.random_state, table=self._held_out_table
            )
            if split is None:
                warn_too_small(data, f"valid_share={self.valid_share:g}")
                self._fit(data, None)
                self.validation_ = "none (too few tasks)"
                self.selection_score_, self.selected_epoch_ = None, self.best_epoch_
            else:
                train, validator = split
                with self._checkpoints("selection"):
                    self._fit(train, validator)
                self.validation_ = "crowd"
                self.selection_score_ = self.valid_score_
                self.selected_epoch_ = self.best_epoch_
                self.temperatures_ = {
                    criterion: validator.fit_temperature(self, criterion)
                    for criterion in ("agreement", "likelihood")
                }
                self.temperatures_["joint"] = self._joint_temperature(
                    [validator], [validator.held_logits(self)]
                )
                if self.calibrate:
                    temperature = self.temperatures_[calibration_criterion(self.calibrate)]
                if self.refit and self._refit_supported:
                    with self._checkpoints("refit"):
                        self._refit(data)
        else:
            validator = as_validator(valid, data.n_classes)
            if isinstance(validator, TruthValidation) and scaler is not None:
                validator = TruthValidation(
                    ScaledInputs(validator.inputs, *scaler), validator.labels
                )
            self._fit(data, validator)
            if validator is None:
                self.validation_ = "none"
            else:  # a validator object passed on (benchmarks) keeps its kind
                crowd = isinstance(validator, CrowdValidation)
                self.validation_ = "crowd" if crowd else "truth"
            self.selection_score_ = getattr(self, "valid_score_", None)
            self.selected_epoch_ = self.best_epoch_
            if self.calibrate and isinstance(validator, TruthValidation):
                temperature = truth_temperature(self, validator)
        self.scaler_, self.temperature_ = scaler, temperature

    def _cross_fit(self, data: CrowdData, n_folds: int) -> None:
        """``crowd_folds >= 2``: one classifier per fold, averaged (see the class doc)."""
        splits = crowd_folds(data, n_folds, self.random_state, table=self._held_out_table)
        if splits is None:
            warn_too_small(data, f"crowd_folds={n_folds}")
            self._fit(data, None)
            self.validation_ = "none (too few tasks)"
            self.selection_score_, self.selected_epoch_ = None, self.best_epoch_
            self.temperature_ = 1.0
            return
        classifiers, epochs, scores, histories = [], [], [], []
        losses: dict[str, list[Any]] = {"agreement": [], "likelihood": []}
        validators, held_logits = [], []
        seed = self.random_state
        try:
            for fold, (train, validator) in enumerate(splits):
                self.random_state = seed + FOLD_SEED_STEP * fold
                with self._checkpoints(f"fold-{fold}"):
                    self._fit(train, validator)
                classifiers.append(self.module_["classifier"])
                epochs.append(int(self.best_epoch_))
                scores.append(getattr(self, "valid_score_", None))
                histories.append(self.history_.assign(fold=fold))
                for criterion, functions in losses.items():
                    functions.append(validator.temperature_loss(self, criterion))
                validators.append(validator)
                held_logits.append(validator.held_logits(self))
        finally:
            self.random_state = seed
        # the temperatures first: the last fold's likelihood reads its own classifier
        self.temperatures_ = {name: pooled_temperature(f) for name, f in losses.items()}
        self.temperatures_["joint"] = self._joint_temperature(validators, held_logits)
        self.temperature_ = (
            self.temperatures_[calibration_criterion(self.calibrate)] if self.calibrate else 1.0
        )
        device = next(self.module_.parameters()).device  # the buffer joins the members
        self.module_["classifier"] = FoldAverage(classifiers, self.temperature_).to(device)
        self.fold_epochs_ = epochs
        self.best_epoch_ = self.selected_epoch_ = int(np.median(epochs))
        known = [float(score) for score in scores if score is not None]
        self.valid_score_ = self.selection_score_ = float(np.mean(known)) if known else None
        history = pd.concat(histories, ignore_index=True)
        self.history_ = history[["fold", *(c for c in history.columns if c != "fold")]]
        self.validation_ = "crowd"

    @contextlib.contextmanager
    def _checkpoints(self, part: str) -> Iterator[None]:
        """With crowd validation, the fit on the training share and the refit keep
        their checkpoints in sub-folders ``selection`` and ``refit`` of
        ``checkpoint_dir`` (so ``resume`` continues either)."""
        saved = self.checkpoint_dir
        if saved is not None:
            self.checkpoint_dir = Path(saved) / part
        try:
            yield
        finally:
            self.checkpoint_dir = saved

    #: Whether ``refit`` can retrain this learner for its selected number of epochs
    #: (False for learners with rounds or stages, whose epochs do not add up).
    _refit_supported: ClassVar[bool] = True
    #: Whether ``_crowd_log_likelihood`` depends on the ``logits`` it is given; when
    #: False (Doctor Net: its annotator heads read the trunk, not the vote), a
    #: temperature cannot change it and ``calibrate="likelihood"`` uses the agreement.
    _likelihood_reads_logits: ClassVar[bool] = True
    #: ``table(data, tasks)``: the held-out tasks' per-class log-likelihood table that
    #: crowd validation's agreement scores the classifier against (Dawid-Skene's
    #: confusions of the crowd; the truth for :class:`Supervised`).
    _held_out_table: ClassVar[Any] = staticmethod(ds_table)

    def _joint_temperature(self, validators: list[Any], logits: list[np.ndarray]) -> float:
        """``calibrate="joint"``'s temperature from the held-out shares' out-of-fold
        logits; the agreement's (already in ``temperatures_``) where the held-out table
        is not the crowd's (the truth-scored :class:`Supervised`)."""
        if self._held_out_table is not ds_table:
            return self.temperatures_["agreement"]
        return joint_temperature(validators, logits)

    def _refit(self, data: CrowdData) -> None:
        """Train again on every task for the selected number of epochs."""
        selection = self.history_
        changes: dict[str, Any] = {"max_epochs": max(int(self.best_epoch_), 1), "patience": None}
        chosen = getattr(self, "chosen_random_state_", None)
        if chosen is not None:  # EM learners: the selected restart's seed, once
            changes.update(random_state=chosen, n_restarts=1)
        saved = {name: getattr(self, name) for name in changes}
        try:
            for name, value in changes.items():
                setattr(self, name, value)
            self._fit(data, None)
        finally:
            for name, value in saved.items():
                setattr(self, name, value)
        self.selection_history_ = selection

    def set_temperature(self, temperature: float) -> BaseLearner:
        """Use ``temperature`` in ``predict_proba`` from now on, the weights unchanged
        (for instance another of ``temperatures_``). With ``crowd_folds`` the fold
        classifiers are each scaled by it before their probabilities are averaged, as
        in ``fit``. Returns the learner."""
        self._check_fitted()
        temperature = float(temperature)
        if not np.isfinite(temperature) or temperature <= 0:
            raise ValueError(f"temperature must be a positive number, got {temperature!r}")
        classifier = self.module_["classifier"]
        if isinstance(classifier, FoldAverage):
            classifier.temperature.fill_(temperature)
        self.temperature_ = temperature
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of new instances, shape (n, n_classes)."""
        self._check_fitted()
        inputs = self._user_inputs(X)
        temperature = float(getattr(self, "temperature_", 1.0))
        module = self.module_["classifier"]
        device = next(module.parameters()).device
        module.eval()
        chunks = []
        with torch.no_grad():
            for start in range(0, len(inputs), 4 * self.batch_size):
                rows = np.arange(start, min(start + 4 * self.batch_size, len(inputs)))
                logits = module(torch.as_tensor(inputs.take(rows), device=device))
                chunks.append(torch.softmax(logits / temperature, dim=1).cpu().numpy())
        if not chunks:
            return np.zeros((0, len(self.classes_)))
        return np.concatenate(chunks).astype(np.float64)

    def _user_inputs(self, X: Any) -> TaskInputs:
        """The user's instances as the classifier sees them (standardised with
        ``scaler_`` when the fit standardised its inputs)."""
        inputs = as_inputs(self._featurised(X))
        scaler = getattr(self, "scaler_", None)
        return inputs if scaler is None else ScaledInputs(inputs, *scaler)

    def _featurised(self, X: Any) -> Any:
        """Raw items (texts, image paths) through the learner's ``featurizer_`` (set
        by :func:`~crowdlearn.learning.featurizers.fit_on_items`); other ``X`` as is."""
        featurizer = getattr(self, "featurizer_", None)
        if featurizer is None:
            return X
        from crowdlearn.learning.featurizers import is_raw

        return featurizer.transform(X) if is_raw(X) else X

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class code of new instances."""
        return self.predict_proba(X).argmax(axis=1)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the fitted learner (parameters, weights, learned state) to one file.

        The file holds data only (tensors in the safetensors layout, everything else
        as JSON: see :mod:`crowdlearn.learning._model_file`), so loading it never runs
        code from it. A learner with a custom backbone (a network or a callable)
        cannot be saved: :class:`ModelFileError`, and nothing is written."""
        self._check_fitted()
        payload = self._payload()
        if getattr(self, "featurizer_", None) is not None:
            from crowdlearn.learning.featurizers import featurizer_state

            payload["featurizer"] = featurizer_state(self.featurizer_)
        payload["meta"] = model_meta(self)
        write_model_file(without_timings(payload), path)

    def _payload(self) -> dict[str, Any]:
        """What :meth:`save` writes: plain objects and CPU tensors."""
        return {
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "params": self.get_params(deep=False),
            "module": {k: v.detach().cpu() for k, v in self.module_.state_dict().items()},
            "shape": self._shape_,
            "classes": self.classes_,
            "history": self.history_,
            "best_epoch": self.best_epoch_,
            "method_state": self._method_state(),
            "scaler": getattr(self, "scaler_", None),
            "temperature": getattr(self, "temperature_", 1.0),
            "temperatures": getattr(self, "temperatures_", None),
            "validation": getattr(self, "validation_", "none"),
            "fold_epochs": getattr(self, "fold_epochs_", None),
        }

    @classmethod
    def load(cls, path: str | os.PathLike[str], device: str = "cpu") -> BaseLearner:
        """A learner saved by :meth:`save`; ``meta_`` holds the file's metadata
        (:mod:`crowdlearn.learning._model_file`). Reading the file runs no code from
        it: the learner's class is looked up by name among the registered learners
        (:func:`~crowdlearn.learning.register_learner`), never imported from the file."""
        payload = read_model_file(path, device)
        learner_class = learner_class_named(payload["class"], path)
        if not issubclass(learner_class, cls):
            raise TypeError(f"{path} holds a {learner_class.__name__}, not a {cls.__name__}")
        try:
            learner = learner_class._from_payload(payload, device)
            if payload.get("featurizer") is not None:
                from crowdlearn.learning.featurizers import featurizer_from_state

                learner.featurizer_ = featurizer_from_state(payload["featurizer"])
        except (
            KeyError,
            TypeError,
            ValueError,
            RuntimeError,
            AttributeError,
            IndexError,
        ) as error:
            if isinstance(error, ModelFileError):
                raise
            reason = " ".join(str(error).split())[:160] or type(error).__name__
            raise ModelFileError(
                f"{path}: a damaged crowdlearn model file (its content does not fit a "
                f"{learner_class.__name__}: {reason})"
            ) from None
        learner.meta_ = payload["meta"]
        learner.training_summary_ = learner.meta_.get("training")
        return learner

    @classmethod
    def _from_payload(cls, payload: dict[str, Any], device: str) -> BaseLearner:
        """The learner :meth:`_payload` described, its weights on ``device``."""
        check_payload(payload)
        learner = cls(**payload["params"])
        check_params(cls.__name__, learner.get_params(deep=False))
        learner._shape_ = payload["shape"]
        learner.classes_ = payload["classes"]
        learner.module_ = learner._build_module(*payload["shape"])
        learner.fold_epochs_ = payload.get("fold_epochs")
        if learner.fold_epochs_:
            # the built classifier is the last member, as after the fit: the method's
            # noise model may hold it (MaDL's feature tap)
            others = [
                learner._build_module(*payload["shape"])["classifier"]
                for _ in learner.fold_epochs_[1:]
            ]
            learner.module_["classifier"] = FoldAverage([*others, learner.module_["classifier"]])
        learner.module_ = learner.module_.to(device)
        learner.module_.load_state_dict(payload["module"])
        learner.history_ = payload["history"]
        learner.best_epoch_ = payload["best_epoch"]
        learner._load_method_state(payload["method_state"])
        learner.scaler_ = payload.get("scaler")
        learner.temperature_ = payload.get("temperature", 1.0)
        learner.temperatures_ = payload.get("temperatures")
        learner.validation_ = payload.get("validation", "none")
        return learner

    # ------------------------------------------------------------------ method hooks

    def _noise_model(
        self, n_workers: int, n_classes: int, item_shape: tuple[int, ...]
    ) -> nn.Module | None:
        return None

    def _loss(self, batch: Any, logits: torch.Tensor, noise: nn.Module | None) -> torch.Tensor:
        raise NotImplementedError

    def _crowd_log_likelihood(
        self, batch: Any, logits: torch.Tensor, noise: nn.Module | None
    ) -> torch.Tensor | None:
        """Per task of the batch, ``log p(its annotations | x)`` under the method's noise
        model, shape (B,); None when the method has none (crowd validation then scores
        the agreement with Dawid-Skene). Called in evaluation mode on held-out tasks."""
        return None

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

    def _last_classifier(self) -> nn.Module:
        """The classifier the method's own fitted attributes refer to:
        ``module_["classifier"]``, or with ``crowd_folds``, the last fold's."""
        classifier = self.module_["classifier"]
        return classifier.members[-1] if isinstance(classifier, FoldAverage) else classifier

    def _check_fitted(self) -> None:
        if not hasattr(self, "module_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")


#: Seed offset between the folds of ``crowd_folds`` (a prime, as in ``Ensemble``).
FOLD_SEED_STEP = 7919


class FoldAverage(nn.Module):
    """The classifiers of ``crowd_folds`` cross-fitting as one classifier: the mean of
    their probabilities, each at the learner's temperature ``T``.

    Its output is ``T * log(mean_f softmax(z_f / T))``, so that ``predict_proba``'s
    ``softmax(output / T)`` is exactly the mean of the calibrated members'
    probabilities (``T`` is a buffer, saved with the weights). The arithmetic mean, not
    the geometric one: one member that has not yet learned a class (the Crowd Layer
    sometimes ends its selected epoch with a class it never predicts) then lowers that
    class's probability by a share, instead of vetoing it.
    """

    def __init__(self, members: list[nn.Module], temperature: float = 1.0) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        self.register_buffer("temperature", torch.tensor(float(temperature)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.temperature
        logs = torch.stack([torch.log_softmax(m(x) / t, dim=1) for m in self.members])
        return t * (torch.logsumexp(logs, dim=0) - float(np.log(len(self.members))))


def _check_folds(folds: Any) -> int:
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 1:
        raise ValueError(f"crowd_folds must be an integer >= 1, got {folds!r}")
    return int(folds)


def _valid_pair(valid: Any, n_classes: int) -> tuple[TaskInputs, np.ndarray] | None:
    """``(inputs, labels)`` of an ``(X, y)`` pair or a truth validator (checked)."""
    validator = as_validator(valid, n_classes)
    if validator is None:
        return None
    if not isinstance(validator, TruthValidation):
        raise CrowdDataError("this method needs valid=(X, y) with true labels")
    return validator.inputs, validator.labels


class ScaledInputs:
    """Inputs standardised on the fly: ``(x - mean) / scale`` (float32)."""

    def __init__(self, inputs: TaskInputs, mean: np.ndarray, scale: np.ndarray) -> None:
        self.inputs = inputs
        self.mean = np.asarray(mean, dtype=np.float32)
        self.scale = np.asarray(scale, dtype=np.float32)

    def __len__(self) -> int:
        return len(self.inputs)

    @property
    def item_shape(self) -> tuple[int, ...]:
        return self.inputs.item_shape

    def take(self, indices: np.ndarray) -> np.ndarray:
        return ((self.inputs.take(indices) - self.mean) / self.scale).astype(np.float32)

    def subset(self, indices: np.ndarray) -> ScaledInputs:
        return ScaledInputs(self.inputs.subset(indices), self.mean, self.scale)


def standardised(
    data: CrowdData, standardize: Any
) -> tuple[CrowdData, tuple[np.ndarray, np.ndarray] | None]:
    """``data`` with standardised inputs and the ``(mean, scale)`` used (None when not
    standardised; see ``standardize`` in :class:`BaseLearner`)."""
    if standardize not in (True, False, "auto"):
        raise ValueError(f"standardize must be True, False or 'auto', got {standardize!r}")
    if standardize is False:
        return data, None
    inputs = training_inputs(data)
    if len(inputs.item_shape) != 1:
        if standardize is True:
            raise CrowdDataError(
                f"standardize=True needs flat feature vectors; the inputs have shape "
                f"{inputs.item_shape} (use standardize='auto' or False for images)"
            )
        return data, None
    values = np.asarray(inputs.take(np.arange(len(inputs))), dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise CrowdDataError("the features contain NaN or infinite values")
    mean = values.mean(axis=0) if len(values) else np.zeros(inputs.item_shape)
    scale = values.std(axis=0) if len(values) else np.ones(inputs.item_shape)
    if standardize == "auto" and not needs_scaling(scale):
        return data, None
    scale = np.where(scale > 0, scale, 1.0)
    scaler = (mean.astype(np.float32), scale.astype(np.float32))
    if data.inputs is None:
        scaled = ((values - mean) / scale).astype(np.float32)
        return data._replace(features=scaled), scaler
    return data._replace(inputs=ScaledInputs(data.inputs, *scaler)), scaler


#: ``standardize="auto"`` standardises when the columns' standard deviations spread over
#: more than this factor (90th over 10th percentile of the non-constant columns)...
SCALE_SPREAD = 100.0
#: ...or when their median lies outside this range (features far from unit scale).
SCALE_RANGE = (1e-2, 1e2)


def needs_scaling(scale: np.ndarray) -> bool:
    """Whether ``standardize="auto"`` standardises features whose columns have these
    standard deviations: when the columns are on very different scales (Music's
    Marsyas features: a spread of about 430) or far from unit scale. Features already
    on one scale, such as CNN embeddings (LabelMe's VGG16 features: a spread of about
    7) or pixels, are left as they are: standardising LabelMe's features lowered every
    learner's test accuracy in the ``labelme`` benchmark run while this rule was
    chosen (the published section runs with the rule)."""
    varying = scale[scale > 0]
    if len(varying) == 0:
        return False
    low, middle, high = np.percentile(varying, [10, 50, 90])
    return bool(high > SCALE_SPREAD * low or not SCALE_RANGE[0] <= middle <= SCALE_RANGE[1])


#: Accepted values of ``calibrate``.
CALIBRATIONS = (True, False, "agreement", "likelihood", "joint")
#: What ``calibrate=True`` means with ``valid="crowd"``: the joint fit of the temperature
#: and the confusions (``python -m benchmarks crowd-calibration``: mean test ECE over LabelMe,
#: Music and two simulated crowds 0.046, against 0.152 for the Dawid-Skene agreement).
DEFAULT_CALIBRATION = "joint"


def calibration_criterion(calibrate: Any) -> str:
    """The truth-free likelihood a ``calibrate`` value fits the temperature on."""
    return DEFAULT_CALIBRATION if calibrate is True else str(calibrate)


def truth_temperature(learner: BaseLearner, valid: TruthValidation) -> float:
    """The temperature that minimises the log-loss on ``valid`` (classic temperature
    scaling, Guo et al. 2017)."""
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    from crowdlearn.learning._validation import TEMPERATURE_RANGE

    module = learner.module_["classifier"]
    device = next(module.parameters()).device
    module.eval()
    with torch.no_grad():
        logits = np.concatenate(
            [
                module(torch.as_tensor(valid.inputs.take(rows), device=device))
                .double()
                .cpu()
                .numpy()
                for rows in np.array_split(
                    np.arange(len(valid.labels)), max(1, -(-len(valid.labels) // 1024))
                )
            ]
        )
    picked = np.arange(len(valid.labels)), valid.labels

    def loss(log_t: float) -> float:
        return -float(log_softmax(logits / np.exp(log_t), axis=1)[picked].sum())

    low, high = np.log(TEMPERATURE_RANGE)
    return float(np.exp(minimize_scalar(loss, bounds=(low, high), method="bounded").x))


def _same_value(value: Any, default: Any) -> bool:
    try:
        return bool(value == default) and type(value) is type(default)
    except (TypeError, ValueError):
        return value is default
