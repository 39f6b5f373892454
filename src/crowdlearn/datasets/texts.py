"""Real free-text crowds with true texts: CrowdSpeech (dev-clean, dev-other).

Pavlichenko, Stelmakh and Ustalov, "CrowdSpeech and Vox DIY: Benchmark Dataset for
Crowdsourced Audio Transcription", NeurIPS Datasets and Benchmarks 2021. Files under
``crowdspeech/`` of the data root (``crowdlearn.datasets.data_root``):

* ``crowdspeech-SPLIT-crowd.tsv``: a Toloka assignments export (task = the
  recording's URL in ``INPUT:audio``, text in ``OUTPUT:transcription``, worker in
  ``ASSIGNMENT:worker_id``), read by :func:`crowdlearn.io.platforms.read_export` with
  the CSV quoting rules (some transcriptions hold line breaks inside quoted cells:
  18,921 answers for dev-clean, not the 19,577 lines of the file); empty answers are
  left out by that reader;
* ``crowdspeech-SPLIT-gt.txt``: recording URL, tab, the LibriSpeech transcription (no
  header, no quoting);
* ``crowdspeech-SPLIT-baselines.tsv``: the authors' aggregated texts (columns
  ``audio``, ``transcription``, ``rover_result``, ``rasa_result``, ``hrrasa_result``,
  ``t5_result``), read by :func:`load_crowdspeech_baselines`.

Every file's sha256 is checked against the one in the folder's PROVENANCE.md.
"""

from __future__ import annotations

import csv
import hashlib
import os
from pathlib import Path

import pandas as pd

from crowdlearn.data.texts import Texts
from crowdlearn.datasets._storage import data_root
from crowdlearn.datasets._types import DatasetError

#: The CrowdSpeech splits this module loads.
CROWDSPEECH_SPLITS = ("dev-clean", "dev-other")
FOLDER = Path("crowdspeech")

_SHA256 = {
    "crowdspeech-dev-clean-baselines.tsv": (
        "8af0f8574d99b2f9b6c5e50225754d0d24746b3ab733e3478871b938b0b1b83a"
    ),
    "crowdspeech-dev-clean-crowd.tsv": (
        "1f4f71afab68528d45c58a3292f7246ba7e7b82c1c0d35e7a6ebd955eaf0e8cb"
    ),
    "crowdspeech-dev-clean-gt.txt": (
        "a57b56c235f206ec208379f10cc42234ab306fbd2c2df8de485253d7074dc67d"
    ),
    "crowdspeech-dev-other-baselines.tsv": (
        "6def8d2f3b155b6c36587771af855b0fde69b12c9e330a34b868717e24f3cfd8"
    ),
    "crowdspeech-dev-other-crowd.tsv": (
        "25985223d43eb2108ba0b30bfb83b53ab13e8befdece1c57af56ab991e382cf7"
    ),
    "crowdspeech-dev-other-gt.txt": (
        "8014ff4cea0e92dce77790d33f2ba537a5aeb5ad4ccbe16df862e15c246e45c4"
    ),
}


def crowdspeech_path(split: str, part: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Where ``crowdspeech-SPLIT-PART`` (part ``crowd.tsv``, ``gt.txt`` or
    ``baselines.tsv``) lives under the data root, checked (present, unchanged)."""
    if split not in CROWDSPEECH_SPLITS:
        raise DatasetError(
            f"unknown CrowdSpeech split {split!r}; the splits are {', '.join(CROWDSPEECH_SPLITS)}"
        )
    name = f"crowdspeech-{split}-{part}"
    path = data_root(root) / FOLDER / name
    if not path.is_file():
        raise DatasetError(
            f"the CrowdSpeech file {name} is not at {path}; put the crowdspeech folder under "
            f"the data root ({data_root(root)})"
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != _SHA256[name]:
        raise DatasetError(f"{path} has sha256 {digest}, expected {_SHA256[name]}")
    return path


def _tsv(path: Path, header: bool) -> pd.DataFrame:
    return pd.read_csv(
        path,
        sep="\t",
        header=0 if header else None,
        quoting=csv.QUOTE_NONE,
        dtype=str,
        keep_default_na=False,
    )


def load_crowdspeech(
    split: str = "dev-clean", root: str | os.PathLike[str] | None = None
) -> Texts:
    """One CrowdSpeech split: the crowd's transcriptions with the true texts as truth.

    Parameters
    ----------
    split : {"dev-clean", "dev-other"}
    root : path-like, optional
        The data root (default: ``crowdlearn.datasets.data_root()``).

    Returns
    -------
    Texts
        Task ids = recording URLs, worker ids = Toloka worker ids, texts as the workers
        typed them (not normalised), ``truth`` = the LibriSpeech transcription (lower
        case, no punctuation).

    Raises
    ------
    DatasetError
        When a file is missing (naming its path) or changed.
    """
    from crowdlearn.io.platforms import read_export, texts_from_export

    export = read_export(crowdspeech_path(split, "crowd.tsv", root), platform="toloka")
    answers = texts_from_export(export)
    gt = _tsv(crowdspeech_path(split, "gt.txt", root), header=False)
    truth = dict(zip(gt[0].tolist(), gt[1].tolist(), strict=True))
    return Texts(
        answers.task,
        answers.worker,
        answers.text,
        task_ids=answers.task_ids,
        worker_ids=answers.worker_ids,
        truth=[truth.get(t) for t in answers.task_ids.tolist()],
    )


def load_crowdspeech_baselines(
    split: str = "dev-clean", root: str | os.PathLike[str] | None = None
) -> pd.DataFrame:
    """The CrowdSpeech authors' aggregated texts of one split, indexed by recording URL:
    columns ``transcription`` (the truth), ``rover_result``, ``rasa_result``,
    ``hrrasa_result``, ``t5_result`` (their crowd-kit runs)."""
    frame = _tsv(crowdspeech_path(split, "baselines.tsv", root), header=True)
    return frame.set_index("audio")
