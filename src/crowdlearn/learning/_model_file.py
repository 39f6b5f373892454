"""The model file: what :meth:`BaseLearner.save` writes besides the weights, and how a
file is checked before a learner is built from it.

Every saved learner carries a ``meta`` dict of plain Python values:

* ``format``: :data:`MODEL_FORMAT`, the layout of the file; ``crowdlearn``: the version
  that wrote it;
* ``method`` (the registry name, e.g. ``crowdlayer``), ``spec`` (the method spec it was
  made from, when :func:`~crowdlearn.learning.make_learner` made it) and ``class``;
* ``classes``: the user's class ids; ``input_shape`` / ``n_features``: what one
  instance looks like to the classifier (after the featuriser, if any);
  ``featurizer``: the featuriser's kind (``tfidf``, ``sentence-transformer``,
  ``image``) or None;
* ``training``: the training data's summary (``n_tasks``, ``n_workers``,
  ``n_annotations``, ``n_classes``, and ``source`` where the command line knows the
  file), set by ``fit``. No date: two runs of the same fit write the same bytes.

Version policy: a file is read only when its ``format`` is this version's
:data:`MODEL_FORMAT`. A file without ``meta`` was written by a crowdlearn before model
formats existed, a file of a larger format by a newer crowdlearn; both are refused with
a :class:`ModelFileError` saying which version to use. The format number changes only
when the file's layout does (not with every release).

This module imports no learner: the learner base imports it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data.errors import show

#: The layout version of the files :meth:`BaseLearner.save` writes.
MODEL_FORMAT = 1

#: Learner class -> the registry name it was first registered under (filled by
#: :func:`crowdlearn.learning.register_learner`), for learners made without a spec.
METHOD_NAMES: dict[type, str] = {}


class ModelFileError(CrowdDataError):
    """A file that is not a crowdlearn model this version can read, or inputs that do
    not fit the model (another feature dimension)."""


def crowdlearn_version() -> str:
    """The version of the running crowdlearn."""
    import crowdlearn

    return str(crowdlearn.__version__)


def training_summary(data: CrowdData, source: str | None = None) -> dict[str, Any]:
    """The summary of the training data a fit records (``training_summary_``)."""
    return {
        "n_tasks": int(data.n_tasks),
        "n_workers": int(data.n_workers),
        "n_annotations": int(data.n_annotations),
        "n_classes": int(data.n_classes),
        "source": source,
    }


def plain(values: Any) -> list[Any]:
    """Ids (a numpy array or a sequence) as plain Python values."""
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    return [item.item() if isinstance(item, np.generic) else item for item in items]


def model_meta(learner: Any) -> dict[str, Any]:
    """The ``meta`` dict of a fitted learner (see the module docstring)."""
    cls = type(learner)
    spec = getattr(learner, "_method_spec", None)
    if spec is not None:
        method = spec.partition("[")[0].strip().lower()
    else:
        method = METHOD_NAMES.get(cls, cls.__name__.lower())
    shape = _input_shape(learner)
    featurizer = getattr(learner, "featurizer_", None)
    kind = None
    if featurizer is not None:
        from crowdlearn.learning.featurizers import featurizer_state

        kind = featurizer_state(featurizer)["kind"]
    summary = getattr(learner, "training_summary_", None)
    return {
        "format": MODEL_FORMAT,
        "crowdlearn": crowdlearn_version(),
        "method": method,
        "spec": spec,
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "classes": plain(learner.classes_),
        "input_shape": None if shape is None else [int(n) for n in shape],
        "n_features": int(np.prod(shape)) if shape is not None and len(shape) == 1 else None,
        "featurizer": kind,
        "training": None if summary is None else dict(summary),
    }


def _input_shape(learner: Any) -> tuple[int, ...] | None:
    """The shape of one instance as the classifier takes it (an ensemble: its first
    member's, all members having been fitted on the same data)."""
    shape = getattr(learner, "_shape_", None)
    if shape is None and getattr(learner, "members_", None):
        shape = getattr(learner.members_[0], "_shape_", None)
    return None if shape is None else tuple(shape[0])


def read_model_file(path: str | os.PathLike[str], device: Any = "cpu") -> dict[str, Any]:
    """The payload of a model file, after checking that it is one this version reads.

    Raises
    ------
    ModelFileError
        Not a crowdlearn model file (another file, a truncated one), or a file of
        another model format (see the module docstring).
    FileNotFoundError
        No file at ``path``.
    """
    import pickle
    import zipfile

    import torch

    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if file.is_dir():
        raise ModelFileError(f"{path}: a folder, not a model file (give FOLDER/model.pt)")
    try:
        payload = torch.load(file, map_location=device, weights_only=False)
    except (
        pickle.UnpicklingError,
        zipfile.BadZipFile,
        EOFError,
        RuntimeError,
        ValueError,
        TypeError,
        AttributeError,
        ImportError,
        IndexError,
        KeyError,
        UnicodeDecodeError,
    ) as error:
        reason = " ".join(str(error).split())[:120] or type(error).__name__
        raise ModelFileError(
            f"{path}: not a crowdlearn model file, or a damaged one (cannot read it: {reason})"
        ) from None
    if not isinstance(payload, Mapping) or not isinstance(payload.get("class"), str):
        raise ModelFileError(
            f"{path}: not a crowdlearn model file (no learner in it; model files are "
            "written by crowdlearn learn or BaseLearner.save)"
        )
    check_meta(payload.get("meta"), path)
    return dict(payload)


def check_meta(meta: Any, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Refuse a model file of another format (see the module docstring)."""
    here = crowdlearn_version()
    if meta is None:
        raise ModelFileError(
            f"{path}: saved by an older crowdlearn, before model format {MODEL_FORMAT} "
            f"(this is crowdlearn {here}); retrain the model with this version, or load "
            "it with the version that saved it"
        )
    version = meta.get("format") if isinstance(meta, Mapping) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise ModelFileError(f"{path}: not a crowdlearn model file (its metadata has no format)")
    saved_by = meta.get("crowdlearn", "an unknown version")
    if version > MODEL_FORMAT:
        raise ModelFileError(
            f"{path}: saved by crowdlearn {saved_by} (model format {version}), newer than "
            f"this one (crowdlearn {here} reads format {MODEL_FORMAT}); upgrade crowdlearn"
        )
    if version < MODEL_FORMAT:
        raise ModelFileError(
            f"{path}: saved by an older crowdlearn, {saved_by} (model format {version}; "
            f"this is crowdlearn {here}, format {MODEL_FORMAT}); retrain the model with "
            "this version, or load it with the version that saved it"
        )
    return dict(meta)


def check_features(meta: Mapping[str, Any], X: np.ndarray, where: str) -> None:
    """Refuse instances whose shape is not the one the model takes, or that hold
    missing or infinite values.

    Parameters
    ----------
    meta : dict
        The model's metadata (``input_shape``).
    X : ndarray
        The instances, one per row.
    where : str
        What to call them in a message (the file's name).
    """
    expected = meta.get("input_shape")
    if X.ndim < 2:
        raise ModelFileError(
            f"{where}: {X.size} values in one row or column; the model takes one row per "
            f"item{_of(expected)}"
        )
    got = [int(n) for n in X.shape[1:]]
    if expected is not None and got != list(expected):
        if len(expected) == 1 and len(got) == 1:
            raise ModelFileError(f"the model takes {expected[0]} features, {where} has {got[0]}")
        raise ModelFileError(
            f"the model takes items of shape {tuple(expected)}, {where} has {tuple(got)}"
        )
    if X.dtype.kind not in "biuf":
        raise ModelFileError(f"{where}: not numeric features (dtype {X.dtype})")
    if X.size and X.dtype.kind == "f":
        bad = ~np.isfinite(X.reshape(len(X), -1)).all(axis=1)
        if bad.any():
            raise ModelFileError(
                f"{where}: missing or infinite values at row(s) {show(np.flatnonzero(bad))}"
            )


def _of(shape: Any) -> str:
    if shape is None:
        return ""
    if len(shape) == 1:
        return f" of {shape[0]} features"
    return f" of shape {tuple(shape)}"
