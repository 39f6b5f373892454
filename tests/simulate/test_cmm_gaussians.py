"""The CMM paper's simulated Setup (1)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn.simulate import DEFAULT_NOISE_LEVELS, cmm_gaussians


def group_diagonal(info, name):
    members = info.worker_group == name
    return np.diagonal(info.confusions[members][0]).mean()


def test_default_levels_give_the_documented_expert_and_inexpert_diagonals():
    assert DEFAULT_NOISE_LEVELS == (0.2, 1.0, None)
    experts, inexperts = [], []
    for seed in range(12):
        # Many annotators so that every group has members.
        _, info = cmm_gaussians(n_annotators=60, mean_labels=1.0, seed=seed, return_info=True)
        experts.append(group_diagonal(info, "expert"))
        inexperts.append(group_diagonal(info, "inexpert"))
        np.testing.assert_allclose(info.confusions[info.worker_group == "spammer"], 1 / 3)
    # Documented: means 0.91 and 0.60 over 100 seeds; one draw spreads inexperts widely.
    assert 0.86 <= np.mean(experts) <= 0.95
    assert 0.45 <= np.mean(inexperts) <= 0.75
    assert np.median(experts) > np.median(inexperts) + 0.15


def test_points_are_gaussian_around_their_centers():
    data, info = cmm_gaussians(n_per_class=3000, n_annotators=10, return_info=True)
    centers = np.array(info.params["centers"])
    assert data.features.shape == (9000, 2)
    np.testing.assert_array_equal(np.bincount(data.truth), [3000, 3000, 3000])
    for k in range(3):
        points = data.features[data.truth == k]
        np.testing.assert_allclose(points.mean(axis=0), centers[k], atol=0.015)
        np.testing.assert_allclose(points.std(axis=0), 0.2, atol=0.01)
    # Tasks are shuffled, not grouped by class.
    assert len(np.unique(data.truth[:30])) == 3


def test_sparse_labelling_by_distinct_annotators():
    data = cmm_gaussians(n_annotators=100, mean_labels=5.0, seed=1)
    assert abs(data.feedback_effort.mean() - 5.0) < 0.1
    assert data.feedback_effort.min() >= 1
    pairs = data.task.astype(np.int64) * data.n_workers + data.worker
    assert len(np.unique(pairs)) == data.n_annotations
    few = cmm_gaussians(n_per_class=200, n_annotators=3, mean_labels=5.0, seed=1)
    assert few.feedback_effort.max() == 3


def test_annotators_answer_from_their_group_matrix():
    data, info = cmm_gaussians(
        n_per_class=4000, n_annotators=2000, mean_labels=3.0, seed=2, return_info=True
    )
    shares = {name: np.mean(info.worker_group == name) for name in ("expert", "inexpert")}
    assert abs(shares["expert"] - 0.25) < 0.04 and abs(shares["inexpert"] - 0.55) < 0.04
    assert np.all(info.confusions > 0)  # the floor
    np.testing.assert_allclose(info.confusions.sum(axis=2), 1.0)
    group = info.worker_group[data.worker]
    truth = data.truth[data.task]
    for name in ("expert", "inexpert", "spammer"):
        expected = info.confusions[info.worker_group == name][0]
        counts = np.zeros((3, 3))
        np.add.at(counts, (truth[group == name], data.label[group == name]), 1)
        np.testing.assert_allclose(counts / counts.sum(axis=1, keepdims=True), expected, atol=0.03)


def test_group_names_and_other_group_counts():
    _, info = cmm_gaussians(
        n_per_class=50,
        n_annotators=30,
        group_proportions=(0.5, 0.5),
        noise_levels=(0.1, None),
        return_info=True,
    )
    assert set(info.worker_group) <= {"group0", "group1"}
    _, info = cmm_gaussians(
        n_per_class=50,
        n_annotators=30,
        group_proportions=(0.5, 0.5),
        noise_levels=(0.1, None),
        group_names=("good", "noise"),
        return_info=True,
    )
    assert set(info.worker_group) <= {"good", "noise"}
    assert info.params["noise_levels"] == [0.1, None]


def test_more_classes_and_dimensions():
    data = cmm_gaussians(
        n_per_class=40,
        n_annotators=10,
        centers=np.eye(4) * 3,
        group_proportions=(1.0,),
        noise_levels=(0.0,),
    )
    assert data.n_classes == 4 and data.features.shape == (160, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"group_proportions": (0.5, 0.6, 0.1)}, "group_proportions must sum to 1"),
        ({"noise_levels": (0.1, None)}, "noise_levels has 2 entries but group_proportions has 3"),
        ({"noise_levels": (-0.1, 1.0, None)}, "noise_levels must be in"),
        ({"sigma": 0.0}, "sigma must be positive"),
        ({"mean_labels": 0.5}, "mean_labels must be in"),
        ({"n_annotators": 0}, "n_annotators must be at least 1"),
        ({"centers": ((0.0, 0.0),)}, "centers must be at least two points"),
        ({"group_names": ("a", "a", "b")}, "group_names must be 3 distinct names"),
    ],
)
def test_invalid_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cmm_gaussians(n_per_class=10, **kwargs)


@pytest.mark.parametrize(("sigma", "bayes_accuracy"), [(0.4, 0.74), (0.2, 0.948)])
def test_bayes_accuracy_explains_the_default_sigma(sigma, bayes_accuracy):
    """With equal priors and one shared isotropic covariance, the Bayes classifier picks
    the nearest center. Its accuracy is ~0.74 at the paper's stated sigma = 0.4, and
    ~0.948 at 0.2, the paper's reported ideal accuracy (94.75%)."""
    data = cmm_gaussians(n_per_class=20_000, n_annotators=5, mean_labels=1.0, sigma=sigma, seed=1)
    centers = np.array([(-0.5, 0.0), (0.5, 0.0), (0.0, 0.5)])
    distances = ((data.features[:, None, :] - centers[None]) ** 2).sum(axis=2)
    accuracy = np.mean(distances.argmin(axis=1) == data.truth)
    assert accuracy == pytest.approx(bayes_accuracy, abs=0.01)


