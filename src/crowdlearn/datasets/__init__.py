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
"""

from crowdlearn.datasets._api import fetch, info, list_datasets, load
from crowdlearn.datasets._storage import data_root
from crowdlearn.datasets._types import Dataset, DatasetError, DatasetInfo

#: The public name of :func:`list_datasets` (``datasets.list()``), shadowing the builtin here only.
list = list_datasets

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
