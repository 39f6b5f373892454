"""Weighted Doctor Net: the weights' loss and the crowd log-likelihood by hand, frozen
heads, learned weights that lower their loss, accuracy against MV+NN, persistence."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from crowd_toys import noisy_crowd, triples_batch

from crowdlearn.data.inputs import as_inputs
from crowdlearn.learning import BaseLearner, DoctorNet, TwoStage
from crowdlearn.learning._batches import TaskBatcher
from crowdlearn.learning.doctor_net_weighted import (
    EXCLUDED,
    DoctorNetWeighted,
    head_probabilities,
    weighted_vote_loss,
)

torch.set_num_threads(1)

ANNOTATIONS = [(0, 0, 1), (0, 2, 0), (1, 1, 2), (2, 0, 2), (2, 1, 1)]


def toy_batch():
    return triples_batch(ANNOTATIONS, x=[[0.5, -1.0], [2.0, 0.3], [-0.7, 1.2]])


def softmax(v, axis=-1):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_weights_loss_is_the_cross_entropy_of_the_weighted_average_by_hand():
    rng = np.random.default_rng(0)
    heads = softmax(rng.normal(size=(3, 4, 3)), axis=2)
    v = np.array([0.3, -1.0, 0.8, EXCLUDED])
    loss = weighted_vote_loss(torch.as_tensor(heads), toy_batch(), torch.as_tensor(v))
    w = softmax(v)
    expected = -np.mean([np.log(w @ heads[i, :, label]) for i, _, label in ANNOTATIONS])
    assert float(loss) == pytest.approx(expected, rel=1e-9)
    assert w[3] < 1e-12  # an excluded head has no weight


def test_crowd_log_likelihood_is_each_annotation_under_its_own_head_by_hand():
    torch.manual_seed(0)
    learner = DoctorNetWeighted(hidden=(4,), dropout=0.0)
    net = learner._build_module((2,), 3, 3)["classifier"].eval()
    batch = toy_batch()
    with torch.no_grad():
        result = learner._crowd_log_likelihood(batch, net(batch.x), None)
    W1 = net.trunk[1].weight.detach().double().numpy()
    b1 = net.trunk[1].bias.detach().double().numpy()
    Wh = net.head_weight.detach().double().numpy()
    bh = net.head_bias.detach().double().numpy()
    x = batch.x.double().numpy()
    expected = np.zeros(3)
    for i, m, label in ANNOTATIONS:
        hidden = np.maximum(W1 @ x[i] + b1, 0.0)
        expected[i] += np.log(softmax(hidden @ Wh[m] + bh[m])[label])
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5)


def test_gradient_reaches_the_weights_only():
    heads = torch.softmax(torch.randn(3, 3, 3), dim=2)
    v = torch.zeros(3, requires_grad=True)
    weighted_vote_loss(heads, toy_batch(), v).backward()
    assert torch.all(v.grad != 0)


def test_heads_stay_frozen_and_learned_weights_lower_their_loss():
    crowd, X_test, _ = noisy_crowd(0)
    # the mechanism on raw features and every task (no scaler, no held-out share)
    training = dict(max_epochs=30, lr=0.01, random_state=0, standardize=False)
    weighted = DoctorNetWeighted(**training).fit(crowd, valid=None)
    plain = DoctorNet(**training).fit(crowd, valid=None)
    for name, value in plain.module_.state_dict().items():
        if name.endswith("vote_weights"):
            continue
        # equal up to float32 rounding: in a full test run the two fits have differed by
        # 4e-7 (summation order under other threads of the process), while heads trained
        # by the weighted loss would move by orders of magnitude more
        torch.testing.assert_close(weighted.module_.state_dict()[name], value, rtol=0, atol=1e-5)
    weights = weighted.vote_weights_
    assert weights.sum() == pytest.approx(1.0)
    assert not np.allclose(weights, plain.vote_weights_, atol=1e-3)
    # the learned weights fit the training annotations better than uniform or agreement
    # weights (the objective of the weight stage, over all training annotations)
    net = weighted.module_["classifier"].eval()
    tasks = np.flatnonzero(crowd.feedback_effort > 0)
    batch = TaskBatcher(crowd, as_inputs(crowd.features), tasks, 64, torch.device("cpu"))
    everything = batch.batch(tasks)
    with torch.no_grad():
        heads = head_probabilities(net, everything.x).double()

    def loss_of(w: np.ndarray) -> float:
        return float(weighted_vote_loss(heads, everything, torch.as_tensor(np.log(w))))

    learned = loss_of(weights)
    assert learned < loss_of(np.full(20, 1 / 20)) - 1e-3
    assert learned < loss_of(plain.vote_weights_) - 1e-3
    assert weighted.history_["weight_loss"].iloc[-1] == pytest.approx(learned, abs=0.02)
    # prediction is the learned weighted average of the heads
    net = weighted.module_["classifier"].eval()
    with torch.no_grad():
        heads = head_probabilities(net, torch.as_tensor(X_test[:5]))
    expected = np.einsum("brk,r->bk", heads.double().numpy(), weights)
    np.testing.assert_allclose(weighted.predict_proba(X_test[:5]), expected, atol=1e-5)


def test_annotators_without_annotations_get_no_weight():
    crowd, _, _ = noisy_crowd(n_train=120)
    rows = crowd.worker != 3
    reduced = type(crowd).from_arrays(
        crowd.task[rows], crowd.worker[rows], crowd.label[rows],
        task_ids=np.arange(crowd.n_tasks), worker_ids=np.arange(crowd.n_workers),
        classes=np.arange(crowd.n_classes),
    ).with_features(crowd.features)  # fmt: skip
    model = DoctorNetWeighted(max_epochs=2, weight_epochs=3).fit(reduced)
    assert model.vote_weights_[3] < 1e-12


def test_weighted_doctor_net_beats_majority_vote_on_a_crowd_of_spammers():
    for seed in (0, 2):
        (crowd, _), X_test, y_test = noisy_crowd(seed, info=True)
        # the last epoch of each (valid=None): gains 0.065 and 0.04, twice as fast as
        # one held-out share and a refit (gains 0.01 and 0.02)
        training = dict(max_epochs=30, lr=0.01, random_state=seed)
        model = DoctorNetWeighted(**training).fit(crowd, valid=None)
        baseline = TwoStage(**training).fit(crowd, valid=None)
        gain = np.mean(model.predict(X_test) == y_test) - np.mean(
            baseline.predict(X_test) == y_test
        )
        assert gain > 0


def test_save_load_round_trip(tmp_path):
    crowd, X_test, _ = noisy_crowd(n_train=120)
    model = DoctorNetWeighted(max_epochs=3, weight_epochs=5).fit(crowd)
    model.save(tmp_path / "wdn.pt")
    loaded = BaseLearner.load(tmp_path / "wdn.pt")
    assert isinstance(loaded, DoctorNetWeighted) and loaded.weight_epochs == 5
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_array_equal(loaded.vote_weights_, model.vote_weights_)
    with pytest.raises(ValueError, match="weight_epochs"):
        DoctorNetWeighted(max_epochs=1, weight_epochs=-1).fit(crowd)
