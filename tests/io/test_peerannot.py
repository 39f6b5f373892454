"""The peerannot folder format: reading peerannot's own files, writing, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.io import peerannot as peerannot_module
from crowdlearn.io import read_answers_json, read_peerannot, write_peerannot


def write_files(folder, answers, metadata=None, truth=None):
    """A folder laid out the way peerannot writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    text = answers if isinstance(answers, str) else json.dumps(answers, indent=3)
    (folder / "answers.json").write_text(text)
    if metadata is not None:
        (folder / "metadata.json").write_text(json.dumps(metadata))
    if truth is not None:
        np.save(folder / "ground_truth.npy", np.asarray(truth))
    return folder


@pytest.fixture
def peerannot_folder(tmp_path):
    return write_files(
        tmp_path / "toy",
        {"0": {"0": 2, "3": 1}, "1": {"1": 0}, "2": {"0": 2}, "3": {}},
        metadata={"name": "toy", "n_classes": 4, "n_workers": 5, "n_task": 5},
        truth=[2, -1, 0, 1, 3],
    )


def test_read_folder_written_the_way_peerannot_writes_it(peerannot_folder):
    data = read_peerannot(peerannot_folder)
    assert data.task_ids.tolist() == [0, 1, 2, 3, 4]  # tasks 3 and 4 have no annotation
    assert data.worker_ids.tolist() == [0, 1, 2, 3, 4]  # workers 2 and 4 never answer
    assert data.classes.tolist() == [0, 1, 2, 3]  # class 3 is only a true class
    assert data.truth.tolist() == [2, -1, 0, 1, 3]
    rows = zip(data.task.tolist(), data.worker.tolist(), data.label.tolist(), strict=True)
    assert sorted(rows) == [
        (0, 0, 2),
        (0, 3, 1),
        (1, 1, 0),
        (2, 0, 2),
    ]
    assert read_answers_json(peerannot_folder / "answers.json") == data


def test_answers_json_takes_other_features_and_truth_afterwards(tmp_path):
    (tmp_path / "answers.json").write_text('{"0": {"0": 1, "1": 1}, "1": {"1": 0}}')
    np.save(tmp_path / "features.npy", np.zeros((2, 3)))
    data = (
        read_answers_json(tmp_path / "answers.json", truth=False)
        .with_features(np.eye(2))
        .with_truth({0: 1, 1: 0})
    )
    assert data.n_annotations == 3
    np.testing.assert_array_equal(data.features, np.eye(2))
    np.testing.assert_array_equal(data.truth, [1, 0])
    plain = read_answers_json(tmp_path)
    assert plain.features.shape == (2, 3) and plain.truth is None


def test_crowddata_has_no_answers_json_constructor():
    # The reader lives in crowdlearn.io only: crowdlearn.data imports no reader.
    assert not hasattr(CrowdData, "from_answers_json")


def test_read_without_metadata_or_truth(peerannot_folder):
    data = read_answers_json(peerannot_folder / "answers.json", metadata=False, truth=False)
    assert data.task_ids.tolist() == [0, 1, 2, 3]  # the {} task is still declared
    assert data.worker_ids.tolist() == [0, 1, 3]
    assert data.classes.tolist() == [0, 1, 2]
    assert data.truth is None


def test_metadata_accepts_n_tasks_spelling(tmp_path):
    folder = write_files(tmp_path, {"0": {"0": 0}}, metadata={"n_tasks": 3, "n_classes": 2})
    data = read_peerannot(folder)
    assert (data.n_tasks, data.n_classes, data.n_workers) == (3, 2, 1)


def test_text_keys_stay_text_and_integer_keys_become_ints(tmp_path):
    folder = write_files(tmp_path, {"img-b": {"7": 0}, "img-a": {"12": 1, "x": 0}})
    data = read_peerannot(folder)
    assert data.task_ids.tolist() == ["img-a", "img-b"]
    assert data.worker_ids.tolist() == ["12", "7", "x"]  # one text key: all text
    folder = write_files(tmp_path / "b", {"10": {"7": 0}, "2": {"12": 1}})
    data = read_peerannot(folder)
    assert data.task_ids.tolist() == [2, 10] and data.worker_ids.tolist() == [7, 12]


def test_integer_keys_outside_the_declared_range_keep_their_values(tmp_path):
    folder = write_files(tmp_path, {"10": {"0": 0}, "20": {"0": 1}}, metadata={"n_task": 2})
    assert read_peerannot(folder).task_ids.tolist() == [10, 20]


