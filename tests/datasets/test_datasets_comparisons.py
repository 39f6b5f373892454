"""The IMDB-WIKI-SbS ages, the latent scale of the comparison crowds."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from crowdlearn.datasets import DatasetError
from crowdlearn.datasets.comparisons import IMDB_WIKI_SBS_SCORES, load_imdb_wiki_sbs_scores


def test_loads_9150_ages_by_item(shared_datasets):
    ages = load_imdb_wiki_sbs_scores(shared_datasets)
    assert len(ages) == 9150 and ages.index.is_unique  # PROVENANCE.md
    assert ages.name == "age" and ages.dtype == np.float64
    assert ages.index[0].startswith("https://") and ages.index[0].endswith(".jpg")
    assert 0 < ages.min() < ages.max() < 120


def test_absent_file_names_the_missing_path(tmp_path):
    with pytest.raises(DatasetError, match="imdb_wiki_sbs_scores"):
        load_imdb_wiki_sbs_scores(tmp_path)


def test_an_altered_file_is_refused(tmp_path, shared_datasets):
    copy = tmp_path / IMDB_WIKI_SBS_SCORES
    copy.parent.mkdir(parents=True)
    shutil.copy(shared_datasets / IMDB_WIKI_SBS_SCORES, copy)
    with copy.open("a") as handle:
        handle.write("https://example.org/x.jpg,30\n")
    with pytest.raises(DatasetError, match="sha256"):
        load_imdb_wiki_sbs_scores(tmp_path)
    assert len(load_imdb_wiki_sbs_scores(tmp_path, verify=False)) == 9151
