"""Model selection without ground truth: the split, the criteria, and what they never read."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from crowdlearn.aggregation import DawidSkene
from crowdlearn.data import CrowdDataError
from crowdlearn.learning import DLEM, CrowdLayer, Supervised, TwoStage, make_learner
from crowdlearn.learning._base import needs_scaling
from crowdlearn.learning._validation import (
    TEMPERATURE_RANGE,
    CrowdValidation,
    CrowdValidationWarning,
    crowd_split,
    independent_log_likelihood,
    joint_temperature,
    latent_class_log_likelihood,
    truth_table,
)
from crowdlearn.simulate import crowd_on_features

torch.set_num_threads(1)


def blobs_crowd(seed: int = 0, n: int = 300):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n + 150)
    X = (rng.normal(size=(n + 150, 5)) + 2.0 * np.eye(3, 5)[y]) * 10.0 + 50.0  # raw scale
    crowd = crowd_on_features(
        X[:n],
        y[:n],
        n_workers=15,
        labels_per_task=3,
        groups={"expert": 0.4, "inexpert": 0.3, "spammer": 0.3},
        seed=seed,
    )
    return crowd, X[n:].astype(np.float32), y[n:]


@pytest.fixture(scope="module")
def crowd():
    return blobs_crowd()


def test_split_holds_out_a_seeded_stratified_share_of_annotated_tasks(crowd):
    data, _, _ = crowd
    train, valid = crowd_split(data, 0.2, seed=3)
    annotated = int(np.count_nonzero(data.feedback_effort > 0))
    assert valid.held.n_tasks == round(0.2 * annotated)
    assert train.n_tasks + valid.held.n_tasks == data.n_tasks
    assert train.n_annotations + valid.held.n_annotations == data.n_annotations
    # the held-out tasks are those named, with their own ids, disjoint from training
    np.testing.assert_array_equal(valid.held.task_ids, data.task_ids[valid.held_tasks])
    assert not set(train.task_ids) & set(valid.held.task_ids)
    # worker and class codes are kept, so per-worker parameters apply to both parts
    np.testing.assert_array_equal(train.worker_ids, data.worker_ids)
    _again_train, again = crowd_split(data, 0.2, seed=3)
    np.testing.assert_array_equal(again.held_tasks, valid.held_tasks)
    _, other = crowd_split(data, 0.2, seed=4)
    assert not np.array_equal(other.held_tasks, valid.held_tasks)
    # stratified by the majority class: shares within a few tasks of the whole data's
    majority = np.asarray(data.vote_counts.argmax(axis=1)).ravel()
    whole = np.bincount(majority, minlength=3) / data.n_tasks
    held = np.bincount(majority[valid.held_tasks], minlength=3) / len(valid.held_tasks)
    assert np.abs(whole - held).max() < 0.06


def test_too_few_tasks_keep_the_last_epoch_with_a_warning():
    data, _, _ = blobs_crowd(n=12)
    with pytest.warns(CrowdValidationWarning, match="too few"):
        model = CrowdLayer(max_epochs=3).fit(data)
    assert model.validation_ == "none (too few tasks)"
    assert model.best_epoch_ == 3


@pytest.mark.parametrize(
    "make",
    [
        lambda: CrowdLayer(max_epochs=8, random_state=1),
        lambda: TwoStage(DawidSkene(), soft=True, max_epochs=8, random_state=1),
        lambda: DLEM(max_epochs=6, random_state=1),
    ],
    ids=["crowdlayer", "ds+nn", "dl-em"],
)
def test_crowd_validation_never_reads_the_truth_and_is_deterministic(crowd, make):
    data, X, _ = crowd
    assert data.has_truth
    with_truth = make().fit(data)
    hidden = make().fit(data.with_truth(None))
    again = make().fit(data)
    assert with_truth.validation_ == "crowd"
    for other in (hidden, again):
        assert other.selected_epoch_ == with_truth.selected_epoch_
        assert other.selection_score_ == pytest.approx(with_truth.selection_score_)
        assert other.temperature_ == pytest.approx(with_truth.temperature_)
        np.testing.assert_allclose(other.predict_proba(X), with_truth.predict_proba(X))


def test_selection_keeps_the_best_held_out_epoch_and_refit_trains_that_long(crowd):
    data, _, _ = crowd
    one = dict(max_epochs=12, patience=None, crowd_folds=1)  # one held-out share
    model = CrowdLayer(**one, refit=False).fit(data)
    scores = model.history_["valid_ds_ll"].to_numpy()  # the default criterion: agreement
    assert model.selected_epoch_ == int(np.argmax(scores)) + 1
    assert model.selection_score_ == pytest.approx(scores.max())
    own = CrowdLayer(**one, refit=False, crowd_criterion="likelihood")
    own.fit(data)
    likelihoods = own.history_["valid_crowd_ll"].to_numpy()
    assert own.selected_epoch_ == int(np.argmax(likelihoods)) + 1
    refit = CrowdLayer(**one, refit=True).fit(data)
    assert refit.selected_epoch_ == model.selected_epoch_
    assert len(refit.history_) == refit.selected_epoch_ == refit.best_epoch_
    assert len(refit.selection_history_) == 12
    assert "valid_crowd_ll" not in refit.history_  # the refit itself has no validation


def test_patience_stops_a_crowd_validated_fit(crowd):
    data, _, _ = crowd
    model = CrowdLayer(max_epochs=200, patience=3, refit=False, crowd_folds=1).fit(data)
    assert len(model.history_) <= model.selected_epoch_ + 3
    folded = CrowdLayer(max_epochs=200, patience=3, crowd_folds=3).fit(data)
    for fold, epoch in enumerate(folded.fold_epochs_):
        assert len(folded.history_[folded.history_["fold"] == fold]) <= epoch + 3


def test_standardisation_inside_equals_standardising_by_hand(crowd):
    data, X, _ = crowd
    raw = CrowdLayer(max_epochs=4, refit=False, standardize=True).fit(data)
    mean, scale = data.features.mean(axis=0), data.features.std(axis=0)
    scaled = data.with_features((data.features - mean) / scale)
    by_hand = CrowdLayer(max_epochs=4, refit=False, standardize=False).fit(scaled)
    np.testing.assert_allclose(raw.scaler_[0], mean, rtol=1e-5)
    np.testing.assert_allclose(
        raw.predict_proba(X), by_hand.predict_proba((X - mean) / scale), atol=1e-5
    )
    assert by_hand.scaler_ is None


def test_auto_standardises_only_features_on_different_or_extreme_scales(crowd):
    data, _, _ = crowd
    rng = np.random.default_rng(0)
    one_scale = data.features  # every column with std about 10: left as it is
    assert CrowdLayer(max_epochs=1).fit(data).scaler_ is None
    spread = one_scale * np.geomspace(1e-3, 10, one_scale.shape[1])  # 1e4 apart
    assert CrowdLayer(max_epochs=1).fit(data.with_features(spread)).scaler_ is not None
    huge = one_scale * 1e4 + rng.normal(size=one_scale.shape)
    assert CrowdLayer(max_epochs=1).fit(data.with_features(huge)).scaler_ is not None
    assert needs_scaling(np.array([0.0, 0.0])) is False  # constant columns only


def test_saved_learner_keeps_its_scaler_and_temperature(crowd, tmp_path):
    data, X, _ = crowd
    model = CrowdLayer(max_epochs=3, standardize=True).fit(data)
    model.save(tmp_path / "m.pt")
    loaded = CrowdLayer.load(tmp_path / "m.pt")
    assert loaded.temperature_ == model.temperature_ and loaded.validation_ == "crowd"
    assert loaded.temperatures_ == model.temperatures_ and loaded.temperatures_ is not None
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X), atol=1e-6)


def test_truth_validation_calibrates_by_log_loss(crowd):
    data, X, y = crowd
    off = CrowdLayer(max_epochs=5, calibrate=False).fit(data, valid=(X, y))
    on = CrowdLayer(max_epochs=5).fit(data, valid=(X, y))
    assert off.temperature_ == 1.0 and on.validation_ == "truth"
    np.testing.assert_array_equal(off.predict(X), on.predict(X))  # argmax unchanged

    def log_loss(model):
        proba = model.predict_proba(X)
        return -np.mean(np.log(proba[np.arange(len(y)), y]))

    assert log_loss(on) <= log_loss(off) + 1e-9


def test_temperature_maximises_the_held_out_dawid_skene_likelihood(crowd):
    data, _, _ = crowd
    model = CrowdLayer(
        max_epochs=5, refit=False, calibrate=False, standardize=True, crowd_folds=1
    ).fit(data)
    _, validation = crowd_split(data.with_features(_scaled(model, data)), 0.2, seed=0)
    best = validation.fit_temperature(model)
    logits = validation.held_logits(model)

    def objective(t: float) -> float:
        z = logits / t
        log_p = z - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True))
        log_p -= z.max(1, keepdims=True)
        joint = log_p + validation.ds_log_likelihood
        top = joint.max(1, keepdims=True)
        return float((top[:, 0] + np.log(np.exp(joint - top).sum(1))).sum())

    for other in (best * 0.7, best * 1.4, 1.0):
        assert objective(best) >= objective(other) - 1e-6


def _scaled(model, data):
    mean, scale = model.scaler_
    return (data.features - mean) / scale


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_latent_class_likelihood_is_the_hand_computed_mixture(seed):
    rng = np.random.default_rng(seed)
    b, k, w = 3, 3, 4
    proba = rng.dirichlet(np.ones(k), size=b)
    confusions = rng.dirichlet(np.ones(k), size=(w, k))
    position = np.array([0, 0, 1, 2, 2, 2])
    worker = rng.integers(0, w, size=6)
    label = rng.integers(0, k, size=6)
    expected = []
    for task in range(b):
        rows = np.flatnonzero(position == task)
        per_class = [
            proba[task, c] * np.prod(confusions[worker[rows], c, label[rows]]) for c in range(k)
        ]
        expected.append(np.log(np.sum(per_class)))
    got = latent_class_log_likelihood(
        torch.log(torch.as_tensor(proba)),
        torch.as_tensor(position),
        torch.as_tensor(worker),
        torch.as_tensor(label),
        torch.log(torch.as_tensor(confusions)),
    )
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    log_annotation = torch.log(torch.as_tensor(rng.dirichlet(np.ones(k), size=6)))
    summed = independent_log_likelihood(
        log_annotation, torch.as_tensor(position), torch.as_tensor(label), b
    )
    by_hand = [log_annotation.numpy()[position == t, label[position == t]].sum() for t in range(b)]
    np.testing.assert_allclose(summed.numpy(), by_hand)


def test_crowd_layer_score_is_its_held_out_cross_entropy(crowd):
    data, _, _ = crowd
    model = CrowdLayer(
        max_epochs=3, refit=False, calibrate=False, standardize=True, crowd_folds=1
    ).fit(data)
    _, validation = crowd_split(data.with_features(_scaled(model, data)), 0.2, seed=0)
    row = validation.evaluate(model, model.module_, torch.device("cpu"))
    from crowdlearn.learning._batches import TaskBatcher

    held = validation.held
    batcher = TaskBatcher(
        held, validation.inputs, np.arange(held.n_tasks), held.n_tasks, torch.device("cpu")
    )
    batch = batcher.batch(np.arange(held.n_tasks))
    module = model.module_.eval()
    with torch.no_grad():
        proba = torch.softmax(module["classifier"](batch.x), dim=1)
        logits = module["noise"](proba[batch.position], batch.worker)
        cross_entropy = torch.nn.functional.cross_entropy(logits, batch.label)
    assert row["valid_crowd_ll"] == pytest.approx(-float(cross_entropy), rel=1e-5)
    assert isinstance(validation, CrowdValidation)


def test_em_restarts_are_chosen_by_the_held_out_score(crowd):
    data, _, _ = crowd
    model = DLEM(max_epochs=4, n_restarts=3, refit=False, crowd_folds=1).fit(data)
    scores = []
    for restart in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = DLEM(max_epochs=4, random_state=restart, refit=False, crowd_folds=1).fit(data)
        scores.append(run.selection_score_)
    assert model.chosen_random_state_ == int(np.argmax(scores))


def test_bad_valid_values_are_refused(crowd):
    data, _X, _y = crowd
    with pytest.raises(Exception, match="crowd"):
        CrowdLayer(max_epochs=1).fit(data, valid="truth")
    with pytest.raises(ValueError, match="valid_share"):
        CrowdLayer(max_epochs=1, valid_share=1.5).fit(data)
    with pytest.raises(ValueError, match="standardize"):
        CrowdLayer(max_epochs=1, standardize="yes").fit(data)
    with pytest.raises(ValueError, match="crowd_criterion"):
        CrowdLayer(max_epochs=1, crowd_criterion="truth").fit(data)


def test_own_likelihood_temperature_maximises_the_noise_models_held_out_likelihood(crowd):
    data, _, _ = crowd
    model = CrowdLayer(
        max_epochs=5, refit=False, calibrate=False, standardize=True, crowd_folds=1
    ).fit(data)
    _, validation = crowd_split(data.with_features(_scaled(model, data)), 0.2, seed=0)
    best = validation.fit_temperature(model, "likelihood")
    held = validation.held
    from crowdlearn.learning._batches import TaskBatcher

    batcher = TaskBatcher(
        held, validation.inputs, np.arange(held.n_tasks), held.n_tasks, torch.device("cpu")
    )
    batch = batcher.batch(np.arange(held.n_tasks))
    module = model.module_.eval()

    def objective(t: float) -> float:  # the Crowd Layer's annotation log-likelihood
        with torch.no_grad():
            proba = torch.softmax(module["classifier"](batch.x) / t, dim=1)
            logits = module["noise"](proba[batch.position], batch.worker)
            return -float(torch.nn.functional.cross_entropy(logits, batch.label, reduction="sum"))

    for other in (best * 0.7, best * 1.4, 1.0):
        assert objective(best) >= objective(other) - 1e-4
    # a two-stage network has no noise model: its "likelihood" temperature is the agreement
    two = make_learner("mv+nn", max_epochs=3, refit=False, calibrate=False).fit(data)
    assert two.temperatures_["likelihood"] == pytest.approx(two.temperatures_["agreement"])


def test_calibrate_picks_which_temperature_predict_proba_uses(crowd):
    data, _, _ = crowd
    fits = {
        value: CrowdLayer(max_epochs=4, refit=False, calibrate=value, random_state=0).fit(data)
        for value in (True, False, "agreement", "likelihood", "joint")
    }
    temperatures = fits[False].temperatures_  # computed for the record either way
    assert set(temperatures) == {"agreement", "likelihood", "joint"}
    assert fits[False].temperature_ == 1.0
    for criterion in temperatures:
        assert fits[criterion].temperature_ == pytest.approx(temperatures[criterion])
    assert fits[True].temperature_ == pytest.approx(fits["joint"].temperature_)  # the default
    assert CrowdLayer(max_epochs=2, valid_share=0.2).fit(data, valid=None).temperatures_ is None
    with pytest.raises(ValueError, match="calibrate must be one of"):
        CrowdLayer(max_epochs=1, calibrate="truth").fit(data)


def test_calibrate_is_a_bool_or_a_criterion_in_specs_and_the_cli():
    from crowdlearn import CrowdDataError

    assert make_learner("crowdlayer[calibrate=likelihood]").calibrate == "likelihood"
    assert make_learner("crowdlayer[calibrate=agreement]").calibrate == "agreement"
    assert make_learner("crowdlayer[calibrate=joint]").calibrate == "joint"
    assert make_learner("crowdlayer[calibrate=false]").calibrate is False
    with pytest.raises(CrowdDataError, match="calibrate"):
        make_learner("crowdlayer[calibrate=sure]")


def test_truth_table_scores_the_true_class_and_skips_unknown_truth(crowd):
    data, _, _ = crowd
    truth = data.truth.copy()
    truth[1] = -1
    table = truth_table(data.with_truth(truth), np.array([0, 1, 2]))
    assert table.shape == (3, data.n_classes)
    for row, task in ((0, 0), (2, 2)):
        assert table[row, truth[task]] == 0.0
        assert np.isneginf(np.delete(table[row], truth[task])).all()
    np.testing.assert_array_equal(table[1], 0.0)  # unknown truth: scores nothing
    with pytest.raises(CrowdDataError, match="truth"):
        truth_table(data.with_truth(None), np.array([0]))


def test_supervised_selects_and_calibrates_on_the_held_out_truth_not_the_crowd(crowd):
    data, _, _ = crowd
    # a crowd of nothing but random labels: its Dawid-Skene view says nothing of the truth
    rng = np.random.default_rng(5)
    noise = data._replace(label=rng.integers(0, data.n_classes, size=data.n_annotations))
    one = dict(max_epochs=10, patience=None, crowd_folds=1, refit=False, random_state=2)
    model = Supervised(**one, calibrate=False, standardize=True).fit(noise)
    assert model.validation_ == "crowd"
    _, validation = crowd_split(
        noise.with_features(_scaled(model, noise)), 0.2, seed=2, table=truth_table
    )
    logits = validation.held_logits(model)  # the restored, selected epoch
    log_p = logits - logsumexp(logits, axis=1, keepdims=True)
    truth = noise.truth[validation.held_tasks]
    held_ll = log_p[np.arange(len(truth)), truth].sum() / validation.held.n_annotations
    scores = model.history_["valid_ds_ll"].to_numpy()
    assert model.selection_score_ == pytest.approx(held_ll, rel=1e-5)
    assert model.selection_score_ == pytest.approx(scores.max())
    # its temperature maximises the held-out truth's likelihood (plain temperature scaling)
    calibrated = Supervised(**one, standardize=True).fit(noise)

    def truth_ll(t: float) -> float:
        z = logits / t
        return float((z - logsumexp(z, axis=1, keepdims=True))[np.arange(len(truth)), truth].sum())

    best = calibrated.temperature_
    for other in (best * 0.7, best * 1.4):
        assert truth_ll(best) >= truth_ll(other) - 1e-6


def _calibrated_crowd(seed: int, n: int = 3000, k: int = 4, temperature: float = 0.5):
    """Tasks whose class is drawn from known probabilities ``p``, logits ``T log p`` (so
    ``softmax(z / T) = p``: calibrated at ``T``), and a crowd of 20 annotators with
    known confusions, 5 labels a task (all held out)."""
    from crowdlearn.data import CrowdData

    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.4), size=n)
    y = (rng.random((n, 1)) > np.cumsum(p, axis=1)).sum(axis=1).clip(max=k - 1)
    skill = rng.uniform(0.35, 0.9, size=20)
    confusions = np.stack(
        [s * np.eye(k) + (1 - s) * rng.dirichlet(np.ones(k), size=k) for s in skill]
    )
    task = np.repeat(np.arange(n), 5)
    worker = np.concatenate([rng.choice(20, size=5, replace=False) for _ in range(n)])
    rows = np.cumsum(confusions[worker, y[task]], axis=1)
    label = (rng.random((len(task), 1)) > rows).sum(axis=1).clip(max=k - 1)
    data = CrowdData.from_arrays(task, worker, label, classes=np.arange(k))
    held = CrowdValidation(data, np.arange(n), np.zeros((n, k)))
    return held, temperature * np.log(p)


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_joint_temperature_recovers_the_calibrating_temperature(temperature):
    held, logits = _calibrated_crowd(0, temperature=temperature)
    fitted = joint_temperature([held], [logits])
    assert fitted == pytest.approx(temperature, rel=0.1)
    # folds pool: two halves give the one fit of the whole, whatever the task order
    half = held.held.n_tasks // 2
    parts = [np.arange(half, held.held.n_tasks), np.arange(half)]
    shares = [
        CrowdValidation(held.held.select_tasks(rows), rows, np.zeros((len(rows), 4)))
        for rows in parts
    ]
    pooled = joint_temperature(shares, [logits[rows] for rows in parts])
    assert pooled == pytest.approx(fitted, rel=1e-3)


def test_joint_calibration_is_a_calibrate_value_and_falls_back_for_supervised(crowd):
    data, _, _ = crowd
    model = CrowdLayer(max_epochs=4, calibrate="joint", crowd_folds=2).fit(data)
    assert set(model.temperatures_) == {"agreement", "likelihood", "joint"}
    assert model.temperature_ == model.temperatures_["joint"]
    one = CrowdLayer(max_epochs=4, calibrate="joint", crowd_folds=1).fit(data)
    assert one.temperature_ == one.temperatures_["joint"]
    gold = Supervised(max_epochs=4, calibrate="joint", crowd_folds=2).fit(data)
    assert gold.temperature_ == gold.temperatures_["agreement"]  # its truth's temperature
    with pytest.raises(ValueError, match="calibrate"):
        CrowdLayer(max_epochs=1, calibrate="joint-ish").fit(data)


def test_anonymous_crowd_pools_one_worker_for_the_joint_temperature(crowd):
    data, X, _ = crowd
    anonymous = data.anonymous()
    model = make_learner("mv+nn", max_epochs=3, crowd_folds=2).fit(anonymous)
    assert model.temperature_ == model.temperatures_["joint"]
    low, high = TEMPERATURE_RANGE
    assert low <= model.temperature_ <= high
    np.testing.assert_allclose(model.predict_proba(X).sum(axis=1), 1.0, atol=1e-6)
