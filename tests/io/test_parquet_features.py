"""Parquet keeps features (``.features.npy`` beside the file) and truth."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from crowdlearn import CrowdData
from crowdlearn.cli import cli
from crowdlearn.data import CrowdDataError
from crowdlearn.io import read, read_parquet, write, write_parquet
from crowdlearn.io.longform import METADATA_KEY, features_path


@st.composite
def crowds_with_features(draw: st.DrawFn) -> CrowdData:
    """Data with features of any numeric dtype and shape, with or without truth."""
    n_tasks = draw(st.integers(1, 6))
    n_workers, n_classes = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    cell = st.tuples(st.integers(0, n_tasks - 1), st.integers(0, n_workers - 1))
    pairs = draw(st.lists(cell, min_size=1, max_size=12, unique=True))
    tasks, workers = (list(c) for c in zip(*pairs, strict=True))
    labels = draw(
        st.lists(st.integers(0, n_classes - 1), min_size=len(tasks), max_size=len(tasks))
    )
    truth = draw(
        st.none() | st.lists(st.integers(-1, n_classes - 1), min_size=n_tasks, max_size=n_tasks)
    )
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int64, np.uint8, np.bool_]))
    tail = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2))
    # Features must be finite (CrowdData refuses NaN and inf).
    finite = {"allow_nan": False, "allow_infinity": False} if np.dtype(dtype).kind == "f" else {}
    features = draw(
        hnp.arrays(dtype, (n_tasks, *tail), elements=hnp.from_dtype(np.dtype(dtype), **finite))
    )
    # A task order other than sorted ids is kept too (the metadata lists the ids).
    task_ids = draw(st.permutations([f"t{i}" for i in range(n_tasks)]))
    return CrowdData(
        tasks,
        workers,
        labels,
        task_ids=task_ids,
        n_workers=n_workers,
        n_classes=n_classes,
        truth=truth,
        features=features,
    )


@settings(max_examples=40, deadline=None)
@given(crowds_with_features())
def test_parquet_round_trip_keeps_features_and_truth(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "crowd.parquet"
        write(data, path)
        back = read(path)
        assert sorted(p.name for p in Path(folder).iterdir()) == [
            "crowd.features.npy",
            "crowd.parquet",
        ]
    assert back.equals(data)
    np.testing.assert_array_equal(back.features, data.features)
    assert back.features.dtype == data.features.dtype
    assert (back.truth is None) == (data.truth is None)


def small(features=True) -> CrowdData:
    return CrowdData.from_arrays(
        ["a", "a", "b"],
        ["u", "v", "u"],
        [0, 1, 1],
        truth={"a": 0, "b": 1},
        features=np.arange(6, dtype=np.float32).reshape(2, 3) if features else None,
    )


def test_features_file_name_and_metadata(tmp_path):
    path = tmp_path / "x.parquet"
    write_parquet(small(), path)
    assert features_path(path) == tmp_path / "x.features.npy"
    document = json.loads(pq.read_schema(path).metadata[METADATA_KEY])
    assert document["features"] == {"file": "x.features.npy", "shape": [2, 3], "dtype": "<f4"}


def test_no_features_file_without_features_or_when_asked(tmp_path):
    write_parquet(small(features=False), tmp_path / "a.parquet")
    write_parquet(small(), tmp_path / "b.parquet", features=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.parquet"]
    assert read_parquet(tmp_path / "b.parquet").features is None


def test_missing_features_file_is_an_error_unless_ignored(tmp_path):
    path = tmp_path / "x.parquet"
    write_parquet(small(), path)
    features_path(path).unlink()
    with pytest.raises(CrowdDataError, match=r"x\.features\.npy named in the metadata is missing"):
        read_parquet(path)
    assert read_parquet(path, features=False).equals(small(features=False))


def test_a_features_file_of_another_crowd_is_refused(tmp_path):
    path = tmp_path / "x.parquet"
    write_parquet(small(), path)
    np.save(features_path(path), np.zeros((5, 3), dtype=np.float32))
    with pytest.raises(CrowdDataError, match="belongs to another file"):
        read_parquet(path)


def test_a_directory_of_parquet_files_reads_the_features(tmp_path):
    write_parquet(small(), tmp_path / "part.parquet")
    assert read(tmp_path).equals(small())


def test_simulated_features_survive_parquet_and_feed_learn(tmp_path):
    """The README's tour: simulate crowd-on-features as Parquet, then learn from it."""
    runner = CliRunner()
    sim = tmp_path / "sim2"
    result = runner.invoke(
        cli, ["simulate", "crowd-on-features", "-o", str(sim), "--format", "parquet"]
    )
    assert result.exit_code == 0, result.output
    data = read(sim)
    assert data.features is not None and data.features.shape == (1797, 64)
    assert data.truth is not None
    result = runner.invoke(
        cli,
        ["learn", str(sim), "-s", "twostage[aggregator=mv]", "--epochs", "1",
         "-o", str(tmp_path / "model"), "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def test_convert_to_parquet_keeps_features(tmp_path):
    source = tmp_path / "peer"
    write(small(), source, format="peerannot")  # the peerannot folder holds features.npy
    target = tmp_path / "crowd.parquet"
    result = CliRunner().invoke(cli, ["convert", str(source), "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert features_path(target).is_file()
    assert read(target).equals(read(source))


def test_simulate_to_csv_says_the_features_are_not_kept(tmp_path):
    result = CliRunner().invoke(
        cli, ["simulate", "crowd-on-features", "-o", str(tmp_path / "s"), "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    assert "crowdlearn: note: CSV holds no features" in result.stderr
