"""Long CSV and Parquet files: values read, round trips, errors, atomic writes."""

from __future__ import annotations

import datetime
import itertools
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.io import read_csv, read_parquet, write_csv, write_parquet
from crowdlearn.io.longform import METADATA_KEY


@pytest.fixture
def text_data() -> CrowdData:
    return CrowdData.from_arrays(
        task=["t2", "t1", "t1", "t3"],
        worker=["w1", "w1", "w2", "w2"],
        label=["dog", "cat", "dog", "cat"],
        truth={"t1": "cat", "t3": "dog"},
    )


# ---------------------------------------------------------------------------- CSV


def test_write_csv_writes_ids_as_text_with_empty_unknown_truth(tmp_path, text_data):
    path = tmp_path / "a.csv"
    write_csv(text_data, path)
    assert path.read_bytes().decode() == (
        "task,worker,label,truth\r\nt2,w1,dog,\r\nt1,w1,cat,cat\r\nt1,w2,dog,cat\r\n"
        "t3,w2,cat,dog\r\n"
    )
    assert read_csv(path) == text_data


def test_write_csv_without_truth_and_anonymous(tmp_path, text_data):
    path = tmp_path / "a.csv"
    write_csv(text_data.anonymous(), path, truth=False)
    assert path.read_text().splitlines()[:2] == ["task,label", "t2,dog"]
    back = read_csv(path, worker=None)
    assert back.is_anonymous and back == text_data.anonymous().with_truth(None)


def test_read_csv_crowdkit_file_with_integer_ids(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("worker,task,label,extra\n7,10,1,x\n3,10,0,y\n7,2,1,z\n")
    data = read_csv(path)
    assert data.task_ids.dtype == np.int64 and list(data.task_ids) == [2, 10]
    assert list(data.worker_ids) == [3, 7]
    assert list(data.classes) == [0, 1]
    assert data.truth is None
    assert data == CrowdData.from_arrays([10, 10, 2], [7, 3, 7], [1, 0, 1])


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        (["1", "-3", "0"], [-3, 0, 1]),
        (["007", "1"], ["007", "1"]),  # not canonical: stays text
        (["-0", "1"], ["-0", "1"]),
        (["99999999999999999999", "1"], ["1", "99999999999999999999"]),  # beyond int64
        (["True", "False"], [False, True]),
        (["0.5", "1e-05", "inf"], [1e-05, 0.5, float("inf")]),
        (["1.50", "2.5"], ["1.50", "2.5"]),  # repr(1.5) is "1.5": stays text
        (["nan", "a"], ["a", "nan"]),
        (["1", "a"], ["1", "a"]),  # one text value makes the column text
    ],
)
def test_read_csv_types_ids_by_the_text_rule(tmp_path, cells, expected):
    path = tmp_path / "a.csv"
    path.write_text("task,worker,label\n" + "".join(f"{c},w,x\n" for c in cells))
    data = read_csv(path)
    assert data.task_ids.tolist() == expected
    assert [type(v) for v in data.task_ids.tolist()] == [type(v) for v in expected]


