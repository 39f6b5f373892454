"""crowd_on_features, group allocation and make_imbalanced."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.simulate import (
    DEFAULT_GROUPS,
    allocate_groups,
    crowd_on_features,
    make_imbalanced,
)


def blobs(n: int = 3000, n_classes: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(n_classes, size=n)
    return rng.normal(size=(n, 4)) + y[:, None], y


def accuracy_by_group(data, info):
    correct = data.label == data.truth[data.task]
    group = info.worker_group[data.worker]
    return {name: correct[group == name].mean() for name in np.unique(group)}


def test_reproducible_and_keyed_by_the_original_classes():
    X, y = blobs()
    labels = np.array(["cat", "dog", "emu"])[y]
    data = crowd_on_features(X, labels, n_workers=20, seed=3)
    assert data == crowd_on_features(X, labels, n_workers=20, seed=3)
    assert data != crowd_on_features(X, labels, n_workers=20, seed=4)
    assert list(data.classes) == ["cat", "dog", "emu"]
    np.testing.assert_array_equal(data.classes[data.truth], labels)
    np.testing.assert_array_equal(data.features, X)
    np.testing.assert_array_equal(data.task_ids, np.arange(len(y)))
    assert data.n_workers == 20 and data.n_annotations == 3 * len(y)


def test_group_sizes_follow_the_proportions():
    X, y = blobs(300)
    _, info = crowd_on_features(X, y, n_workers=40, return_info=True)
    names, counts = np.unique(info.worker_group, return_counts=True)
    assert dict(zip(names, counts, strict=True)) == {
        "expert": 8,
        "inexpert": 20,
        "spammer": 8,
        "adversarial": 2,
        "class_confuser": 2,
    }
    assert info.params["group_sizes"]["inexpert"] == 20
    # Workers are shuffled: the first eight are not all experts.
    assert set(info.worker_group[:8]) != {"expert"}


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 300),
    st.lists(st.integers(0, 20), min_size=1, max_size=7).filter(lambda w: sum(w) > 0),
)
def test_largest_remainder_allocation(n_workers, raw_weights):
    proportions = np.array(raw_weights, dtype=float) / sum(raw_weights)
    sizes = allocate_groups(n_workers, proportions)
    assert sizes.sum() == n_workers
    assert np.all(sizes[proportions == 0] == 0)
    positive = proportions > 0
    if n_workers >= positive.sum():
        assert np.all(sizes[positive] >= 1)
    else:
        assert np.all(np.abs(sizes - proportions * n_workers) < 1)


def test_group_behaviours():
    X, y = blobs(20000, n_classes=4)
    groups = {
        "expert": 0.2,
        "inexpert": 0.2,
        "spammer": 0.2,
        "adversarial": 0.2,
        "class_confuser": 0.2,
    }
    data, info = crowd_on_features(X, y, n_workers=25, groups=groups, seed=1, return_info=True)
    accuracy = accuracy_by_group(data, info)
    assert 0.85 <= accuracy["expert"] <= 0.98
    assert 0.5 <= accuracy["inexpert"] <= 0.75
    assert abs(accuracy["spammer"] - 0.25) < 0.02
    assert accuracy["adversarial"] <= 0.15
    # 0.9 on the two classes outside the pair, 0.4 * 0.9 on the pair: (2 * 0.9 + 2 * 0.36) / 4.
    assert abs(accuracy["class_confuser"] - 0.63) < 0.03
    confusions = info.confusions
    np.testing.assert_allclose(confusions.sum(axis=2), 1.0)
    for worker in np.flatnonzero(info.worker_group == "adversarial"):
        rows = confusions[worker]
        target = rows.argmax(axis=1)
        assert np.all(target != np.arange(4))  # errors go to a derangement of the classes
        assert len(set(target)) == 4
        assert np.all(rows.max(axis=1) >= 0.8 * 0.85)
    for worker in np.flatnonzero(info.worker_group == "class_confuser"):
        rows = confusions[worker]
        mixed = np.flatnonzero(np.diagonal(rows) < 0.5)
        assert len(mixed) == 2
        a, b = mixed
        assert rows[a, b] >= 0.6 and rows[b, a] >= 0.6


def test_group_params_override_the_defaults():
    X, y = blobs(500)
    _, info = crowd_on_features(
        X,
        y,
        n_workers=10,
        groups={"expert": 1.0},
        group_params={"expert": {"accuracy": 0.99}},
        return_info=True,
    )
    np.testing.assert_allclose(np.diagonal(info.confusions, axis1=1, axis2=2), 0.99)
    assert info.params["group_params"]["expert"] == {"accuracy": 0.99, "error_concentration": 1.0}


def test_poisson_labels_per_task():
    X, y = blobs(20000)
    data = crowd_on_features(X, y, n_workers=6, labels_per_task=4, labels_per_task_dist="poisson")
    effort = data.feedback_effort
    assert effort.min() >= 1 and effort.max() <= 6
    # 1 + Poisson(3) clipped at 6 has mean 4 - E[(1 + P - 6)+] ~ 3.88.
    assert 3.75 < effort.mean() < 4.0


def test_load_skew_grows_the_max_to_median_load():
    X, y = blobs(6000)
    ratios = []
    for skew in (0.0, 0.5, 1.0, 2.0):
        load = crowd_on_features(X, y, n_workers=40, load_skew=skew, seed=2).workload
        ratios.append(load.max() / np.median(load))
    assert ratios == sorted(ratios) and ratios[-1] > 5 * ratios[0]


def test_imbalance_ratio_subsamples_before_simulating():
    X, y = blobs(3000)
    data, info = crowd_on_features(X, y, n_workers=10, imbalance_ratio=5.0, return_info=True)
    kept = info.params["kept_indices"]
    np.testing.assert_array_equal(data.features, X[kept])
    np.testing.assert_array_equal(data.truth, y[kept])
    sizes = np.bincount(data.truth)
    assert abs(sizes.max() / sizes.min() - 5.0) < 0.1
    assert list(data.classes) == [0, 1, 2]


def test_a_medium_crowd_is_fast():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(70000, 10)).astype(np.float32)
    y = rng.integers(10, size=70000)
    start = time.perf_counter()
    data = crowd_on_features(X, y, n_workers=200, labels_per_task=3, load_skew=0.5)
    elapsed = time.perf_counter() - start
    assert data.n_annotations == 210000
    assert elapsed < 5.0, f"took {elapsed:.1f} s"


def test_make_imbalanced_reaches_the_ratio_in_the_class_order():
    y = np.repeat([0, 1, 2, 3], [300, 500, 500, 100])
    X = np.arange(len(y)) * 10
    X_sub, y_sub, kept = make_imbalanced(X, y, ratio=8.0, seed=1)
    np.testing.assert_array_equal(X_sub, X[kept])
    np.testing.assert_array_equal(y_sub, y[kept])
    assert np.all(np.diff(kept) > 0)
    sizes = np.bincount(y_sub, minlength=4)
    # Ranked by size, ties by class: 1, 2, 0, 3; sizes 500 * 8 ** (-rank / 3), rounded.
    np.testing.assert_array_equal(sizes, [125, 500, 250, 63])
    assert make_imbalanced(X, y, ratio=8.0, seed=1)[2].tolist() == kept.tolist()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 400), min_size=2, max_size=6),
    st.floats(1.0, 20.0),
    st.integers(0, 2**32 - 1),
)
def test_make_imbalanced_invariants(counts, ratio, seed):
    y = np.repeat(np.arange(len(counts)) * 3 + 1, counts)  # class ids need not be codes
    try:
        _, y_sub, kept = make_imbalanced(np.zeros((len(y), 2)), y, ratio, seed=seed)
    except ValueError as error:
        assert "leaves the smallest class empty" in str(error)
        return
    classes, sizes = np.unique(y_sub, return_counts=True)
    assert len(classes) == len(counts)
    original = np.array(counts)
    order = np.lexsort((np.arange(len(counts)), -original))
    kept_sizes = sizes[order]
    assert np.all(np.diff(kept_sizes) <= 0), "sizes must follow the original ranking"
    assert np.all(kept_sizes <= original[order])
    # Rounding moves each size by at most 1/2.
    top, bottom = kept_sizes[0], kept_sizes[-1]
    assert (top - 0.5) / (bottom + 0.5) <= ratio * (1 + 1e-9)
    assert ratio <= (top + 0.5) / (bottom - 0.5) * (1 + 1e-9)
    assert np.all(y[kept] == y_sub)


def test_make_imbalanced_refuses_an_empty_class():
    y = np.repeat([0, 1], [10, 3])
    with pytest.raises(ValueError, match="leaves the smallest class empty"):
        make_imbalanced(np.zeros(len(y)), y, ratio=30.0)
    with pytest.raises(ValueError, match="ratio must be in"):
        make_imbalanced(np.zeros(len(y)), y, ratio=0.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"groups": {"expert": 0.5, "spammer": 0.4}}, "groups must sum to 1"),
        ({"groups": {"expert": 0.5, "wizard": 0.5}}, "unknown worker groups"),
        ({"groups": {"expert": 1.2, "spammer": -0.2}}, r"groups entries must be in"),
        ({"group_params": {"expert": {"skill": 1}}}, "unknown parameters"),
        ({"group_params": {"wizard": {}}}, "not in groups"),
        ({"group_params": {"expert": {"accuracy": (0.9, 0.1)}}}, "accuracy high"),
        ({"labels_per_task": 60}, "labels_per_task=60 exceeds n_workers=50"),
        ({"labels_per_task": 0.5, "labels_per_task_dist": "poisson"}, "labels_per_task"),
        ({"labels_per_task_dist": "zipf"}, "labels_per_task_dist"),
        ({"load_skew": -1.0}, "load_skew"),
        ({"imbalance_ratio": 0.5}, "imbalance_ratio"),
        ({"n_workers": 0}, "n_workers must be at least 1"),
    ],
)
def test_invalid_parameters_are_refused(kwargs, message):
    X, y = blobs(100)
    with pytest.raises(ValueError, match=message):
        crowd_on_features(X, y, **kwargs)


def test_invalid_samples_are_refused():
    with pytest.raises(ValueError, match="X has 3 rows but y has 2"):
        crowd_on_features(np.zeros((3, 2)), [0, 1])
    with pytest.raises(ValueError, match="missing values"):
        crowd_on_features(np.zeros((2, 2)), np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="a single class"):
        crowd_on_features(np.zeros((2, 2)), ["cat", "cat"])


def test_default_groups_are_documented():
    assert DEFAULT_GROUPS == {
        "expert": 0.2,
        "inexpert": 0.5,
        "spammer": 0.2,
        "adversarial": 0.05,
        "class_confuser": 0.05,
    }
