"""CrowdData: construction, validation errors, derived views and transformations."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData, CrowdDataError

# ---------------------------------------------------------------------------- strategies


@st.composite
def annotations(draw, min_size: int = 1, max_size: int = 40):
    """(task ids, worker ids, labels) with distinct (task, worker) pairs and any id type."""
    n_tasks = draw(st.integers(1, 8))
    n_workers = draw(st.integers(1, 6))
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, n_tasks - 1), st.integers(0, n_workers - 1)),
            min_size=min_size,
            max_size=max_size,
            unique=True,
        )
    )
    labels = draw(st.lists(st.integers(0, 3), min_size=len(pairs), max_size=len(pairs)))
    as_text = draw(st.booleans())

    def name(prefix: str, i: int) -> object:
        return f"{prefix}{i}" if as_text else i * 7 + 1

    tasks = [name("t", t) for t, _ in pairs]
    workers = [name("w", w) for _, w in pairs]
    return tasks, workers, labels


# ---------------------------------------------------------------------------- construction


def test_codes_follow_sorted_ids_and_ids_round_trip():
    data = CrowdData.from_arrays(["b", "a", "b"], ["w2", "w1", "w1"], ["dog", "cat", "cat"])
    assert list(data.task_ids) == ["a", "b"]
    assert list(data.worker_ids) == ["w1", "w2"]
    assert list(data.classes) == ["cat", "dog"]
    np.testing.assert_array_equal(data.task, [1, 0, 1])
    np.testing.assert_array_equal(data.worker, [1, 0, 0])
    np.testing.assert_array_equal(data.label, [1, 0, 0])
    assert data.task.dtype == np.int32
    frame = data.to_frame()
    assert frame.to_dict("list") == {
        "task": ["b", "a", "b"],
        "worker": ["w2", "w1", "w1"],
        "label": ["dog", "cat", "cat"],
    }


def test_declared_ids_keep_their_order_and_allow_unused_ids():
    data = CrowdData.from_arrays(
        ["y", "x"],
        [1, 1],
        ["pos", "pos"],
        task_ids=["y", "x", "z"],
        classes=["pos", "neg"],
        features=np.arange(6.0).reshape(3, 2),
    )
    assert data.n_tasks == 3 and data.n_classes == 2
    np.testing.assert_array_equal(data.task, [0, 1])
    np.testing.assert_array_equal(data.label, [0, 0])
    np.testing.assert_array_equal(data.feedback_effort, [1, 1, 0])
    np.testing.assert_array_equal(data.features[2], [4.0, 5.0])


def test_truth_adds_classes_and_accepts_mappings_and_series():
    data = CrowdData.from_arrays(
        ["a", "a", "b"], ["u", "v", "u"], ["cat", "dog", "dog"], truth={"a": "cat", "b": "bird"}
    )
    assert list(data.classes) == ["bird", "cat", "dog"]
    np.testing.assert_array_equal(data.truth, [1, 0])
    series = pd.Series({"b": "dog"})
    partial = data.with_truth(series)
    np.testing.assert_array_equal(partial.truth, [-1, 2])
    assert partial.truth_series().to_dict() == {"b": "dog"}


def test_minus_one_and_none_in_truth_mean_unknown():
    data = CrowdData.from_arrays([0, 1, 2], [0, 0, 0], [0, 1, 1], truth=[1, -1, None])
    np.testing.assert_array_equal(data.truth, [1, -1, -1])
    none_known = CrowdData.from_arrays([0, 1], [0, 0], [0, 1], truth=[-1, None])
    assert none_known.truth is None and not none_known.has_truth


def test_minus_one_is_a_class_when_labels_use_it():
    data = CrowdData.from_arrays([0, 1], [0, 0], [-1, 1], truth=[-1, 1])
    assert list(data.classes) == [-1, 1]
    np.testing.assert_array_equal(data.truth, [0, 1])


def test_from_frame_with_custom_columns_and_truth_column():
    frame = pd.DataFrame(
        {"item": [1, 1, 2], "annotator": ["x", "y", "x"], "answer": [0, 1, 1], "gold": [0, 0, 1]}
    )
    data = CrowdData.from_frame(
        frame, task="item", worker="annotator", label="answer", truth="gold"
    )
    np.testing.assert_array_equal(data.truth, [0, 1])
    assert data.n_workers == 2


@pytest.mark.parametrize(
    ("labels", "truth"),
    [
        ([2**53 + 1, 5, 5], [5, None, 2**53 + 1]),
        ([True, False, True], [True, None, False]),
        (["a", "b", "b"], ["b", None, "a"]),
    ],
)
def test_to_frame_truth_column_round_trips_exactly(labels, truth):
    # A float column would round int ids above 2**53; nullable dtypes keep them exact.
    data = CrowdData.from_arrays([0, 1, 2], [0, 0, 0], labels, truth=truth)
    frame = data.to_frame(truth=True)
    assert frame["truth"].isna().tolist() == [False, True, False]
    assert CrowdData.from_frame(frame, truth="truth") == data


def test_from_matrix_keeps_empty_worker_columns():
    answers = np.array([[0, -1, -1], [-1, -1, 2], [1, -1, 1]])
    data = CrowdData.from_matrix(answers, truth=[0, 2, 1])
    assert (data.n_tasks, data.n_workers, data.n_classes, data.n_annotations) == (3, 3, 3, 4)
    np.testing.assert_array_equal(data.workload, [2, 0, 2])
    assert data.vote_counts.toarray().tolist() == [[1, 0, 0], [0, 0, 1], [0, 2, 0]]


def test_from_matrix_treats_nan_as_missing():
    answers = np.array([[0.0, np.nan], [1.0, 1.0]])
    assert CrowdData.from_matrix(answers).n_annotations == 3


def test_matrix_errors_name_the_cells():
    with pytest.raises(CrowdDataError, match=r"at \(task, worker\) \[\(1, 0\)\]"):
        CrowdData.from_matrix(np.array([[0, 1], [-3, 1]]))


def test_narrow_integer_codes_are_accepted():
    data = CrowdData(
        np.array([0, 1], dtype=np.int8),
        np.array([0, 0], dtype=np.uint16),
        np.array([1, 0], dtype=np.int64),
    )
    assert data.task.dtype == data.worker.dtype == data.label.dtype == np.int32
    with pytest.raises(CrowdDataError, match="int32 range"):
        CrowdData(np.array([0, 2**40]), np.array([0, 0]), np.array([0, 0]))


def test_from_counts_is_anonymous_and_reproduces_counts():
    counts = np.array([[2, 0, 1], [0, 0, 3], [0, 0, 0]])
    data = CrowdData.from_counts(counts, classes=["a", "b", "c"])
    assert data.is_anonymous and data.n_workers == 0 and data.worker is None
    assert data.n_tasks == 3 and data.n_annotations == 6
    np.testing.assert_array_equal(data.vote_counts.toarray(), counts)
    assert list(data.to_frame().columns) == ["task", "label"]
    with pytest.raises(CrowdDataError, match="no workers"):
        _ = data.by_worker


def test_anonymous_copy_drops_workers_and_keeps_votes():
    data = CrowdData.from_arrays([0, 0, 1], [0, 1, 0], [1, 1, 0])
    anonymous = data.anonymous()
    assert anonymous.is_anonymous
    np.testing.assert_array_equal(anonymous.vote_counts.toarray(), data.vote_counts.toarray())
    assert anonymous != data


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(task=[], worker=[], label=[]), "empty data"),
        (dict(task=[1, None], worker=[1, 2], label=[0, 1]), r"task column .*missing.* rows \[1\]"),
        (dict(task=[1, 2], worker=["a", np.nan], label=[0, 1]), r"worker column .* rows \[1\]"),
        (dict(task=[1, 2], worker=[1, 2], label=[0, None]), r"label column .* rows \[1\]"),
        (
            dict(task=[1, 2, 3], worker=[1, 2], label=[0, 1, 0]),
            "mismatched array lengths: task has 3, worker has 2",
        ),
        (dict(task=[1, "a"], worker=[1, 2], label=[0, 0]), "task ids mix types"),
        (
            dict(task=[1, 2], worker=[1, 2], label=["a", "z"], classes=["a", "b"]),
            r"labels not among the declared classes: \['z'\] at rows \[1\]",
        ),
        (
            dict(task=[1, 9], worker=[1, 2], label=[0, 0], task_ids=[1, 2]),
            r"task ids not among the declared task_ids: \[9\]",
        ),
        (
            dict(task=[1, 2], worker=[1, 1], label=[0, 0], features=np.zeros((3, 2))),
            "features have 3 rows but there are 2 tasks",
        ),
        (
            dict(
                task=[1, 2],
                worker=[1, 1],
                label=[0, 0],
                features=np.array([[0.0, 1.0], [np.inf, 0.0]]),
            ),
            r"non-finite .* rows \[1\]",
        ),
        (
            dict(task=[1, 2], worker=[1, 1], label=[0, 1], truth=[0, 5], classes=[0, 1]),
            r"truth has unknown classes \[5\]",
        ),
        (
            dict(task=[1, 2], worker=[1, 1], label=[0, 1], truth={7: 0}),
            r"truth is given for tasks that are not in the data: \[7\]",
        ),
        (
            dict(task=[1, 1, 2], worker=["w", "w", "w"], label=[0, 1, 0]),
            r"duplicate \(task, worker\) pair.*task 1 by worker 'w' at rows \[0, 1\].*duplicates=",
        ),
        (dict(task=[1], worker=[1], label=[0], duplicates="drop"), "not a policy"),
    ],
)
def test_each_bad_input_raises_a_message_naming_the_problem(kwargs, message):
    with pytest.raises(CrowdDataError, match=message):
        CrowdData.from_arrays(**kwargs)


@pytest.mark.parametrize(
    ("codes", "message"),
    [
        (
            dict(task=[0, -1], worker=[0, 0], label=[0, 0]),
            r"negative task codes \[-1\] at rows \[1\]",
        ),
        (
            dict(task=[0, 1], worker=[0, 0], label=[0, 3], n_classes=2),
            r"label codes \[3\] at rows \[1\] are out of range: there are 2 class ids",
        ),
        (
            dict(task=[0, 1], worker=[0, 5], label=[0, 0], worker_ids=["a", "b"]),
            r"worker codes \[5\] .* out of range",
        ),
        (dict(task=[0.0, np.nan], worker=[0, 0], label=[0, 0]), r"task codes contain NaN"),
        (dict(task=[0.5, 1.0], worker=[0, 0], label=[0, 0]), r"must be integers"),
        (
            dict(task=[0, 1], worker=[0, 0], label=[0, 1], truth=[0, 2], n_classes=2),
            r"truth has unknown classes \[2\] at tasks \[1\]",
        ),
        (
            dict(task=[0, 1], worker=[0, 0], label=[0, 1], truth=[0]),
            r"truth has 1 entries but there are 2 tasks",
        ),
    ],
)
def test_code_level_validation(codes, message):
    with pytest.raises(CrowdDataError, match=message):
        CrowdData(codes.pop("task"), codes.pop("worker"), codes.pop("label"), **codes)


def test_crowd_data_error_is_a_value_error():
    assert issubclass(CrowdDataError, ValueError)


@pytest.mark.parametrize(
    ("policy", "kept_labels"), [("keep", [0, 1, 2]), ("first", [0, 2]), ("last", [1, 2])]
)
def test_duplicate_policies(policy, kept_labels):
    data = CrowdData.from_arrays([5, 5, 6], ["w", "w", "w"], [0, 1, 2], duplicates=policy)
    np.testing.assert_array_equal(data.label, kept_labels)


def test_data_is_immutable():
    data = CrowdData.from_arrays([0, 1], [0, 0], [0, 1])
    with pytest.raises(ValueError, match="read-only"):
        data.task[0] = 1
    with pytest.raises(AttributeError, match="immutable"):
        data.truth = np.array([0, 1])


def test_caller_arrays_stay_writable():
    task = np.array([0, 1], dtype=np.int32)
    CrowdData(task, np.array([0, 0]), np.array([0, 1]))
    task[0] = 1  # the caller's array is not frozen by the constructor
    assert task[0] == 1


def test_pickle_round_trip():
    data = CrowdData.from_arrays(["a", "b"], ["u", "v"], [0, 1], truth=[0, 1], features=np.eye(2))
    assert pickle.loads(pickle.dumps(data)) == data


# ---------------------------------------------------------------------------- derived views


@settings(max_examples=60, deadline=None)
@given(annotations())
def test_vote_counts_equal_counted_votes(arrays):
    tasks, workers, labels = arrays
    data = CrowdData.from_arrays(tasks, workers, labels)
    expected = np.zeros((data.n_tasks, data.n_classes), dtype=int)
    for task, label in zip(data.task, data.label, strict=True):
        expected[task, label] += 1
    np.testing.assert_array_equal(data.vote_counts.toarray(), expected)
    np.testing.assert_array_equal(data.feedback_effort, expected.sum(axis=1))


@settings(max_examples=60, deadline=None)
@given(annotations())
def test_group_indexes_list_each_groups_rows_in_order(arrays):
    data = CrowdData.from_arrays(*arrays)
    for index, codes, n in [
        (data.by_task, data.task, data.n_tasks),
        (data.by_worker, data.worker, data.n_workers),
    ]:
        for group in range(n):
            np.testing.assert_array_equal(index.rows(group), np.flatnonzero(codes == group))
        np.testing.assert_array_equal(index.sizes, np.bincount(codes, minlength=n))


@settings(max_examples=60, deadline=None)
@given(annotations(), st.randoms(use_true_random=False))
def test_relabelling_ids_permutes_nothing_but_the_ids(arrays, random):
    tasks, workers, labels = arrays
    data = CrowdData.from_arrays(tasks, workers, labels)
    old_tasks = list(data.task_ids)
    new_names = [f"renamed-{i}" for i in range(len(old_tasks))]
    random.shuffle(new_names)
    rename = dict(zip(old_tasks, new_names, strict=True))
    worker_rename = {w: -i for i, w in enumerate(data.worker_ids)}
    relabelled = CrowdData.from_arrays(
        [rename[t] for t in tasks], [worker_rename[w] for w in workers], labels
    )
    assert relabelled.n_annotations == data.n_annotations
    original = {
        (rename[t], worker_rename[w], lab) for t, w, lab in data.to_frame().itertuples(index=False)
    }
    assert set(relabelled.to_frame().itertuples(index=False, name=None)) == original
    # per-task votes are the same, task by task
    new_counts = pd.DataFrame(relabelled.vote_counts.toarray(), index=relabelled.task_ids)
    old_counts = pd.DataFrame(data.vote_counts.toarray(), index=[rename[t] for t in data.task_ids])
    pd.testing.assert_frame_equal(
        new_counts.sort_index(), old_counts.sort_index(), check_names=False
    )


@settings(max_examples=40, deadline=None)
@given(annotations(min_size=2), st.randoms(use_true_random=False))
def test_equality_ignores_row_order(arrays, random):
    tasks, workers, labels = arrays
    rows = list(range(len(tasks)))
    random.shuffle(rows)
    data = CrowdData.from_arrays(tasks, workers, labels)
    shuffled = CrowdData.from_arrays(
        [tasks[i] for i in rows], [workers[i] for i in rows], [labels[i] for i in rows]
    )
    assert data == shuffled


def test_equality_distinguishes_id_types():
    assert CrowdData.from_arrays([1], [1], [0]) != CrowdData.from_arrays(["1"], [1], [0])


def test_repr_summarises_sizes():
    data = CrowdData.from_arrays([0, 1], [0, 0], [0, 1], truth=[0, -1])
    assert repr(data) == (
        "CrowdData(n_tasks=2, n_workers=1, n_classes=2, n_annotations=2, truth=1 known)"
    )


# ---------------------------------------------------------------------------- transformations


def _grid(n_tasks: int = 60, n_workers: int = 8, seed: int = 0) -> CrowdData:
    rng = np.random.default_rng(seed)
    answers = rng.integers(0, 3, size=(n_tasks, n_workers))
    answers[rng.random(answers.shape) < 0.5] = -1
    answers[:, 0] = rng.integers(0, 3, size=n_tasks)  # every task has an annotation
    truth = rng.integers(0, 3, size=n_tasks)
    return CrowdData.from_matrix(answers, truth=truth, features=rng.normal(size=(n_tasks, 4)))


def test_subsample_keeps_fraction_and_one_annotation_per_task():
    data = _grid()
    kept = data.subsample(0.3, seed=1)
    assert kept.n_annotations == max(round(0.3 * data.n_annotations), data.n_tasks)
    assert np.all(kept.feedback_effort >= 1)
    assert kept.n_tasks == data.n_tasks and kept.n_workers == data.n_workers
    original = set(data.to_frame().itertuples(index=False, name=None))
    assert set(kept.to_frame().itertuples(index=False, name=None)) <= original
    assert kept == data.subsample(0.3, seed=1)
    assert kept != data.subsample(0.3, seed=2)


def test_subsample_without_keeping_one_per_task_is_exact():
    data = _grid()
    kept = data.subsample(0.1, seed=0, keep_one_per_task=False)
    assert kept.n_annotations == round(0.1 * data.n_annotations)
    assert np.any(kept.feedback_effort == 0)


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.5])
def test_subsample_rejects_bad_fractions(fraction):
    with pytest.raises(CrowdDataError, match="fraction"):
        _grid().subsample(fraction)


def test_split_partitions_tasks_and_keeps_worker_codes():
    data = _grid()
    train, valid = data.split(test_size=0.25, seed=3)
    assert train.n_tasks + valid.n_tasks == data.n_tasks
    assert valid.n_tasks == 15
    assert set(train.task_ids).isdisjoint(valid.task_ids)
    assert train.n_annotations + valid.n_annotations == data.n_annotations
    np.testing.assert_array_equal(train.worker_ids, data.worker_ids)
    # features and truth travel with their task
    position = {t: i for i, t in enumerate(data.task_ids)}
    rows = [position[t] for t in valid.task_ids]
    np.testing.assert_array_equal(valid.features, data.features[rows])
    np.testing.assert_array_equal(valid.truth, data.truth[rows])


def test_stratified_split_keeps_class_shares():
    data = _grid(n_tasks=300)
    _, valid = data.split(test_size=0.2, seed=0, stratify=True)
    np.testing.assert_allclose(
        np.bincount(valid.truth) / valid.n_tasks,
        np.bincount(data.truth) / data.n_tasks,
        atol=0.02,
    )


def test_restrict_to_workers_recodes_workers():
    data = _grid()
    subset = data.restrict_to_workers([5, 2])
    assert list(subset.worker_ids) == [2, 5]
    assert subset.n_annotations == int(data.workload[2] + data.workload[5])
    assert subset.n_tasks == data.n_tasks
    dropped = data.restrict_to_workers([5, 2], drop_empty_tasks=True)
    assert np.all(dropped.feedback_effort > 0)
    with pytest.raises(CrowdDataError, match=r"unknown worker ids: \[99\]"):
        data.restrict_to_workers([99])


def test_with_features_accepts_frames_indexed_by_task_id():
    data = CrowdData.from_arrays(["a", "b"], [0, 0], [0, 1])
    frame = pd.DataFrame({"x": [2.0, 1.0]}, index=["b", "a"])
    np.testing.assert_array_equal(data.with_features(frame).features, [[1.0], [2.0]])
    with pytest.raises(CrowdDataError, match=r"no row for tasks \['b'\]"):
        data.with_features(pd.DataFrame({"x": [1.0]}, index=["a"]))
    assert data.with_features(frame).with_features(None).features is None


def test_select_tasks_recodes_and_validates():
    data = _grid()
    picked = data.select_tasks([4, 2])
    assert list(picked.task_ids) == [4, 2]
    with pytest.raises(CrowdDataError, match="repeat"):
        data.select_tasks([1, 1])
