"""Helpers every part of the learning engine uses: the learner base, the trainer and
the validation import them from here, so those three import one way (base -> trainer,
base -> validation; neither imports the base back).

What lives here: the training instances of a crowd (:func:`training_inputs`, checked
by :func:`check_learnable`), the device choice, prediction in batches, the history
table and writing a learner's file without its wall-clock columns.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from crowdlearn._atomic import atomic_path
from crowdlearn.data import CrowdData, CrowdDataError, TaskInputs
from crowdlearn.data.errors import show
from crowdlearn.data.inputs import as_inputs


def training_inputs(data: CrowdData) -> TaskInputs:
    """The instances of the tasks: ``data.inputs``, else ``data.features``."""
    if data.inputs is not None:
        return data.inputs
    if data.features is None:
        raise CrowdDataError(
            "learning needs the tasks' instances: give the data features "
            "(CrowdData.with_features) or inputs (CrowdData.with_inputs)"
        )
    return as_inputs(check_learnable(data.features))


def check_learnable(features: np.ndarray) -> np.ndarray:
    """Refuse features a network cannot learn from: no columns at all, or finite values
    beyond float32's range (the networks compute in float32, where they become inf)."""
    if 0 in features.shape[1:]:
        raise CrowdDataError(
            f"features have shape {features.shape}: no feature columns; give at least one "
            "feature per task"
        )
    if features.dtype.itemsize > 4 and features.size:
        rows = features.reshape(len(features), -1)
        too_large = (np.abs(rows) > np.finfo(np.float32).max).any(axis=1)
        if too_large.any():
            raise CrowdDataError(
                f"features hold values beyond float32's range (|x| > 3.4e38; largest "
                f"{float(np.abs(rows).max()):.3g}) at rows {show(np.flatnonzero(too_large))}; "
                "rescale them"
            )
    return features


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"``: CUDA when available, else the CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def predict_in_batches(
    module: nn.Module, inputs: TaskInputs, rows: np.ndarray, batch: int, device: torch.device
) -> np.ndarray:
    """Softmax outputs of ``module`` for some rows of ``inputs`` (evaluation mode)."""
    was_training = module.training
    module.eval()
    chunks = []
    with torch.no_grad():
        for start in range(0, len(rows), batch):
            part = rows[start : start + batch]
            logits = module(torch.as_tensor(inputs.take(part), device=device))
            chunks.append(torch.softmax(logits, dim=1).double().cpu().numpy())
    module.train(was_training)
    if not chunks:
        return np.zeros((0, 0))
    return np.concatenate(chunks)


def history_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The per-epoch history as a DataFrame."""
    return pd.DataFrame(rows)


#: Columns of histories that hold wall-clock times: left out of saved files.
TIMING_COLUMNS = ("seconds",)


def without_timings(value: Any) -> Any:
    """``value`` with the wall-clock columns dropped from every DataFrame in it
    (recursing into dicts, lists and tuples), so that the same fit saved twice gives
    the same bytes; the learner in memory keeps its timings."""
    if isinstance(value, pd.DataFrame):
        return value.drop(columns=[c for c in TIMING_COLUMNS if c in value.columns])
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(without_timings(item) for item in value)
    return value


def write_bytes(data: bytes, path: str | os.PathLike[str]) -> None:
    """Write a file's bytes into ``path`` atomically, through Python's own file
    writing, so that a full disk is an OSError naming the file (ENOSPC)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
