"""Doctor Net and DL-CL+Self: heads per annotator, weighted vote, completed annotations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from crowd_toys import noisy_crowd

from crowdlearn.data import CrowdData
from crowdlearn.learning import BaseLearner
from crowdlearn.learning.crowd_layer_self import CrowdLayerSelf
from crowdlearn.learning.doctor_net import DoctorNet, vote_weights
from crowdlearn.simulate import crowd_on_features

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def crowd():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.8).astype(int)
    return crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=2), X, y


def test_agreement_weights_by_hand():
    # task 0: w0=0, w1=0, w2=1 ; task 1: w0=1, w1=1 ; task 2: w2 alone
    data = CrowdData.from_arrays(
        [0, 0, 0, 1, 1, 2], [0, 1, 2, 0, 1, 2], [0, 0, 1, 1, 1, 0],
        task_ids=[0, 1, 2], worker_ids=[0, 1, 2, 3], classes=[0, 1],
    )  # fmt: skip
    w = vote_weights(data, "agreement")
    # w0: agrees on both tasks (2/2) -> 3/4; w1 same; w2: disagrees on task 0 (0/1) -> 1/3;
    # w3 has no annotation -> 0
    raw = np.array([3 / 4, 3 / 4, 1 / 3, 0.0])
    assert np.allclose(w, raw / raw.sum())
    assert np.allclose(vote_weights(data, "count"), np.array([2, 2, 2, 0]) / 6)
    with pytest.raises(ValueError):
        vote_weights(data, "nope")


def test_doctor_net_learns_and_votes(crowd):
    data, X, y = crowd
    model = DoctorNet(max_epochs=15, calibrate=False, standardize=False).fit(data, (X, y))
    weights = model.vote_weights_
    assert weights.shape == (data.n_workers,) and weights.sum() == pytest.approx(1)
    proba = model.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1)
    assert np.mean(proba.argmax(axis=1) == y) > 0.6  # chance is about 0.4
    # predict_proba is the weighted average of the heads
    net = model.module_["classifier"].eval()
    with torch.no_grad():
        hidden = net.trunk(torch.as_tensor(X[:5]))
        heads = torch.softmax(
            torch.einsum("bh,rhk->brk", hidden, net.head_weight) + net.head_bias, dim=2
        )
        mixed = torch.einsum("brk,r->bk", heads, net.vote_weights)
    assert np.allclose(proba[:5], mixed.numpy(), atol=1e-5)
    hard = DoctorNet(vote="hard", max_epochs=3).fit(data, valid=None)
    assert np.allclose(hard.predict_proba(X).sum(axis=1), 1)


def test_doctor_net_save_load(crowd, tmp_path):
    data, X, _y = crowd
    model = DoctorNet(max_epochs=2).fit(data)
    model.save(tmp_path / "d.pt")
    loaded = BaseLearner.load(tmp_path / "d.pt")
    assert np.allclose(loaded.predict_proba(X), model.predict_proba(X))


def test_dl_cl_self_completes_every_pair(crowd):
    data, _X, _y = crowd
    model = CrowdLayerSelf(max_epochs=3).fit(data, valid=None)
    missing = data.n_tasks * data.n_workers - data.n_annotations
    assert model.history_["n_pseudo"].tolist() == [0, missing]
    assert len(model.pseudo_) == missing
    pairs = model.pseudo_["task"] * data.n_workers + model.pseudo_["worker"]
    observed = set((data.task.astype(np.int64) * data.n_workers + data.worker).tolist())
    assert not observed & set(pairs.tolist())


def test_crowd_validation_over_several_held_out_chunks_and_the_likelihood_temperature():
    """The held-out share (82 tasks) is scored in chunks of 4 x batch_size = 16 with a
    last chunk of 2: Doctor Net's heads read the trunk's output of the latest forward
    pass, so each chunk's likelihood must follow its own pass (this raised an
    IndexError), and a temperature on the vote cannot change the heads' likelihood:
    ``calibrate="likelihood"`` falls back to the agreement."""
    crowd, X_test, _ = noisy_crowd(0, n_train=410)
    model = DoctorNet(max_epochs=2, batch_size=4, calibrate="likelihood", random_state=0)
    model.fit(crowd, valid="crowd")
    assert model.temperatures_["likelihood"] == model.temperatures_["agreement"]
    np.testing.assert_allclose(model.predict_proba(X_test).sum(axis=1), 1.0, atol=1e-5)
