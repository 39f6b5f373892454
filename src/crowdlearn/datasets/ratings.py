"""Real numeric-rating crowds with expert scores: Snow et al. (2008) affect and word
similarity.

Snow, O'Connor, Jurafsky & Ng, "Cheap and fast - but is it good? Evaluating non-expert
annotations for natural language tasks", EMNLP 2008, sections 4.1 (affect recognition)
and 4.2 (word similarity). Files ``snow2008_nlp_mturk/all_collected_data/
NAME.standardized.tsv`` under the data root (``crowdlearn.datasets.data_root``), one
tab-separated row per annotation, columns ``!amt_annotation_ids``, ``!amt_worker_ids``,
``orig_id`` (the task), ``response`` (the worker's rating) and ``gold`` (the experts'
score of the task, the same on every row of a task):

* ``anger``, ``disgust``, ``fear``, ``joy``, ``sadness``, ``surprise``: 100 news
  headlines (SemEval-2007 Affective Text), emotion intensity 0 .. 100; ``valence``:
  -100 .. 100. 10 ratings per headline from 38 workers; gold = the expert score of
  the SemEval-2007 data, the reference of Snow et al.'s section 4.1.
* ``wordsim``: 30 word pairs of Miller & Charles (1991), similarity rated 0 .. 10 by 10
  workers; gold = Miller & Charles's expert mean on a 0 .. 4 scale (a different scale:
  correlations compare, absolute errors do not).

Each loader returns a :class:`~crowdlearn.data.Ratings` (numeric, ``levels=None``) with
the expert scores as ``truth``, task ids the ``orig_id`` values and worker ids the AMT
worker ids; the file's sha256 is checked against the published one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pandas as pd

from crowdlearn.data.ratings import Ratings
from crowdlearn.datasets._storage import data_root
from crowdlearn.datasets._types import DatasetError

#: The affect tasks of Snow et al. (2008), in the paper's order.
AFFECT = ("anger", "disgust", "fear", "joy", "sadness", "surprise", "valence")
#: Every ratings data set of Snow et al. (2008) this module loads.
SNOW_RATINGS = (*AFFECT, "wordsim")
FOLDER = Path("snow2008_nlp_mturk") / "all_collected_data"

_SHA256 = {
    "anger": "1e4abce1ad535d9f13f336e46ef19f37d4b116131e2096c7cfe249448b77b98a",
    "disgust": "a9819a8c013a73131d478e570ec3ba36593d6fe524913d95f1449935f8a50776",
    "fear": "3651498d353ddfd535cb83e307abd6a7aa0950b5b0840b4cc885dcd583fcb75e",
    "joy": "b721af40776a8aec457c623c838c6a6cfcb0b320d1ed0afc7711141c5a5f8fb5",
    "sadness": "e2bd69b4395702ee02db17b5771892d9be56bae10ec56ff32dae7ef537de9d66",
    "surprise": "4aaad441c41b4852746c48c3bfff1ea5205f910096bf34a041270f04853471f3",
    "valence": "31503be60e600ad1b66e78094bab1f2bc432a3cd73fb17d7892e21710b0ebb99",
    "wordsim": "de5a9f6c514db42915f11996314375659584cf70162cd787dd523ca4431fb2df",
}
_COLUMNS = {"orig_id": "task", "!amt_worker_ids": "worker", "response": "value", "gold": "gold"}


def snow_ratings_path(name: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Where the file of Snow et al.'s ratings task ``name`` lives under the data root."""
    if name not in _SHA256:
        raise DatasetError(
            f"unknown Snow et al. ratings task {name!r}; the tasks are {', '.join(SNOW_RATINGS)}"
        )
    return data_root(root) / FOLDER / f"{name}.standardized.tsv"


def load_snow_ratings(name: str, root: str | os.PathLike[str] | None = None) -> Ratings:
    """One ratings task of Snow et al. (2008) with the experts' scores as truth.

    Parameters
    ----------
    name : {"anger", "disgust", "fear", "joy", "sadness", "surprise", "valence", "wordsim"}
    root : path-like, optional
        The data root (default: ``crowdlearn.datasets.data_root()``).

    Returns
    -------
    Ratings
        Numeric ratings, ``truth`` = the expert score of each task.

    Raises
    ------
    DatasetError
        When the file is missing (naming its path), its checksum differs or a task has
        two different gold scores.
    """
    path = snow_ratings_path(name, root)
    if not path.is_file():
        raise DatasetError(
            f"the {name!r} ratings of Snow et al. (2008) are not at {path}; put the "
            f"snow2008_nlp_mturk folder under the data root ({data_root(root)})"
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != _SHA256[name]:
        raise DatasetError(f"{path} has sha256 {digest}, expected {_SHA256[name]}")
    frame = pd.read_csv(path, sep="\t", usecols=list(_COLUMNS), dtype={"orig_id": str})
    frame = frame.rename(columns=_COLUMNS)
    gold = frame.groupby("task", sort=True)["gold"]
    if (gold.nunique() > 1).any():
        raise DatasetError(f"{path}: a task has more than one gold score")
    truth = gold.first()
    data = Ratings.from_arrays(
        frame["task"].to_numpy(),
        frame["worker"].to_numpy(),
        frame["value"].to_numpy(float),
        truth=truth,
    )
    if not np.isfinite(data.truth).all():  # pragma: no cover - guarded by the checksum
        raise DatasetError(f"{path}: some tasks have no gold score")
    return data
