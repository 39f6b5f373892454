"""Answer matrices (Rodrigues' LabelMe/Music format): to_matrix, read and write."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.io import read_matrix, read_peerannot, to_matrix, write_matrix, write_peerannot

ANSWERS = np.array([[0, -1, 2], [-1, -1, 1], [1, 1, -1]])


@pytest.fixture
def data() -> CrowdData:
    return CrowdData.from_matrix(ANSWERS, n_classes=4)


def test_to_matrix_places_each_label(data):
    matrix = to_matrix(data)
    assert matrix.dtype == np.int32
    assert matrix.tolist() == ANSWERS.tolist()
    assert to_matrix(data, missing=99)[1].tolist() == [99, 99, 1]


def test_to_matrix_keeps_workers_without_answers():
    data = CrowdData([0, 1], [0, 0], [1, 0], n_workers=3)
    assert to_matrix(data).tolist() == [[1, -1, -1], [0, -1, -1]]


def test_to_matrix_refuses_anonymous_data(data):
    with pytest.raises(CrowdDataError, match="anonymous data has no workers"):
        to_matrix(data.anonymous())


def test_to_matrix_refuses_repeated_pairs():
    data = CrowdData([0, 0], [1, 1], [0, 1], duplicates="keep")
    with pytest.raises(CrowdDataError, match=r"task 0 by worker 1.*a matrix cell holds one"):
        to_matrix(data)


def test_to_matrix_refuses_huge_matrices():
    data = CrowdData([0, 19_999], [0, 19_999], [0, 1])  # 20k x 20k = 4e8 cells
    with pytest.raises(CrowdDataError, match=r"20000 x 20000 = 400000000 cells, more than"):
        to_matrix(data)


def test_to_matrix_refuses_a_missing_value_that_is_a_class(data):
    with pytest.raises(CrowdDataError, match=r"missing=2 must be .* not a class code \(0\.\.3\)"):
        to_matrix(data, missing=2)


@pytest.mark.parametrize("name", ["answers.txt", "answers.csv", "answers.npy"])
def test_matrix_round_trip(tmp_path, data, name):
    path = tmp_path / name
    write_matrix(data, path)
    assert read_matrix(path, n_classes=4) == data


def test_write_matrix_text_is_integers(tmp_path, data):
    path = tmp_path / "answers.txt"
    write_matrix(data, path)
    assert path.read_text() == "0 -1 2\n-1 -1 1\n1 1 -1\n"
    write_matrix(data, tmp_path / "a.csv", missing=9)
    assert (tmp_path / "a.csv").read_text().splitlines()[1] == "9,9,1"


def test_read_matrix_with_truth_and_features_from_files(tmp_path):
    (tmp_path / "answers.txt").write_text("0 -1\n1 1\n")
    (tmp_path / "truth.txt").write_text("1\n-1\n")
    np.save(tmp_path / "features.npy", np.array([[0.5], [1.5]]))
    data = read_matrix(
        tmp_path / "answers.txt",
        truth=tmp_path / "truth.txt",
        features=tmp_path / "features.npy",
    )
    assert data.truth.tolist() == [1, -1]
    assert data.features.tolist() == [[0.5], [1.5]]
    assert read_matrix(tmp_path / "answers.txt", truth=[0, 0]).truth.tolist() == [0, 0]


def test_read_matrix_single_row_and_custom_missing(tmp_path):
    path = tmp_path / "answers.txt"
    path.write_text("3 0 3\n")
    data = read_matrix(path, missing=3)
    assert (data.n_tasks, data.n_workers, data.n_annotations) == (1, 3, 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0 1\n1 x\n", r"could not convert string 'x'"),
        ("0 1\n1\n", r"cannot read a numeric array"),
        # The core's error shows the cell (0, 1) flattened, as [0, 1].
        ("0 1.5\n", r"non-integer labels at \(task, worker\) \[\(?0, 1"),
        ("0 -3\n", r"negative labels other than missing=-1 at \(task, worker\) \[\(?0, 1"),
        ("", r"the file holds no answers"),
        ("-1 -1\n", r"empty data"),
    ],
)
def test_bad_matrix_entries(tmp_path, text, message):
    path = tmp_path / "answers.txt"
    path.write_text(text)
    with pytest.raises(CrowdDataError, match=message) as info:
        read_matrix(path)
    assert str(path) in str(info.value)


def test_read_matrix_npy_must_be_two_dimensional(tmp_path):
    np.save(tmp_path / "a.npy", np.array([0, 1]))
    with pytest.raises(CrowdDataError, match=r"a\.npy: an answer matrix must be 2-D"):
        read_matrix(tmp_path / "a.npy")


def test_read_matrix_unknown_ending_and_missing_file(tmp_path):
    (tmp_path / "a.dat").write_text("0\n")
    with pytest.raises(CrowdDataError, match=r"unknown matrix file ending '\.dat'"):
        read_matrix(tmp_path / "a.dat")
    with pytest.raises(CrowdDataError, match=r"b\.txt: no such file"):
        read_matrix(tmp_path / "b.txt")


def test_write_matrix_refuses_ids_the_format_cannot_hold(tmp_path):
    data = CrowdData.from_arrays(["a", "b"], [3, 5], [0, 1])
    with pytest.raises(CrowdDataError, match=r"the task, worker ids are not the integers 0\.\."):
        write_matrix(data, tmp_path / "a.txt")
    assert list(tmp_path.iterdir()) == []
    write_matrix(data, tmp_path / "a.txt", drop_ids=True)
    assert (tmp_path / "a.txt").read_text() == "0 -1\n-1 1\n"


def test_write_matrix_unknown_ending_writes_nothing(tmp_path, data):
    with pytest.raises(CrowdDataError, match=r"unknown matrix file ending '\.mat'"):
        write_matrix(data, tmp_path / "a.mat")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_matrix_write_keeps_the_old_file(tmp_path, data, monkeypatch):
    path = tmp_path / "answers.txt"
    write_matrix(data, path)

    def failing_savetxt(handle, matrix, **kwargs):
        handle.write("0 0\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savetxt", failing_savetxt)
    with pytest.raises(KeyboardInterrupt):
        write_matrix(data, path, missing=7)
    assert [p.name for p in tmp_path.iterdir()] == ["answers.txt"]
    assert path.read_text() == "0 -1 2\n-1 -1 1\n1 1 -1\n"


def test_real_labelme_matrix_survives_every_format(tmp_path, shared_datasets):
    path = shared_datasets / "labelme" / "fmenat_PyLearningCrowds" / "answers.txt"
    data = read_matrix(path)
    assert (data.n_tasks, data.n_workers, data.n_classes) == (1000, 59, 8)
    assert data.n_annotations == 2547
    assert np.array_equal(to_matrix(data), np.loadtxt(path, dtype=np.int64))
    write_peerannot(data, tmp_path / "labelme")
    assert read_peerannot(tmp_path / "labelme") == data
