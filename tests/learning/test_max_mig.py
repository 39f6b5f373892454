"""Max-MIG: the f-MIG loss and the crowd log-likelihood by hand, the majority-vote
initialisation, gradient flow, accuracy against MV+NN, persistence."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from crowd_toys import noisy_crowd, triples_batch
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.data import CrowdData
from crowdlearn.learning import TwoStage
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning.max_mig import CrowdAggregator, MaxMIG, majority_vote_confusions, mig_kl

torch.set_num_threads(1)

ANNOTATIONS = [(0, 0, 1), (0, 2, 0), (1, 1, 2), (2, 0, 2), (2, 1, 1), (2, 2, 2)]


def toy_batch():
    return triples_batch(ANNOTATIONS)


def toy_aggregator() -> CrowdAggregator:
    torch.manual_seed(0)
    noise = CrowdAggregator(n_workers=3, n_classes=3)
    with torch.no_grad():
        noise.maps.copy_(torch.randn(3, 3, 3))
        noise.prior_logits.copy_(torch.tensor([0.2, -0.5, 0.1]))
    return noise


LOGITS = torch.tensor([[0.2, -0.4, 1.0], [1.5, 0.1, -0.3], [-0.2, 0.3, 0.6]])


def softmax(v, axis=-1):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_loss_is_minus_the_kl_mutual_information_gain_by_hand():
    noise = toy_aggregator()
    loss = MaxMIG()._loss(toy_batch(), LOGITS, noise)

    W = noise.maps.detach().double().numpy()
    prior = softmax(noise.prior_logits.detach().double().numpy())
    h = softmax(LOGITS.double().numpy())
    g = np.zeros((3, 3))
    for i in range(3):
        score = np.log(prior).copy()
        for task, m, label in ANNOTATIONS:
            if task == i:
                score += W[m] @ np.eye(3)[label]  # the map applied to the one-hot answer
        g[i] = softmax(score)
    agreement = np.array([[(h[i] * g[j] / prior).sum() for j in range(3)] for i in range(3)])
    matched = np.mean([np.log(agreement[i, i]) for i in range(3)])
    mismatched = np.mean([agreement[i, j] for i in range(3) for j in range(3) if i != j])
    expected_mig = 1.0 + matched - mismatched
    assert float(loss.detach()) == pytest.approx(-expected_mig, rel=1e-5)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.integers(2, 5), st.integers(0, 10_000))
def test_mig_matches_its_definition(n, k, seed):
    rng = np.random.default_rng(seed)
    h = softmax(rng.normal(size=(n, k)))
    g = softmax(rng.normal(size=(n, k)))
    p = softmax(rng.normal(size=k))
    result = float(mig_kl(*(torch.as_tensor(np.log(v)) for v in (h, g, p))))
    K = (h[:, None, :] * g[None, :, :] / p).sum(axis=2)
    expected = 1.0 + np.mean(np.log(np.diag(K)))
    if n > 1:
        expected -= (K.sum() - np.trace(K)) / (n * (n - 1))
    assert result == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_mig_rewards_agreement_over_independence():
    # g copies h (perfectly informative) versus g independent of the instance
    h = torch.log(torch.tensor([[0.9, 0.1], [0.1, 0.9], [0.8, 0.2], [0.2, 0.8]]))
    prior = torch.log(torch.tensor([0.5, 0.5]))
    uninformative = torch.log(torch.full((4, 2), 0.5))
    assert mig_kl(h, h, prior) > mig_kl(h, uninformative, prior) + 0.1


def test_crowd_log_likelihood_by_hand():
    noise = toy_aggregator()
    result = MaxMIG()._crowd_log_likelihood(toy_batch(), LOGITS, noise)
    confusion = softmax(noise.maps.detach().double().numpy(), axis=2)
    log_h = np.log(softmax(LOGITS.double().numpy()))
    expected = []
    for i in range(3):
        score = log_h[i].copy()
        for task, m, label in ANNOTATIONS:
            if task == i:
                score += np.log(confusion[m, :, label])
        expected.append(np.log(np.exp(score).sum()))
    np.testing.assert_allclose(result.detach().numpy(), expected, rtol=1e-5)


def test_majority_vote_initialisation_by_hand():
    # task 0: votes 0, 0, 1 -> MV 0; task 1: 1, 1 -> MV 1; task 2: 2 alone -> MV 2
    data = CrowdData.from_arrays(
        [0, 0, 0, 1, 1, 2], [0, 1, 2, 0, 1, 2], [0, 0, 1, 1, 1, 2],
        task_ids=[0, 1, 2], worker_ids=[0, 1, 2, 3], classes=[0, 1, 2],
    )  # fmt: skip
    confusion, frequencies = majority_vote_confusions(data)
    expected = np.full((4, 3, 3), 1 / 3)
    expected[0] = [[1, 0, 0], [0, 1, 0], [1 / 3, 1 / 3, 1 / 3]]
    expected[1] = [[1, 0, 0], [0, 1, 0], [1 / 3, 1 / 3, 1 / 3]]
    expected[2] = [[0, 1, 0], [1 / 3, 1 / 3, 1 / 3], [0, 0, 1]]
    np.testing.assert_allclose(confusion, expected)
    np.testing.assert_allclose(frequencies, np.array([2, 2, 2]) / 6)  # one vote each, +1

    features = np.zeros((3, 2), dtype=np.float32)
    model = MaxMIG(max_epochs=1, lr=0.0, dropout=0.0).fit(data.with_features(features), valid=None)
    maps = model.module_["noise"].maps.detach().double().numpy()
    np.testing.assert_allclose(maps, np.log(expected + 0.01), rtol=1e-6)
    np.testing.assert_allclose(model.prior_, [1 / 3] * 3, rtol=1e-6)


def test_gradients_reach_the_classifier_maps_and_prior():
    noise = toy_aggregator()
    noise.maps.data = torch.cat([noise.maps.data, torch.randn(1, 3, 3)])  # annotator 3: absent
    logits = LOGITS.clone().requires_grad_(True)
    MaxMIG()._loss(toy_batch(), logits, noise).backward()
    assert torch.all(logits.grad.abs().sum(dim=1) > 0)
    assert torch.any(noise.prior_logits.grad != 0)
    assert torch.all(noise.maps.grad[3] == 0)
    # only the entries W_m[:, y] of answers given receive a gradient
    touched = torch.zeros(4, 3, 3, dtype=torch.bool)
    for _, m, label in ANNOTATIONS:
        touched[m, :, label] = True
    assert torch.all(noise.maps.grad[~touched] == 0)
    assert torch.all(noise.maps.grad[touched] != 0)


def test_max_mig_beats_majority_vote_on_a_crowd_of_spammers():
    for seed in (0, 2):
        crowd, X_test, y_test = noisy_crowd(seed)
        training = dict(max_epochs=30, lr=0.01, random_state=seed)
        # the last epoch of each (valid=None): gains 0.07 and 0.06, faster than
        # selecting the epoch by cross-fitting (gains 0.005 and 0.01)
        model = MaxMIG(**training).fit(crowd, valid=None)
        baseline = TwoStage(**training).fit(crowd, valid=None)
        gain = np.mean(model.predict(X_test) == y_test) - np.mean(
            baseline.predict(X_test) == y_test
        )
        assert gain > 0
        np.testing.assert_allclose(model.confusions_.sum(axis=2), 1.0, atol=1e-6)


def test_save_load_round_trip(tmp_path):
    crowd, X_test, _ = noisy_crowd(n_train=120)
    model = MaxMIG(max_epochs=3).fit(crowd)
    model.save(tmp_path / "max_mig.pt")
    loaded = BaseLearner.load(tmp_path / "max_mig.pt")
    assert isinstance(loaded, MaxMIG)
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_array_equal(loaded.confusions_, model.confusions_)
    np.testing.assert_array_equal(loaded.prior_, model.prior_)
