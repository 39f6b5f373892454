"""The one training loop every learner uses.

Mini-batches of tasks with all their annotations; Adam/AdamW/SGD with weight decay and
an optional learning-rate schedule; model selection and early stopping on a
validation split; seeded weights, dropout and batch order; CPU or CUDA; a progress
bar; a per-epoch history; and a checkpoint after every epoch from which
``resume=True`` continues exactly (the random-number generators are saved too, so a
resumed run ends with the same weights as an uninterrupted one).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from crowdlearn._progress import format_postfix, progress_bar, progress_scope
from crowdlearn.data import CrowdData, CrowdDataError, TaskInputs
from crowdlearn.learning._batches import TaskBatcher
from crowdlearn.learning._shared import (
    history_frame,
    predict_in_batches,
    resolve_device,
    without_timings,
)

if TYPE_CHECKING:
    from crowdlearn.learning._base import BaseLearner

CHECKPOINT_NAME = "checkpoint.pt"
#: History columns shown after the epoch bar (the ones a method has).
POSTFIX = (
    "stage",
    "round",
    "train_loss",
    "valid_accuracy",
    "valid_loss",
    "valid_crowd_ll",
    "log_likelihood",
)


class TrainingDiverged(CrowdDataError):
    """Training produced a non-finite loss or weights: the fit is refused, not saved."""

    def __init__(self, learner: BaseLearner, epoch: int, what: str) -> None:
        super().__init__(
            f"{type(learner).__name__}: training diverged in epoch {epoch} ({what}); lower "
            f"the learning rate lr (now {learner.lr:g}) or the weight decay, or "
            "standardise the features"
        )
        self.epoch = epoch


@dataclass
class EpochContext:
    """What an epoch hook of a method can use."""

    learner: BaseLearner
    data: CrowdData
    inputs: TaskInputs
    module: nn.ModuleDict
    device: torch.device
    batcher: TaskBatcher
    epoch: int = 0
    #: Set by a hook to end training after this epoch (e.g. EM converged).
    stop: bool = False

    def classifier_proba(self, tasks: np.ndarray | None = None) -> np.ndarray:
        """Class probabilities of the classifier for training tasks (all by default),
        in evaluation mode (no dropout)."""
        tasks = np.arange(self.data.n_tasks) if tasks is None else np.asarray(tasks)
        return predict_in_batches(
            self.module["classifier"],
            self.inputs,
            tasks,
            4 * self.batcher.batch_size,
            self.device,
        )


@dataclass
class _Progress:
    """Training state that a checkpoint must restore."""

    epoch: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    best_score: float | None = None
    best_state: dict[str, torch.Tensor] | None = None
    best_epoch: int = 0
    bad_epochs: int = 0
    #: Training ended before ``max_epochs`` (a method's stop or early stopping); a
    #: resumed run does not train further.
    finished: bool = False


class Trainer:
    """Trains one learner (see :class:`~crowdlearn.learning._base.BaseLearner`)."""

    def __init__(self, learner: BaseLearner) -> None:
        self.learner = learner

    def fit(
        self,
        data: CrowdData,
        inputs: TaskInputs,
        valid: Any,
    ) -> None:
        """Train ``learner``; ``valid`` is a validator of
        :mod:`crowdlearn.learning._validation` or None."""
        # one decision for the whole fit: an aggregator fitted in ``_prepare`` (two-stage,
        # ICED) shows its bar exactly when the learner does
        with progress_scope(self.learner.progress) as show:
            self._fit(data, inputs, valid, show)

    def _fit(
        self,
        data: CrowdData,
        inputs: TaskInputs,
        valid: Any,
        show: bool,
    ) -> None:
        learner = self.learner
        _check_settings(learner)
        if len(inputs) != data.n_tasks:
            raise CrowdDataError(
                f"the inputs have {len(inputs)} items but there are {data.n_tasks} tasks"
            )
        device = resolve_device(learner.device)
        torch.manual_seed(learner.random_state)
        rng = np.random.default_rng(learner.random_state)
        shape = (tuple(inputs.item_shape), data.n_classes, data.n_workers)
        module = learner._build_module(*shape).to(device)
        optimizer = _optimizer(learner, module)
        scheduler = _scheduler(learner, optimizer)
        progress = _Progress()
        checkpoint = _checkpoint_path(learner)
        fingerprint = _fingerprint(learner, data, shape)
        if learner.resume and checkpoint is not None and checkpoint.exists():
            _restore(checkpoint, fingerprint, module, optimizer, scheduler, rng, progress, learner)
        else:
            learner._prepare(data, inputs)
        batcher = TaskBatcher(
            data, inputs, learner._training_tasks(data), learner.batch_size, device
        )
        context = EpochContext(learner, data, inputs, module, device, batcher)
        first = learner.max_epochs if progress.finished else progress.epoch
        bar = progress_bar(
            range(first, learner.max_epochs),
            progress=show,
            desc=getattr(learner, "_progress_desc", None) or type(learner).__name__,
            unit="epoch",
            initial=first,
            total=learner.max_epochs,
        )
        for epoch in bar:
            context.epoch = epoch
            row = self._train_epoch(context, optimizer, rng)
            if scheduler is not None:
                scheduler.step()
            if valid is not None:
                row.update(valid.evaluate(learner, module, device))
                self._select(module, row, progress, epoch, valid)
            progress.history.append(row)
            progress.epoch = epoch + 1
            progress.finished = context.stop or (
                learner.patience is not None and progress.bad_epochs >= learner.patience
            )
            bar.set_postfix(format_postfix({k: row[k] for k in POSTFIX if k in row}))
            if checkpoint is not None:
                _save(
                    checkpoint, fingerprint, module, optimizer, scheduler, rng, progress, learner
                )
            patience_over = (
                learner.patience is not None and progress.bad_epochs >= learner.patience
            )
            if context.stop or patience_over:
                break
        bar.close()
        if valid is not None and progress.best_state is not None:
            module.load_state_dict(progress.best_state)
        else:
            progress.best_epoch = progress.epoch
        learner.module_ = module
        learner._shape_ = shape
        learner.classes_ = data.classes
        learner.history_ = history_frame(progress.history)
        learner.best_epoch_ = progress.best_epoch
        learner.valid_score_ = progress.best_score

    def _train_epoch(
        self, context: EpochContext, optimizer: torch.optim.Optimizer, rng: np.random.Generator
    ) -> dict[str, Any]:
        learner, module = self.learner, context.module
        start = time.perf_counter()
        learner._epoch_start(context)
        module.train()
        noise = module["noise"] if "noise" in module else None
        total, batches = 0.0, 0
        for batch in context.batcher.epoch(rng):
            logits = module["classifier"](batch.x)
            loss = learner._loss(batch, logits, noise)
            value = float(loss.detach())
            if not math.isfinite(value):
                raise TrainingDiverged(learner, context.epoch + 1, f"the loss is {value}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += value
            batches += 1
        if not all(bool(torch.isfinite(p).all()) for p in module.parameters()):
            raise TrainingDiverged(learner, context.epoch + 1, "the weights are not finite")
        row: dict[str, Any] = {
            "epoch": context.epoch + 1,
            "train_loss": total / max(batches, 1),
            "lr": optimizer.param_groups[0]["lr"],
        }
        row.update(learner._epoch_end(context))
        row["seconds"] = time.perf_counter() - start
        return row

    def _select(
        self,
        module: nn.ModuleDict,
        row: dict[str, Any],
        progress: _Progress,
        epoch: int,
        valid: Any,
    ) -> None:
        """Keep the weights of the best validation epoch."""
        score = valid.score(row, self.learner)
        if progress.best_score is None or score > progress.best_score:
            progress.best_score = score
            progress.best_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
            progress.best_epoch = epoch + 1
            progress.bad_epochs = 0
        else:
            progress.bad_epochs += 1


def _check_settings(learner: BaseLearner) -> None:
    if learner.max_epochs < 0:
        raise ValueError(f"max_epochs must be >= 0, got {learner.max_epochs}")
    if learner.batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {learner.batch_size}")
    if learner.crowd_criterion not in ("agreement", "likelihood"):
        raise ValueError(
            f"crowd_criterion must be 'agreement' or 'likelihood', got {learner.crowd_criterion!r}"
        )
    if learner.selection_metric not in ("accuracy", "loss"):
        raise ValueError(
            f"selection_metric must be 'accuracy' or 'loss', got {learner.selection_metric!r}"
        )
    if learner.resume and learner.checkpoint_dir is None:
        raise ValueError("resume=True needs a checkpoint_dir")


def _optimizer(learner: BaseLearner, module: nn.Module) -> torch.optim.Optimizer:
    # foreach: the multi-tensor update, the default on CUDA only; on CPU it is the same
    # arithmetic with fewer operator calls per step of a small MLP
    options = {"lr": learner.lr, "weight_decay": learner.weight_decay, "foreach": True}
    if learner.optimizer == "adam":
        return torch.optim.Adam(module.parameters(), **options)
    if learner.optimizer == "adamw":
        return torch.optim.AdamW(module.parameters(), **options)
    if learner.optimizer == "radam":
        return torch.optim.RAdam(module.parameters(), **options)
    if learner.optimizer == "sgd":
        return torch.optim.SGD(module.parameters(), momentum=0.9, **options)
    raise ValueError(
        f"optimizer must be 'adam', 'adamw', 'radam' or 'sgd', got {learner.optimizer!r}"
    )


def _scheduler(learner: BaseLearner, optimizer: torch.optim.Optimizer) -> Any:
    if learner.lr_schedule is None:
        return None
    if learner.lr_schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(learner.max_epochs, 1))
    if learner.lr_schedule == "step":
        milestones = [learner.max_epochs // 2, (3 * learner.max_epochs) // 4]
        return torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones, gamma=0.1)
    raise ValueError(f"lr_schedule must be None, 'cosine' or 'step', got {learner.lr_schedule!r}")


# ---------------------------------------------------------------------- checkpoints


def _checkpoint_path(learner: BaseLearner) -> Path | None:
    if learner.checkpoint_dir is None:
        return None
    return Path(learner.checkpoint_dir) / CHECKPOINT_NAME


def _fingerprint(learner: BaseLearner, data: CrowdData, shape: tuple) -> dict[str, Any]:
    """What must match for a checkpoint to be resumed."""
    params = {
        k: repr(v)
        for k, v in learner.get_params(deep=False).items()
        if k not in ("progress", "resume", "checkpoint_dir", "device", "max_epochs")
    }
    return {
        "class": type(learner).__name__,
        "params": params,
        "data": (data.n_tasks, data.n_workers, data.n_classes, data.n_annotations),
        "shape": repr(shape),
    }


#: What the header of a checkpoint names it (``crowdlearn-file``).
CHECKPOINT_KIND = "checkpoint"


def _save(
    path: Path,
    fingerprint: dict[str, Any],
    module: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    rng: np.random.Generator,
    progress: _Progress,
    learner: BaseLearner,
) -> None:
    """Write the checkpoint: data only (tensors in the safetensors layout; the state
    dicts' structure, the random generators' states and the progress as JSON: see
    :mod:`crowdlearn.learning._safe_file`), so resuming runs no code from the file."""
    from crowdlearn.learning._model_file import known_classes
    from crowdlearn.learning._safe_file import write_file

    payload = {
        "fingerprint": fingerprint,
        "module": module.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "numpy_rng": rng.bit_generator.state,
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "progress": {f.name: getattr(progress, f.name) for f in fields(_Progress)},
        "method_state": learner._method_state(),
    }
    classes = known_classes()
    write_file(path, CHECKPOINT_KIND, without_timings(payload), classes, what="the checkpoint")


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The payload of a checkpoint :func:`_save` wrote, read without running anything
    from the file; :class:`CrowdDataError` (one line) for a pickle of the earlier
    format, another file, or a damaged one."""
    from crowdlearn.learning._model_file import known_classes, old_format_message
    from crowdlearn.learning._safe_file import (
        DamagedFile,
        decode,
        document_of,
        load_tensors,
        read_header,
        sniff,
    )

    data = path.read_bytes()
    kind = sniff(data[:16], path)
    if kind in ("torch-pickle", "pickle"):
        raise CrowdDataError(old_format_message(path, kind, what="checkpoint"))
    try:
        if kind != "safetensors":
            raise DamagedFile("its first bytes are not those of a checkpoint")
        header, size = read_header(path, data)
        document = document_of(header, CHECKPOINT_KIND)
        if not isinstance(document, dict):
            raise DamagedFile("it holds no crowdlearn checkpoint metadata")
        payload = decode(document, load_tensors(data[:size]), known_classes())
        if not isinstance(payload, dict) or set(payload) != _CHECKPOINT_KEYS:
            raise DamagedFile("its entries are not those of a checkpoint")
    except DamagedFile as error:
        raise _damaged_checkpoint(path, error) from None
    return payload


