"""Trace regularisation: the loss by hand, gradients, accuracy, confusion recovery,
persistence and the crowd log-likelihood."""

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
from crowdlearn.learning.trace_reg import RowConfusions, TraceReg
from crowdlearn.simulate import crowd_on_features

torch.set_num_threads(1)


def toy() -> tuple[TaskBatch, torch.Tensor, RowConfusions]:
    noise = RowConfusions(n_workers=4, n_classes=3)
    with torch.no_grad():
        noise.weight.copy_(torch.tensor(PARAMETERS))
    batch = toy_batch()
    return batch, torch.tensor(LOGITS), noise


def numpy_model() -> tuple[np.ndarray, np.ndarray]:
    """Class probabilities (3, K) and row-stochastic A_r (4, K, K), from scratch."""
    z = np.array(LOGITS)
    f = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    P = np.exp(np.array(PARAMETERS))
    A = P / P.sum(axis=2, keepdims=True)  # each row (true class) sums to one
    return f, A


def annotation_nll() -> np.ndarray:
    f, A = numpy_model()
    return np.array(
        [-np.log((f[i] @ A[r])[y]) for i, r, y in zip(POSITIONS, WORKERS, LABELS, strict=True)]
    )


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


def test_loss_is_the_cross_entropy_plus_the_mean_trace_computed_by_hand():
    batch, logits, noise = toy()
    loss = TraceReg(lam=0.3)._loss(batch, logits, noise)
    _, A = numpy_model()
    mean_trace = np.mean([np.trace(A[r]) for r in range(4)])  # all four annotators
    expected = annotation_nll().mean() + 0.3 * mean_trace
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)
    without = TraceReg(lam=0.0)._loss(batch, logits, noise)
    assert float(without.detach()) == pytest.approx(annotation_nll().mean(), rel=1e-5)


@settings(max_examples=25, deadline=None)
@given(n_workers=st.integers(1, 5), n_classes=st.integers(2, 6))
def test_confusions_start_close_to_the_identity_with_rows_summing_to_one(n_workers, n_classes):
    matrices = RowConfusions(n_workers, n_classes).matrices()
    torch.testing.assert_close(matrices.sum(dim=2), torch.ones(n_workers, n_classes))
    # softmax of 6 I - 5: diagonal e / (e + (K - 1) e^-5)
    expected = np.e / (np.e + (n_classes - 1) * np.exp(-5.0))
    diagonal = matrices.diagonal(dim1=1, dim2=2)
    torch.testing.assert_close(diagonal, torch.full_like(diagonal, expected))
    assert expected > 0.96


def test_crowd_log_likelihood_by_hand():
    batch, logits, noise = toy()
    value = TraceReg()._crowd_log_likelihood(batch, logits, noise)
    per_annotation = -annotation_nll()
    expected = [per_annotation[np.array(POSITIONS) == i].sum() for i in range(3)]
    np.testing.assert_allclose(value.detach().numpy(), expected, rtol=1e-5)


def test_gradients_reach_the_classifier_and_every_confusion():
    torch.manual_seed(0)
    batch, _, noise = toy()
    classifier = torch.nn.Linear(2, 3)
    batch.x = torch.randn(3, 2)
    TraceReg(lam=0.0)._loss(batch, classifier(batch.x), noise).backward()
    assert classifier.weight.grad.abs().sum() > 0
    assert torch.all(noise.weight.grad[[0, 1, 2]].abs().sum(dim=(1, 2)) > 0)
    assert torch.all(noise.weight.grad[3] == 0)  # no annotation by worker 3
    noise.zero_grad()
    TraceReg(lam=0.3)._loss(batch, classifier(batch.x), noise).backward()
    # the trace (mean over all annotators) reaches worker 3 and lowers its diagonal
    gradient = noise.weight.grad[3]
    assert torch.all(gradient.diagonal() > 0)


def test_beats_majority_vote_on_a_crowd_with_adversaries():
    for seed in (0, 1):
        crowd, X_test, y_test = adversarial_crowd(seed)
        # the sharp near-identity start needs more steps than the shared default
        model = TraceReg(max_epochs=100, lr=0.01, random_state=seed).fit(crowd, valid=None)
        baseline = TwoStage(max_epochs=30, lr=0.01, random_state=seed).fit(crowd, valid=None)
        accuracy = np.mean(model.predict(X_test) == y_test)
        assert accuracy >= np.mean(baseline.predict(X_test) == y_test) + 0.1
        np.testing.assert_allclose(model.confusions_.sum(axis=2), 1.0, atol=1e-6)


def test_recovers_confusions_better_than_the_crowd_layer():
    # Overlapping classes (the classifier stays uncertain) and strongly non-diagonal
    # workers (adversaries and class confusers).
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
            ("trace-reg", TraceReg(**training)),
        ]
    }
    assert errors["trace-reg"] < 0.75 * errors["crowdlayer"], errors


def test_save_load_round_trip(tmp_path):
    crowd, X_test, _ = adversarial_crowd(0, n_train=120)
    model = TraceReg(lam=0.05, max_epochs=3).fit(crowd)
    model.save(tmp_path / "trace.pt")
    loaded = BaseLearner.load(tmp_path / "trace.pt")
    assert isinstance(loaded, TraceReg) and loaded.lam == 0.05
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_array_equal(loaded.confusions_, model.confusions_)


def test_registered_and_bad_parameters():
    assert isinstance(make_learner("trace-reg[lam=0.1]"), TraceReg)
    crowd, _, _ = adversarial_crowd(0, n_train=60)
    with pytest.raises(ValueError, match="lam must be"):
        TraceReg(lam=float("nan"), max_epochs=1).fit(crowd)
    with pytest.raises(CrowdDataError, match="anonymous"):
        TraceReg(max_epochs=1).fit(crowd.anonymous())
    assert repr(TraceReg(lam=0.1)) == "TraceReg(lam=0.1)"
