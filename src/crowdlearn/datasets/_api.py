"""Public functions of the dataset registry: list, describe, load and fetch datasets."""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path
from typing import Literal

from crowdlearn.datasets._catalog import REGISTRY, Entry
from crowdlearn.datasets._storage import (
    data_root,
    download,
    has_digest,
    mirror_url,
    place_files,
    require_files,
    verify_files,
)
from crowdlearn.datasets._types import Dataset, DatasetError, DatasetInfo


def list_datasets() -> list[str]:
    """Names of the registered datasets, sorted.

    Examples
    --------
    >>> from crowdlearn import datasets
    >>> "labelme" in datasets.list()
    True
    """
    return sorted(REGISTRY)


def info(name: str) -> DatasetInfo:
    """Metadata of a registered dataset (nothing is read from disk).

    Parameters
    ----------
    name : str
        Registry name, one of :func:`list_datasets`.

    Raises
    ------
    DatasetError
        If ``name`` is not registered; the message suggests the closest name.

    Examples
    --------
    >>> from crowdlearn import datasets
    >>> meta = datasets.info("labelme")
    >>> meta.n_tasks, meta.n_workers, meta.n_classes
    (1000, 59, 8)
    """
    return _lookup(name).info


def load(name: str, root: str | os.PathLike[str] | None = None, *, verify: bool = True) -> Dataset:
    """Load a registered dataset from the data root.

    Parameters
    ----------
    name : str
        Registry name, one of :func:`list_datasets`.
    root : path-like, optional
        Directory holding the datasets, laid out as :func:`fetch` writes it; default
        :func:`data_root` (``CROWDLEARN_DATA``, else the user cache directory).
    verify : bool, default True
        Check the sha256 digest of every file first. A file already verified in this
        process and unchanged since (same size and modification time) is not hashed again.

    Returns
    -------
    Dataset
        ``train`` is a :class:`~crowdlearn.CrowdData` with features and truth where
        the dataset has them; ``valid`` / ``test`` are ``(X, y)`` pairs with ``y`` the
        class codes of ``train.classes``; ``pool`` is set for feature-only datasets.

    Raises
    ------
    DatasetError
        Unknown name, missing file (the message says how to fetch it) or a file whose
        digest differs from the recorded one.
    """
    entry = _lookup(name)
    base = data_root(root)
    require_files(name, base, entry.info.files)
    if verify:
        verify_files(name, base, entry.info.files)
    return entry.loader({role: base / rel for role, rel in entry.roles.items()}, entry.info)


def fetch(
    name: str,
    root: str | os.PathLike[str] | None = None,
    *,
    mirror: str | None = None,
    force: bool = False,
    progress: bool | Literal["auto"] = "auto",
) -> Path:
    """Download every file of a dataset into the data root.

    Every missing file is first downloaded into a temporary staging folder and checked
    against its recorded sha256; only when all of them are complete are they moved into
    place (each by an atomic rename beside its destination). A failed, interrupted or
    corrupted download (offline, an unreachable or broken mirror) therefore leaves no
    new file and no new folder under the data root.

    Parameters
    ----------
    name : str
        Registry name, one of :func:`list_datasets`.
    root : path-like, optional
        Destination directory; default :func:`data_root`.
    mirror : str, optional
        Base URL of a copy of the data tree (``https://...`` or ``file:///...``): a file
        is fetched from ``mirror + "/" + its relative path`` instead of its public source.
    force : bool, default False
        Download files that are already present with the right digest too.
    progress : bool or "auto", default "auto"
        Show a progress bar per file ("auto": when stderr is a terminal).

    Returns
    -------
    Path
        The data root, to pass to :func:`load`.

    Raises
    ------
    DatasetError
        Unknown name, a network or file error, or downloaded bytes whose digest
        differs from the recorded one; the message names the URL.
    """
    entry = _lookup(name)
    base = data_root(root)
    wanted = {
        rel: sha256
        for rel, sha256 in entry.info.files.items()
        if force or not has_digest(base / rel, sha256)
    }
    if not wanted:
        return base
    with tempfile.TemporaryDirectory(prefix=f"crowdlearn-fetch-{name}-") as staging:
        staged = {}
        for index, (rel, sha256) in enumerate(wanted.items()):
            url = entry.info.sources[rel] if mirror is None else mirror_url(mirror, rel)
            staged[rel] = Path(staging) / f"{index}-{Path(rel).name}"
            download(url, staged[rel], sha256, progress)
        place_files(staged, base)
    return base


def _lookup(name: str) -> Entry:
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        pass
    close = difflib.get_close_matches(str(name), list(REGISTRY), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise DatasetError(
        f"unknown dataset {name!r}; {hint}the datasets are: {', '.join(list_datasets())}"
    )
