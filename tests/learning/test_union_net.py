"""Union-Net: the union loss by hand, normalisations, gradients, accuracy, persistence
and the crowd log-likelihood."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from crowd_toys import LABELS, LOGITS, PARAMETERS, POSITIONS, WORKERS, toy_batch
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdDataError
from crowdlearn.learning import TwoStage, make_learner
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatch
from crowdlearn.learning.union_net import UnionNet, UnionTransition
from crowdlearn.simulate import crowd_on_features

torch.set_num_threads(1)


def adversarial_crowd(seed: int, n_train: int = 400):
    """Gaussian blobs labelled by experts, spammers, adversaries and class confusers."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n_train + 300)
    X = (rng.normal(size=(len(y), 6)) + 2.0 * np.eye(3, 6)[y]).astype(np.float32)
    groups = {"expert": 0.2, "spammer": 0.4, "adversarial": 0.2, "class_confuser": 0.2}
    crowd = crowd_on_features(
        X[:n_train], y[:n_train], n_workers=20, labels_per_task=4, groups=groups, seed=seed
    )
    return crowd, X[n_train:], y[n_train:]


def toy(normalization: str) -> tuple[TaskBatch, torch.Tensor, UnionTransition]:
    noise = UnionTransition(4, 3, epsilon=1e-5, normalization=normalization)
    with torch.no_grad():
        noise.weight.copy_(torch.tensor(PARAMETERS))
    batch = toy_batch()
    return batch, torch.tensor(LOGITS), noise


def union_output(normalization: str) -> np.ndarray:
    """(3 tasks, R K) union output f(x)^T T, with T the K x RK concatenated matrix."""
    z = np.array(LOGITS)
    f = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    P = np.exp(np.array(PARAMETERS))  # [r, k, l]
    T = np.concatenate(list(P), axis=1)  # K x RK: block r is P[r]
    if normalization == "union":
        T = T / T.sum(axis=1, keepdims=True)
    else:
        T = np.concatenate([block / block.sum(axis=1, keepdims=True) for block in P], axis=1)
    return f @ T


@pytest.mark.parametrize("normalization", ["union", "block"])
def test_loss_is_the_union_cross_entropy_computed_by_hand(normalization):
    batch, logits, noise = toy(normalization)
    loss = UnionNet(normalization=normalization)._loss(batch, logits, noise)
    output = union_output(normalization)
    K = 3
    expected = np.mean(
        [-np.log(output[i, r * K + y]) for i, r, y in zip(POSITIONS, WORKERS, LABELS, strict=True)]
    )
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)
    total = 1.0 if normalization == "union" else 4.0
    np.testing.assert_allclose(output.sum(axis=1), total)


@pytest.mark.parametrize("normalization", ["union", "block"])
def test_crowd_log_likelihood_conditions_on_the_annotator(normalization):
    batch, logits, noise = toy(normalization)
    value = UnionNet(normalization=normalization)._crowd_log_likelihood(batch, logits, noise)
    output = union_output(normalization).reshape(3, 4, 3)  # [task, r, l]
    conditional = output / output.sum(axis=2, keepdims=True)
    expected = np.zeros(3)
    for i, r, y in zip(POSITIONS, WORKERS, LABELS, strict=True):
        expected[i] += np.log(conditional[i, r, y])
    np.testing.assert_allclose(value.detach().numpy(), expected, rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(
    n_workers=st.integers(1, 5),
    n_classes=st.integers(2, 6),
    normalization=st.sampled_from(["union", "block"]),
)
def test_transition_starts_at_a_smoothed_identity(n_workers, n_classes, normalization):
    noise = UnionTransition(n_workers, n_classes, 1e-5, normalization)
    confusions = noise.confusions()
    torch.testing.assert_close(confusions.sum(dim=2), torch.ones(n_workers, n_classes))
    diagonal = confusions.diagonal(dim1=1, dim2=2)
    assert torch.all(confusions.argmax(dim=2) == torch.arange(n_classes))
    expected = np.exp(1 - 1e-5) / (
        np.exp(1 - 1e-5) + (n_classes - 1) * np.exp(1e-5 / (n_classes - 1))
    )
    torch.testing.assert_close(diagonal, torch.full_like(diagonal, expected))
    # each row of T sums to one over the union, or over each block
    rows = noise.log_transition().exp().sum(dim=2).sum(dim=0)
    total = 1.0 if normalization == "union" else float(n_workers)
    torch.testing.assert_close(rows, torch.full_like(rows, total))


@pytest.mark.parametrize("normalization", ["union", "block"])
def test_gradients_reach_the_classifier_and_the_transition(normalization):
    torch.manual_seed(0)
    batch, _, noise = toy(normalization)
    classifier = torch.nn.Linear(2, 3)
    batch.x = torch.randn(3, 2)
    UnionNet(normalization=normalization)._loss(batch, classifier(batch.x), noise).backward()
    assert classifier.weight.grad.abs().sum() > 0
    assert torch.all(noise.weight.grad[[0, 1, 2]].abs().sum(dim=(1, 2)) > 0)
    # Worker 3 has no annotation: only the shared softmax over the union reaches it.
    absent = noise.weight.grad[3].abs().sum()
    assert (absent > 0) if normalization == "union" else (absent == 0)


def test_beats_majority_vote_on_a_crowd_with_adversaries():
    for seed in (0, 1):
        crowd, X_test, y_test = adversarial_crowd(seed)
        training = dict(max_epochs=30, lr=0.01, random_state=seed)
        model = UnionNet(**training).fit(crowd, valid=None)
        baseline = TwoStage(**training).fit(crowd, valid=None)
        accuracy = np.mean(model.predict(X_test) == y_test)
        assert accuracy >= np.mean(baseline.predict(X_test) == y_test) + 0.1
        np.testing.assert_allclose(model.confusions_.sum(axis=2), 1.0, atol=1e-6)


def test_save_load_round_trip(tmp_path):
    crowd, X_test, _ = adversarial_crowd(0, n_train=120)
    model = UnionNet(normalization="block", max_epochs=3).fit(crowd)
    model.save(tmp_path / "union.pt")
    loaded = BaseLearner.load(tmp_path / "union.pt")
    assert isinstance(loaded, UnionNet) and loaded.normalization == "block"
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_array_equal(loaded.confusions_, model.confusions_)


def test_registered_and_bad_parameters():
    assert make_learner("union-net[normalization=block]").normalization == "block"
    crowd, _, _ = adversarial_crowd(0, n_train=60)
    with pytest.raises(ValueError, match="normalization must be"):
        UnionNet(normalization="rows", max_epochs=1).fit(crowd)
    with pytest.raises(ValueError, match="epsilon must be"):
        UnionNet(epsilon=1.5, max_epochs=1).fit(crowd)
    with pytest.raises(CrowdDataError, match="anonymous"):
        UnionNet(max_epochs=1).fit(crowd.anonymous())
    assert repr(UnionNet(epsilon=0.01)) == "UnionNet(epsilon=0.01)"