# ---------------------------------------------------------------------- the diag-dominant recipe
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from crowdlearn.simulate.cmm import (  # noqa: E402
    POOLED_MARGIN,
    diagonal_margins,
    is_diag_dominant,
    pooled_confusion,
)


def _group_matrices(info):
    return np.asarray(info.params["group_confusions"])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_diag_dominant_recipe_keeps_its_rule(seed):
    _, info = cmm_gaussians(
        n_per_class=60, n_annotators=30, recipe="diag-dominant", seed=seed, return_info=True
    )
    matrices = _group_matrices(info)
    # (a) every expert and inexpert row names its own class most often
    for group in (0, 1):
        assert (np.argmax(matrices[group], axis=1) == np.arange(3)).all()
        assert (diagonal_margins(matrices[group]) > 0).all()
    # (b) the pooled confusion, weighted by p(g), by the stated margin
    pooled = pooled_confusion(matrices, (0.25, 0.55, 0.20))
    np.testing.assert_allclose(pooled.sum(axis=1), 1.0)
    for k in range(3):
        others = np.delete(pooled[k], k)
        assert pooled[k, k] >= others.max() + POOLED_MARGIN
    assert info.params["draws"] >= 1 and info.params["recipe"] == "diag-dominant"
    # every annotator answers from her group's matrix
    group_index = {name: m for m, name in enumerate(info.params["group_names"])}
    for worker in range(30):
        expected = matrices[group_index[info.worker_group[worker]]]
        np.testing.assert_array_equal(info.confusions[worker], expected)