def test_read_csv_types_labels_and_truth_together(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("task,worker,label,truth\na,w,1,2\nb,w,2,\nc,w,1,-1\n")
    data = read_csv(path)
    # -1 appears in the truth column: it is a class (as the writer would have put it).
    assert data.classes.tolist() == [-1, 1, 2]
    assert data.truth.tolist() == [2, -1, 0]


def test_read_csv_truth_column_disagreeing_within_a_task(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("task,worker,label,truth\na,w1,x,x\na,w2,x,y\nb,w1,x,\n")
    with pytest.raises(CrowdDataError, match=r"a\.csv.*'truth' column disagrees.*\['a'\]"):
        read_csv(path)


def test_read_csv_ignores_truth_when_asked_and_reads_renamed_columns(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("item,annotator,answer,truth\na,w1,x,x\nb,w1,y,x\n")
    data = read_csv(path, task="item", worker="annotator", label="answer", truth=None)
    assert data.truth is None and data.task_ids.tolist() == ["a", "b"]


def test_read_tsv_and_explicit_separator(tmp_path):
    tsv = tmp_path / "a.tsv"
    tsv.write_text("task\tworker\tlabel\na,b\tw\tx\n")
    assert read_csv(tsv).task_ids.tolist() == ["a,b"]
    semi = tmp_path / "a.txt"
    semi.write_text("task;worker;label\na;w;x\n")
    assert read_csv(semi, sep=";").classes.tolist() == ["x"]


def test_write_tsv_uses_tabs(tmp_path, text_data):
    path = tmp_path / "a.tsv"
    write_csv(text_data, path)
    assert path.read_text().splitlines()[0] == "task\tworker\tlabel\ttruth"
    assert read_csv(path) == text_data


def test_csv_round_trip_of_ids_needing_quotes(tmp_path):
    data = CrowdData.from_arrays(
        task=["a,b", 'say "hi"', "two\nlines", " padded ", "cr\ronly"],
        worker=["w", "w", "w", "w", "w"],
        label=["x", "x", "y", "y", "z"],
    )
    path = tmp_path / "a.csv"
    write_csv(data, path)
    assert read_csv(path) == data


def test_csv_round_trip_of_bool_and_float_ids(tmp_path):
    data = CrowdData.from_arrays([0.5, 1.25, 1e300], [True, False, True], [-2.5, 0.1, 0.1])
    path = tmp_path / "a.csv"
    write_csv(data, path)
    back = read_csv(path)
    assert back == data
    assert back.worker_ids.dtype == bool and back.classes.dtype == np.float64


def test_read_csv_declared_classes_keep_unused_ones_and_their_order(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("task,worker,label\na,w,2\nb,w,0\n")
    data = read_csv(path, classes=[2, 1, 0])
    assert data.classes.tolist() == [2, 1, 0]
    assert data.label.tolist() == [0, 2]
    with pytest.raises(CrowdDataError, match=r"class ids \['2'\] are not among the 2 declared"):
        read_csv(path, classes=[0, 1])


def test_read_csv_duplicate_policy(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("task,worker,label\na,w,x\na,w,y\n")
    with pytest.raises(CrowdDataError, match=r"a\.csv: 1 duplicate \(task, worker\) pair"):
        read_csv(path)
    last = read_csv(path, duplicates="last")
    assert last.n_annotations == 1 and last.classes[last.label].tolist() == ["y"]
    assert read_csv(path, duplicates="keep").n_annotations == 2


def test_read_csv_missing_column_names_it_the_columns_and_the_file(tmp_path):
    path = tmp_path / "a.csv"
    # "labeller" is not a recognised spelling of the worker column.
    path.write_text("task,labeller,label\na,w,x\n")
    with pytest.raises(CrowdDataError) as info:
        read_csv(path)
    message = str(info.value)
    assert str(path) in message
    assert "missing column(s) ['worker']" in message
    assert "['task', 'labeller', 'label']" in message
    assert "worker=None" in message
    assert "columns={" in message


def test_read_csv_missing_label_column_does_not_suggest_worker_none(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("task,worker\na,w\n")
    with pytest.raises(CrowdDataError, match=r"missing column\(s\) \['label'\]") as info:
        read_csv(path)
    assert "worker=None" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [("", "the file is empty"), ("task,worker,label\n", "header but no annotation rows")],
)
def test_read_csv_empty_or_header_only_file(tmp_path, text, problem):
    path = tmp_path / "a.csv"
    path.write_text(text)
    with pytest.raises(CrowdDataError, match=problem) as info:
        read_csv(path)
    assert str(path) in str(info.value)


def test_read_csv_empty_cells_are_missing_values_named_by_row(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text('task,worker,label\na,w1,x\nb,,x\nc,"",y\n')
    with pytest.raises(CrowdDataError) as info:
        read_csv(path)
    message = str(info.value)
    assert str(path) in message
    assert "column 'worker' has 2 empty (missing) value(s) at rows [1, 2]" in message


def test_read_csv_ragged_row(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("task,worker,label\na,w,x,extra\n")
    with pytest.raises(CrowdDataError, match=r"a\.csv: cannot parse the file as CSV"):
        read_csv(path)


def test_read_csv_missing_file(tmp_path):
    with pytest.raises(CrowdDataError, match=r"nope\.csv: no such file"):
        read_csv(tmp_path / "nope.csv")


# ---------------------------------------------------------------------------- Parquet


def test_write_parquet_keeps_native_types_and_writes_metadata(tmp_path, text_data):
    data = CrowdData(
        [0, 1, 1],
        [0, 0, 1],
        [1, 0, 1],
        task_ids=[10, 20, 30],
        worker_ids=[True, False],
        classes=["b", "a", "c"],
        truth=[-1, 0, 2],
    )
    path = tmp_path / "a.parquet"
    write_parquet(data, path)
    schema = pq.read_schema(path)
    assert schema.field("task").type == pa.int64()
    assert schema.field("worker").type == pa.bool_()
    assert schema.field("label").type == pa.dictionary(pa.int32(), pa.string())
    table = pq.read_table(path)
    assert table.column("task").to_pylist() == [10, 20, 20]
    assert table.column("worker").to_pylist() == [True, True, False]
    assert table.column("truth").to_pylist() == [None, "b", "b"]
    document = json.loads(schema.metadata[METADATA_KEY])
    assert document == {
        "version": 1,
        "n_tasks": 3,
        "n_workers": 2,
        "n_classes": 3,
        "anonymous": False,
        "classes": ["b", "a", "c"],
        "task_ids": [10, 20, 30],  # task 30 has no annotation
        "unannotated_truth": [[2, 2]],
        "worker_ids": [True, False],  # not in sorted order
    }
    assert read_parquet(path) == data


def test_write_parquet_lists_no_ids_when_rows_give_them_back(tmp_path, text_data):
    path = tmp_path / "a.parquet"
    write_parquet(text_data, path)
    document = json.loads(pq.read_schema(path).metadata[METADATA_KEY])
    assert "task_ids" not in document and "worker_ids" not in document
    assert document["classes"] == ["cat", "dog"]
    assert read_parquet(path) == text_data


def test_parquet_round_trip_anonymous_reads_back_anonymous(tmp_path, text_data):
    data = text_data.anonymous()
    path = tmp_path / "a.parquet"
    write_parquet(data, path, truth=False)
    assert pq.read_schema(path).names == ["task", "label"]
    back = read_parquet(path)
    assert back.is_anonymous and back == data.with_truth(None)


def test_parquet_read_without_truth(tmp_path, text_data):
    path = tmp_path / "a.parquet"
    write_parquet(text_data, path)
    assert read_parquet(path, truth=None) == text_data.with_truth(None)


def test_read_parquet_of_a_foreign_file_matches_from_frame(tmp_path):
    frame = pd.DataFrame(
        {
            "task": np.array([5, 3, 5, 9], dtype=np.int32),
            "worker": ["b", "a", "a", "c"],
            "label": ["x", "y", "y", "x"],
            "truth": ["x", None, "x", None],
        }
    )
    path = tmp_path / "a.parquet"
    frame.to_parquet(path, row_group_size=2)
    data = read_parquet(path)
    assert data == CrowdData.from_frame(frame, truth="truth")
    assert data.task_ids.tolist() == [3, 5, 9]
    assert data.task.tolist() == [1, 0, 1, 2]
    assert data.truth.tolist() == [-1, 0, -1]


def test_read_parquet_directory_in_sorted_name_order(tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(
        pa.table({"task": ["c", "a"], "worker": [1, 1], "label": [0, 1]}), folder / "b.parquet"
    )
    part = pa.table(
        {
            "task": pa.array(["b", "c"]).dictionary_encode(),
            "worker": pa.array([2, 2], type=pa.int16()),
            "label": [1, 1],
        }
    )
    pq.write_table(part, folder / "a.parquet")
    (folder / "notes.txt").write_text("ignored")
    data = read_parquet(folder)
    # a.parquet comes first: rows (b, 2), (c, 2), then (c, 1), (a, 1).
    assert data.task_ids[data.task].tolist() == ["b", "c", "c", "a"]
    assert data.worker_ids[data.worker].tolist() == [2, 2, 1, 1]


def test_read_parquet_directory_with_different_types_per_file(tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"task": [1], "worker": [1], "label": [0]}), folder / "a.parquet")
    pq.write_table(pa.table({"task": ["x"], "worker": [1], "label": [0]}), folder / "b.parquet")
    with pytest.raises(CrowdDataError, match=r"parts: the ids mix value types"):
        read_parquet(folder)


def test_read_parquet_empty_directory(tmp_path):
    with pytest.raises(CrowdDataError, match=r"holds no \*\.parquet files"):
        read_parquet(tmp_path)


def test_read_parquet_null_ids_are_named_by_row(tmp_path):
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"task": [1, None, 3], "worker": [1, 1, 1], "label": [0, 0, 0]}), path)
    with pytest.raises(CrowdDataError, match=r"a\.parquet: column 'task' has 1 empty.*rows \[1\]"):
        read_parquet(path)


def test_read_parquet_missing_column(tmp_path):
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"task": [1], "label": [0]}), path)
    with pytest.raises(CrowdDataError, match=r"missing column\(s\) \['worker'\].*worker=None"):
        read_parquet(path)
    assert read_parquet(path, worker=None).is_anonymous


