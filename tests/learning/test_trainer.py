"""The shared trainer and the first learners: losses, seeding, selection, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.aggregation import DawidSkene
from crowdlearn.learning import MLP, CrowdLayer, SmallCNN, Supervised, TwoStage
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatcher, annotation_rows
from crowdlearn.learning.crowd_layer import CrowdLayerModule
from crowdlearn.simulate import crowd_on_features

torch.set_num_threads(1)


def blobs(n: int = 240, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    X = rng.normal(size=(n, 6)) + 2.5 * np.eye(3, 6)[y]
    return X.astype(np.float32), y


def noisy_crowd(seed: int = 0) -> tuple[CrowdData, tuple[np.ndarray, np.ndarray]]:
    X, y = blobs(seed=seed)
    crowd = crowd_on_features(
        X[:180],
        y[:180],
        n_workers=12,
        labels_per_task=3,
        groups={"expert": 0.5, "inexpert": 0.5},
        seed=seed,
    )
    return crowd, (X[180:], y[180:])


def weights(learner: BaseLearner) -> list[torch.Tensor]:
    return [p.detach().clone() for p in learner.module_["classifier"].parameters()]


# ---------------------------------------------------------------------- batches and losses


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_annotation_rows_are_each_tasks_annotations(seed):
    rng = np.random.default_rng(seed)
    answers = rng.integers(-1, 3, size=(15, 6))
    answers[:, 0] = rng.integers(0, 3, size=15)
    data = CrowdData.from_matrix(answers)
    tasks = rng.permutation(15)[: rng.integers(1, 15)]
    rows, position = annotation_rows(data, tasks)
    for i, task in enumerate(tasks):
        np.testing.assert_array_equal(
            np.sort(rows[position == i]), np.flatnonzero(data.task == task)
        )
    assert len(rows) == int(data.feedback_effort[tasks].sum())


def test_masked_loss_ignores_missing_annotations():
    # 3 tasks x 4 workers; -1 = missing. Worker 3 annotated nothing.
    answers = np.array([[0, 1, -1, -1], [-1, 2, 2, -1], [1, -1, 0, -1]])
    data = CrowdData.from_matrix(answers, n_classes=3)
    features = torch.randn(3, 5)
    torch.manual_seed(0)
    classifier = MLP(5, 3, hidden=(8,), dropout=0.0)
    layer = CrowdLayerModule(4, 3, "MW")
    with torch.no_grad():
        layer.matrix.add_(0.3 * torch.randn_like(layer.matrix))
    learner = CrowdLayer("MW")
    batcher = TaskBatcher(data, _Inputs(features.numpy()), np.arange(3), 3, torch.device("cpu"))
    batch = batcher.batch(np.arange(3))
    logits = classifier(batch.x)
    loss = learner._loss(batch, logits, layer)
    loss.backward()
    sparse_grads = [p.grad.clone() for p in classifier.parameters()]
    assert torch.all(layer.matrix.grad[3] == 0)  # a worker without annotations
    # Dense formulation: every (task, worker) cell, missing cells masked out.
    classifier.zero_grad()
    layer.zero_grad()
    probs = torch.softmax(classifier(features), dim=1)
    dense_logits = torch.einsum("ik,wkl->iwl", probs, layer.matrix)
    labels = torch.as_tensor(answers)
    mask = labels >= 0
    per_cell = F.cross_entropy(
        dense_logits.reshape(-1, 3), labels.clamp(min=0).reshape(-1), reduction="none"
    ).reshape(3, 4)
    dense_loss = (per_cell * mask).sum() / mask.sum()
    dense_loss.backward()
    assert float(loss.detach()) == pytest.approx(float(dense_loss.detach()), rel=1e-6)
    for sparse, dense in zip(sparse_grads, classifier.parameters(), strict=True):
        torch.testing.assert_close(sparse, dense.grad)


class _Inputs:
    """A minimal inputs object (the TaskInputs protocol)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    @property
    def item_shape(self) -> tuple[int, ...]:
        return self.array.shape[1:]

    def take(self, indices: np.ndarray) -> np.ndarray:
        return self.array[indices]

    def subset(self, indices: np.ndarray) -> _Inputs:
        return _Inputs(self.array[indices])


