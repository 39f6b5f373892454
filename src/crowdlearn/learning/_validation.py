"""Model selection with or without ground truth: what ``fit(data, valid=...)`` scores.

A learner's ``valid`` argument becomes one of two validators that the trainer calls
after every epoch:

* :class:`TruthValidation` (``valid=(X, y)``): accuracy and log-loss of the classifier on
  labelled instances the user holds out;
* :class:`CrowdValidation` (``valid="crowd"``, the default): no truth at all. A seeded
  share of the training tasks (stratified by their majority-vote class) is held out
  with all its annotations; the learner trains on the rest, and each epoch gets two
  scores, per held-out annotation:

  - ``valid_ds_ll``, the **agreement with Dawid-Skene**: the log-likelihood of the
    held-out annotations when the classifier is the class prior and the annotators
    have the confusion matrices that Dawid-Skene estimates from the crowd
    (feature-blind, every annotation, no truth), ``log sum_k f_k(x) prod_a
    pi_a[k, y_a]``: the classifier's agreement with the Dawid-Skene posterior of the
    task divided by the class prior. It depends on the classifier alone, so it is
    comparable across learners and epochs. **The default criterion**
    (``crowd_criterion="agreement"``).
  - ``valid_crowd_ll``, the held-out annotations' log-likelihood under the **learner's
    own noise model** (``_crowd_log_likelihood``: the Crowd Layer's annotator layers,
    CoNAL's confusions, CMM's groups, Doctor Net's heads...; the agreement for learners
    without one). ``crowd_criterion="likelihood"`` selects on it. It is not the default
    because it also rewards the noise model's own fit: on LabelMe the Crowd Layer's
    held-out likelihood kept rising for 60 epochs while its test accuracy peaked near
    epoch 10 and the agreement near epoch 15 (``python -m benchmarks crowd-selection``
    measures this on every learner).

The same Dawid-Skene likelihood fits the temperature of the classifier (temperature
scaling, ``calibrate=True``): the temperature that maximises the held-out tasks'
likelihood, so that ``predict_proba`` is calibrated without a single true label.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from crowdlearn.data import CrowdData, CrowdDataError, TaskInputs
from crowdlearn.data.inputs import as_inputs
from crowdlearn.learning._shared import predict_in_batches, training_inputs

#: Default share of the annotated training tasks held out by ``valid="crowd"``.
VALID_SHARE = 0.2
#: Fewest held-out tasks for crowd validation; with fewer the learner keeps its last
#: epoch (and says so in a warning).
MIN_HELD_TASKS = 5
#: Temperatures searched by :meth:`CrowdValidation.fit_temperature` (log-spaced).
TEMPERATURE_RANGE = (0.05, 20.0)
#: Coordinate-ascent rounds of :func:`joint_temperature` at most.
JOINT_MAX_ITER = 50


class CrowdValidationWarning(UserWarning):
    """The data are too small for crowd validation: the last epoch is kept."""


def latent_class_log_likelihood(
    log_proba: torch.Tensor,
    position: torch.Tensor,
    worker: torch.Tensor | None,
    label: torch.Tensor,
    log_confusions: torch.Tensor,
) -> torch.Tensor:
    """Per task, ``log sum_k p_k(x) prod_a pi_{r_a}[k, y_a]`` (shape (B,)).

    Parameters
    ----------
    log_proba : Tensor (B, K)
        Log class probabilities of the batch's tasks.
    position, worker, label : Tensor (A,)
        The batch's annotations (as in :class:`~crowdlearn.learning._batches.TaskBatch`);
        ``worker`` None means one pooled confusion (``log_confusions`` of shape (1, K, K)).
    log_confusions : Tensor (W, K, K)
        ``[r, k, l]``: log-probability that annotator ``r`` answers ``l`` on class ``k``.
    """
    rows = torch.zeros_like(label) if worker is None else worker
    per_annotation = log_confusions[rows, :, label]  # (A, K)
    summed = torch.zeros_like(log_proba).index_add_(0, position, per_annotation)
    return torch.logsumexp(log_proba + summed, dim=1)


def independent_log_likelihood(
    log_annotation: torch.Tensor, position: torch.Tensor, label: torch.Tensor, n_tasks: int
) -> torch.Tensor:
    """Per task, ``sum_a log p(y_a | x, r_a)`` from per-annotation log-probabilities
    ``log_annotation`` (A, K) (annotations independent given the instance)."""
    picked = log_annotation.gather(1, label[:, None]).squeeze(1)
    total = torch.zeros(n_tasks, dtype=picked.dtype, device=picked.device)
    return total.index_add_(0, position, picked)


# ---------------------------------------------------------------------- validators


@dataclass
class TruthValidation:
    """Labelled validation instances ``(X, y)``: accuracy and log-loss."""

    inputs: TaskInputs
    labels: np.ndarray
    #: History columns this validator writes.
    columns: tuple[str, ...] = ("valid_accuracy", "valid_loss")

    def evaluate(self, learner: Any, module: nn.ModuleDict, device: torch.device) -> dict:

        rows = np.arange(len(self.labels))
        probas = predict_in_batches(
            module["classifier"], self.inputs, rows, 4 * learner.batch_size, device
        )
        picked = np.clip(probas[rows, self.labels], 1e-12, None)
        return {
            "valid_accuracy": float(np.mean(probas.argmax(axis=1) == self.labels)),
            "valid_loss": float(-np.mean(np.log(picked))),
        }

    def score(self, row: dict[str, Any], learner: Any) -> float:
        """Higher is better: the accuracy, or minus the loss (``selection_metric``)."""
        if learner.selection_metric == "accuracy":
            return row["valid_accuracy"]
        return -row["valid_loss"]


@dataclass
class CrowdValidation:
    """Held-out tasks of the crowd with their annotations (no truth).

    Attributes
    ----------
    held : CrowdData
        The held-out tasks and their annotations (worker and class codes as in the
        training data).
    held_tasks : ndarray
        Their task codes in the data given to ``fit``.
    ds_log_likelihood : ndarray (n_held, K)
        ``sum_a log pi_a[k, y_a]`` under Dawid-Skene's confusion matrices.
    """

    held: CrowdData
    held_tasks: np.ndarray
    ds_log_likelihood: np.ndarray
    columns: tuple[str, ...] = ("valid_crowd_ll", "valid_ds_ll")
    _inputs: TaskInputs | None = field(default=None, repr=False)

    @property
    def inputs(self) -> TaskInputs:
        if self._inputs is None:
            self._inputs = training_inputs(self.held)
        return self._inputs

    def evaluate(self, learner: Any, module: nn.ModuleDict, device: torch.device) -> dict:
        """``valid_crowd_ll``: held-out log-likelihood per annotation under the learner's
        noise model (its Dawid-Skene agreement when it has none); ``valid_ds_ll``: the
        Dawid-Skene agreement, comparable across learners."""
        from crowdlearn.learning._batches import TaskBatcher

        batcher = TaskBatcher(
            self.held,
            self.inputs,
            np.arange(self.held.n_tasks),
            4 * learner.batch_size,
            device,
        )
        classifier = module["classifier"]
        noise = module["noise"] if "noise" in module else None
        was_training = module.training
        module.eval()
        own, agreement = 0.0, 0.0
        table = torch.as_tensor(self.ds_log_likelihood, device=device)
        with torch.no_grad():
            for start in range(0, self.held.n_tasks, batcher.batch_size):
                tasks = np.arange(start, min(start + batcher.batch_size, self.held.n_tasks))
                batch = batcher.batch(tasks)
                logits = classifier(batch.x)
                log_proba = torch.log_softmax(logits.double(), dim=1)
                ds = torch.logsumexp(log_proba + table[tasks], dim=1).sum()
                agreement += float(ds)
                mine = learner._crowd_log_likelihood(batch, logits, noise)
                own += float(ds) if mine is None else float(mine.double().sum())
        module.train(was_training)
        n = max(self.held.n_annotations, 1)
        return {"valid_crowd_ll": own / n, "valid_ds_ll": agreement / n}

    def score(self, row: dict[str, Any], learner: Any) -> float:
        """Higher is better: the Dawid-Skene agreement (``crowd_criterion="agreement"``)
        or the learner's own held-out likelihood (``"likelihood"``), per annotation."""
        if learner.crowd_criterion == "likelihood":
            return row["valid_crowd_ll"]
        return row["valid_ds_ll"]

    def held_logits(self, learner: Any) -> np.ndarray:
        """Logits of the fitted learner's classifier on the held-out tasks."""
        module = learner.module_["classifier"]
        device = next(module.parameters()).device
        was_training = module.training
        module.eval()
        chunks = []
        with torch.no_grad():
            for start in range(0, self.held.n_tasks, 4 * learner.batch_size):
                rows = np.arange(start, min(start + 4 * learner.batch_size, self.held.n_tasks))
                x = torch.as_tensor(self.inputs.take(rows), device=device)
                chunks.append(module(x).double().cpu().numpy())
        module.train(was_training)
        return np.concatenate(chunks)

    def fit_temperature(self, learner: Any, criterion: str = "agreement") -> float:
        """The temperature ``T`` of the learner's logits that maximises a truth-free
        likelihood of the held-out annotations.

        ``criterion="agreement"``: the Dawid-Skene likelihood ``sum_i log sum_k
        softmax(z_i / T)_k L_ik``, where ``L_ik`` uses the confusion matrices Dawid-Skene
        estimated on every annotation. ``"likelihood"``: the learner's own noise model
        (``_crowd_log_likelihood`` of the logits divided by ``T``); learners without
        one (two-stage networks, DL-EM), or whose own likelihood does not read the
        logits (Doctor Net), use the agreement.
        """
        return pooled_temperature([self.temperature_loss(learner, criterion)])

    def temperature_loss(self, learner: Any, criterion: str = "agreement") -> Any:
        """Minus the held-out likelihood of :meth:`fit_temperature` as a function of
        ``log T``, for the learner's current classifier (its logits are computed now,
        so the function keeps scoring this classifier after the learner is refitted)."""
        if criterion not in ("agreement", "likelihood"):
            raise ValueError(f"criterion must be 'agreement' or 'likelihood', got {criterion!r}")
        loss = self._own_loss(learner) if criterion == "likelihood" else None
        return self._agreement_loss(learner) if loss is None else loss

    def _agreement_loss(self, learner: Any) -> Any:
        from scipy.special import log_softmax, logsumexp

        logits = self.held_logits(learner)

        def loss(log_t: float) -> float:
            log_p = log_softmax(logits / np.exp(log_t), axis=1)
            return -float(logsumexp(log_p + self.ds_log_likelihood, axis=1).sum())

        return loss

    def _own_loss(self, learner: Any) -> Any:
        """Minus the held-out annotations' likelihood under the learner's noise model
        as a function of ``log T``, or None when the learner has no noise model."""
        from crowdlearn.learning._batches import TaskBatcher

        if not learner._likelihood_reads_logits:
            return None
        module = learner.module_
        noise = module["noise"] if "noise" in module else None
        device = next(module["classifier"].parameters()).device
        batcher = TaskBatcher(
            self.held, self.inputs, np.arange(self.held.n_tasks), 4 * learner.batch_size, device
        )
        batches = [
            batcher.batch(np.arange(start, min(start + batcher.batch_size, self.held.n_tasks)))
            for start in range(0, self.held.n_tasks, batcher.batch_size)
        ]

        def loss(log_t: float | None) -> float | None:
            # each batch's likelihood right after its own forward pass: a learner may
            # read state that pass leaves on its modules
            total = 0.0
            was_training = module.training
            module.eval()
            try:
                with torch.no_grad():
                    for batch in batches:
                        logits = module["classifier"](batch.x)
                        if log_t is not None:
                            logits = logits / float(np.exp(log_t))
                        mine = learner._crowd_log_likelihood(batch, logits, noise)
                        if mine is None:
                            return None
                        total += float(mine.sum())
            finally:
                module.train(was_training)
            return -total

        return None if loss(None) is None else loss


