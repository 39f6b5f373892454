"""The model file: what :meth:`BaseLearner.save` writes besides the weights, and how a
file is checked before a learner is built from it.

The file holds data only (model format 2): one safetensors file whose header carries
the payload (parameters, fitted state, featuriser state, ``meta``) as a JSON document
and whose body holds the tensors (:mod:`crowdlearn.learning._safe_file`). Reading it,
or its metadata alone, runs no code from it; the learner's class is found by name among
the registered learners. Format 1 files (``torch.save`` pickles) are recognised from
their first bytes, never unpickled, and refused in one line.

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
formats existed, a file of a larger format by a newer crowdlearn, a pickle by a
crowdlearn of format 1 or earlier; all are refused with a :class:`ModelFileError`
saying which version to use. The format number changes only
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
MODEL_FORMAT = 2

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


def write_model_file(payload: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a learner's payload (see :meth:`BaseLearner.save`) as a data-only model
    file (module docstring); raises :class:`ModelFileError` before writing anything
    when the learner holds a value such a file cannot (a custom backbone network or
    callable, an object of an unregistered class)."""
    from crowdlearn.learning._safe_file import UnsupportedValue, write_file

    name = payload.get("class")
    if name not in known_classes():
        raise ModelFileError(
            f"cannot save a learner of class {name!r}: it is not a registered learner, and "
            "loading finds a learner's class by its name among the registered ones "
            "(register it with register_learner first)"
        )
    try:
        what = str(payload.get("class", "the learner"))
        write_file(path, FILE_KIND, dict(payload), known_classes(), what=what)
    except UnsupportedValue as error:
        raise ModelFileError(
            f"cannot save this learner: {error}; model files hold data only (a custom "
            "backbone cannot be saved: use a named one such as 'mlp' or 'cnn')"
        ) from None


def read_model_file(path: str | os.PathLike[str], device: Any = "cpu") -> dict[str, Any]:
    """The payload of a model file, after checking that it is one this version reads.

    Nothing in the file is run: see :mod:`crowdlearn.learning._safe_file`. ``device``
    is accepted for compatibility; tensors are read on the CPU and moved by the loader.

    Raises
    ------
    ModelFileError
        Not a crowdlearn model file (another file, a truncated one, a pickle of the old
        format), or a file of another model format (see the module docstring).
    FileNotFoundError
        No file at ``path``.
    """
    from crowdlearn.learning._safe_file import DamagedFile, decode, load_tensors, read_header

    file = _existing(path)
    with open(file, "rb") as handle:
        head = handle.read(16)
    _document(path, file, head)  # another file is refused before it is read whole
    try:
        header, size = read_header(file)
        document = _crowdlearn_document(path, header)
        check_meta(decode(document.get("meta"), {}), path)  # before any tensor is read
        with open(file, "rb") as handle:
            data = handle.read(size)
        tensors = load_tensors(data)
        payload = decode(document, tensors, known_classes())
    except DamagedFile as error:
        raise _damaged(path, error) from None
    if not isinstance(payload, dict) or not isinstance(payload.get("class"), str):
        raise ModelFileError(f"{path}: not a crowdlearn model file (no learner in it)")
    payload["meta"] = check_meta(payload.get("meta"), path)
    return payload