def test_read_parquet_corrupt_file(tmp_path):
    path = tmp_path / "a.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(CrowdDataError, match=r"a\.parquet: cannot read the file as Parquet"):
        read_parquet(path)


def test_read_parquet_refuses_rows_that_contradict_the_metadata(tmp_path, text_data):
    path = tmp_path / "a.parquet"
    write_parquet(text_data, path)
    table = pq.read_table(path)
    pq.write_table(table.slice(0, 2), path)  # keeps the metadata, drops task t3
    with pytest.raises(CrowdDataError, match="declares 3 tasks but the rows have 2"):
        read_parquet(path)


def test_read_parquet_label_outside_declared_classes(tmp_path, text_data):
    path = tmp_path / "a.parquet"
    write_parquet(text_data, path)
    table = pq.read_table(path)
    labels = pa.array(["cat", "emu", "dog", "cat"]).dictionary_encode()
    pq.write_table(table.set_column(2, "label", labels), path)
    with pytest.raises(CrowdDataError, match=r"class ids \['emu'\] are not among the 2 declared"):
        read_parquet(path)


def test_write_parquet_row_groups(tmp_path, text_data):
    path = tmp_path / "a.parquet"
    write_parquet(text_data, path, row_group_size=1)
    assert pq.ParquetFile(path).num_row_groups == 4
    assert read_parquet(path) == text_data