def _pooled(data: CrowdData) -> CrowdData:
    """``data`` with one pooled worker when its annotations are anonymous."""
    if not data.is_anonymous:
        return data
    return data._replace(
        worker=np.zeros(data.n_annotations, dtype=data.task.dtype), worker_ids=np.array([0])
    )


def joint_temperature(
    validators: list[CrowdValidation],
    logits: list[np.ndarray],
    smoothing: float = 1.0,
    max_iter: int = JOINT_MAX_ITER,
    tol: float = 1e-4,
) -> float:
    """The temperature of ``calibrate="joint"``: maximise the held-out annotations'
    latent-class likelihood ``sum_i log sum_k softmax(z_i / T)_k prod_a pi_a[k, y_ia]``
    jointly over ``T`` and every annotator's confusion matrix ``pi_a``.

    ``logits[f]`` are the out-of-fold logits of ``validators[f]``'s held-out tasks (one
    entry with one held-out share; every fold's with cross-fitting, which then covers
    every annotated task). Coordinate ascent from the classifier's own view: the
    confusions are first counted against ``softmax(z)`` (``smoothing`` pseudo-counts
    spread over each row), then ``T`` (bounded, :data:`TEMPERATURE_RANGE`) and the
    confusions (the Dawid-Skene M-step on the posteriors) are updated in turn until
    ``log T`` moves by less than ``tol``.

    Unlike the agreement, whose confusions are Dawid-Skene's and so as wrong as its
    labels, the confusions here are re-estimated with the classifier as the prior: on a
    crowd where Dawid-Skene labels 71% of the tasks right and the classifier 96%, the
    agreement's temperature keeps the classifier about as unsure as Dawid-Skene is.
    """
    from scipy.optimize import minimize_scalar
    from scipy.sparse import vstack
    from scipy.special import log_softmax, logsumexp

    from crowdlearn.aggregation._design import (
        confusion_counts,
        log_confusion_table,
        worker_label_design,
    )

    if not validators:
        raise ValueError("joint_temperature needs at least one held-out share")
    # held-out shares keep the training data's worker codes, so the columns line up
    design = vstack([worker_label_design(_pooled(v.held), np.float64) for v in validators])
    design = design.tocsr()
    z = np.concatenate([np.asarray(x, dtype=np.float64) for x in logits])
    if z.shape[0] != design.shape[0]:
        raise ValueError("one row of logits per held-out task is needed")
    k = z.shape[1]
    n_workers = design.shape[1] // k
    low, high = np.log(TEMPERATURE_RANGE)

    def confusion_table(posteriors: np.ndarray) -> np.ndarray:
        counts = confusion_counts(design, posteriors, n_workers) + smoothing / k
        return design @ log_confusion_table(counts / counts.sum(axis=2, keepdims=True))

    table = confusion_table(np.exp(log_softmax(z, axis=1)))
    log_t = 0.0
    for _ in range(max_iter):

        def loss(value: float, table: np.ndarray = table) -> float:
            return -float(logsumexp(log_softmax(z / np.exp(value), axis=1) + table, axis=1).sum())

        new = float(minimize_scalar(loss, bounds=(low, high), method="bounded").x)
        joint = log_softmax(z / np.exp(new), axis=1) + table
        posteriors = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        table = confusion_table(posteriors)
        moved, log_t = abs(new - log_t), new
        if moved < tol:
            break
    return float(np.exp(log_t))