_CHECKPOINT_KEYS = {
    "fingerprint",
    "module",
    "optimizer",
    "scheduler",
    "numpy_rng",
    "torch_rng",
    "cuda_rng",
    "progress",
    "method_state",
}


def _damaged_checkpoint(path: Path, error: Exception) -> CrowdDataError:
    reason = " ".join(str(error).split())[:160] or type(error).__name__
    return CrowdDataError(
        f"{path}: not a crowdlearn checkpoint, or a damaged one ({reason}); remove it to "
        "train from the start"
    )


def _restore(
    path: Path,
    fingerprint: dict[str, Any],
    module: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    rng: np.random.Generator,
    progress: _Progress,
    learner: BaseLearner,
) -> None:
    payload = read_checkpoint(path)
    if payload["fingerprint"] != fingerprint:
        raise CrowdDataError(
            f"{path} was written by another configuration or other data; resume it with "
            "the same learner parameters and data, or remove it"
        )
    try:
        module.load_state_dict(payload["module"])
        optimizer.load_state_dict(payload["optimizer"])
        if scheduler is not None:
            scheduler.load_state_dict(payload["scheduler"])
        rng.bit_generator.state = payload["numpy_rng"]
        torch.set_rng_state(payload["torch_rng"])
        if payload["cuda_rng"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(payload["cuda_rng"])
        restored = payload["progress"]
        if not isinstance(restored, dict) or set(restored) != {f.name for f in fields(_Progress)}:
            raise ValueError("its progress entry is not a training progress")
        progress.__dict__.update(copy.copy(restored))
        learner._load_method_state(payload["method_state"])
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as error:
        if isinstance(error, CrowdDataError):
            raise
        raise _damaged_checkpoint(path, error) from None