# ---------------------------------------------------------------------------- atomic writes


def test_interrupted_csv_write_leaves_no_file(tmp_path, text_data, monkeypatch):
    import crowdlearn.io.longform as longform

    monkeypatch.setattr(longform, "_CSV_BLOCK", 1)
    calls = []

    def failing_texts(ids, codes):
        calls.append(1)
        if len(calls) > 2:
            raise RuntimeError("disk full")
        return np.array([str(v) for v in ids[codes]], dtype=object)

    monkeypatch.setattr(longform, "_texts", failing_texts)
    with pytest.raises(RuntimeError, match="disk full"):
        write_csv(text_data, tmp_path / "a.csv")
    assert list(tmp_path.iterdir()) == []


def test_parquet_write_failing_midway_leaves_no_file_and_keeps_the_old_one(
    tmp_path, text_data, monkeypatch
):
    path = tmp_path / "a.parquet"
    write_parquet(text_data, path)
    before = path.read_bytes()

    def half_write(table, where, **kwargs):
        with open(where, "wb") as handle:
            handle.write(b"PAR1 partial")
        raise OSError("interrupted")

    monkeypatch.setattr(pq, "write_table", half_write)
    with pytest.raises(OSError, match="interrupted"):
        write_parquet(text_data.anonymous(), path)
    assert [p.name for p in tmp_path.iterdir()] == ["a.parquet"]
    assert path.read_bytes() == before


