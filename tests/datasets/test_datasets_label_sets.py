"""load_relex: the CrowdTruth RelEx crowd as label sets, with the experts' labels."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn.datasets import DatasetError
from crowdlearn.datasets.label_sets import RELATIONS, load_relex, relation_codes


def test_missing_files_are_named(tmp_path):
    with pytest.raises(DatasetError, match="raw_RelEx"):
        load_relex(tmp_path)
    raw = tmp_path / "crowdtruth_medical_relex" / "raw_RelEx"
    raw.mkdir(parents=True)
    (raw / "RelEx_batch_01.csv").write_text("_unit_id\n")
    with pytest.raises(DatasetError, match=r"ground_truth_cause\.csv"):
        load_relex(tmp_path)


def test_relex(shared_datasets):
    relex = load_relex(shared_datasets)
    data = relex.data
    # PROVENANCE.md: 50962 judgments (7 repeated answers dropped), 3397 units, 468
    # workers, 14 relations
    assert (data.n_tasks, data.n_workers, data.n_classes) == (3397, 468, 14)
    assert data.n_annotations == 50962 - 7
    assert {"CAUSES", "TREATS", "NONE", "OTHER"} <= set(data.classes.tolist())
    assert np.all(data.answers.sum(axis=1) >= 1)  # every worker chose something
    assert np.bincount(data.task).min() >= 14
    # every expert label of the ground-truth files is reached, once per sentence
    assert relex.expert["cause"].notna().sum() == 975
    assert relex.expert["treat"].notna().sum() == 621
    assert relex.expert["cause"].sum() == 247 and relex.expert["treat"].sum() == 294
    assert relex.expert.index.equals(relex.crowdtruth.index)
    judged = relex.expert["cause"].notna()
    assert relex.sentence[judged].is_unique
    assert relex.crowdtruth.loc[judged, "cause"].between(0, 1).all()
    # the sentences' crowd score follows the share of workers selecting the relation
    codes = relation_codes(data)
    assert set(codes) == set(RELATIONS)
    shares = np.bincount(data.task, weights=data.answers[:, codes["treat"]]) / np.bincount(
        data.task
    )
    scored = relex.crowdtruth["treat"].notna().to_numpy()
    assert np.corrcoef(shares[scored], relex.crowdtruth["treat"][scored])[0, 1] > 0.8
