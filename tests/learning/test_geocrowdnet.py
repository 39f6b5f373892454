"""GeoCrowdNet: the loss by hand, the skipped regulariser, gradients, accuracy,
confusion recovery, persistence and the crowd log-likelihood."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from crowd_toys import LABELS, LOGITS, PARAMETERS, POSITIONS, WORKERS, toy_batch
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdDataError
from crowdlearn.learning import CrowdLayer, TwoStage, make_learner
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatch
from crowdlearn.learning.geocrowdnet import (
    MAX_REGULARISER,
    ColumnConfusions,
    GeoCrowdNet,
    geometric_penalty,
)
from crowdlearn.simulate import crowd_on_features

torch.set_num_threads(1)


def toy() -> tuple[TaskBatch, torch.Tensor, ColumnConfusions]:
    noise = ColumnConfusions(n_workers=4, n_classes=3)
    with torch.no_grad():
        noise.weight.copy_(torch.tensor(PARAMETERS))
    batch = toy_batch()
    return batch, torch.tensor(LOGITS), noise


def numpy_model() -> tuple[np.ndarray, np.ndarray]:
    """Class probabilities (3, K) and column-stochastic A_m (4, K, K), from scratch."""
    z = np.array(LOGITS)
    f = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    P = np.exp(np.array(PARAMETERS))
    A = P / P.sum(axis=1, keepdims=True)  # each column sums to one
    return f, A


def annotation_nll() -> np.ndarray:
    f, A = numpy_model()
    return np.array(
        [-np.log((A[m] @ f[i])[y]) for i, m, y in zip(POSITIONS, WORKERS, LABELS, strict=True)]
    )


def noisy_crowd(seed: int, n_train: int = 400, separation: float = 2.0, n_workers: int = 20):
    """Gaussian blobs labelled by experts, spammers, adversaries and class confusers."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n_train + 300)
    X = (rng.normal(size=(len(y), 6)) + separation * np.eye(3, 6)[y]).astype(np.float32)
    groups = {"expert": 0.2, "spammer": 0.4, "adversarial": 0.2, "class_confuser": 0.2}
    crowd = crowd_on_features(
        X[:n_train], y[:n_train], n_workers=n_workers, labels_per_task=4, groups=groups, seed=seed
    )
    return crowd, X[n_train:], y[n_train:]


@pytest.mark.parametrize("penalty", ["F", "W"])
def test_loss_is_the_coupled_cross_entropy_plus_the_log_det_computed_by_hand(penalty):
    batch, logits, noise = toy()
    loss = GeoCrowdNet(penalty, lam=0.3)._loss(batch, logits, noise)
    f, A = numpy_model()
    if penalty == "F":
        regulariser = -np.log(np.linalg.det(f.T @ f))
    else:
        W = np.concatenate(list(A))  # (4K, K): the A_m stacked vertically
        regulariser = -np.log(np.linalg.det(W.T @ W))
    assert abs(regulariser) > 0.5  # the term matters
    expected = annotation_nll().mean() + 0.3 * regulariser
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)
    assert float(
        GeoCrowdNet(penalty, lam=0.0)._loss(batch, logits, noise).detach()
    ) == pytest.approx(annotation_nll().mean(), rel=1e-5)


def test_a_singular_batch_has_no_regulariser():
    batch, logits, noise = toy()
    same = logits[[0, 0, 0]]  # F has rank one: -log det is infinite (or NaN)
    loss = GeoCrowdNet("F", lam=0.3)._loss(batch, same, noise)
    assert torch.isfinite(loss)
    assert float(loss.detach()) == pytest.approx(
        float(GeoCrowdNet("F", lam=0.0)._loss(batch, same, noise).detach())
    )


@pytest.mark.parametrize("value", [99.0, 101.0])
def test_regulariser_above_one_hundred_is_skipped(value):
    # One K x K "stack" s I: -log det(s^2 I) = -2 K log s.
    k = 3
    scale = np.exp(-value / (2 * k))
    confusions = scale * torch.eye(k, dtype=torch.float64)[None]
    result = geometric_penalty("W", torch.ones(4, k), confusions)
    if value < MAX_REGULARISER:
        assert float(result) == pytest.approx(value)
    else:
        assert result is None


@settings(max_examples=25, deadline=None)
@given(n_workers=st.integers(1, 5), n_classes=st.integers(2, 6))
def test_confusions_start_near_the_identity_with_columns_summing_to_one(n_workers, n_classes):
    matrices = ColumnConfusions(n_workers, n_classes).matrices()
    torch.testing.assert_close(matrices.sum(dim=1), torch.ones(n_workers, n_classes))
    diagonal = matrices.diagonal(dim1=1, dim2=2)
    expected = np.e / (np.e + n_classes - 1)
    torch.testing.assert_close(diagonal, torch.full_like(diagonal, expected))
    assert torch.all(matrices.argmax(dim=1) == torch.arange(n_classes))


