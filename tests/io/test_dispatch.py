"""read/write by format name, and telling the format from a path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.io import FORMATS, detect_format, read, write


@pytest.fixture
def data() -> CrowdData:
    return CrowdData.from_matrix(np.array([[0, 1, -1], [2, -1, 0]]), truth=[1, -1])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.csv", "csv"),
        ("a.TSV", "csv"),
        ("a.parquet", "parquet"),
        ("a.pq", "parquet"),
        ("answers.json", "peerannot"),
        ("a.txt", "matrix"),
        ("a.npy", "matrix"),
    ],
)
def test_detect_format_by_ending(tmp_path, name, expected):
    assert detect_format(tmp_path / name) == expected


def test_detect_format_of_directories(tmp_path):
    (tmp_path / "pa").mkdir()
    (tmp_path / "pa" / "answers.json").write_text("{}")
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "part-0.parquet").write_bytes(b"")
    (tmp_path / "other").mkdir()
    assert detect_format(tmp_path / "pa") == "peerannot"
    assert detect_format(tmp_path / "parts") == "parquet"
    with pytest.raises(CrowdDataError, match=r"other: cannot tell the format of this directory"):
        detect_format(tmp_path / "other")


def test_unknown_ending_lists_the_formats(tmp_path):
    with pytest.raises(CrowdDataError) as info:
        detect_format(tmp_path / "a.xlsx")
    message = str(info.value)
    assert "a.xlsx" in message and "'.xlsx'" in message
    assert all(fmt in message for fmt in FORMATS)


def test_unknown_format_name(tmp_path, data):
    with pytest.raises(CrowdDataError, match=r"unknown format 'excel'; the formats are csv, "):
        write(data, tmp_path / "a.csv", format="excel")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "a.csv").write_text("task,worker,label\n1,2,3\n")
    with pytest.raises(CrowdDataError, match="unknown format 'excel'"):
        read(tmp_path / "a.csv", format="excel")


def test_read_missing_path_names_it(tmp_path):
    with pytest.raises(CrowdDataError, match=r"missing\.csv: no such file or directory"):
        read(tmp_path / "missing.csv")


@pytest.mark.parametrize(
    ("dest", "fmt", "kwargs"),
    [
        ("a.csv", None, {}),
        ("a.tsv", None, {}),
        ("a.parquet", None, {}),
        ("folder", "peerannot", {}),
        ("folder/answers.json", None, {}),
        ("answers.txt", None, {"n_classes": 3}),
        ("answers.npy", None, {"n_classes": 3}),
        ("answers.csv", "matrix", {"n_classes": 3}),
    ],
)
def test_round_trip_through_read_and_write(tmp_path, data, dest, fmt, kwargs):
    write(data, tmp_path / dest, format=fmt)
    back = read(tmp_path / dest, format=fmt, **kwargs)
    # An answer matrix holds no truth.
    holds_truth = (fmt or detect_format(tmp_path / dest)) != "matrix"
    assert back == (data if holds_truth else data.with_truth(None))


def test_write_peerannot_to_another_json_name_is_refused(tmp_path, data):
    with pytest.raises(CrowdDataError, match=r"a peerannot dataset is a folder holding answers"):
        write(data, tmp_path / "labels.json")
    assert list(tmp_path.iterdir()) == []


def test_read_a_dataframe_like_crowdkit(data):
    frame = pd.DataFrame({"task": ["a", "a", "b"], "worker": [1, 2, 1], "label": [0, 1, 1]})
    back = read(frame)
    assert back == CrowdData.from_arrays(["a", "a", "b"], [1, 2, 1], [0, 1, 1])
    assert read(frame.rename(columns={"label": "y"}), label="y").n_annotations == 3


def test_read_passes_options_to_the_reader(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("task,label\na,x\na,x\n")
    assert read(path, worker=None).is_anonymous
