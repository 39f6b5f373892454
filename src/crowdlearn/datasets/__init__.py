"""Named real crowd datasets: metadata, checksummed files, download and loading.

Each dataset's files live under a data root at fixed relative paths: the ``root``
argument, else the ``CROWDLEARN_DATA`` environment variable, else the user cache
directory (see :func:`data_root`). :func:`fetch` downloads them from their pinned public
sources (or a mirror) and :func:`load` checks their sha256 digests and returns a
:class:`Dataset` whose ``train`` is a :class:`~crowdlearn.CrowdData`.

Examples
--------
>>> from crowdlearn import datasets
>>> datasets.list()[:3]
['bluebirds', 'cf', 'cf_amt']
>>> datasets.info("cifar10h").license
'CC BY-NC-SA 4.0 (non-commercial use only, share alike, cite the paper)'

Loading needs the files (``crowdlearn datasets fetch labelme`` downloads them)::

    data = datasets.load("labelme")
    data.train                       # CrowdData with VGG16 features and truth
    X_test, y_test = data.test

The names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdlearn._lazy import attach

if TYPE_CHECKING:
    from crowdlearn.datasets._api import fetch, info, list_datasets, load
    from crowdlearn.datasets._storage import data_root
    from crowdlearn.datasets._types import Dataset, DatasetError, DatasetInfo

    #: The public name of :func:`list_datasets` (``datasets.list()``).
    list = list_datasets

__getattr__, __dir__ = attach(
    __name__,
    {
        "fetch": "._api",
        "info": "._api",
        "list_datasets": "._api",
        "load": "._api",
        # ``datasets.list()``: shadows the builtin in this namespace only
        "list": "._api:list_datasets",
        "data_root": "._storage",
        "Dataset": "._types",
        "DatasetError": "._types",
        "DatasetInfo": "._types",
    },
)

__all__ = [
    "Dataset",
    "DatasetError",
    "DatasetInfo",
    "data_root",
    "fetch",
    "info",
    "list",
    "list_datasets",
    "load",
]