def test_ground_truth_json(tmp_path):
    folder = write_files(tmp_path, {"a": {"w": 0}, "b": {"w": 1}})
    (folder / "ground_truth.json").write_text('{"b": 0, "a": null}')
    assert read_peerannot(folder).truth.tolist() == [-1, 0]


def test_repeated_worker_key_is_a_duplicate_pair(tmp_path):
    folder = write_files(tmp_path, '{"0": {"0": 1, "0": 2}}')
    with pytest.raises(CrowdDataError, match=r"answers\.json: 1 duplicate \(task, worker\)"):
        read_peerannot(folder)
    assert read_peerannot(folder, duplicates="last").label.tolist() == [2]


def test_features_file_is_read(tmp_path):
    folder = write_files(tmp_path, {"0": {"0": 0}, "1": {"0": 1}})
    np.save(folder / "features.npy", np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert read_peerannot(folder).features.tolist() == [[1.0, 2.0], [3.0, 4.0]]


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"0": {"0": 1}, "1": {"0" 2}}', r"malformed JSON at line 1, column 27: Expecting ':'"),
        ('{"0": {"0": 1},\n "1": {"0": ', r"truncated JSON .* at line 2, column 13"),
        ("", r"the file is empty"),
        ('[{"0": 1}]', r"the top level must be an object .*got an array"),
        ('{"0": [1, 2]}', r"task '0': expected an object \{worker: label\}, got an array"),
        ('{"0": 3}', r"task '0': expected an object .*got int 3"),
        ('{"0": {"w": 1.5}}', r"task '0', worker 'w': label 1.5 is not an integer class code"),
        ('{"0": {"w": "1"}}', r"task '0', worker 'w': label '1' is not an integer"),
        ('{"0": {"w": true}}', r"task '0', worker 'w': label True is not an integer"),
        ('{"0": {"w": null}}', r"label None is not an integer"),
        ('{"0": {"w": -1}}', r"1 label\(s\) negative, e.g. task '0', worker 'w': label -1"),
        ("{}", r"empty data"),
    ],
)
def test_bad_answers_json(tmp_path, text, message):
    folder = write_files(tmp_path, text)
    with pytest.raises(CrowdDataError, match=message) as info:
        read_peerannot(folder)
    assert str(folder / "answers.json") in str(info.value)


def test_label_outside_metadata_classes(tmp_path):
    folder = write_files(tmp_path, {"0": {"a": 1}, "1": {"b": 4}}, metadata={"n_classes": 3})
    with pytest.raises(CrowdDataError, match=r"task '1', worker 'b': label 4") as info:
        read_peerannot(folder)
    assert "outside the class codes 0..2 (metadata n_classes)" in str(info.value)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ('{"n_classes": 3', r"metadata\.json: truncated JSON"),
        ("[3]", r"metadata\.json: expected a JSON object, got an array"),
        ('{"n_classes": "3"}', r"metadata\.json: metadata 'n_classes' must be a non-negative"),
        ('{"n_task": -1}', r"metadata 'n_task' must be a non-negative integer"),
        ('{"classes": "ab"}', r"metadata 'classes' must be a non-empty list"),
        ('{"classes": ["a"], "n_classes": 2}', r"classes lists 1 ids but the count says 2"),
        ('{"n_task": 1}', r"declares 1 tasks but there are 2 distinct task keys"),
    ],
)
def test_bad_metadata(tmp_path, metadata, message):
    folder = write_files(tmp_path, {"0": {"a": 0}, "1": {"a": 0}})
    (folder / "metadata.json").write_text(metadata)
    with pytest.raises(CrowdDataError, match=message):
        read_peerannot(folder)


def test_ground_truth_of_the_wrong_length(peerannot_folder):
    np.save(peerannot_folder / "ground_truth.npy", np.array([0, 1, 2]))
    with pytest.raises(CrowdDataError, match=r"ground_truth\.npy: the ground truth has 3 entries"):
        read_peerannot(peerannot_folder)


def test_ground_truth_outside_the_classes(peerannot_folder):
    np.save(peerannot_folder / "ground_truth.npy", np.array([0, 1, 2, 9, -1]))
    with pytest.raises(CrowdDataError, match=r"truth \[9\] of tasks \[3\] is not a class code"):
        read_peerannot(peerannot_folder)


def test_ground_truth_npy_needs_task_numbers(tmp_path):
    folder = write_files(tmp_path, {"a": {"w": 0}}, truth=[0])
    with pytest.raises(CrowdDataError, match=r"task ids are not 0\.\.n-1; use ground_truth\.json"):
        read_peerannot(folder)


def test_ground_truth_json_for_an_unknown_task(tmp_path):
    folder = write_files(tmp_path, {"a": {"w": 0}})
    (folder / "ground_truth.json").write_text('{"zz": 0}')
    with pytest.raises(CrowdDataError, match=r"truth for tasks not in answers\.json: \['zz'"):
        read_peerannot(folder)


