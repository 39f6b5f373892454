"""simulate_label_sets: sizes, seeds, the worker groups' rates, correlated sets, features."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn.simulate import simulate_label_sets


def test_sizes_truth_and_seed():
    data = simulate_label_sets(
        n_tasks=80, n_workers=12, n_classes=5, labels_per_task=4, random_state=2
    )
    assert (data.n_tasks, data.n_workers, data.n_classes) == (80, 12, 5)
    assert data.n_annotations == 80 * 4
    assert np.all(np.bincount(data.task) == 4)
    assert set(np.unique(data.truth)) <= {0, 1}
    pairs = data.task.astype(np.int64) * data.n_workers + data.worker
    assert len(np.unique(pairs)) == data.n_annotations  # distinct workers per task
    assert data == simulate_label_sets(
        n_tasks=80, n_workers=12, n_classes=5, labels_per_task=4, random_state=2
    )
    assert data != simulate_label_sets(
        n_tasks=80, n_workers=12, n_classes=5, labels_per_task=4, random_state=3
    )


def test_answers_follow_the_rates_of_each_group():
    data, info = simulate_label_sets(
        n_tasks=4000,
        n_workers=20,
        n_classes=4,
        labels_per_task=10,
        random_state=0,
        return_info=True,
    )
    assert list(np.unique(info.group, return_counts=True)[1]) == [
        5,
        12,
        3,
    ]  # careless, reliable, spammer
    truth = data.truth[data.task].astype(bool)
    for j in range(data.n_workers):
        mine = data.worker == j
        answers, applies = data.answers[mine], truth[mine]
        sensitivity = np.broadcast_to(info.sensitivity[j], answers.shape)
        specificity = np.broadcast_to(info.specificity[j], answers.shape)
        assert answers[applies].mean() == pytest.approx(sensitivity[applies].mean(), abs=0.06)
        assert (~answers[~applies]).mean() == pytest.approx(specificity[~applies].mean(), abs=0.06)
    spam = info.group == "spammer"
    np.testing.assert_allclose(info.sensitivity[spam] + info.specificity[spam], 1.0)


def test_classes_are_correlated_through_prototypes():
    data, info = simulate_label_sets(
        n_tasks=3000, n_classes=6, set_noise=0.0, random_state=1, return_info=True
    )
    np.testing.assert_array_equal(data.truth, info.prototypes[info.prototype])
    noisy = simulate_label_sets(n_tasks=3000, n_classes=6, set_noise=0.1, random_state=1)
    distinct = len(np.unique(noisy.truth, axis=0))
    assert distinct > info.prototypes.shape[0]  # noise makes other sets, rarely


def test_features_are_tied_to_the_true_sets():
    data = simulate_label_sets(n_tasks=400, n_features=5, feature_noise=0.1, random_state=0)
    assert data.features.shape == (400, 5)
    # with little noise, tasks of the same true set have nearly the same features
    same = np.all(data.truth[:, None] == data.truth[None], axis=2)
    distance = np.linalg.norm(data.features[:, None] - data.features[None], axis=2)
    assert distance[same].mean() < 0.5 * distance[~same].mean()
    assert simulate_label_sets(n_tasks=10, random_state=0).features is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_classes": 1}, "n_classes"),
        ({"labels_per_task": 50}, "labels_per_task"),
        ({"set_noise": 1.5}, "set_noise"),
        ({"worker_mix": {"reliable": 0.5, "careless": 0.2}}, "sum to 1"),
        ({"worker_mix": {"robots": 1.0}}, "unknown groups"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_label_sets(**kwargs)