def pooled_temperature(losses: list[Any]) -> float:
    """The temperature minimising the sum of :meth:`CrowdValidation.temperature_loss`
    functions (one per held-out share: cross-fitting pools its folds)."""
    from scipy.optimize import minimize_scalar

    low, high = np.log(TEMPERATURE_RANGE)
    result = minimize_scalar(
        lambda log_t: sum(loss(log_t) for loss in losses), bounds=(low, high), method="bounded"
    )
    return float(np.exp(result.x))


# ---------------------------------------------------------------------- building


def crowd_split(
    data: CrowdData, share: float, seed: int, table: Any = None
) -> tuple[CrowdData, CrowdValidation] | None:
    """Hold out ``share`` of the annotated tasks (stratified by majority-vote class,
    ties broken at random, seeded); None when fewer than :data:`MIN_HELD_TASKS` tasks
    would be held out or fewer would remain to train on.

    Returns the training part (every other task, annotated or not, with its
    annotations) and the validator of the held-out part. ``table(data, tasks)`` gives
    the held-out tasks' per-class log-likelihood table (default :func:`ds_table`).
    """
    from sklearn.model_selection import train_test_split

    if not 0 < share < 1:
        raise ValueError(f"valid_share must be in (0, 1), got {share}")
    rng = np.random.default_rng(seed)
    annotated = np.flatnonzero(data.feedback_effort > 0)
    n_held = round(share * len(annotated))
    if n_held < MIN_HELD_TASKS or len(annotated) - n_held < MIN_HELD_TASKS:
        return None
    counts = data.vote_counts.toarray()[annotated]
    # majority class, ties broken at random: argmax of the counts plus a tiny jitter
    strata = np.argmax(counts + rng.uniform(0, 0.5, size=counts.shape), axis=1)
    _, sizes = np.unique(strata, return_counts=True)
    stratify = strata if sizes.min() >= 2 and n_held >= len(sizes) else None
    _, held = train_test_split(annotated, test_size=n_held, random_state=seed, stratify=stratify)
    held = np.sort(held)
    keep = np.ones(data.n_tasks, dtype=bool)
    keep[held] = False
    train = data.select_tasks(np.flatnonzero(keep))
    held_data = data.select_tasks(held)
    table = ds_table if table is None else table
    return train, CrowdValidation(held_data, held, table(data, held))


