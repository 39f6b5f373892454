"""State files: a fitted incremental aggregator saved to disk and loaded back.

One ``.npz`` file (NumPy's zip of arrays, written without pickles and read with
``allow_pickle=False``, so loading a file runs no code from it) holds:

* ``meta``: a JSON document: ``format`` (``"crowdlearn-state"``), ``version``, the
  ``method`` (class name) and its ``params``, the ``campaign`` fingerprint (the
  answer kind, the column names read, what the caller adds), the fit's scalars
  (``n_iter_``, ``converged_``), its ``history_`` and the names of the arrays;
* the annotations (``task``, ``worker``, ``label`` codes, sorted by task when known)
  and their ids (``task_ids``, ``worker_ids``, ``classes``; text ids as Unicode
  arrays), the known truth if any;
* the learned arrays: ``probas_``, ``labels_``, the method's ``state_attributes``
  (confusion matrices, skills, abilities, vote counts...) and the M-step statistics
  of incremental EM; for incremental EM also ``margins`` (each task's lower bound of
  its label's log-odds margin, kept by ``partial_fit(refresh=0)``) when known, and
  the scalar ``_probas_exact``. A file without them (older files) is safe: the next
  ``refresh=0`` update then recomputes every task once.

Saving reads ``crowd_``, which merges a pending tail of appended annotations into the
others first (the file holds them sorted by task, with their task pointer).

The file is written atomically (:func:`crowdlearn._atomic.atomic_open`): a failure
leaves the previous state file as it was.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn._atomic import atomic_open
from crowdlearn._json import jsonable as _jsonable
from crowdlearn.aggregation._annotation_store import AnnotationStore
from crowdlearn.aggregation._blocks import is_sorted
from crowdlearn.aggregation._frames import array_attribute
from crowdlearn.data import CrowdData, CrowdDataError

FORMAT = "crowdlearn-state"
VERSION = 1
_ID_FIELDS = ("task_ids", "worker_ids", "classes")


def incremental_methods() -> dict[str, type]:
    """The aggregators with ``partial_fit``, by class name."""
    from crowdlearn.aggregation.dawid_skene import DawidSkene
    from crowdlearn.aggregation.glad import GLAD
    from crowdlearn.aggregation.majority_vote import MajorityVote, NaiveSoft
    from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
    from crowdlearn.aggregation.two_third import TwoThird
    from crowdlearn.aggregation.wawa import Wawa

    classes = (DawidSkene, OneCoinDawidSkene, GLAD, MajorityVote, NaiveSoft, Wawa, TwoThird)
    return {cls.__name__: cls for cls in classes}


def save_state(
    model: Any, path: str | os.PathLike[str], campaign: Mapping[str, Any] | None = None
) -> None:
    """Write a fitted incremental aggregator to ``path`` (an ``.npz`` file), atomically.

    Parameters
    ----------
    model : estimator
        A fitted aggregator with ``partial_fit`` (see :func:`load_state`).
    path : str or path-like
        The state file; replaced as a whole, or left untouched on failure.
    campaign : mapping, optional
        JSON-able description of the campaign (kind, columns read...), stored as the
        ``campaign`` fingerprint; default: the model's ``campaign_`` (what
        :func:`load_state` set), else empty.
    """
    name = type(model).__name__
    if name not in incremental_methods():
        raise CrowdDataError(
            f"{name} has no partial_fit; state files hold {sorted(incremental_methods())}"
        )
    if not hasattr(model, "crowd_"):
        raise CrowdDataError(f"{name} is not fitted yet: there is no state to save")
    crowd: CrowdData = model.crowd_
    arrays: dict[str, np.ndarray] = {
        "task": crowd.task,
        "worker": crowd.worker,
        "label": crowd.label,
        "probas_": array_attribute(model, "probas_"),  # the arrays behind a DataFrame fit
        "labels_": array_attribute(model, "labels_"),
    }
    for field in _ID_FIELDS:
        arrays[field] = _storable_ids(getattr(crowd, field), field)
    if crowd.truth is not None:
        arrays["truth"] = crowd.truth
    pointer = model._store.pointer  # crowd_ above merged any appended tail in
    if pointer is not None:
        arrays["pointer"] = pointer
    margins = getattr(model, "_margins", None)
    if margins is not None:
        arrays["margins"] = margins
    attributes = list(model.state_attributes)
    for attribute in attributes:
        arrays[f"attr{attribute}"] = np.asarray(array_attribute(model, attribute))
    statistics = getattr(model, "_statistics", None)
    n_statistics = 0 if statistics is None else len(statistics)
    for number in range(n_statistics):
        arrays[f"statistics{number}"] = statistics[number]
    history = getattr(model, "history_", None)
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "method": name,
        "params": {key: _jsonable(value) for key, value in model.get_params().items()},
        "campaign": dict(campaign if campaign is not None else getattr(model, "campaign_", {})),
        "id_kinds": {field: getattr(crowd, field).dtype.kind for field in _ID_FIELDS},
        "attributes": attributes,
        "n_statistics": n_statistics,
        "scalars": {
            key: _jsonable(getattr(model, key))
            for key in ("n_iter_", "converged_", "_probas_exact")
            if hasattr(model, key)
        },
        "history": None if history is None else history.to_dict(orient="list"),
    }
    arrays["meta"] = np.array(json.dumps(meta))
    with atomic_open(path, "wb") as handle:
        np.savez(handle, **arrays)


def read_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``meta`` document of a state file (CrowdDataError if it is not one)."""
    with _open(path) as archive:
        return _meta(archive, path)


