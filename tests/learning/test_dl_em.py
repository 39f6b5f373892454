"""DL-EM: the EM steps by hand, accuracy and confusions on a crowd with spammers,
restarts, checkpoints."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.aggregation import DawidSkene
from crowdlearn.learning import TwoStage
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning.dl_em import DLEM
from crowdlearn.metrics import empirical_confusions, individual_js
from crowdlearn.simulate import crowd_on_features

torch.set_num_threads(1)


def spammer_crowd(seed: int = 0, n_train: int = 400):
    """Experts, inexperts and a majority of spammers on 3 Gaussian blobs."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n_train + 200)
    X = (rng.normal(size=(len(y), 6)) + 2.0 * np.eye(3, 6)[y]).astype(np.float32)
    crowd, info = crowd_on_features(
        X[:n_train],
        y[:n_train],
        n_workers=20,
        labels_per_task=5,
        groups={"expert": 0.2, "inexpert": 0.2, "spammer": 0.6},
        seed=seed,
        return_info=True,
    )
    return crowd, info, X[n_train:], y[n_train:]


def small_crowd() -> CrowdData:
    """4 tasks (the last without annotations), 2 workers, 3 classes."""
    return CrowdData.from_arrays(
        task=[0, 0, 1, 2, 2],
        worker=[0, 1, 1, 0, 1],
        label=[0, 2, 1, 1, 1],
        task_ids=[0, 1, 2, 3],
        worker_ids=[0, 1],
        classes=[0, 1, 2],
        features=np.zeros((4, 2)),
    )


def stub_context(data: CrowdData, probas: np.ndarray) -> SimpleNamespace:
    """What the EM steps read from an epoch context, with a fixed classifier."""
    return SimpleNamespace(data=data, classifier_proba=lambda tasks=None: probas)


