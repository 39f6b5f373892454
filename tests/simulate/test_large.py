"""The chunked Parquet generator of large synthetic crowds."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from crowdlearn.aggregation import DawidSkene
from crowdlearn.io import read_parquet
from crowdlearn.simulate import write_synthetic_parquet


def test_writes_whole_sorted_tasks_per_file(tmp_path):
    info = write_synthetic_parquet(
        tmp_path / "crowd",
        10_000,
        n_classes=3,
        feedback=5,
        n_workers=20,
        chunk_annotations=3_000,
        seed=2,
        truth_path=tmp_path / "truth.npy",
    )
    assert info == {
        "n_tasks": 2000,
        "n_workers": 20,
        "n_classes": 3,
        "n_annotations": 10_000,
        "n_files": 4,
    }
    files = sorted((tmp_path / "crowd").iterdir())
    assert [f.name for f in files] == [f"part-{i:05d}.parquet" for i in range(4)]
    previous_max = -1
    for file in files:
        table = pq.read_table(file)
        assert table.schema.field("task").type == "int32"
        task = table.column("task").to_numpy()
        assert np.all(np.diff(task) >= 0) and task.min() > previous_max
        previous_max = task.max()
    data = read_parquet(tmp_path / "crowd")
    assert data.n_annotations == 10_000 and data.n_tasks == 2000
    # distinct workers per task, and the truth file matches the truth column
    pairs = data.task.astype(np.int64) * data.n_workers + data.worker
    assert len(np.unique(pairs)) == data.n_annotations
    np.testing.assert_array_equal(np.load(tmp_path / "truth.npy"), data.truth)
    # diagonally dominant workers: DS recovers most labels
    assert (DawidSkene().fit(data).labels_ == data.truth).mean() > 0.75


def test_one_coin_accuracy_and_same_seed_same_crowd(tmp_path):
    kwargs = {"n_classes": 2, "n_workers": 30, "accuracy": 0.8, "chunk_annotations": 4_000}
    write_synthetic_parquet(tmp_path / "a", 20_000, seed=1, **kwargs)
    write_synthetic_parquet(tmp_path / "b", 20_000, seed=1, **kwargs)
    a, b = read_parquet(tmp_path / "a"), read_parquet(tmp_path / "b")
    assert a == b
    assert abs((a.label == a.truth[a.task]).mean() - 0.8) < 0.02


def test_failure_leaves_no_directory(tmp_path):
    with pytest.raises(ValueError):
        write_synthetic_parquet(tmp_path / "bad", 100, feedback=10, n_workers=5)
    assert list(tmp_path.iterdir()) == []
