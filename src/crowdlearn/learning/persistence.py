"""Saved models: load one with its metadata, or read the metadata alone.

A model file (``model.pt`` of ``crowdlearn learn``, or :meth:`BaseLearner.save`) holds
the learner's parameters, weights and fitted state, its featuriser when it was trained
on raw items, and a ``meta`` dict: the model format, the crowdlearn version, the method,
the classes, the shape of one instance and the training data's summary (see
:mod:`crowdlearn.learning._model_file` for the fields and the version policy). Files
hold data only (tensors in the safetensors layout, the rest as JSON: see
:mod:`crowdlearn.learning._safe_file`): loading one, or reading its metadata, runs no
code from it. Files of the earlier pickle-based format are refused without being read.

Examples
--------
>>> from crowdlearn.data import CrowdData
>>> from crowdlearn.learning import TwoStage
>>> import numpy as np, tempfile, os
>>> data = CrowdData.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], ["cat", "cat", "dog", "dog"])
>>> data = data.with_features(np.array([[0.0, 1.0], [1.0, 0.0]]))
>>> model = TwoStage(max_epochs=2, progress=False).fit(data, valid=None)
>>> path = os.path.join(tempfile.mkdtemp(), "model.pt")
>>> model.save(path)
>>> info = model_info(path)
>>> info["method"], info["classes"], info["n_features"], info["training"]["n_tasks"]
('twostage', ['cat', 'dog'], 2, 2)
>>> load_model(path).predict_proba(np.zeros((3, 2))).shape
(3, 2)
"""

from __future__ import annotations

import os
from typing import Any

from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._model_file import (
    MODEL_FORMAT,
    ModelFileError,
    check_features,
    read_model_meta,
)
from crowdlearn.learning._shared import resolve_device

__all__ = ["MODEL_FORMAT", "ModelFileError", "check_features", "load_model", "model_info"]


def load_model(path: str | os.PathLike[str], device: str = "cpu") -> BaseLearner:
    """The learner saved at ``path``, its weights on ``device``.

    Parameters
    ----------
    path : path
        A model file written by ``crowdlearn learn`` (``model.pt``) or
        :meth:`BaseLearner.save`.
    device : str, default "cpu"
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``... or ``"auto"`` (CUDA when available).

    Returns
    -------
    BaseLearner
        The fitted learner (a :class:`~crowdlearn.learning.spans.SpanLearner` for a
        tagger trained on spans); ``meta_`` holds the file's metadata and
        ``training_summary_`` its training data's summary.

    Raises
    ------
    ModelFileError
        Not a crowdlearn model file (a pickle of the earlier format included: it is
        refused from its first bytes, never unpickled), a damaged one, or one saved
        with another model format (an older crowdlearn, or a newer one).
    """
    if read_model_meta(path).get("kind") == "spans":  # a tagger (learning.spans)
        from crowdlearn.learning.spans import load_tagger

        return load_tagger(path, device=str(resolve_device(device)))  # type: ignore[return-value]
    return BaseLearner.load(path, device=str(resolve_device(device)))


def model_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of the model file at ``path``, from its header alone (no tensor is
    read, no network built, no code from the file run).

    Returns
    -------
    dict
        ``format``, ``crowdlearn`` (the version that saved it), ``method``, ``spec``,
        ``class``, ``classes``, ``input_shape``, ``n_features``, ``featurizer`` and
        ``training`` (``n_tasks``, ``n_workers``, ``n_annotations``, ``n_classes``,
        ``source``, ``date``).

    Raises
    ------
    ModelFileError
        As :func:`load_model`.
    """
    return read_model_meta(path)
