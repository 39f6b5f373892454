"""Every registered dataset loads from the shared tree with its published statistics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdlearn import CrowdData, datasets

#: (tasks, workers, annotations, classes, tasks with known truth), from each PROVENANCE.md;
#: workers is None for anonymous annotations.
CROWD_STATS = {
    "labelme": (1000, 59, 2547, 8, 1000),
    "music": (700, 44, 2945, 10, 700),
    "bluebirds": (108, 39, 4212, 2, 108),
    "rte": (800, 164, 8000, 2, 800),
    "temp": (462, 76, 4620, 2, 462),
    "wsd": (177, 34, 1770, 3, 177),
    "cf": (300, 461, 1720, 5, 300),
    "cf_amt": (300, 110, 6030, 5, 300),
    "ms": (700, 44, 2945, 10, 700),
    "zencrowd_all": (2040, 78, 21855, 2, 2040),
    "zencrowd_in": (2040, 25, 11205, 2, 2040),
    "zencrowd_us": (2040, 74, 12190, 2, 2040),
    "cifar10h": (10000, None, 511000, 10, 0),
}

#: Majority-vote accuracy against the truth, expected under uniformly random tie-breaking.
MV_EXPECTED = {
    "labelme": (0.766, 3),
    "music": (0.704, 3),
    "bluebirds": (0.759, 3),
    "rte": (0.897, 3),
    "temp": (0.936, 3),
    "wsd": (0.994, 3),
    "cf": (0.8822, 4),
    "cf_amt": (0.8533, 4),
    "ms": (0.7042, 4),
    "zencrowd_all": (0.8319, 4),
    "zencrowd_in": (0.7409, 4),
    "zencrowd_us": (0.8613, 4),
}

#: Distinct (task, worker) pairs where the ActiveCrowdToolkit files repeat some.
REPEATED_PAIRS = {
    "cf_amt": 6025,
    "zencrowd_all": 20125,
    "zencrowd_in": 10495,
    "zencrowd_us": 11155,
}


def majority_vote_accuracy(data: CrowdData) -> tuple[float, float]:
    """Accuracy of the majority vote on the tasks with known truth.

    Returns the accuracy when ties go to the lowest class code, and the expected
    accuracy under random tie-breaking: the mean over tasks of
    ``[truth in argmax set] / |argmax set|``.
    """
    known = data.truth >= 0
    counts = data.vote_counts.toarray()[known]
    truth = data.truth[known]
    top = counts == counts.max(axis=1, keepdims=True)
    lowest = np.mean(np.argmax(counts, axis=1) == truth)
    expected = np.mean(top[np.arange(len(truth)), truth] / top.sum(axis=1))
    return float(lowest), float(expected)


def n_pairs(data: CrowdData) -> int:
    """Number of distinct (task, worker) pairs."""
    return len(np.unique(data.task.astype(np.int64) * data.n_workers + data.worker))


@pytest.mark.parametrize("name", sorted(CROWD_STATS))
def test_crowd_dataset_statistics(shared_datasets: Path, name: str):
    data = datasets.load(name, root=shared_datasets)
    train = data.train
    n_tasks, n_workers, n_annotations, n_classes, n_known = CROWD_STATS[name]
    assert data.name == name
    assert (train.n_tasks, train.n_annotations, train.n_classes) == (
        n_tasks,
        n_annotations,
        n_classes,
    )
    assert train.n_workers == (n_workers or 0)
    assert train.is_anonymous == (n_workers is None)
    known = 0 if train.truth is None else int(np.sum(train.truth >= 0))
    assert known == n_known
    assert np.all(train.feedback_effort > 0), "every task has at least one label"
    assert data.pool is None


@pytest.mark.parametrize("name", datasets.list())
def test_info_matches_the_loaded_data(shared_datasets: Path, name: str):
    data = datasets.load(name, root=shared_datasets)
    meta = data.info
    assert meta == datasets.info(name)
    assert meta.has_valid == (data.valid is not None)
    assert meta.has_test == (data.test is not None)
    if data.train is None:
        assert meta.has_features and meta.has_truth and data.pool is not None
        assert meta.n_tasks == len(data.pool[1])
        return
    train = data.train
    assert (meta.n_tasks, meta.n_annotations, meta.n_classes) == (
        train.n_tasks,
        train.n_annotations,
        train.n_classes,
    )
    assert meta.n_workers == (None if train.is_anonymous else train.n_workers)
    assert meta.has_features == (train.features is not None)
    assert meta.has_truth == train.has_truth
    if meta.class_names is not None:
        assert len(meta.class_names) == meta.n_classes


@pytest.mark.parametrize("name", sorted(MV_EXPECTED))
def test_majority_vote_accuracy_matches_provenance(shared_datasets: Path, name: str):
    _, expected = majority_vote_accuracy(datasets.load(name, root=shared_datasets).train)
    value, digits = MV_EXPECTED[name]
    assert round(expected, digits) == value


@pytest.mark.parametrize(("name", "ties_to_lowest"), [("labelme", 0.769), ("music", 0.711)])
def test_majority_vote_with_ties_to_the_lowest_class(
    shared_datasets: Path, name: str, ties_to_lowest: float
):
    lowest, _ = majority_vote_accuracy(datasets.load(name, root=shared_datasets).train)
    assert round(lowest, 3) == ties_to_lowest


def test_labelme_features_and_splits(shared_datasets: Path):
    data = datasets.load("labelme", root=shared_datasets)
    assert data.train.features.shape == (1000, 512)
    assert data.train.features.dtype == np.float32
    # The files' codes 0..7 are loaded as the scene names.
    assert tuple(data.train.classes) == data.info.class_names
    assert data.info.class_names[0] == "highway" and data.info.class_names[7] == "opencountry"
    truth = np.loadtxt(
        shared_datasets / "labelme" / "fmenat_PyLearningCrowds" / "LabelMe_Z_train.txt", dtype=int
    )
    np.testing.assert_array_equal(data.train.truth, truth)
    for split, n in ((data.valid, 500), (data.test, 1188)):
        X, y = split
        assert X.shape == (n, 512) and X.dtype == np.float32
        assert y.shape == (n,) and y.dtype == np.int64
        assert set(np.unique(y)) <= set(range(8))


def test_music_features_classes_and_test_split(shared_datasets: Path):
    data = datasets.load("music", root=shared_datasets)
    train = data.train
    assert tuple(train.classes) == data.info.class_names
    assert list(train.classes) == sorted(train.classes)
    assert train.features.shape == (700, 124)
    X, y = data.test
    assert X.shape == (300, 124) and y.shape == (300,) and y.dtype == np.int64
    # Features and truth follow the task ids: check one song against the gold file.
    gold = pd.read_csv(shared_datasets / "music_genre_rodrigues" / "music_genre_gold.csv")
    row = gold.iloc[17]
    code = list(train.task_ids).index(row["id"])
    np.testing.assert_allclose(train.features[code], row.filter(like="feature").to_numpy(float))
    assert train.classes[train.truth[code]] == row["class"]


def test_ms_class_names_match_the_music_genres(shared_datasets: Path):
    ms = datasets.load("ms", root=shared_datasets).train
    music = datasets.load("music", root=shared_datasets).train
    assert list(ms.task_ids) == list(music.task_ids)
    ms_genres = np.array(datasets.info("ms").class_names)[ms.truth]
    np.testing.assert_array_equal(ms_genres, music.classes[music.truth])


def test_bluebirds_classes_are_booleans(shared_datasets: Path):
    train = datasets.load("bluebirds", root=shared_datasets).train
    assert list(train.classes) == [False, True]
    assert np.all(train.workload == 108), "every worker labels every image"


def test_snow_files_have_no_repeated_pairs(shared_datasets: Path):
    for name in ("rte", "temp", "wsd"):
        train = datasets.load(name, root=shared_datasets).train
        assert n_pairs(train) == train.n_annotations
        assert np.all(train.feedback_effort == 10)


@pytest.mark.parametrize("name", sorted(REPEATED_PAIRS))
def test_active_crowd_keeps_repeated_answers(shared_datasets: Path, name: str):
    train = datasets.load(name, root=shared_datasets).train
    assert n_pairs(train) == REPEATED_PAIRS[name] < train.n_annotations


def test_active_crowd_id_types(shared_datasets: Path):
    cf = datasets.load("cf", root=shared_datasets).train
    assert cf.task_ids.dtype == np.int64 and cf.worker_ids.dtype == np.int64
    cf_amt = datasets.load("cf_amt", root=shared_datasets).train
    assert cf_amt.task_ids.dtype == np.int64 and isinstance(cf_amt.worker_ids[0], str)
    zencrowd = datasets.load("zencrowd_us", root=shared_datasets).train
    assert all(isinstance(task, str) for task in zencrowd.task_ids)
    assert "UAE-http://dbpedia.org/page/United_Arab_Emirates" in set(zencrowd.task_ids)


def test_cifar10h_is_anonymous_vote_counts(shared_datasets: Path):
    train = datasets.load("cifar10h", root=shared_datasets).train
    counts = np.load(shared_datasets / "cifar10h" / "cifar10h-counts.npy")
    np.testing.assert_array_equal(train.vote_counts.toarray(), counts)
    assert list(train.classes) == list(datasets.info("cifar10h").class_names)
    assert train.classes[0] == "airplane" and train.classes[9] == "truck"
    assert train.features is None
    assert train.feedback_effort.min() == 47 and train.feedback_effort.max() == 63


def test_usps_is_a_feature_pool(shared_datasets: Path):
    data = datasets.load("usps", root=shared_datasets)
    assert data.train is None and data.valid is None
    for (X, y), n in ((data.pool, 7291), (data.test, 2007)):
        assert X.shape == (n, 256) and X.dtype == np.float32
        assert y.shape == (n,) and y.dtype == np.int64
        assert set(np.unique(y)) == set(range(10))
        assert X.min() >= 0 and X.max() <= 1


@pytest.mark.parametrize("name", ["labelme", "music", "ms", "cifar10h"])
def test_named_classes_are_the_loaded_classes(shared_datasets: Path, name: str):
    train = datasets.load(name, root=shared_datasets).train
    names = datasets.info(name).class_names
    assert names is not None and tuple(train.classes) == names


def test_ms_and_music_name_the_same_genre_per_song(shared_datasets: Path):
    ms = datasets.load("ms", root=shared_datasets).train
    music = datasets.load("music", root=shared_datasets).train
    np.testing.assert_array_equal(ms.classes[ms.truth], music.classes[music.truth])
    # Same votes too: each song's labels name the same genres in both files.
    ms_votes = sorted(zip(ms.task_ids[ms.task], ms.classes[ms.label], strict=True))
    music_votes = sorted(zip(music.task_ids[music.task], music.classes[music.label], strict=True))
    assert ms_votes == music_votes
