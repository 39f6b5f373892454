"""The out-of-core Dawid-Skene (crowdlearn.stream) against the in-memory engine."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crowdlearn.aggregation import DawidSkene as MemoryDawidSkene
from crowdlearn.io import read_parquet
from crowdlearn.simulate import write_synthetic_parquet
from crowdlearn.stream import CodeStore, DawidSkene, convert_parquet


def _assert_same_fit(stream: DawidSkene, memory: MemoryDawidSkene, atol: float) -> None:
    np.testing.assert_allclose(stream.probas_, memory.probas_, rtol=0, atol=atol)
    np.testing.assert_allclose(stream.confusions_, memory.confusions_, rtol=0, atol=atol)
    np.testing.assert_allclose(stream.priors_, memory.priors_, rtol=0, atol=atol)
    np.testing.assert_array_equal(stream.labels_, memory.labels_)
    assert stream.n_iter_ == memory.n_iter_ and stream.converged_ == memory.converged_
    np.testing.assert_allclose(
        stream.history_["objective"].to_numpy(float),
        memory.history_["objective"].to_numpy(float),
        rtol=0,
        atol=atol,
    )


@pytest.fixture(scope="module")
def crowd_200k(tmp_path_factory):
    """200,000 annotations in 8 Parquet files (K=3, 10 answers a task, 300 workers)."""
    folder = tmp_path_factory.mktemp("crowd") / "parquet"
    write_synthetic_parquet(
        folder,
        200_000,
        n_classes=3,
        feedback=10,
        n_workers=300,
        chunk_annotations=25_000,
        seed=3,
    )
    return folder


def test_equals_the_in_memory_engine_to_1e_10_at_200k_rows(crowd_200k, tmp_path):
    data = read_parquet(crowd_200k)
    assert len(list(crowd_200k.iterdir())) == 8
    memory = MemoryDawidSkene(progress=False).fit(data)
    stream = DawidSkene(chunk_size=30_000, progress=False).fit(crowd_200k)
    _assert_same_fit(stream, memory, 1e-10)
    np.testing.assert_array_equal(stream.task_ids_, data.task_ids)
    np.testing.assert_array_equal(stream.worker_ids_, data.worker_ids)
    np.testing.assert_array_equal(stream.classes_, data.classes)


def test_same_chunk_size_gives_the_same_bits(crowd_200k, tmp_path):
    """With the blocks of the in-memory chunked engine, the additions happen in the same
    order: equal to the last bit, however the store was split into files."""
    data = read_parquet(crowd_200k)
    memory = MemoryDawidSkene(chunk_size=40_000, progress=False).fit(data)
    stream = DawidSkene(chunk_size=40_000, progress=False).fit(crowd_200k)
    _assert_same_fit(stream, memory, 0.0)


@pytest.mark.parametrize(
    "params",
    [
        {"hard": True},
        {"init": "majority_vote"},
        {"lone_labels": "em", "smoothing": 0.0, "diagonal_prior": 0.0},
        {"dtype": "float32"},
        {"max_iter": 0},
        {"max_iter": 2, "prior_smoothing": 1.0},
    ],
)
def test_options_as_in_memory(params, tmp_path):
    """Each option computes what it computes in memory (a crowd with lone labels,
    string ids, tasks of 1 to 4 answers, files that cut tasks in two)."""
    rng = np.random.default_rng(5)
    n_tasks = 3000
    counts = rng.integers(1, 5, size=n_tasks)
    task = np.repeat(np.arange(n_tasks), counts)
    truth = rng.integers(0, 3, size=n_tasks)
    worker = rng.integers(0, 40, size=len(task))
    label = np.where(rng.random(len(task)) < 0.75, truth[task], rng.integers(0, 3, len(task)))
    frame = pd.DataFrame(
        {
            "task": [f"t{i:05d}" for i in task],
            "worker": [f"w{j}" for j in worker],
            "label": np.array(["cat", "dog", "eel"])[label],
        }
    ).drop_duplicates(["task", "worker"])
    folder = tmp_path / "crowd"
    folder.mkdir()
    cuts = [0, 1001, 4000, len(frame)]  # row cuts: tasks split between files
    for index, (begin, end) in enumerate(itertools.pairwise(cuts)):
        pq.write_table(
            pa.Table.from_pandas(frame.iloc[begin:end], preserve_index=False),
            folder / f"part-{index}.parquet",
        )
    data = read_parquet(folder, duplicates="keep")
    memory = MemoryDawidSkene(progress=False, chunk_size=2000, **params).fit(data)
    stream = DawidSkene(progress=False, chunk_size=2000, **params).fit(folder)
    _assert_same_fit(stream, memory, 0.0)
    np.testing.assert_array_equal(stream.task_ids_, data.task_ids)
    np.testing.assert_array_equal(stream.worker_ids_, data.worker_ids)
    np.testing.assert_array_equal(stream.classes_, data.classes)


def test_a_kept_store_is_fitted_again_without_conversion(crowd_200k, tmp_path):
    first = DawidSkene(chunk_size=50_000, progress=False).fit(crowd_200k, store=tmp_path / "s")
    store = CodeStore(tmp_path / "s")
    assert store.n_annotations == 200_000 and store.n_tasks == 20_000
    assert store.worker_dtype == np.int16
    again = DawidSkene(chunk_size=50_000, progress=False).fit(tmp_path / "s")
    np.testing.assert_array_equal(again.probas_, first.probas_)
    np.testing.assert_array_equal(DawidSkene(progress=False).fit(store).labels_, first.labels_)


def test_write_parquet_holds_ids_labels_and_probabilities(crowd_200k, tmp_path):
    model = DawidSkene(chunk_size=50_000, progress=False).fit(crowd_200k)
    model.write_parquet(tmp_path / "posteriors")
    table = pq.read_table(tmp_path / "posteriors").to_pandas()
    assert list(table.columns) == ["task", "label", "proba_0", "proba_1", "proba_2"]
    np.testing.assert_array_equal(table["task"], model.task_ids_)
    np.testing.assert_array_equal(table["label"], model.classes_[model.labels_])
    np.testing.assert_array_equal(table[["proba_0", "proba_1", "proba_2"]], model.probas_)


def test_progress_bars_per_pass(crowd_200k, capsys):
    DawidSkene(chunk_size=50_000, max_iter=2, progress=True).fit(crowd_200k)
    err = capsys.readouterr().err
    assert "convert" in err and "pass" in err and "DawidSkene" in err


def test_bad_options_refused_before_reading(tmp_path):
    with pytest.raises(ValueError, match="lone_labels"):
        DawidSkene(lone_labels="x").fit(tmp_path / "missing")


def test_convert_refuses_more_than_127_classes(tmp_path):
    table = pa.table({"task": np.arange(200), "worker": np.zeros(200), "label": np.arange(200)})
    pq.write_table(table, tmp_path / "wide.parquet")
    from crowdlearn.data import CrowdDataError

    with pytest.raises(CrowdDataError, match="more than 127 classes"):
        convert_parquet(tmp_path / "wide.parquet", tmp_path / "store", progress=False)
    assert not (tmp_path / "store").exists()


def test_conversion_refused_when_the_disk_cannot_hold_the_store(crowd_200k, tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from crowdlearn.data import CrowdDataError

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(10**6, 0, 10**6))
    with pytest.raises(CrowdDataError, match=r"needs at least 0\.0 GB of disk and 0\.0 GB"):
        convert_parquet(crowd_200k, tmp_path / "deep" / "store", progress=False)
    assert not (tmp_path / "deep").exists()


def test_no_partial_fit(crowd_200k):
    with pytest.raises(NotImplementedError, match="no partial_fit"):
        DawidSkene().partial_fit(crowd_200k)


def test_files_with_other_integer_widths_and_text_types_read_together(tmp_path):
    folder = tmp_path / "crowd"
    folder.mkdir()
    first = {
        "task": pa.array([1, 1, 2], pa.int32()),
        "worker": ["b", "a", "a"],
        "label": [0, 1, 0],
    }
    second = {
        "task": pa.array([2, 3, 3], pa.int64()),
        "worker": pa.array(["c", "a", "b"], pa.large_string()),
        "label": pa.array([1, 1, 0], pa.int8()),
    }
    pq.write_table(pa.table(first), folder / "a.parquet")
    pq.write_table(pa.table(second), folder / "b.parquet")
    store = convert_parquet(folder, tmp_path / "store", progress=False)
    data = read_parquet(folder)
    assert (store.n_tasks, store.n_workers, store.n_classes) == (3, 3, 2)
    np.testing.assert_array_equal(store.task_ids, data.task_ids)
    np.testing.assert_array_equal(store.worker_ids, data.worker_ids)
    np.testing.assert_array_equal(store.indptr(0, 4), [0, 2, 4, 6])
    block = store.block(0, 3)
    np.testing.assert_array_equal(block.worker, data.worker)
    np.testing.assert_array_equal(block.label, data.label)
    np.testing.assert_array_equal(block.task, data.task)