def read_model_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of a model file, from its header alone (no tensor is read)."""
    from crowdlearn.learning._safe_file import DamagedFile, decode, read_header

    file = _existing(path)
    with open(file, "rb") as handle:
        head = handle.read(16)
    _document(path, file, head)
    try:
        header, _ = read_header(file)
        document = _crowdlearn_document(path, header)
        meta = check_meta(decode(document.get("meta"), {}), path)
    except DamagedFile as error:
        raise _damaged(path, error) from None
    return meta


#: What the header of a model file names it (``crowdlearn-file``).
FILE_KIND = "model"


def _existing(path: str | os.PathLike[str]) -> Path:
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if file.is_dir():
        raise ModelFileError(f"{path}: a folder, not a model file (give FOLDER/model.pt)")
    return file


def _document(path: str | os.PathLike[str], file: Path, head: bytes) -> None:
    """Refuse, from its first bytes, a file that is not in the data-only layout."""
    from crowdlearn.learning._safe_file import sniff

    kind = sniff(head, file)
    if kind == "safetensors":
        return
    if kind in ("torch-pickle", "pickle"):
        raise ModelFileError(old_format_message(path, kind))
    raise ModelFileError(
        f"{path}: not a crowdlearn model file (model files are written by crowdlearn "
        "learn or BaseLearner.save)"
    )


def old_format_message(path: str | os.PathLike[str], kind: str, what: str = "model") -> str:
    """The one line refusing a pickle-based file (it is never unpickled)."""
    found = "a PyTorch pickle (torch.save)" if kind == "torch-pickle" else "a Python pickle"
    if what == "checkpoint":
        return (
            f"{path}: {found}, the checkpoint format of crowdlearn before model format "
            f"{MODEL_FORMAT}, not read because reading a pickle can run code from it; "
            "remove it and train again, or resume it with the crowdlearn that wrote it"
        )
    return (
        f"{path}: {found}, the model format of crowdlearn before model format "
        f"{MODEL_FORMAT} (this is crowdlearn {crowdlearn_version()}), not read because "
        "reading a pickle can run code from it; if you trust the file, use it with the "
        "crowdlearn that wrote it, or retrain the model with this version"
    )


def _crowdlearn_document(path: str | os.PathLike[str], header: Mapping[str, Any]) -> Any:
    from crowdlearn.learning._safe_file import document_of

    document = document_of(dict(header), FILE_KIND)
    if not isinstance(document, dict):
        raise ModelFileError(
            f"{path}: not a crowdlearn model file (a safetensors file without "
            "crowdlearn's model metadata)"
        )
    return document


def _damaged(path: str | os.PathLike[str], error: Exception) -> ModelFileError:
    reason = " ".join(str(error).split())[:160] or type(error).__name__
    return ModelFileError(
        f"{path}: not a crowdlearn model file, or a damaged one (cannot read it: {reason})"
    )


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
    wrong = _wrong_meta_field(meta)
    if wrong is not None:
        raise ModelFileError(
            f"{path}: not a crowdlearn model file, or a damaged one (its metadata's "
            f"{wrong!r} is not what crowdlearn writes)"
        )
    return dict(meta)


def _wrong_meta_field(meta: Mapping[str, Any]) -> str | None:
    """The first field of ``meta`` whose value is not of the type :func:`model_meta`
    writes (a tampered file), or None."""

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    def optional_text(value: Any) -> bool:
        return value is None or isinstance(value, str)

    shape = meta.get("input_shape")
    checks = {
        "crowdlearn": isinstance(meta.get("crowdlearn"), str),
        "method": isinstance(meta.get("method"), str),
        "spec": optional_text(meta.get("spec")),
        "class": isinstance(meta.get("class"), str),
        "classes": isinstance(meta.get("classes"), list)
        and all(
            isinstance(c, (str, int, float, bool)) or c is None for c in meta.get("classes", [])
        ),
        "input_shape": shape is None or (isinstance(shape, list) and all(count(n) for n in shape)),
        "n_features": meta.get("n_features") is None or count(meta.get("n_features")),
        "featurizer": optional_text(meta.get("featurizer")),
        "training": meta.get("training") is None or isinstance(meta.get("training"), dict),
    }
    return next((name for name, fine in checks.items() if not fine), None)


def known_classes() -> dict[str, type]:
    """Qualified class name -> class of every registered learner
    (:data:`METHOD_NAMES`, filled by ``register_learner``) and aggregation strategy:
    the only classes a model file or checkpoint may name."""
    from crowdlearn.aggregation import STRATEGIES
    from crowdlearn.learning._safe_file import qualified_name

    classes = [*METHOD_NAMES, *(entry.estimator for entry in STRATEGIES.values())]
    return {qualified_name(cls): cls for cls in classes}


def learner_class_named(name: Any, path: Any = "the model file") -> type:
    """The registered learner class whose qualified name is ``name`` (what a model
    file's ``class`` says), never imported from the name; :class:`ModelFileError`
    when no registered learner has it."""
    from crowdlearn.learning._safe_file import qualified_name

    for cls in METHOD_NAMES:
        if isinstance(name, str) and qualified_name(cls) == name:
            return cls
    raise ModelFileError(
        f"{path}: holds a learner of class {str(name)[:80]!r}, which is not a registered "
        "crowdlearn learner (register it with register_learner before loading)"
    )


def check_payload(payload: dict[str, Any]) -> None:
    """Raise ValueError when the fields every learner's payload has (what
    ``predict_proba`` uses) are not of the types :meth:`BaseLearner._payload` writes:
    a tampered model file (:meth:`BaseLearner.load` reports it as damaged)."""

    def size(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    shape = payload.get("shape")
    if not (
        isinstance(shape, tuple)
        and len(shape) == 3
        and isinstance(shape[0], tuple)
        and all(size(n) for n in shape[0])
        and size(shape[1])
        and size(shape[2])
    ):
        raise ValueError("its shape entry is not (item shape, classes, workers)")
    classes = payload.get("classes")
    if not (isinstance(classes, np.ndarray) and classes.shape == (shape[1],)):
        raise ValueError(f"its classes are not {shape[1]} class ids")
    scaler = payload.get("scaler")
    if scaler is not None and not (
        isinstance(scaler, tuple)
        and len(scaler) == 2
        and all(
            isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.shape == shape[0]
            for a in scaler
        )
    ):
        raise ValueError("its scaler is not a (mean, scale) pair of the item shape")
    temperature = payload.get("temperature", 1.0)
    if (
        not isinstance(temperature, (int, float, np.floating))
        or isinstance(temperature, bool)
        or not np.isfinite(temperature)
        or temperature <= 0
    ):
        raise ValueError("its temperature is not a positive number")
    for name, kind in (("params", dict), ("module", dict), ("method_state", dict)):
        if not isinstance(payload.get(name), kind):
            raise ValueError(f"its {name} entry is not a {kind.__name__}")
    import pandas as pd

    if not isinstance(payload.get("history"), pd.DataFrame):
        raise ValueError("its history is not a table")
    folds = payload.get("fold_epochs")
    if folds is not None and not (
        isinstance(folds, list) and folds and all(size(n) for n in folds)
    ):
        raise ValueError("its fold epochs are not a list of epochs")


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
