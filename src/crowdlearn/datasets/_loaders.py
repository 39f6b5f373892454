"""Readers turning each dataset's files into a :class:`Dataset`.

A loader takes the absolute path of each of its files, keyed by the role the catalog
gives it (``"annotations"``, ``"train_features"``, ...), and the dataset's info. All
parsing is vectorised with numpy and pandas.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from crowdlearn.data import CrowdData, DuplicatePolicy
from crowdlearn.datasets._types import Dataset, DatasetError, DatasetInfo, Split

Paths = Mapping[str, Path]

#: Columns of Snow et al.'s ``*.standardized.tsv`` files, renamed to the long-table names.
_SNOW_COLUMNS = {
    "orig_id": "task",
    "!amt_worker_ids": "worker",
    "response": "label",
    "gold": "truth",
}
#: The first four (unnamed) columns of the ActiveCrowdToolkit CSV files.
_ACTIVE_CROWD_COLUMNS = ["worker", "task", "label", "truth"]


def load_labelme(paths: Paths, info: DatasetInfo) -> Dataset:
    """LabelMe: a task x worker answer matrix, VGG16 features and label files per split."""
    train = CrowdData.from_matrix(
        np.loadtxt(paths["answers"], dtype=np.int64),
        n_classes=info.n_classes,
        features=np.load(paths["train_features"]),
        truth=_read_codes(paths["train_truth"]),
    )
    train = with_class_names(train, info)
    return Dataset(
        info.name,
        info,
        train,
        valid=(np.load(paths["valid_features"]), _read_codes(paths["valid_truth"])),
        test=(np.load(paths["test_features"]), _read_codes(paths["test_truth"])),
    )


def load_music(paths: Paths, info: DatasetInfo) -> Dataset:
    """Music genre: worker answers, and gold/test tables of Marsyas features with truth."""
    answers = pd.read_csv(paths["annotations"], usecols=["id", "annotator", "class"])
    gold = pd.read_csv(paths["train"], index_col="id")
    train = CrowdData.from_arrays(
        answers["id"],
        answers["annotator"],
        answers["class"],
        task_ids=np.sort(gold.index.to_numpy()),
        features=_feature_columns(gold),
        truth=gold["class"],
    )
    test = pd.read_csv(paths["test"])
    return Dataset(info.name, info, train, test=_labelled_instances(test, train.classes))


def load_bluebirds(paths: Paths, info: DatasetInfo) -> Dataset:
    """Bluebirds: YAML maps worker -> {image: bool} and image -> bool."""
    answers = _read_yaml(paths["annotations"])
    truth = _read_yaml(paths["truth"])
    long = pd.concat(
        {worker: pd.Series(labels) for worker, labels in answers.items()},
        names=["worker", "task"],
    ).reset_index(name="label")
    train = CrowdData.from_frame(long, truth=pd.Series(truth))
    return Dataset(info.name, info, train)


def load_snow(paths: Paths, info: DatasetInfo) -> Dataset:
    """Snow et al. (2008): one tab-separated row per annotation with the task's gold label.

    No worker labels a task twice in these files, so a repeated pair is an error.
    """
    frame = pd.read_csv(paths["annotations"], sep="\t", usecols=list(_SNOW_COLUMNS))
    return _long_table(frame.rename(columns=_SNOW_COLUMNS), info, duplicates="error")


def load_active_crowd(paths: Paths, info: DatasetInfo) -> Dataset:
    """ActiveCrowdToolkit: headerless CSV ``worker, task, label, gold[, extra]``.

    A worker may label a task more than once (in separate HITs); every answer is kept,
    as the toolkit and the published statistics of these datasets do.
    """
    frame = pd.read_csv(
        paths["annotations"], header=None, usecols=range(4), names=_ACTIVE_CROWD_COLUMNS
    )
    dataset = _long_table(frame, info, duplicates="keep")
    if info.class_names is None:
        return dataset
    return Dataset(info.name, info, with_class_names(dataset.train, info))


def load_cifar10h(paths: Paths, info: DatasetInfo) -> Dataset:
    """CIFAR-10H: per-image vote counts of anonymous annotators."""
    train = CrowdData.from_counts(np.load(paths["counts"]), classes=info.class_names)
    return Dataset(info.name, info, train)


def load_usps(paths: Paths, info: DatasetInfo) -> Dataset:
    """USPS: an HDF5 file with ``train`` and ``test`` groups of pixels and digits."""
    try:
        import h5py
    except ImportError as exc:
        raise DatasetError(
            f"reading {info.name!r} needs h5py: `pip install h5py` "
            "(or `pip install crowdlearn[hdf5]`)"
        ) from exc
    with h5py.File(paths["data"], "r") as store:
        pool, test = _hdf5_split(store, "train"), _hdf5_split(store, "test")
    return Dataset(info.name, info, None, test=test, pool=pool)


# ---------------------------------------------------------------------- shared helpers


def with_class_names(train: CrowdData, info: DatasetInfo) -> CrowdData:
    """The data with the source's class names as class ids (codes unchanged).

    Class code ``k`` (the ``k``-th class in the file's sorted order, e.g. LabelMe's
    0..7 or MS's 1..10) becomes ``info.class_names[k]``, so aggregated labels, learned
    predictions and reports show the names; held-out ``y`` codes stay valid.
    """
    names = info.class_names
    if names is None or list(train.classes) == list(names):
        return train
    if train.n_classes != len(names):
        raise DatasetError(
            f"dataset {info.name!r} has {train.n_classes} classes in its files but "
            f"{len(names)} class names"
        )
    return CrowdData(
        train.task,
        train.worker,
        train.label,
        task_ids=train.task_ids,
        worker_ids=None if train.is_anonymous else train.worker_ids,
        classes=np.array(names, dtype=object),
        features=train.features,
        truth=train.truth,
        # The pairs were checked (or kept on purpose) when the files were read.
        duplicates="keep",
    )


def _long_table(frame: pd.DataFrame, info: DatasetInfo, duplicates: DuplicatePolicy) -> Dataset:
    """Annotations from a frame with columns task, worker, label and a per-row truth."""
    train = CrowdData.from_frame(frame, truth="truth", duplicates=duplicates)
    return Dataset(info.name, info, train)


def _read_codes(path: Path) -> np.ndarray:
    """A text file of one integer class code per line."""
    return np.loadtxt(path, dtype=np.int64, ndmin=1)


def _read_yaml(path: Path) -> dict:
    """A YAML file parsed with the safe loader (its C implementation when available)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)


def _feature_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """The ``feature*`` columns of a Marsyas table, in file order."""
    return frame.loc[:, frame.columns.str.startswith("feature")]


def _labelled_instances(frame: pd.DataFrame, classes: np.ndarray) -> Split:
    """``(X, y)`` from a table of features and a ``class`` column of class ids."""
    codes = pd.Index(classes).get_indexer(frame["class"])
    if np.any(codes < 0):
        unknown = sorted(set(frame["class"][codes < 0]))
        raise DatasetError(f"held-out labels {unknown} are not among the classes {list(classes)}")
    return _feature_columns(frame).to_numpy(), codes.astype(np.int64)


def _hdf5_split(store: Any, split: str) -> Split:
    """``(X, y)`` from the ``data`` and ``target`` arrays of one HDF5 group."""
    return store[f"{split}/data"][()], store[f"{split}/target"][()].astype(np.int64)
