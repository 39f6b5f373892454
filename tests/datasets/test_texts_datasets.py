"""The CrowdSpeech loader (free texts with true texts)."""

from __future__ import annotations

import csv

import pytest

from crowdlearn.data import Texts
from crowdlearn.datasets import DatasetError
from crowdlearn.datasets.texts import (
    crowdspeech_path,
    load_crowdspeech,
    load_crowdspeech_baselines,
)


def test_missing_files_name_the_path(tmp_path):
    with pytest.raises(DatasetError, match=r"crowdspeech-dev-clean-crowd\.tsv"):
        load_crowdspeech("dev-clean", tmp_path)
    with pytest.raises(DatasetError, match="unknown"):
        load_crowdspeech("test-clean", tmp_path)


def test_a_changed_file_is_refused(tmp_path, shared_datasets):
    folder = tmp_path / "crowdspeech"
    folder.mkdir()
    source = shared_datasets / "crowdspeech" / "crowdspeech-dev-other-gt.txt"
    (folder / source.name).write_text(source.read_text() + "x\ty\n")
    with pytest.raises(DatasetError, match="sha256"):
        crowdspeech_path("dev-other", "gt.txt", tmp_path)


@pytest.mark.parametrize("split", ["dev-clean", "dev-other"])
def test_loaded_as_in_the_files(split, shared_datasets):
    data = load_crowdspeech(split, shared_datasets)
    assert isinstance(data, Texts)
    folder = shared_datasets / "crowdspeech"
    with (folder / f"crowdspeech-{split}-crowd.tsv").open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    kept = [r for r in rows if r["OUTPUT:transcription"].strip()]
    assert data.n_annotations == len(kept)
    if split == "dev-clean":
        assert data.n_annotations == 18921
    # every answer is the file's, in the file's order
    assert data.text.tolist() == [r["OUTPUT:transcription"] for r in kept]
    assert data.task_ids[data.task].tolist() == [r["INPUT:audio"] for r in kept]
    with (folder / f"crowdspeech-{split}-gt.txt").open() as handle:
        gt = dict(line.rstrip("\n").split("\t") for line in handle)
    assert data.truth.tolist() == [gt[t] for t in data.task_ids.tolist()]
    baselines = load_crowdspeech_baselines(split, shared_datasets)
    assert set(baselines.index) == set(data.task_ids.tolist())