def test_confusion_matrices_differ_across_seeds():
    for recipe in ("diag-dominant", "stress"):
        drawn = [
            _group_matrices(
                cmm_gaussians(
                    n_per_class=60, n_annotators=30, recipe=recipe, seed=seed, return_info=True
                )[1]
            )
            for seed in range(5)
        ]
        for i in range(len(drawn)):
            for j in range(i + 1, len(drawn)):
                # experts and inexperts are redrawn with the seed, so no two runs share them
                assert not np.allclose(drawn[i][:2], drawn[j][:2])


def test_stress_recipe_is_the_default_and_can_break_the_rule():
    default = cmm_gaussians(n_per_class=60, n_annotators=30, seed=3, return_info=True)[1]
    stress = cmm_gaussians(
        n_per_class=60, n_annotators=30, seed=3, recipe="stress", return_info=True
    )[1]
    np.testing.assert_array_equal(_group_matrices(default), _group_matrices(stress))
    assert default.params["draws"] == 1
    broken = 0
    for seed in range(20):
        info = cmm_gaussians(n_per_class=60, n_annotators=30, seed=seed, return_info=True)[1]
        levels = info.params["noise_levels"]
        broken += not is_diag_dominant(_group_matrices(info), (0.25, 0.55, 0.20), levels)
    assert broken > 0  # why the diag-dominant recipe exists


def test_is_diag_dominant_by_hand():
    expert = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    # row 2 names class 1 more often than class 2: rule (a) fails
    inexpert = np.array([[0.5, 0.3, 0.2], [0.2, 0.6, 0.2], [0.1, 0.5, 0.4]])
    spam = np.full((3, 3), 1 / 3)
    matrices = np.stack([expert, inexpert, spam])
    levels = (0.2, 1.0, None)
    assert not is_diag_dominant(matrices, (0.25, 0.55, 0.20), levels, 0.0)
    np.testing.assert_allclose(diagonal_margins(inexpert), [0.2, 0.4, -0.1])
    # pooled row 2: 0.25 (0.1, 0.1, 0.8) + 0.55 (0.1, 0.5, 0.4) + 0.2 / 3 (1, 1, 1)
    pooled = pooled_confusion(matrices, (0.25, 0.55, 0.20))
    np.testing.assert_allclose(
        pooled[2], [0.025 + 0.055 + 0.2 / 3, 0.025 + 0.275 + 0.2 / 3, 0.2 + 0.22 + 0.2 / 3]
    )
    fixed = matrices.copy()
    fixed[1, 2] = [0.1, 0.3, 0.6]
    assert is_diag_dominant(fixed, (0.25, 0.55, 0.20), levels, 0.1)
    # pooled row 0 margin: 0.25 (0.7) + 0.55 (0.2) = 0.285
    assert is_diag_dominant(fixed, (0.25, 0.55, 0.20), levels, 0.28)
    assert not is_diag_dominant(fixed, (0.25, 0.55, 0.20), levels, 0.29)


def test_diag_dominant_recipe_gives_up_on_an_impossible_margin():
    with pytest.raises(ValueError, match="no draw"):
        cmm_gaussians(n_per_class=10, n_annotators=5, recipe="diag-dominant", pooled_margin=1.0)
    with pytest.raises(ValueError, match="recipe"):
        cmm_gaussians(n_per_class=10, n_annotators=5, recipe="paper")


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_near_tie_recipe_keeps_the_pooled_margin_in_its_band(seed):
    _, info = cmm_gaussians(
        n_per_class=60, n_annotators=30, recipe="near-tie", seed=seed, return_info=True
    )
    pooled = pooled_confusion(_group_matrices(info), (0.25, 0.55, 0.20))
    margins = [pooled[k, k] - np.delete(pooled[k], k).max() for k in range(3)]
    assert 0.0 <= min(margins) < POOLED_MARGIN
    assert info.params["recipe"] == "near-tie" and info.params["draws"] >= 1


def test_near_tie_recipe_gives_up_on_an_empty_band():
    with pytest.raises(ValueError, match="near-tie"):
        cmm_gaussians(n_per_class=30, n_annotators=10, recipe="near-tie", pooled_margin=0.0)