def test_identity_crowd_layer_on_logits_with_clean_labels_is_plain_cross_entropy():
    X, y = blobs()
    clean = CrowdData.from_arrays(
        np.repeat(np.arange(len(y)), 3),
        np.tile([0, 1, 2], len(y)),
        np.repeat(y, 3),
        features=X,
        truth=y,
    )
    crowd = CrowdLayer("MW", on="logits", trainable=False, max_epochs=4).fit(clean)
    plain = Supervised(max_epochs=4).fit(clean)
    for a, b in zip(weights(crowd), weights(plain), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(
        crowd.history_["train_loss"], plain.history_["train_loss"], rtol=1e-5
    )
    # The paper's crowd layer (on probabilities, learned) still learns the task.
    learned = CrowdLayer("MW", max_epochs=25).fit(clean)
    assert np.mean(learned.predict(X) == y) >= np.mean(plain.predict(X) == y) - 0.05


# ---------------------------------------------------------------------- seeding, selection


def test_same_seed_same_weights_and_different_seed_different():
    crowd, _ = noisy_crowd()
    first = weights(CrowdLayer("VW+B", max_epochs=3, random_state=4).fit(crowd))
    again = weights(CrowdLayer("VW+B", max_epochs=3, random_state=4).fit(crowd))
    other = weights(CrowdLayer("VW+B", max_epochs=3, random_state=5).fit(crowd))
    for a, b in zip(first, again, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert any(not torch.equal(a, b) for a, b in zip(first, other, strict=True))


def test_model_selection_keeps_the_best_validation_epoch():
    crowd, valid = noisy_crowd()
    model = TwoStage(max_epochs=12, lr=0.05).fit(crowd, valid=valid)
    history = model.history_
    best = history["valid_accuracy"].idxmax()
    assert model.best_epoch_ == history.loc[best, "epoch"]
    X, y = valid
    assert np.mean(model.predict(X) == y) == pytest.approx(history.loc[best, "valid_accuracy"])


def test_early_stopping_stops_after_patience():
    crowd, valid = noisy_crowd()
    model = TwoStage(max_epochs=200, patience=3, lr=0.05).fit(crowd, valid=valid)
    assert len(model.history_) < 200
    assert len(model.history_) - model.best_epoch_ == 3


def test_checkpoint_resume_gives_the_weights_of_an_uninterrupted_run(tmp_path, monkeypatch):
    crowd, valid = noisy_crowd()
    params = dict(max_epochs=6, lr_schedule="cosine", random_state=2)
    uninterrupted = CrowdLayer("MW", **params, checkpoint_dir=tmp_path / "a")
    uninterrupted.fit(crowd, valid=valid)

    class Crash(Exception):
        pass

    def crash_at_third_epoch(self, context):
        if context.epoch == 2:
            raise Crash
        return {}

    with monkeypatch.context() as patch:  # the process dies during epoch 3
        patch.setattr(CrowdLayer, "_epoch_end", crash_at_third_epoch)
        with pytest.raises(Crash):
            CrowdLayer("MW", **params, checkpoint_dir=tmp_path / "b").fit(crowd, valid=valid)
    resumed = CrowdLayer("MW", **params, checkpoint_dir=tmp_path / "b", resume=True)
    resumed.fit(crowd, valid=valid)
    assert len(resumed.history_) == 6
    for a, b in zip(weights(uninterrupted), weights(resumed), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    np.testing.assert_allclose(
        resumed.history_["valid_loss"], uninterrupted.history_["valid_loss"]
    )
    with pytest.raises(CrowdDataError, match="another configuration"):
        CrowdLayer("VW", **params, checkpoint_dir=tmp_path / "b", resume=True).fit(
            crowd, valid=valid
        )


def test_save_and_load_round_trip(tmp_path):
    crowd, (X, _) = noisy_crowd()
    model = TwoStage(DawidSkene(), soft=True, max_epochs=3).fit(crowd)
    model.save(tmp_path / "model.pt")
    loaded = BaseLearner.load(tmp_path / "model.pt")
    assert isinstance(loaded, TwoStage) and loaded.get_params()["soft"] is True
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X))
    np.testing.assert_array_equal(loaded.targets_, model.targets_)
    layer = CrowdLayer("VB", max_epochs=2).fit(crowd)
    layer.save(tmp_path / "layer.pt")
    np.testing.assert_allclose(
        CrowdLayer.load(tmp_path / "layer.pt").confusions_, layer.confusions_
    )
    with pytest.raises(TypeError, match="not a CrowdLayer"):
        CrowdLayer.load(tmp_path / "model.pt")


# ---------------------------------------------------------------------- learners and inputs


@pytest.mark.parametrize("variant", ["MW", "VW", "VB", "VW+B", "SW"])
def test_crowd_layer_variants_start_as_the_paper_says_and_learn(variant):
    layer = CrowdLayerModule(3, 4, variant)
    outputs = torch.rand(5, 4)
    workers = torch.tensor([0, 1, 2, 0, 1])
    # identity / ones / zeros initialisations pass the classifier's output through
    torch.testing.assert_close(layer(outputs, workers), outputs)
    crowd, valid = noisy_crowd()
    model = CrowdLayer(variant, max_epochs=15).fit(crowd, valid=valid)
    np.testing.assert_allclose(model.confusions_.sum(axis=2), 1.0, atol=1e-6)
    assert model.history_["valid_accuracy"].max() > 0.8


def test_two_stage_hard_and_soft_targets():
    crowd, _ = noisy_crowd()
    hard = TwoStage(max_epochs=1).fit(crowd)
    assert set(np.unique(hard.targets_)) == {0.0, 1.0}
    soft = TwoStage(DawidSkene(), soft=True, max_epochs=1).fit(crowd)
    np.testing.assert_allclose(soft.targets_, soft.aggregator_.probas_, rtol=1e-6)
    assert clone(soft).get_params()["soft"] is True


def test_backbones_and_custom_modules():
    assert MLP(10, 3, hidden=(), dropout=0.0)(torch.randn(2, 10)).shape == (2, 3)
    assert SmallCNN(1, 4)(torch.randn(2, 1, 9, 7)).shape == (2, 4)
    crowd, (X, _) = noisy_crowd()
    custom = torch.nn.Sequential(torch.nn.Linear(6, 3))
    model = TwoStage(backbone=custom, max_epochs=2, crowd_folds=1).fit(crowd)
    assert model.predict_proba(X).shape == (len(X), 3)
    assert torch.equal(custom[0].weight, custom[0].weight)  # the user's module is not trained
    assert not torch.equal(custom[0].weight, model.module_["classifier"][0].weight)
    # cross-fitted (the default): one copy of the user's module per fold, each trained
    folded = TwoStage(backbone=custom, max_epochs=2).fit(crowd)
    members = folded.module_["classifier"].members
    assert len(members) == 5 and all(isinstance(m, torch.nn.Sequential) for m in members)
    assert not any(torch.equal(custom[0].weight, m[0].weight) for m in members)


def test_learning_on_image_files_with_a_cnn(tmp_path):
    from PIL import Image

    from crowdlearn.data import ImageFolderInputs

    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, size=40)
    for task, cls in enumerate(truth):
        pixels = np.zeros((8, 8), dtype=np.uint8)
        pixels[:, :4] = 255 if cls else 0  # class 1: bright left half
        Image.fromarray(pixels).save(tmp_path / f"img-{task}.png")
    crowd = CrowdData.from_arrays(np.arange(40), np.zeros(40, dtype=int), truth, truth=truth)
    images = ImageFolderInputs.from_folder(tmp_path, mode="L")
    model = Supervised(backbone="cnn", max_epochs=30, lr=0.01).fit(crowd.with_inputs(images))
    assert np.mean(model.predict(images) == truth) == 1.0


