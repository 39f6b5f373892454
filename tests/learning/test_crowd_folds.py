"""Cross-fitting with ``crowd_folds``: one classifier per fold of the crowd, averaged."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_softmax, softmax
from test_validation import blobs_crowd

from crowdlearn.aggregation import DawidSkene
from crowdlearn.learning import DLEM, BaseLearner, CrowdLayer, TwoStage, make_learner
from crowdlearn.learning._base import FOLD_SEED_STEP, FoldAverage, standardised
from crowdlearn.learning._validation import (
    TEMPERATURE_RANGE,
    CrowdValidationWarning,
    crowd_folds,
    joint_temperature,
    pooled_temperature,
)

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def crowd():
    return blobs_crowd()


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 6), st.integers(0, 1_000))
def test_every_annotated_task_is_held_out_by_exactly_one_fold(n_folds, seed):
    data, _, _ = blobs_crowd(seed=seed % 3, n=120)
    folds = crowd_folds(data, n_folds, seed)
    assert len(folds) == n_folds
    held = np.concatenate([validator.held_tasks for _, validator in folds])
    annotated = np.flatnonzero(data.feedback_effort > 0)
    np.testing.assert_array_equal(np.sort(held), annotated)
    for train, validator in folds:
        assert train.n_tasks + validator.held.n_tasks == data.n_tasks
        assert train.n_annotations + validator.held.n_annotations == data.n_annotations
        assert not set(train.task_ids) & set(validator.held.task_ids)
        # the same Dawid-Skene table as one held-out share's: one row per held task
        assert validator.ds_log_likelihood.shape == (validator.held.n_tasks, data.n_classes)
    again = crowd_folds(data, n_folds, seed)
    for (_, a), (_, b) in zip(folds, again, strict=True):
        np.testing.assert_array_equal(a.held_tasks, b.held_tasks)


def test_fold_table_is_the_dawid_skene_log_likelihood_of_each_task(crowd):
    data, _, _ = crowd
    model = DawidSkene(progress=False).fit(data)
    log_pi = np.log(np.asarray(model.confusions_))
    for _, validator in crowd_folds(data, 3, seed=0):
        for row, task in list(enumerate(validator.held_tasks))[:10]:
            mine = data.task == task
            expected = log_pi[data.worker[mine], :, data.label[mine]].sum(axis=0)
            np.testing.assert_allclose(validator.ds_log_likelihood[row], expected, rtol=1e-6)


@pytest.mark.parametrize(
    "make",
    [
        lambda: CrowdLayer(max_epochs=6, random_state=1, crowd_folds=3),
        lambda: TwoStage(DawidSkene(), soft=True, max_epochs=6, random_state=1, crowd_folds=3),
        lambda: DLEM(max_epochs=5, random_state=1, crowd_folds=3),
    ],
    ids=["crowdlayer", "ds+nn", "dl-em"],
)
def test_cross_fitting_never_reads_the_truth_and_is_deterministic(crowd, make):
    data, X, _ = crowd
    with_truth = make().fit(data)
    hidden = make().fit(data.with_truth(None))
    again = make().fit(data)
    assert with_truth.validation_ == "crowd" and len(with_truth.fold_epochs_) == 3
    for other in (hidden, again):
        assert other.fold_epochs_ == with_truth.fold_epochs_
        assert other.temperature_ == pytest.approx(with_truth.temperature_)
        np.testing.assert_allclose(other.predict_proba(X), with_truth.predict_proba(X))


def test_each_fold_is_the_fit_of_its_own_split_and_prediction_averages_them(crowd):
    data, X, _ = crowd
    model = CrowdLayer(max_epochs=6, patience=None, crowd_folds=3, random_state=5).fit(data)
    assert isinstance(model.module_["classifier"], FoldAverage)
    history = model.history_
    assert list(history["fold"].unique()) == [0, 1, 2] and len(history) == 3 * 6
    members = []
    for fold, (train, validator) in enumerate(crowd_folds(data, 3, seed=5)):
        # the fold's learner, fitted by hand on the fold's split with the fold's seed
        alone = CrowdLayer(
            max_epochs=6, patience=None, random_state=5 + FOLD_SEED_STEP * fold, calibrate=False
        )
        alone._fit_outer(train, validator)
        assert alone.best_epoch_ == model.fold_epochs_[fold]
        scores = history.loc[history["fold"] == fold, "valid_ds_ll"].to_numpy()
        assert model.fold_epochs_[fold] == int(np.argmax(scores)) + 1
        members.append(alone.predict_proba(X))
    assert model.best_epoch_ == int(np.median(model.fold_epochs_))
    # predict_proba: the mean of the members' probabilities at the temperature
    at_t = [softmax(np.log(p) / model.temperature_, axis=1) for p in members]
    np.testing.assert_allclose(model.predict_proba(X), np.mean(at_t, axis=0), atol=1e-5)


def test_pooled_temperature_maximises_every_folds_likelihood_together(crowd):
    data, _, _ = crowd
    model = CrowdLayer(
        max_epochs=4, crowd_folds=3, random_state=2, standardize=True, calibrate="agreement"
    ).fit(data)
    scaled, _ = standardised(data, True)
    losses, logits, validators = [], [], []
    for fold, (train, validator) in enumerate(crowd_folds(scaled, 3, seed=2)):
        alone = CrowdLayer(max_epochs=4, random_state=2 + FOLD_SEED_STEP * fold, standardize=False)
        alone._fit_outer(train, validator)
        losses.append(validator.temperature_loss(alone))
        logits.append((validator.held_logits(alone), validator.ds_log_likelihood))
        validators.append(validator)
    assert pooled_temperature(losses) == pytest.approx(model.temperature_, rel=1e-4)
    # the joint temperature pools the same out-of-fold logits
    joint = joint_temperature(validators, [z for z, _ in logits])
    assert joint == pytest.approx(model.temperatures_["joint"], rel=1e-4)

    def likelihood(t: float) -> float:
        total = 0.0
        for z, table in logits:
            joint = log_softmax(z / t, axis=1) + table
            top = joint.max(axis=1, keepdims=True)
            total += float((top[:, 0] + np.log(np.exp(joint - top).sum(axis=1))).sum())
        return total

    best, (low, high) = model.temperature_, TEMPERATURE_RANGE
    assert low * 1.5 < best < high / 1.5  # inside the searched range
    for other in (best * 0.7, best * 1.4, 1.0):
        assert likelihood(best) >= likelihood(other) - 1e-6


def test_saved_cross_fitted_learner_predicts_the_same(crowd, tmp_path):
    data, X, _ = crowd
    model = make_learner("dl-em", max_epochs=4, crowd_folds=2, standardize=True).fit(data)
    model.save(tmp_path / "m.pt")
    loaded = BaseLearner.load(tmp_path / "m.pt")
    assert loaded.fold_epochs_ == model.fold_epochs_ and loaded.scaler_ is not None
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X), atol=1e-6)


@pytest.mark.parametrize("bad", [0, -2, 2.5, True, "5"])
def test_bad_fold_counts_are_refused(crowd, bad):
    data, _, _ = crowd
    # a number out of range is a ValueError, a value of another type a TypeError
    with pytest.raises((ValueError, TypeError), match="crowd_folds"):
        CrowdLayer(max_epochs=1, crowd_folds=bad).fit(data)


def test_too_few_tasks_per_fold_keep_the_last_epoch_with_a_warning():
    data, _, _ = blobs_crowd(n=20)
    with pytest.warns(CrowdValidationWarning, match="too few"):
        model = CrowdLayer(max_epochs=3, crowd_folds=5).fit(data)
    assert model.validation_ == "none (too few tasks)" and model.fold_epochs_ is None
    assert model.best_epoch_ == 3


def test_crowd_folds_apply_to_crowd_validation_only(crowd):
    data, X, y = crowd
    plain = CrowdLayer(max_epochs=3, random_state=0, valid_share=0.2)
    folded = CrowdLayer(max_epochs=3, random_state=0, crowd_folds=4)
    for valid in (None, (X, y)):
        a, b = plain.fit(data, valid), folded.fit(data, valid)
        assert b.fold_epochs_ is None
        np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X))


def _registered():
    from crowdlearn.learning import LEARNERS

    return sorted(LEARNERS)


@pytest.mark.parametrize("name", _registered())
def test_every_registered_learner_cross_fits_and_round_trips(name, tmp_path):
    data, X, _ = blobs_crowd(n=200)
    model = make_learner(name, max_epochs=2, crowd_folds=2, progress=False).fit(data)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    if name == "ensemble":  # the folds are each member's
        assert all(len(member.fold_epochs_) == 2 for member in model.members_)
    else:
        assert len(model.fold_epochs_) == 2 and model.validation_ == "crowd"
    model.save(tmp_path / "m.pt")
    np.testing.assert_allclose(
        BaseLearner.load(tmp_path / "m.pt").predict_proba(X), proba, atol=1e-6
    )


class _Fixed(torch.nn.Module):
    def __init__(self, logits):
        super().__init__()
        self.logits = torch.tensor(logits, dtype=torch.float32)

    def forward(self, x):
        return self.logits.expand(len(x), -1)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.2, 5.0), st.lists(st.floats(-8, 8), min_size=9, max_size=9))
def test_fold_average_is_the_mean_of_the_calibrated_members(temperature, values):
    members = [_Fixed(values[i : i + 3]) for i in (0, 3, 6)]
    average = FoldAverage(members, temperature)
    out = average(torch.zeros(2, 1)).double()
    proba = torch.softmax(out / temperature, dim=1).numpy()
    expected = np.mean([softmax(np.array(values[i : i + 3]) / temperature) for i in (0, 3, 6)], 0)
    np.testing.assert_allclose(proba[0], expected, atol=1e-5)


def test_one_member_without_a_class_lowers_it_by_its_share_and_does_not_veto_it():
    sure, dead = [4.0, 0.0, 0.0], [-20.0, 4.0, 0.0]  # the second never predicts class 0
    proba = torch.softmax(FoldAverage([_Fixed(sure)] * 4 + [_Fixed(dead)])(torch.zeros(1, 1)), 1)
    assert proba.argmax().item() == 0 and proba[0, 0].item() > 0.7


@pytest.mark.parametrize("folds", [1, 3])
def test_set_temperature_rescales_every_member_before_the_mean(crowd, folds):
    data, X, _ = crowd
    model = CrowdLayer(max_epochs=3, random_state=0, crowd_folds=folds, standardize=True)
    model.fit(data)
    other = model.temperatures_["joint"] * 1.7
    assert model.set_temperature(other) is model and model.temperature_ == other
    x = torch.as_tensor(((X - model.scaler_[0]) / model.scaler_[1]).astype(np.float32))
    classifier = model.module_["classifier"].eval()
    members = classifier.members if folds > 1 else [classifier]
    with torch.no_grad():
        expected = np.mean([softmax(m(x).double().numpy() / other, axis=1) for m in members], 0)
    np.testing.assert_allclose(model.predict_proba(X), expected, atol=1e-5)
    with pytest.raises(ValueError, match="positive"):
        model.set_temperature(0.0)