def test_crowd_log_likelihood_by_hand():
    batch, logits, noise = toy()
    value = GeoCrowdNet()._crowd_log_likelihood(batch, logits, noise)
    per_annotation = -annotation_nll()
    expected = [per_annotation[np.array(POSITIONS) == i].sum() for i in range(3)]
    np.testing.assert_allclose(value.detach().numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("penalty", ["F", "W"])
def test_gradients_reach_the_classifier_and_the_confusions(penalty):
    torch.manual_seed(0)
    batch, _, noise = toy()
    classifier = torch.nn.Linear(2, 3)
    batch.x = torch.randn(3, 2)
    GeoCrowdNet(penalty)._loss(batch, classifier(batch.x), noise).backward()
    assert classifier.weight.grad.abs().sum() > 0
    present = noise.weight.grad[[0, 1, 2]].abs().sum(dim=(1, 2))
    assert torch.all(present > 0)
    # Worker 3 has no annotation: only the W regulariser (on every A_m) reaches it.
    absent = noise.weight.grad[3].abs().sum()
    assert (absent > 0) if penalty == "W" else (absent == 0)


@pytest.mark.parametrize("penalty", ["F", "W"])
def test_beats_majority_vote_on_a_crowd_with_adversaries(penalty):
    for seed in (0, 1):
        crowd, X_test, y_test = noisy_crowd(seed)
        training = dict(max_epochs=30, lr=0.01, random_state=seed)
        model = GeoCrowdNet(penalty, **training).fit(crowd, valid=None)
        baseline = TwoStage(**training).fit(crowd, valid=None)
        accuracy = np.mean(model.predict(X_test) == y_test)
        assert accuracy >= np.mean(baseline.predict(X_test) == y_test) + 0.1
        np.testing.assert_allclose(model.confusions_.sum(axis=2), 1.0, atol=1e-6)


def test_geocrowdnet_w_recovers_confusions_better_than_the_crowd_layer():
    # Overlapping classes (the classifier stays uncertain) and strongly non-diagonal
    # workers: the Crowd Layer's softmax(f W_r) read off at one-hot inputs is biased,
    # A_m f is the model that generated the labels.
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=900)
    X = (rng.normal(size=(900, 6)) + 1.0 * np.eye(3, 6)[y]).astype(np.float32)
    groups = {"expert": 0.4, "adversarial": 0.3, "class_confuser": 0.3}
    crowd, info = crowd_on_features(
        X[:600], y[:600], n_workers=10, labels_per_task=4, groups=groups, seed=0, return_info=True
    )
    training = dict(max_epochs=60, lr=0.01, random_state=0)
    errors = {
        name: np.abs(model.fit(crowd, valid=None).confusions_ - info.confusions).mean()
        for name, model in [
            ("crowdlayer", CrowdLayer(**training)),
            ("geocrowdnet-w", GeoCrowdNet("W", **training)),
        ]
    }
    assert errors["geocrowdnet-w"] < 0.75 * errors["crowdlayer"], errors


def test_save_load_round_trip(tmp_path):
    crowd, X_test, _ = noisy_crowd(0, n_train=120)
    model = GeoCrowdNet("W", lam=0.02, max_epochs=3).fit(crowd)
    model.save(tmp_path / "geo.pt")
    loaded = BaseLearner.load(tmp_path / "geo.pt")
    assert isinstance(loaded, GeoCrowdNet) and loaded.penalty == "W" and loaded.lam == 0.02
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_array_equal(loaded.confusions_, model.confusions_)


def test_registered_presets_and_bad_parameters():
    assert make_learner("geocrowdnet-f").penalty == "F"
    assert make_learner("geocrowdnet-w").penalty == "W"
    assert make_learner("geocrowdnet[penalty=W,lam=0.5]").lam == 0.5
    crowd, _, _ = noisy_crowd(0, n_train=60)
    with pytest.raises(ValueError, match="penalty must be"):
        GeoCrowdNet("G", max_epochs=1).fit(crowd)
    with pytest.raises(ValueError, match="lam must be"):
        GeoCrowdNet(lam=-1.0, max_epochs=1).fit(crowd)
    with pytest.raises(CrowdDataError, match="anonymous"):
        GeoCrowdNet(max_epochs=1).fit(crowd.anonymous())
    assert repr(GeoCrowdNet("W", lr=0.01)) == "GeoCrowdNet(lr=0.01, penalty='W')"
