"""What the dataset registry hands out: its error, dataset metadata and a loaded dataset."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from crowdlearn.data import CrowdData, CrowdDataError

#: Instances and their true class codes: ``(X, y)`` with ``y`` int64 aligned with the classes.
Split = tuple[np.ndarray, np.ndarray]


class DatasetError(CrowdDataError):
    """A named dataset cannot be found, verified, downloaded or read.

    It is a :class:`~crowdlearn.CrowdDataError` (hence a :class:`ValueError`), so the
    command-line interface reports it like any other bad input: one line, non-zero exit.
    """


@dataclass(frozen=True)
class DatasetInfo:
    """What a registered dataset holds and where its files come from.

    Attributes
    ----------
    name : str
        Registry name, as passed to :func:`~crowdlearn.datasets.load`.
    title : str
        One-line human-readable title.
    description : str
        What the tasks and labels are, where the data come from (paper, source
        repository and commit) and the license.
    citation : str
        The reference to cite when using the data.
    license : str
        License of the data as far as the source states it.
    n_tasks : int
        Crowd-labelled tasks (for a feature-only dataset: instances in the pool).
    n_workers : int or None
        Distinct workers; None when the workers are anonymous or there is no crowd.
    n_annotations : int or None
        Crowd labels; None when there is no crowd.
    n_classes : int
        Number of classes.
    class_names : tuple of str or None
        Name of each class code, when the source names the classes; the loaded
        ``train.classes`` are then these names (class code ``k`` is
        ``class_names[k]``), so outputs show names while ``y`` codes stay valid.
    has_features, has_truth, has_valid, has_test : bool
        Whether the training tasks (the pool, for a feature-only dataset) come with
        features and true labels, and whether a labelled validation or test split is
        shipped.
    files : Mapping[str, str]
        sha256 digest of every file the loader reads, keyed by its path relative to
        the data root.
    sources : Mapping[str, str]
        Public URL of each of those files.
    """

    name: str
    title: str
    description: str
    citation: str
    license: str
    n_tasks: int
    n_workers: int | None
    n_annotations: int | None
    n_classes: int
    class_names: tuple[str, ...] | None
    has_features: bool
    has_truth: bool
    has_valid: bool
    has_test: bool
    # Mappings cannot be hashed: the name and the other fields identify the dataset.
    files: Mapping[str, str] = field(hash=False)
    sources: Mapping[str, str] = field(hash=False)


@dataclass(frozen=True)
class Dataset:
    """A loaded dataset.

    Attributes
    ----------
    name : str
        Registry name.
    info : DatasetInfo
        The dataset's metadata.
    train : CrowdData or None
        The crowd-labelled tasks, with features and truth where the dataset has them;
        None for a feature-only dataset.
    valid, test : (X, y) or None
        Labelled instances held out from the crowd: features and int64 class codes
        aligned with ``train.classes`` (or with the pool's codes).
    pool : (X, y) or None
        Only for feature-only datasets: training instances and their true class codes,
        from which simulated crowds are drawn.
    """

    name: str
    info: DatasetInfo
    train: CrowdData | None
    valid: Split | None = None
    test: Split | None = None
    pool: Split | None = None