def crowd_folds(
    data: CrowdData, n_folds: int, seed: int, table: Any = None
) -> list[tuple[CrowdData, CrowdValidation]] | None:
    """Split the annotated tasks into ``n_folds`` folds for cross-fitting (stratified by
    majority-vote class as in :func:`crowd_split`, seeded); None when a fold would hold
    fewer than :data:`MIN_HELD_TASKS` tasks.

    Returns, per fold, the training part (every task outside the fold, annotated or
    not) and the validator of the fold's tasks. Every annotated task is held out by
    exactly one fold; Dawid-Skene is fitted once, on every annotation (``table`` as in
    :func:`crowd_split`).
    """
    from sklearn.model_selection import KFold, StratifiedKFold

    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or n_folds < 2:
        raise ValueError(f"the number of folds must be an integer >= 2, got {n_folds!r}")
    annotated = np.flatnonzero(data.feedback_effort > 0)
    if len(annotated) // n_folds < MIN_HELD_TASKS:
        return None
    rng = np.random.default_rng(seed)
    counts = data.vote_counts.toarray()[annotated]
    strata = np.argmax(counts + rng.uniform(0, 0.5, size=counts.shape), axis=1)
    _, sizes = np.unique(strata, return_counts=True)
    splitter_seed = int(seed) % (2**32)
    if sizes.min() >= n_folds:
        splits = StratifiedKFold(n_folds, shuffle=True, random_state=splitter_seed).split(
            annotated, strata
        )
    else:
        splits = KFold(n_folds, shuffle=True, random_state=splitter_seed).split(annotated)
    table = (ds_table if table is None else table)(data, annotated)
    folds = []
    for _, held_rows in splits:
        held_rows = np.sort(held_rows)
        held = annotated[held_rows]
        keep = np.ones(data.n_tasks, dtype=bool)
        keep[held] = False
        validator = CrowdValidation(data.select_tasks(held), held, table[held_rows])
        folds.append((data.select_tasks(np.flatnonzero(keep)), validator))
    return folds