def test_e_step_is_the_posterior_under_the_classifier_prior():
    data = small_crowd()
    f = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8], [0.2, 0.5, 0.3], [0.6, 0.0, 0.4]])
    pi = np.array(
        [
            [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.3, 0.6]],
            [[0.4, 0.3, 0.3], [0.1, 0.8, 0.1], [0.25, 0.25, 0.5]],
        ]
    )
    learner = DLEM()
    learner.confusions_ = pi
    total = learner._e_step(stub_context(data, f))

    # T_ik proportional to f_ik prod_a pi_{r_a}[k, y_a], annotation by annotation.
    joint = f.copy()
    for task, worker, label in zip(data.task, data.worker, data.label, strict=True):
        joint[task] *= pi[worker, :, label]
    expected = joint / joint.sum(axis=1, keepdims=True)
    # (probabilities are floored at 1e-10 before the log)
    np.testing.assert_allclose(learner.targets_, expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(learner.targets_[3], f[3], atol=1e-9)  # no annotations
    assert total == pytest.approx(np.log(joint[:3].sum(axis=1)).sum(), rel=1e-12)


@pytest.mark.parametrize("smoothing", [0.0, 0.5])
def test_m_step_is_the_dawid_skene_m_step(smoothing):
    data = small_crowd()
    posteriors = np.random.default_rng(0).dirichlet(np.ones(3), size=4).astype(np.float32)
    learner = DLEM(smoothing=smoothing)
    learner.targets_ = posteriors
    learner._m_step(stub_context(data, posteriors))

    counts = np.zeros((2, 3, 3))
    for task, worker, label in zip(data.task, data.worker, data.label, strict=True):
        counts[worker, :, label] += posteriors[task]
    counts = np.maximum(counts + smoothing, 1e-10)
    np.testing.assert_allclose(
        learner.confusions_, counts / counts.sum(axis=2, keepdims=True), rtol=1e-6
    )
    ds = DawidSkene(smoothing=smoothing, diagonal_prior=0.0, lone_labels="em")  # same M-step
    ds._initialize(data)
    ds.probas_ = posteriors.astype(np.float64)
    ds._m_step(data)
    np.testing.assert_allclose(learner.confusions_, ds.confusions_, rtol=1e-6)


def test_initial_targets():
    data = CrowdData.from_arrays(
        task=[0, 0, 0, 1, 1],
        worker=[0, 1, 2, 0, 1],
        label=[0, 0, 1, 1, 2],
        features=np.zeros((2, 1)),
    )
    np.testing.assert_allclose(
        DLEM()._initial_targets(data, None), [[2 / 3, 1 / 3, 0], [0, 0.5, 0.5]]
    )
    np.testing.assert_allclose(
        DLEM(init="majority_vote")._initial_targets(data, None), [[1, 0, 0], [0, 0.5, 0.5]]
    )
    with pytest.raises(ValueError, match="init must be"):
        DLEM(init="random")._initial_targets(data, None)


def test_dl_em_beats_majority_vote_and_recovers_the_confusions():
    for seed in (0, 1):
        crowd, info, X_test, y_test = spammer_crowd(seed)
        # the margins were set with one held-out share and a refit
        training = dict(max_epochs=30, lr=0.01, random_state=seed, crowd_folds=1)
        model = DLEM(**training).fit(crowd)
        baseline = TwoStage(**training).fit(crowd)
        accuracy = np.mean(model.predict(X_test) == y_test)
        assert accuracy > np.mean(baseline.predict(X_test) == y_test) + 0.03
        _, counts = empirical_confusions(crowd, return_counts=True)
        divergence = individual_js(info.confusions, model.confusions_, row_weights=counts)
        from_votes = DLEM()  # the first M-step: confusions from the vote frequencies
        from_votes.targets_ = from_votes._initial_targets(crowd, None)
        from_votes._m_step(stub_context(crowd, None))
        assert divergence < 0.03
        assert divergence < 0.6 * individual_js(
            info.confusions, from_votes.confusions_, row_weights=counts
        )
        # the classifier's prior helps: closer than feature-blind Dawid-Skene
        ds_confusions = DawidSkene().fit(crowd).confusions_
        assert divergence < individual_js(info.confusions, ds_confusions, row_weights=counts)
        assert model.history_["log_likelihood"].iloc[-1] == model.log_likelihood_
        assert model.restart_log_likelihoods_ == [model.log_likelihood_]


def test_restarts_keep_the_most_likely_run():
    crowd, _, X_test, _ = spammer_crowd(n_train=150)
    params = dict(max_epochs=4, lr=0.01, tol=0.0, random_state=3)
    model = DLEM(n_restarts=3, **params).fit(crowd, valid=None)
    assert len(model.restart_log_likelihoods_) == 3
    assert model.log_likelihood_ == max(model.restart_log_likelihoods_)
    assert len(set(model.restart_log_likelihoods_)) == 3
    best = int(np.argmax(model.restart_log_likelihoods_))
    single = DLEM(**{**params, "random_state": 3 + best}).fit(crowd, valid=None)
    np.testing.assert_array_equal(model.predict_proba(X_test), single.predict_proba(X_test))
    np.testing.assert_array_equal(model.confusions_, single.confusions_)
    assert model.get_params()["n_restarts"] == 3 and model.random_state == 3


def test_checkpoint_resume_reproduces_an_uninterrupted_run(tmp_path, monkeypatch):
    crowd, _, X_test, _ = spammer_crowd(n_train=150)
    params = dict(max_epochs=5, tol=0.0, random_state=2)
    uninterrupted = DLEM(**params, checkpoint_dir=tmp_path / "a").fit(crowd, valid=None)

    class Crash(Exception):
        pass

    e_step = DLEM._e_step

    def crash_in_third_e_step(self, context):
        if context.epoch == 2:
            raise Crash
        return e_step(self, context)

    with monkeypatch.context() as patch:
        patch.setattr(DLEM, "_e_step", crash_in_third_e_step)
        with pytest.raises(Crash):
            DLEM(**params, checkpoint_dir=tmp_path / "b").fit(crowd, valid=None)
    resumed = DLEM(**params, checkpoint_dir=tmp_path / "b", resume=True).fit(crowd, valid=None)
    assert len(resumed.history_) == 5
    np.testing.assert_array_equal(
        resumed.predict_proba(X_test), uninterrupted.predict_proba(X_test)
    )
    np.testing.assert_array_equal(resumed.targets_, uninterrupted.targets_)
    np.testing.assert_array_equal(resumed.confusions_, uninterrupted.confusions_)
    np.testing.assert_array_equal(
        resumed.history_["log_likelihood"], uninterrupted.history_["log_likelihood"]
    )


def test_save_load_round_trip(tmp_path):
    crowd, _, X_test, _ = spammer_crowd(n_train=100)
    model = DLEM(max_epochs=3, smoothing=1.0).fit(crowd)
    model.save(tmp_path / "dlem.pt")
    loaded = BaseLearner.load(tmp_path / "dlem.pt")
    assert isinstance(loaded, DLEM) and loaded.smoothing == 1.0
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_array_equal(loaded.confusions_, model.confusions_)
    np.testing.assert_array_equal(loaded.targets_, model.targets_)
    assert loaded.log_likelihood_ == model.log_likelihood_


def test_anonymous_data_and_bad_parameters_are_refused():
    crowd, _, _, _ = spammer_crowd(n_train=60)
    with pytest.raises(CrowdDataError, match="anonymous"):
        DLEM(max_epochs=1).fit(crowd.anonymous())
    with pytest.raises(ValueError, match="n_restarts"):
        DLEM(n_restarts=0).fit(crowd)
    with pytest.raises(ValueError, match="smoothing"):
        DLEM(smoothing=-1.0, max_epochs=1).fit(crowd)
    assert repr(DLEM(tol=0.0)) == "DLEM(tol=0.0)"
