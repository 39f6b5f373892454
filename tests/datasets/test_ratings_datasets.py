"""Loaders of the Snow et al. (2008) numeric ratings with expert scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlearn.datasets import DatasetError
from crowdlearn.datasets.ratings import AFFECT, SNOW_RATINGS, load_snow_ratings


def test_missing_files_name_the_path(tmp_path):
    with pytest.raises(DatasetError, match=r"anger\.standardized\.tsv"):
        load_snow_ratings("anger", tmp_path)
    with pytest.raises(DatasetError, match="unknown"):
        load_snow_ratings("happiness", tmp_path)


def test_a_changed_file_is_refused(tmp_path, shared_datasets):
    folder = tmp_path / "snow2008_nlp_mturk" / "all_collected_data"
    folder.mkdir(parents=True)
    source = shared_datasets / "snow2008_nlp_mturk" / "all_collected_data" / "joy.standardized.tsv"
    extra = "X\tAEXTRA\t500\t50\t0\n"  # one more, well-formed annotation
    (folder / "joy.standardized.tsv").write_text(source.read_text() + extra)
    with pytest.raises(DatasetError, match="sha256"):
        load_snow_ratings("joy", tmp_path)


@pytest.mark.parametrize("name", SNOW_RATINGS)
def test_loaded_as_in_the_file(name, shared_datasets):
    data = load_snow_ratings(name, shared_datasets)
    path = shared_datasets / "snow2008_nlp_mturk" / "all_collected_data"
    frame = pd.read_csv(path / f"{name}.standardized.tsv", sep="\t", dtype={"orig_id": str})
    n_tasks = 100 if name in AFFECT else 30
    assert data.n_tasks == n_tasks and data.n_annotations == 10 * n_tasks
    assert data.levels is None and np.isfinite(data.truth).all()
    # every annotation's value and its task's truth are the file's
    rebuilt = pd.DataFrame(
        {
            "orig_id": data.task_ids[data.task].astype(str),
            "worker": data.worker_ids[data.worker],
            "response": data.value,
            "gold": data.truth[data.task],
        }
    ).sort_values(["orig_id", "worker"], ignore_index=True)
    expected = (
        frame.rename(columns={"!amt_worker_ids": "worker"})[list(rebuilt.columns)]
        .sort_values(["orig_id", "worker"], ignore_index=True)
        .astype({"response": float, "gold": float})
    )
    pd.testing.assert_frame_equal(rebuilt, expected, check_dtype=False)
