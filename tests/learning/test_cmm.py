"""Crowd Mixture Model: the EM steps against a hand computation, initialisation, the
two settings, group recovery on the paper's simulated scenario, restarts, persistence."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.aggregation._design import vote_posteriors
from crowdlearn.learning import TwoStage, cmm
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning.cmm import (
    Cells,
    CrowdMixture,
    annotation_group_posteriors,
    annotator_confusions,
    annotator_group_posteriors,
    consensus,
    e_step,
    global_initial_groups,
    individual_initial_groups,
    m_step,
)
from crowdlearn.simulate import cmm_gaussians

torch.set_num_threads(1)

GROUPS = ("expert", "inexpert", "spammer")


# ---------------------------------------------------------------------- a hand computation
# 2 tasks, K = 2, M = 2. Task 0 has votes r_0 = (2, 1), task 1 has r_1 = (0, 3).
F = np.array([[0.8, 0.2], [0.3, 0.7]])
ALPHA = np.array([0.6, 0.4])
BETA = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.5, 0.5]]])
CELLS = Cells.from_arrays(task=[0, 0, 1], label=[0, 1, 1], count=[2, 1, 3])
# beta^(m)[k, j] f_k(x_i) alpha_m for each cell (rows m, columns k), by hand:
JOINT = np.array(
    [
        [[0.9 * 0.8 * 0.6, 0.2 * 0.2 * 0.6], [0.5 * 0.8 * 0.4, 0.5 * 0.2 * 0.4]],  # (0, 0)
        [[0.1 * 0.8 * 0.6, 0.8 * 0.2 * 0.6], [0.5 * 0.8 * 0.4, 0.5 * 0.2 * 0.4]],  # (0, 1)
        [[0.1 * 0.3 * 0.6, 0.8 * 0.7 * 0.6], [0.5 * 0.3 * 0.4, 0.5 * 0.7 * 0.4]],  # (1, 1)
    ]
)
N = np.array([0.432 + 0.024 + 0.16 + 0.04, 0.048 + 0.096 + 0.16 + 0.04, 0.018 + 0.336 + 0.2])


def test_e_step_is_the_papers_posterior_and_log_likelihood():
    np.testing.assert_allclose(JOINT.sum(axis=(1, 2)), N)
    q, log_likelihood = e_step(F, CELLS, ALPHA, BETA)
    np.testing.assert_allclose(q, JOINT / N[:, None, None])
    np.testing.assert_allclose(q[0], [[0.432, 0.024], [0.16, 0.04]] / np.float64(0.656))
    assert log_likelihood == pytest.approx(2 * np.log(0.656) + np.log(0.344) + 3 * np.log(0.554))


def test_m_step_and_consensus_are_eq_6_and_7():
    q = JOINT / N[:, None, None]
    alpha, beta = m_step(q, CELLS)
    # alpha_m = sum_ij r_ij q_ij(m, .) / sum_ij r_ij, with sum r = 6
    np.testing.assert_allclose(
        alpha,
        [
            (2 * 0.456 / 0.656 + 0.144 / 0.344 + 3 * 0.354 / 0.554) / 6,
            (2 * 0.2 / 0.656 + 0.2 / 0.344 + 3 * 0.2 / 0.554) / 6,
        ],
    )
    # beta^(0)[k, j]: the r-weighted mass of group 0 and class k on label j, per (0, k)
    to_label_0 = np.array([2 * 0.432 / 0.656, 2 * 0.024 / 0.656])
    to_label_1 = np.array([0.048 / 0.344 + 3 * 0.018 / 0.554, 0.096 / 0.344 + 3 * 0.336 / 0.554])
    expected_0 = np.column_stack([to_label_0, to_label_1])
    np.testing.assert_allclose(beta[0], expected_0 / expected_0.sum(axis=1, keepdims=True))
    to_label_0 = np.array([2 * 0.16 / 0.656, 2 * 0.04 / 0.656])
    to_label_1 = np.array([0.16 / 0.344 + 3 * 0.06 / 0.554, 0.04 / 0.344 + 3 * 0.14 / 0.554])
    expected_1 = np.column_stack([to_label_0, to_label_1])
    np.testing.assert_allclose(beta[1], expected_1 / expected_1.sum(axis=1, keepdims=True))
    # Dirichlet smoothing adds a pseudo-count to every (m, k, j) count
    smoothed = m_step(q, CELLS, smoothing=1.0)[1]
    np.testing.assert_allclose(smoothed[0], (expected_0 + 1) / (expected_0 + 1).sum(1)[:, None])
    # p_bar (eq. 7): r_bar_ik = sum_j q_ij(., k) r_ij, normalised; task 2 has no votes
    targets = consensus(q, CELLS, n_tasks=3)
    r_bar_0 = 2 * np.array([0.592, 0.064]) / 0.656 + np.array([0.208, 0.136]) / 0.344
    np.testing.assert_allclose(targets[0], r_bar_0 / 3)
    np.testing.assert_allclose(targets[1], np.array([0.078, 0.476]) / 0.554)
    np.testing.assert_allclose(targets[2], [0.5, 0.5])


def test_group_assignment_of_annotations_and_annotators():
    # one annotator gave (task 0, label 0) and (task 1, label 1); another only the latter
    proba, labels, workers = F[[0, 1, 1]], np.array([0, 1, 1]), np.array([0, 0, 1])
    per_annotation = annotation_group_posteriors(proba, labels, ALPHA, BETA)
    np.testing.assert_allclose(per_annotation[0], np.array([0.456, 0.2]) / 0.656)
    np.testing.assert_allclose(per_annotation[1], np.array([0.354, 0.2]) / 0.554)
    groups = annotator_group_posteriors(proba, labels, workers, 3, ALPHA, BETA)
    # p(g = m | a) proportional to alpha_m prod_l p_m(y_l | x_l)
    scores = np.array([0.6 * (0.9 * 0.8 + 0.2 * 0.2) * (0.1 * 0.3 + 0.8 * 0.7), 0.4 * 0.5 * 0.5])
    np.testing.assert_allclose(groups[0], scores / scores.sum())
    np.testing.assert_allclose(groups[1], per_annotation[1])
    np.testing.assert_allclose(groups[2], ALPHA)  # an annotator without annotations
    mixed = annotator_confusions(groups, BETA)
    np.testing.assert_allclose(mixed[0], groups[0, 0] * BETA[0] + groups[0, 1] * BETA[1])


# ---------------------------------------------------------------------- initialisation


def test_global_initialisation_clusters_the_annotations_cross_entropy_terms():
    counts = np.array([[5, 0, 0], [0, 4, 0], [4, 1, 0], [0, 1, 4], [3, 0, 2], [0, 0, 6]])
    data = CrowdData.from_counts(counts)
    cells = Cells.from_data(data)
    majority = vote_posteriors(data, np.dtype(float))
    shares = global_initial_groups(cells, majority, 3, seed=0)
    assert shares.shape == (len(cells), 3) and set(np.unique(shares)) == {0.0, 1.0}
    group = shares.argmax(axis=1)
    assert set(group) == {0, 1, 2}
    # unanimous tasks: the point -mv_i log(onehot_j) is 0, the same for all of them
    unanimous = np.isin(cells.task, [0, 1, 5])
    assert len(set(group[unanimous])) == 1
    np.testing.assert_array_equal(global_initial_groups(cells, majority, 3, seed=0), shares)
    with pytest.MonkeyPatch.context() as patch:  # large data: mini-batch k-means
        patch.setattr(cmm, "MINIBATCH_KMEANS_ABOVE", 4)
        minibatch = global_initial_groups(cells, majority, 3, seed=0).argmax(axis=1)
    assert len(set(minibatch[unanimous])) == 1 and len(set(minibatch)) > 1
    # with fewer distinct points than groups, the other groups start empty
    agreed = CrowdData.from_counts(np.array([[3, 0], [0, 2], [4, 0]]))
    agreed_cells = Cells.from_data(agreed)
    single = global_initial_groups(
        agreed_cells, vote_posteriors(agreed, np.dtype(float)), 3, seed=0
    )
    np.testing.assert_array_equal(single, np.eye(3)[[0, 0, 0]])


def test_individual_initialisation_gives_cells_the_groups_of_their_annotators():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, size=60)
    # workers 0-3 always right, workers 4-7 uniform at random
    task = np.repeat(np.arange(60), 8)
    worker = np.tile(np.arange(8), 60)
    label = np.where(worker < 4, truth[task], rng.integers(0, 3, size=len(task)))
    data = CrowdData.from_arrays(task, worker, label)
    cells = Cells.from_data(data)
    shares = individual_initial_groups(data, cells, vote_posteriors(data, np.dtype(float)), 2, 0)
    np.testing.assert_allclose(shares.sum(axis=1), 1.0)
    right = cells.label == truth[cells.task]
    # a wrong label comes from the random workers only; a right one mostly from the good
    wrong_group = shares[~right].argmax(axis=1)
    assert np.all(shares[~right].max(axis=1) == 1.0) and len(set(wrong_group)) == 1
    assert np.all(shares[right][:, 1 - wrong_group[0]] >= 4 / 7 - 1e-12)


# ---------------------------------------------------------------------- EM runs


@pytest.fixture(scope="module")
def gaussians() -> tuple[CrowdData, object, tuple[np.ndarray, np.ndarray]]:
    data, info = cmm_gaussians(
        n_per_class=200, n_annotators=100, mean_labels=3, seed=2, return_info=True
    )
    test = cmm_gaussians(n_per_class=200, n_annotators=5, mean_labels=1, seed=12)
    return data, info, (test.features, test.truth)


def test_true_parameters_are_a_fixed_point_of_em(gaussians):
    """With the true classes as f, EM started at the simulated groups stays there (the
    likelihood of eq. 4 depends on the groups only through sum_m alpha_m beta^(m), so
    which split EM finds is set by its initialisation)."""
    data, info, _ = gaussians
    cells = Cells.from_data(data)
    proba = 0.01 + 0.97 * np.eye(3)[data.truth]
    first = [np.flatnonzero(info.worker_group == name)[0] for name in GROUPS]
    beta = info.confusions[first]
    alpha = np.array([np.mean(info.worker_group[data.worker] == name) for name in GROUPS])
    log_likelihoods = []
    for _ in range(30):
        q, log_likelihood = e_step(proba, cells, alpha, beta)
        alpha, beta = m_step(q, cells)
        log_likelihoods.append(log_likelihood)
    assert np.all(np.diff(log_likelihoods) >= -1e-9)
    np.testing.assert_allclose(beta[:2], info.confusions[first[:2]], atol=0.06)
    assert _normalised_entropy(beta[2]) > 0.98  # the spammers stay uniform


def test_log_likelihood_never_decreases_with_a_frozen_network(gaussians):
    data, _, _ = gaussians
    for setting in ("individual", "global"):
        # one held-out share and a refit: ``history_`` is one EM run (not five folds')
        model = CrowdMixture(setting=setting, lr=0.0, tol=0.0, max_epochs=15, crowd_folds=1)
        model.fit(data)
        steps = np.diff(model.history_["log_likelihood"].to_numpy())
        assert np.all(steps >= -1e-9), steps
        assert model.history_["log_likelihood"].iloc[-1] == pytest.approx(model.log_likelihood_)


def test_recovers_the_simulated_groups_and_beats_majority_vote():
    data, info = cmm_gaussians(
        n_per_class=400, n_annotators=100, mean_labels=3, seed=1, return_info=True
    )
    test = cmm_gaussians(n_per_class=200, n_annotators=5, mean_labels=1, seed=11)
    X_test, y_test = test.features, test.truth
    model = CrowdMixture(lr=0.01, max_epochs=30, standardize=False).fit(data, valid=None)
    np.testing.assert_allclose(model.group_weights_.sum(), 1.0)
    np.testing.assert_allclose(model.group_confusions_.sum(axis=2), 1.0)
    # annotators fall in their simulated groups, up to a permutation of the groups
    assigned = model.annotator_groups_.argmax(axis=1)
    truth = np.searchsorted(GROUPS, info.worker_group)
    agreement = max(
        np.mean(np.asarray(perm)[truth] == assigned) for perm in itertools.permutations(range(3))
    )
    assert agreement >= 0.95
    # the group of the spammers is the noisiest, with about their share of annotations
    spam = np.bincount(assigned[info.worker_group == "spammer"], minlength=3).argmax()
    entropies = [_normalised_entropy(matrix) for matrix in model.group_confusions_]
    assert np.argmax(entropies) == spam
    share = np.mean(info.worker_group[data.worker] == "spammer")
    assert model.group_weights_[spam] == pytest.approx(share, abs=0.05)
    np.testing.assert_allclose(
        model.confusions_, annotator_confusions(model.annotator_groups_, model.group_confusions_)
    )
    np.testing.assert_allclose(model.annotator_groups(data), model.annotator_groups_, atol=1e-6)
    majority = TwoStage(lr=0.01, max_epochs=30).fit(data, valid=None)
    accuracy = np.mean(model.predict(X_test) == y_test)
    assert accuracy > np.mean(majority.predict(X_test) == y_test) + 0.1
    assert accuracy > 0.8


def test_global_setting_on_anonymous_data_and_vote_counts(gaussians):
    data, _, (X_test, y_test) = gaussians
    params = dict(setting="global", pre_train_epochs=3, lr=0.01, max_epochs=12)
    anonymous = CrowdMixture(**params).fit(data.anonymous(), valid=None)
    counts = CrowdData.from_counts(data.vote_counts, features=data.features)
    from_counts = CrowdMixture(**params).fit(counts, valid=None)
    np.testing.assert_allclose(from_counts.group_confusions_, anonymous.group_confusions_)
    np.testing.assert_allclose(from_counts.targets_, anonymous.targets_)
    assert not hasattr(anonymous, "annotator_groups_")
    assert anonymous.history_["log_likelihood"].isna().sum() == 3  # pre-training epochs
    majority = TwoStage(lr=0.01, max_epochs=12).fit(data, valid=None)
    accuracy = np.mean(anonymous.predict(X_test) == y_test)
    assert accuracy > np.mean(majority.predict(X_test) == y_test) + 0.1
    groups = anonymous.annotation_groups(counts)
    assert groups.shape == (counts.n_annotations, 3)
    np.testing.assert_allclose(groups.sum(axis=1), 1.0)
    with pytest.raises(CrowdDataError, match="setting='global'"):
        CrowdMixture(max_epochs=2).fit(data.anonymous())
    with pytest.raises(CrowdDataError, match="anonymous"):
        anonymous.annotator_groups(counts)


def test_restarts_keep_the_most_likely_run(gaussians):
    data, _, _ = gaussians
    params = dict(init="random", max_epochs=4, random_state=3)
    model = CrowdMixture(n_restarts=3, **params).fit(data, valid=None)
    assert len(model.restart_log_likelihoods_) == 3
    best = int(np.argmax(model.restart_log_likelihoods_))
    assert model.log_likelihood_ == max(model.restart_log_likelihoods_)
    single = CrowdMixture(**{**params, "random_state": 3 + best}).fit(data, valid=None)
    np.testing.assert_array_equal(model.group_confusions_, single.group_confusions_)
    np.testing.assert_array_equal(model.annotator_groups_, single.annotator_groups_)


def test_save_and_load_round_trip(gaussians, tmp_path):
    data, _, (X_test, _) = gaussians
    model = CrowdMixture(n_groups=2, max_epochs=3).fit(data)
    model.save(tmp_path / "cmm.pt")
    loaded = BaseLearner.load(tmp_path / "cmm.pt")
    assert isinstance(loaded, CrowdMixture) and loaded.n_groups == 2
    np.testing.assert_allclose(loaded.predict_proba(X_test), model.predict_proba(X_test))
    for name in ("group_weights_", "group_confusions_", "annotator_groups_", "confusions_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(model, name))
    np.testing.assert_allclose(loaded.annotation_groups(data), model.annotation_groups(data))


@pytest.mark.parametrize("crash_epoch", [1, 2, 4])  # pre-training, first EM, later EM
def test_checkpoint_resume_continues_em_exactly(gaussians, tmp_path, monkeypatch, crash_epoch):
    data, _, _ = gaussians
    params = dict(pre_train_epochs=2, max_epochs=6, tol=0.0, random_state=1)
    uninterrupted = CrowdMixture(**params).fit(data, valid=None)

    class Crash(Exception):
        pass

    original = CrowdMixture._epoch_end

    def crash(self, context):
        if context.epoch == crash_epoch:
            raise Crash
        return original(self, context)

    directory = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(CrowdMixture, "_epoch_end", crash)
        with pytest.raises(Crash):
            CrowdMixture(**params, checkpoint_dir=directory).fit(data, valid=None)
    resumed = CrowdMixture(**params, checkpoint_dir=directory, resume=True).fit(data, valid=None)
    np.testing.assert_array_equal(resumed.group_confusions_, uninterrupted.group_confusions_)
    np.testing.assert_array_equal(resumed.annotator_groups_, uninterrupted.annotator_groups_)
    np.testing.assert_array_equal(resumed.targets_, uninterrupted.targets_)
    np.testing.assert_array_equal(
        resumed.history_["log_likelihood"], uninterrupted.history_["log_likelihood"]
    )


def test_bad_parameters(gaussians):
    data, _, _ = gaussians
    with pytest.raises(ValueError, match="setting"):
        CrowdMixture(setting="local").fit(data)
    with pytest.raises(ValueError, match="init"):
        CrowdMixture(init="spectral").fit(data)
    with pytest.raises(ValueError, match="n_groups"):
        CrowdMixture(n_groups=0).fit(data)
    with pytest.raises(ValueError, match="pre_train_epochs"):
        CrowdMixture(pre_train_epochs=5, max_epochs=5).fit(data)
    with pytest.raises(ValueError, match="smoothing"):
        CrowdMixture(smoothing=-1.0).fit(data)
    assert repr(CrowdMixture(n_groups=4, lr=0.01)) == "CrowdMixture(lr=0.01, n_groups=4)"


def _normalised_entropy(matrix: np.ndarray) -> float:
    """Mean row entropy over log K: 1 for uniform rows, 0 for one-hot rows."""
    rows = np.clip(matrix, 1e-12, 1.0)
    return float(-(rows * np.log(rows)).sum(axis=1).mean() / np.log(matrix.shape[1]))


# ---------------------------------------------------------------------- eq. 7's weighting
# Three tasks, K = 2, with T_i = 1, 2, 3 annotations (mean 2).
def test_labels_weighted_loss_by_hand():
    targets = torch.tensor([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]], dtype=torch.float64)
    # softmax rows: (1/2, 1/2), (3/4, 1/4), (1/5, 4/5)
    logits = torch.log(torch.tensor([[1.0, 1.0], [3.0, 1.0], [1.0, 4.0]], dtype=torch.float64))
    n_labels = torch.tensor([1, 2, 3])
    entropies = [
        np.log(2.0),
        -0.5 * np.log(0.75) - 0.5 * np.log(0.25),
        -np.log(0.8),
    ]
    # eq. 7 over the three tasks, divided by (3 tasks x mean T_i 2)
    expected = (1 * entropies[0] + 2 * entropies[1] + 3 * entropies[2]) / 6.0
    loss = cmm.labels_weighted_cross_entropy(targets, logits, n_labels, 2.0)
    assert float(loss) == pytest.approx(expected, rel=1e-12)
    # the same as J = sum_{i,k} -r_bar_ik log f_k(x_i) with r_bar = T_i p_bar_i
    r_bar = n_labels[:, None] * targets
    j = -(r_bar * torch.log_softmax(logits, dim=1)).sum()
    assert float(loss) == pytest.approx(float(j) / 6.0, rel=1e-12)
    # the uniform weighting would be the plain mean, which differs here
    assert np.mean(entropies) != pytest.approx(expected, rel=1e-3)


def _three_task_crowd():
    # T_i = 1, 2, 3 labels for tasks 0, 1, 2
    return CrowdData.from_arrays(
        task=[0, 1, 1, 2, 2, 2],
        worker=[0, 0, 1, 0, 1, 2],
        label=[0, 1, 1, 1, 0, 1],
        features=np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], dtype=np.float32),
        classes=[0, 1],
    )


def test_learner_loss_weights_each_task_by_its_number_of_labels():
    from crowdlearn.learning._batches import TaskBatch

    data = _three_task_crowd()
    model = CrowdMixture(
        n_groups=1, setting="global", task_weights="labels", max_epochs=2, batch_size=3
    )
    model.fit(data.anonymous(), None)
    assert model._mean_labels == pytest.approx(2.0)
    batch = TaskBatch(
        tasks=np.array([0, 1, 2]),
        x=torch.tensor(np.asarray(data.features)),
        position=torch.tensor([0, 1, 1, 2, 2, 2]),
        worker=None,
        label=torch.tensor([0, 1, 1, 1, 0, 1]),
    )
    logits = torch.tensor([[0.3, -0.1], [0.0, 0.5], [1.0, 0.2]])
    targets = torch.as_tensor(model.targets_)
    entropy = -(targets * torch.log_softmax(logits, dim=1)).sum(dim=1)
    expected = (1 * entropy[0] + 2 * entropy[1] + 3 * entropy[2]) / (3 * 2.0)
    assert float(model._loss(batch, logits, None)) == pytest.approx(float(expected), rel=1e-6)
    uniform = model.set_params(task_weights="uniform")
    assert float(uniform._loss(batch, logits, None)) == pytest.approx(
        float(entropy.mean()), rel=1e-6
    )


def test_labels_weighting_changes_nothing_when_every_task_has_as_many_labels():
    crowd = cmm_gaussians(n_per_class=40, n_annotators=6, mean_labels=3.0, seed=4)
    # keep the tasks with exactly 3 labels
    crowd = crowd.select_tasks(crowd.feedback_effort == 3)
    fits = [
        CrowdMixture(setting="global", task_weights=w, max_epochs=3, random_state=0).fit(
            crowd, None
        )
        for w in ("uniform", "labels")
    ]
    np.testing.assert_allclose(fits[0].targets_, fits[1].targets_, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="task_weights"):
        CrowdMixture(task_weights="tasks", max_epochs=2).fit(crowd, None)