def ds_table(data: CrowdData, held: np.ndarray) -> np.ndarray:
    """``sum_a log pi_a[k, y_a]`` for the held-out tasks, with Dawid-Skene (default
    settings) fitted on every annotation of ``data`` (one pooled confusion when the
    data are anonymous)."""
    from crowdlearn.aggregation import DawidSkene
    from crowdlearn.aggregation._design import log_confusion_table, worker_label_design

    pooled = _pooled(data)
    model = DawidSkene(progress=False).fit(pooled)
    design = worker_label_design(pooled, np.float64)
    table = design @ log_confusion_table(np.asarray(model.confusions_, dtype=np.float64))
    return np.asarray(table[held], dtype=np.float64)


def truth_table(data: CrowdData, held: np.ndarray) -> np.ndarray:
    """The held-out tasks' table for a learner trained on the truth (:class:`Supervised`):
    0 for the true class, ``-inf`` for the others, so the agreement of
    :class:`CrowdValidation` becomes the log-likelihood of the held-out truth (a row of
    zeros, which scores nothing, where a task's truth is unknown)."""
    if data.truth is None:
        raise CrowdDataError("a truth table needs the truth of the training tasks")
    truth = data.truth[held]
    table = np.zeros((len(held), data.n_classes), dtype=np.float64)
    known = np.flatnonzero(truth >= 0)
    table[known] = -np.inf
    table[known, truth[known]] = 0.0
    return table


def as_validator(valid: Any, n_classes: int) -> TruthValidation | CrowdValidation | None:
    """``None``, a validator (passed through), or an ``(X, y)`` pair checked and wrapped."""
    if valid is None or isinstance(valid, (TruthValidation, CrowdValidation)):
        return valid
    if isinstance(valid, str):
        raise CrowdDataError(f"valid must be 'crowd', None or an (X, y) pair, got {valid!r}")
    try:
        features, labels = valid
    except (TypeError, ValueError):
        raise CrowdDataError("valid must be 'crowd', None or an (X, y) pair") from None
    inputs = as_inputs(features)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (len(inputs),):
        raise CrowdDataError(
            f"valid has {len(inputs)} instances but {labels.shape} labels; y must be 1-D"
        )
    if len(labels) and (labels.min() < 0 or labels.max() >= n_classes):
        raise CrowdDataError(f"valid labels must be class codes 0..{n_classes - 1}")
    return TruthValidation(inputs, labels)


def warn_too_small(data: CrowdData, how: str) -> None:
    """Warn that ``data`` has too few annotated tasks to hold some out; ``how`` says how
    they would have been held out (``"valid_share=0.2"`` or ``"crowd_folds=5"``)."""
    annotated = int(np.count_nonzero(data.feedback_effort > 0))
    warnings.warn(
        f"crowd validation needs at least {MIN_HELD_TASKS} held-out and {MIN_HELD_TASKS} "
        f"training tasks; {annotated} annotated tasks are too few to hold some out "
        f"({how}), so the last epoch is kept (pass valid=None to silence this)",
        CrowdValidationWarning,
        stacklevel=4,
    )
