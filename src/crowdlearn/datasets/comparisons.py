"""The true scores behind a pairwise-comparison dataset: IMDB-WIKI-SbS ages.

Pavlichenko and Ustalov, "IMDB-WIKI-SbS: An Evaluation Dataset for Crowdsourced
Pairwise Comparisons", NeurIPS 2021 Data-Centric AI workshop (arXiv 2110.14990); file
``data/gt.csv`` of the Toloka/IMDB-WIKI-SbS repository (CC BY 4.0): 9150 photos of
people (the image URL is the item id) with the person's true age in years. The crowd's
comparisons are not part of the shared copy, so these ages serve as the latent scale of
simulated comparison crowds (:func:`crowdlearn.simulate.simulate_comparisons`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pandas as pd

from crowdlearn.datasets._storage import data_root
from crowdlearn.datasets._types import DatasetError

#: Where the file lies under the data root.
IMDB_WIKI_SBS_SCORES = Path("imdb_wiki_sbs_scores") / "gt.csv"
#: Its sha256 digest (PROVENANCE.md).
IMDB_WIKI_SBS_SHA256 = "47281f24209f4566f0e8d0e0615b3d249f8045e36260c8dfa4e44b80f1c31d08"


def load_imdb_wiki_sbs_scores(
    root: str | os.PathLike[str] | None = None, verify: bool = True
) -> pd.Series:
    """The true age of each IMDB-WIKI-SbS item.

    Parameters
    ----------
    root : path-like, optional
        The data root (see :func:`crowdlearn.datasets.data_root`).
    verify : bool, default True
        Check the file's sha256 digest.

    Returns
    -------
    pandas.Series
        Age in years (float), indexed by item id (the image URL), named ``"age"``.

    Raises
    ------
    DatasetError
        When the file is absent, altered or not in the expected layout.
    """
    path = data_root(root) / IMDB_WIKI_SBS_SCORES
    if not path.is_file():
        raise DatasetError(f"the IMDB-WIKI-SbS scores are not at {path}")
    content = path.read_bytes()
    if verify and hashlib.sha256(content).hexdigest() != IMDB_WIKI_SBS_SHA256:
        raise DatasetError(f"{path} does not have the published sha256 digest")
    frame = pd.read_csv(path)
    if list(frame.columns) != ["label", "score"]:
        raise DatasetError(f"{path}: expected columns label, score; got {list(frame.columns)}")
    if not frame["label"].is_unique:
        raise DatasetError(f"{path}: an item appears more than once")
    ages = pd.Series(
        frame["score"].to_numpy(dtype=float), index=pd.Index(frame["label"], name="item")
    )
    return ages.rename("age")