def test_write_parquet_refuses_ids_it_cannot_store_before_writing(tmp_path):
    data = CrowdData([0], [0], [0], task_ids=[datetime.date(2020, 1, 1)])
    with pytest.raises(CrowdDataError, match="task ids cannot be stored in Parquet"):
        write_parquet(data, tmp_path / "a.parquet")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- batched reads


def _random_frame(rng: np.random.Generator, n: int, text: bool) -> pd.DataFrame:
    tasks = rng.integers(0, 40, n) * 7 - 50
    workers = rng.integers(0, 9, n)
    frame = pd.DataFrame(
        {
            "task": [f"t{t}" for t in tasks] if text else tasks,
            "worker": [f"w{w}" for w in workers] if text else workers.astype(np.int32),
            "label": rng.choice(["cat", "dog", "eel"], n),
            "extra": rng.random(n),
        }
    ).drop_duplicates(["task", "worker"], ignore_index=True)
    truth = {t: ["cat", "dog", "eel"][i % 3] for i, t in enumerate(sorted(set(frame["task"])))}
    frame["truth"] = [truth[t] if i % 4 else None for i, t in enumerate(frame["task"])]
    return frame


@pytest.mark.parametrize("text", [False, True])
@pytest.mark.parametrize("batch_rows", [1, 3, 1 << 20])
def test_read_parquet_in_batches_equals_reading_the_whole_frame(
    tmp_path, monkeypatch, text, batch_rows
):
    monkeypatch.setattr("crowdlearn.io.longform._BATCH_ROWS", batch_rows)
    rng = np.random.default_rng(3)
    frame = _random_frame(rng, 200, text)
    # Truth per task must agree across rows: keep one value per task, null elsewhere.
    first = ~frame["task"].duplicated()
    frame.loc[~first, "truth"] = None
    folder = tmp_path / "parts"
    folder.mkdir()
    bounds = [0, 37, 38, 120, len(frame)]
    for i, (start, stop) in enumerate(itertools.pairwise(bounds)):
        frame.iloc[start:stop].to_parquet(folder / f"p{i}.parquet", row_group_size=11)
    data = read_parquet(folder)
    assert data == CrowdData.from_frame(frame, truth="truth")
    assert data.task_ids.tolist() == sorted(set(frame["task"]))
    assert data.worker_ids.tolist() == sorted(set(frame["worker"]))
    assert data.classes.tolist() == ["cat", "dog", "eel"]
    assert read_parquet(folder, truth=None) == CrowdData.from_frame(frame.drop(columns="truth"))


def test_read_parquet_in_batches_null_rows_and_missing_columns(tmp_path, monkeypatch):
    monkeypatch.setattr("crowdlearn.io.longform._BATCH_ROWS", 2)
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(
        pa.table({"task": ["a", "b", "c"], "worker": [1, 1, 1], "label": [0, 1, 0]}),
        folder / "a.parquet",
    )
    pq.write_table(
        pa.table({"task": ["d", None, "e"], "worker": [2, 2, 2], "label": [0, 1, 0]}),
        folder / "b.parquet",
    )
    with pytest.raises(CrowdDataError, match=r"column 'task' has 1 empty.*rows \[4\]"):
        read_parquet(folder)
    pq.write_table(pa.table({"task": ["d"], "label": [0]}), folder / "b.parquet")
    with pytest.raises(CrowdDataError, match=r"missing column\(s\) \['worker'\] in b\.parquet"):
        read_parquet(folder)