def load_state(path: str | os.PathLike[str]) -> Any:
    """A fitted aggregator from a state file written by :func:`save_state`.

    The estimator is rebuilt with the saved parameters and every fitted attribute
    (``probas_``, ``labels_``, ``classes_``, ``task_ids_``, ``worker_ids_``,
    ``crowd_`` and the method's parameters), ready for ``partial_fit``; the campaign
    fingerprint is in ``campaign_``. Raises CrowdDataError for a file that is not a
    crowdlearn state file (no code in the file is ever run: no pickles).
    """
    with _open(path) as archive:
        meta = _meta(archive, path)
        methods = incremental_methods()
        if meta.get("method") not in methods:
            raise CrowdDataError(f"{path}: unknown method {meta.get('method')!r} in the state")
        try:
            method = methods[meta["method"]]
            # a parameter added since the file was written takes the value the file
            # was fitted under (the class says which), not today's default
            params = {**getattr(method, "legacy_params", {}), **meta["params"]}
            model = method(**params)
            ids = {
                field: _restored_ids(archive[field], meta["id_kinds"][field])
                for field in _ID_FIELDS
            }
            crowd = CrowdData.__new__(CrowdData)
            crowd._set(
                task=archive["task"],
                worker=archive["worker"],
                label=archive["label"],
                features=None,
                truth=archive["truth"] if "truth" in archive.files else None,
                inputs=None,
                **ids,
            )
            _check_codes(crowd, path)
            pointer = archive["pointer"] if "pointer" in archive.files else None
            sorted_rows = pointer is not None and is_sorted(crowd.task)
            if pointer is not None and (len(pointer) != crowd.n_tasks + 1 or not sorted_rows):
                raise CrowdDataError(f"{path}: a damaged crowdlearn state file (pointer)")
            model._store = AnnotationStore(crowd, pointer)
            if "margins" in archive.files:
                model._margins = archive["margins"]
            model.probas_ = archive["probas_"]
            model.labels_ = archive["labels_"]
            for attribute in meta["attributes"]:
                setattr(model, attribute, archive[f"attr{attribute}"])
            if meta["n_statistics"]:
                model._statistics = tuple(
                    archive[f"statistics{n}"] for n in range(meta["n_statistics"])
                )
            for key, value in meta["scalars"].items():
                setattr(model, key, value)
            if meta["history"] is not None:
                model.history_ = pd.DataFrame(meta["history"])
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, CrowdDataError):
                raise
            raise CrowdDataError(f"{path}: a damaged crowdlearn state file ({error})") from None
    expected = (crowd.n_tasks, crowd.n_classes)
    if model.probas_.shape != expected or len(model.labels_) != crowd.n_tasks:
        raise CrowdDataError(f"{path}: a damaged crowdlearn state file (shapes disagree)")
    model.classes_ = crowd.classes
    model.task_ids_ = crowd.task_ids
    model.worker_ids_ = crowd.worker_ids
    model.campaign_ = meta["campaign"]
    return model


class _open:
    """The state file as an ``NpzFile`` (no pickles), with one error for a file that
    is not a zip of arrays."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path

    def __enter__(self) -> Any:
        try:
            self.archive = np.load(self.path, allow_pickle=False)
        except FileNotFoundError:
            raise
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
            raise CrowdDataError(
                f"{self.path}: not a crowdlearn state file ({type(error).__name__})"
            ) from None
        if not hasattr(self.archive, "files"):  # a plain .npy
            raise CrowdDataError(f"{self.path}: not a crowdlearn state file (a .npy array)")
        return self.archive

    def __exit__(self, *exc: object) -> None:
        self.archive.close()


def _meta(archive: Any, path: str | os.PathLike[str]) -> dict[str, Any]:
    if "meta" not in archive.files:
        raise CrowdDataError(f"{path}: not a crowdlearn state file (no meta record)")
    try:
        meta = json.loads(str(archive["meta"]))
    except (ValueError, TypeError):
        raise CrowdDataError(f"{path}: not a crowdlearn state file (unreadable meta)") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CrowdDataError(f"{path}: not a crowdlearn state file")
    if meta.get("version") != VERSION:
        raise CrowdDataError(
            f"{path}: state file version {meta.get('version')}, this crowdlearn reads {VERSION}"
        )
    return meta


def _check_codes(crowd: CrowdData, path: Any) -> None:
    sizes = {"task": crowd.n_tasks, "worker": crowd.n_workers, "label": crowd.n_classes}
    lengths = {len(getattr(crowd, name)) for name in sizes}
    if len(lengths) != 1:
        raise CrowdDataError(f"{path}: a damaged crowdlearn state file (code arrays differ)")
    for name, size in sizes.items():
        codes = getattr(crowd, name)
        if len(codes) and (codes.min() < 0 or codes.max() >= size):
            raise CrowdDataError(f"{path}: a damaged crowdlearn state file ({name} codes)")


def _storable_ids(ids: np.ndarray, field: str) -> np.ndarray:
    """Ids as an array NumPy saves without pickles: text ids become Unicode."""
    if ids.dtype.kind != "O":
        return ids
    if all(isinstance(value, str) for value in ids.tolist()):
        return ids.astype(str) if len(ids) else np.array([], dtype="U1")
    kinds = sorted({type(value).__name__ for value in ids.tolist()})
    raise CrowdDataError(f"cannot save {field} of type {', '.join(kinds)} in a state file")


def _restored_ids(ids: np.ndarray, kind: str) -> np.ndarray:
    return ids.astype(object) if kind == "O" else ids