def test_both_ground_truth_files(peerannot_folder):
    (peerannot_folder / "ground_truth.json").write_text("{}")
    with pytest.raises(CrowdDataError, match=r"both ground_truth\.npy and ground_truth\.json"):
        read_peerannot(peerannot_folder)


def test_missing_folder_and_missing_answers(tmp_path):
    with pytest.raises(CrowdDataError, match=r"nowhere: no such file"):
        read_peerannot(tmp_path / "nowhere")
    with pytest.raises(CrowdDataError, match=r"answers\.json: no such file"):
        read_peerannot(tmp_path)


# ---------------------------------------------------------------------------- writing


def test_write_then_read_a_folder_peerannot_can_use(tmp_path, peerannot_folder):
    data = read_peerannot(peerannot_folder)
    out = tmp_path / "out"
    write_peerannot(data, out, name="copy")
    assert sorted(p.name for p in out.iterdir()) == [
        "answers.json",
        "ground_truth.npy",
        "metadata.json",
    ]
    assert json.loads((out / "metadata.json").read_text()) == {
        "name": "copy",
        "n_classes": 4,
        "n_workers": 5,
        "n_task": 5,
        "n_tasks": 5,
        "classes": [0, 1, 2, 3],
    }
    assert json.loads((out / "answers.json").read_text()) == {
        "0": {"0": 2, "3": 1},
        "1": {"1": 0},
        "2": {"0": 2},
        "3": {},
        "4": {},
    }
    assert np.load(out / "ground_truth.npy").tolist() == [2, -1, 0, 1, 3]
    assert read_peerannot(out) == data


def test_write_text_ids_lists_them_in_the_metadata(tmp_path):
    data = CrowdData(
        [0, 1],
        [1, 0],
        [0, 2],
        task_ids=["7", "3"],  # text that looks like numbers, not in sorted order
        worker_ids=["w1", "w0", "unused"],
        classes=["cat", "dog", "emu"],
        truth=[1, -1],
        features=np.eye(2),
    )
    write_peerannot(data, tmp_path)
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert metadata["task_ids"] == ["7", "3"]
    assert metadata["worker_ids"] == ["w1", "w0", "unused"]
    assert metadata["classes"] == ["cat", "dog", "emu"]
    assert json.loads((tmp_path / "answers.json").read_text()) == {
        "7": {"w0": 0},
        "3": {"w1": 2},
    }
    assert json.loads((tmp_path / "ground_truth.json").read_text()) == {"7": 1}
    assert read_peerannot(tmp_path) == data


def test_rewrite_removes_stale_companion_files(tmp_path, peerannot_folder):
    data = read_peerannot(peerannot_folder).with_features(np.ones((5, 1)))
    out = tmp_path / "out"
    write_peerannot(data, out)
    assert len(list(out.iterdir())) == 4
    write_peerannot(data.with_truth(None).with_features(None), out)
    assert sorted(p.name for p in out.iterdir()) == ["answers.json", "metadata.json"]
    assert read_peerannot(out).truth is None


def test_write_refuses_anonymous_data(tmp_path, peerannot_folder):
    data = read_peerannot(peerannot_folder).anonymous()
    with pytest.raises(CrowdDataError, match=r"needs worker ids.*anonymous.*CSV or Parquet"):
        write_peerannot(data, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_write_refuses_repeated_pairs(tmp_path):
    data = CrowdData.from_arrays(["a", "a"], ["w", "w"], [0, 1], duplicates="keep")
    with pytest.raises(CrowdDataError, match=r"1 \(task, worker\) pair.*task 'a' by worker 'w'"):
        write_peerannot(data, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_failure_while_serialising_writes_nothing(tmp_path, peerannot_folder, monkeypatch):
    data = read_peerannot(peerannot_folder).with_features(np.ones((5, 2)))

    def failing(array):
        raise MemoryError("no room")

    monkeypatch.setattr(peerannot_module, "_npy_bytes", failing)
    with pytest.raises(MemoryError):
        write_peerannot(data, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_failure_while_writing_a_file_leaves_no_partial_file(tmp_path, peerannot_folder):
    data = read_peerannot(peerannot_folder)
    out = tmp_path / "out"
    out.mkdir()
    (out / "answers.json").mkdir()  # renaming onto a directory fails after the temp write
    with pytest.raises(OSError):
        write_peerannot(data, out)
    assert sorted(p.name for p in out.iterdir()) == ["answers.json", "metadata.json"]
    assert (out / "answers.json").is_dir()