def test_bad_input_and_parameters():
    crowd, valid = noisy_crowd()
    with pytest.raises(CrowdDataError, match="features"):
        TwoStage().fit(crowd.with_features(None))
    with pytest.raises(CrowdDataError, match="anonymous"):
        CrowdLayer().fit(crowd.anonymous())
    with pytest.raises(ValueError, match="variant"):
        CrowdLayer("MX", max_epochs=1).fit(crowd)
    with pytest.raises(ValueError, match="optimizer"):
        TwoStage(optimizer="lbfgs").fit(crowd)
    with pytest.raises(ValueError, match="checkpoint_dir"):
        TwoStage(resume=True).fit(crowd)
    with pytest.raises(CrowdDataError, match="class codes"):
        TwoStage(max_epochs=1).fit(crowd, valid=(valid[0], valid[1] + 5))
    with pytest.raises(TypeError, match="unexpected parameters"):
        TwoStage(epochs=3)
    assert repr(CrowdLayer("VW", lr=0.01)) == "CrowdLayer(lr=0.01, variant='VW')"


def test_resuming_a_run_that_stopped_early_trains_no_further(tmp_path):
    crowd, valid = noisy_crowd()
    params = dict(max_epochs=200, patience=2, lr=0.05, checkpoint_dir=tmp_path)
    first = TwoStage(**params).fit(crowd, valid=valid)
    assert len(first.history_) < 200
    again = TwoStage(**params, resume=True).fit(crowd, valid=valid)
    assert len(again.history_) == len(first.history_)
    for a, b in zip(weights(first), weights(again), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_every_learner_is_registered_under_its_cli_name():
    from crowdlearn.learning import LEARNERS

    expected = {
        "supervised",
        "twostage",
        "mv+nn",
        "naivesoft+nn",
        "ds+nn",
        "glad+nn",
        "crowdlayer",
        "conal",
        "dl-em",
        "cmm",
    }
    assert expected <= set(LEARNERS)
