"""ICED: certainty scores and groups, SMOTE steps, synthetic crowd labels, the warm-up
schedules, the effect of synthesis on Dawid-Skene's minority recall, save/load, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.aggregation import DawidSkene, MajorityVote
from crowdlearn.learning._base import BaseLearner, without_timings
from crowdlearn.learning.iced import (
    HIGHEST,
    ICED,
    LOW,
    SECOND,
    THIRD,
    certainty_groups,
    inference_scores,
    interpolation_weights,
    paper_dawid_skene,
    same_class_neighbours,
    smote_interpolate,
    synthetic_crowd_labels,
)
from crowdlearn.metrics import label_certainty

torch.set_num_threads(1)


def imbalanced_crowd(seed: int, n: int = 330, n_workers: int = 9, minority_share: float = 0.09):
    """Two Gaussian classes at about 10:1; every worker labels every task, more
    reliably on the majority class (0) than on the minority class (1)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < minority_share).astype(np.int64)
    X = (rng.normal(size=(n, 6)) + 1.6 * y[:, None]).astype(np.float32)
    accuracy = np.column_stack(
        [rng.uniform(0.7, 0.9, n_workers), rng.uniform(0.45, 0.7, n_workers)]
    )
    task = np.repeat(np.arange(n), n_workers)
    worker = np.tile(np.arange(n_workers), n)
    right = rng.random(len(task)) < accuracy[worker, y[task]]
    label = np.where(right, y[task], 1 - y[task])
    data = CrowdData(task, worker, label, n_classes=2, features=X, truth=y)
    return data, X, y


def fast(**params):
    """ICED with a small schedule for tests."""
    settings_ = {
        "warmup_epochs": 1,
        "n_rounds": 2,
        "max_epochs": 5,
        "decoder_epochs": 3,
        "decoder_refit_epochs": 1,
        "device": "cpu",
    }
    return ICED(**{**settings_, **params})


# ---------------------------------------------------------------------- certainty


def test_certainty_is_largest_for_unanimous_tasks_and_smallest_for_ties():
    # 4 workers: unanimous, 3-1, a 2-2 tie, and a 3-class task with a 2-1-1 split
    data = CrowdData.from_arrays(
        task=np.repeat([0, 1, 2, 3], 4),
        worker=np.tile([0, 1, 2, 3], 4),
        label=[1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 2],
    )
    scores = label_certainty(data, eps=0.1)
    two_class = scores[:3]
    assert two_class.argmax() == 0 and two_class.argmin() == 2
    assert scores[0] == pytest.approx(1 / 0.1)  # no spread: 1 / eps
    assert scores[2] == pytest.approx(1 / (0.5 + 0.1))  # a tie: the largest spread
    assert scores[0] > scores[1] > scores[2]
    groups = certainty_groups(scores)
    assert groups[0] == HIGHEST


def test_certainty_groups_are_the_three_highest_distinct_levels():
    # 9 workers, binary: 9-0, 8-1, 7-2 are the three upper levels, 6-3 and 5-4 are low
    splits = [9, 8, 7, 6, 5, 9, 0, 1, 2]  # votes for class 1 (0 and 9 are unanimous)
    counts = np.array([[9 - s, s] for s in splits])
    groups = certainty_groups(label_certainty(counts, eps=0.1))
    assert groups.tolist() == [HIGHEST, SECOND, THIRD, LOW, LOW, HIGHEST, HIGHEST, SECOND, THIRD]
    # no annotations: low; fewer than three levels: only those groups
    assert certainty_groups(np.array([np.nan, 2.0, 2.0])).tolist() == [LOW, HIGHEST, HIGHEST]


# ---------------------------------------------------------------------- SMOTE


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 10_000),
    st.floats(0.0, 2.0),
    st.sampled_from(["towards-certain", "as-printed"]),
)
def test_smote_points_stay_on_the_segment(seed, eta, rule):
    rng = np.random.default_rng(seed)
    z, partner = rng.normal(size=(20, 5)), rng.normal(size=(20, 5))
    certainty = rng.uniform(0.5, 10, size=20)
    delta = interpolation_weights(certainty, rng.uniform(0.5, 10, size=20), eta, rng, rule)
    assert np.all((delta >= 0) & (delta <= 1))
    synthetic = smote_interpolate(z, partner, delta)
    # on the line through z and z^r, between them
    np.testing.assert_allclose(synthetic - z, delta[:, None] * (partner - z), atol=1e-12)
    length = np.linalg.norm(partner - z, axis=1)
    from_z = np.linalg.norm(synthetic - z, axis=1)
    from_partner = np.linalg.norm(synthetic - partner, axis=1)
    np.testing.assert_allclose(from_z + from_partner, length, rtol=1e-9, atol=1e-12)


def test_interpolation_weight_follows_certainty():
    rng = np.random.default_rng(0)
    certain, unsure = np.array([10.0]), np.array([2.0])
    # towards-certain: a certain candidate keeps the point near itself (small delta)
    near_self = interpolation_weights(certain, unsure, 0.0, rng, "towards-certain")
    assert near_self[0] == pytest.approx(2.0 / 12.0)
    # as printed, eq. (2.5): S(x) / (S(x) + S(x^r))
    printed = interpolation_weights(certain, unsure, 0.0, rng, "as-printed")
    assert printed[0] == pytest.approx(10.0 / 12.0)


def test_eq_2_5_both_readings_on_a_hand_computed_crowd():
    # task 0: 9 of 9 workers answer 0; task 1: 8 answer 0, one answers 1
    task = np.repeat([0, 1], 9)
    label = np.r_[np.zeros(9), np.zeros(8), 1].astype(int)
    data = CrowdData(task, np.tile(np.arange(9), 2), label, n_classes=2)
    scores = label_certainty(data, eps=0.1)
    # eq. 2.4: variance of the one-hot labels, E||y - E y||^2 = 2 p (1 - p)
    s_unanimous, s_split = 1 / (0 + 0.1), 1 / (2 * (8 / 9) * (1 / 9) + 0.1)
    np.testing.assert_allclose(scores, [s_unanimous, s_split])  # 10 and 81 / 24.1
    rng = np.random.default_rng(0)
    # candidate x = the unanimous task, neighbour x^r = the split one, eta = 0
    printed = interpolation_weights(scores[:1], scores[1:], 0.0, rng, "as-printed")
    text = interpolation_weights(scores[:1], scores[1:], 0.0, rng, "towards-certain")
    # S(x) / (S(x) + S(x^r)) = 10 / (10 + 81 / 24.1) = 241 / 322
    assert printed[0] == pytest.approx(241 / 322, abs=1e-12)  # 0.7484
    assert text[0] == pytest.approx(81 / 322, abs=1e-12)  # 0.2516
    z, z_r = np.array([[0.0, 0.0]]), np.array([[1.0, 2.0]])
    # as printed, z' lands nearer the *less* certain neighbour; the text's reading
    # keeps it near the more certain candidate
    near_printed = smote_interpolate(z, z_r, printed)
    near_text = smote_interpolate(z, z_r, text)
    assert np.linalg.norm(near_printed - z_r) < np.linalg.norm(near_printed - z)
    assert np.linalg.norm(near_text - z) < np.linalg.norm(near_text - z_r)


def test_same_class_neighbours_exclude_the_point_itself():
    z = np.array([[0.0], [1.0], [1.1], [5.0], [5.0]])
    neighbours = same_class_neighbours(z, k=2)
    assert neighbours.shape == (5, 2)
    assert not np.any(neighbours == np.arange(5)[:, None])
    assert neighbours[1, 0] == 2 and neighbours[3, 0] == 4 and neighbours[4, 0] == 3
    assert same_class_neighbours(z[:1], k=3).shape == (1, 0)


def test_synthetic_crowd_labels_simulate_each_worker_from_the_neighbours():
    # 4 real tasks, 3 workers labelling all; worker 2 always says 1, workers 0-1 copy truth
    truth = np.array([0, 0, 1, 1])
    task = np.repeat(np.arange(4), 3)
    worker = np.tile(np.arange(3), 4)
    label = np.where(worker == 2, 1, truth[task])
    data = CrowdData(task, worker, label, n_classes=2)
    neighbours = np.array([[0, 1], [2, 3], [0, 3]])
    rng = np.random.default_rng(0)
    sample, who, answer = synthetic_crowd_labels(data, neighbours, rng)
    # dense crowd: every worker labels every synthetic sample, once
    assert sorted(zip(sample.tolist(), who.tolist(), strict=True)) == [
        (s, w) for s in range(3) for w in range(3)
    ]
    answers = {(s, w): a for s, w, a in zip(sample, who, answer, strict=True)}
    assert [answers[(0, w)] for w in range(3)] == [0, 0, 1]
    assert [answers[(1, w)] for w in range(3)] == [1, 1, 1]
    assert answers[(2, 2)] == 1
    # over many draws, a worker answers each of its neighbour labels about half the time
    many = np.tile([[0, 3]], (4000, 1))
    sample, who, answer = synthetic_crowd_labels(data, many, rng)
    assert abs(answer[who == 0].mean() - 0.5) < 0.03


def test_synthetic_crowd_labels_in_a_sparse_crowd_give_every_sample_a_label():
    rng = np.random.default_rng(1)
    n_tasks, n_workers = 200, 40
    task = np.arange(n_tasks)  # one label per task, by a random worker
    data = CrowdData(task, rng.integers(0, n_workers, n_tasks), rng.integers(0, 3, n_tasks))
    neighbours = rng.integers(0, n_tasks, size=(500, 5))
    sample, worker, label = synthetic_crowd_labels(data, neighbours, rng)
    assert np.bincount(sample, minlength=500).min() >= 1
    # each label is one its worker gave on one of the sample's neighbours
    rows = zip(data.task, data.worker, data.label, strict=True)
    given_labels = {(int(t), int(w), int(lab)) for t, w, lab in rows}
    for s, w, lab in zip(sample[:200], worker[:200], label[:200], strict=True):
        assert any((int(t), int(w), int(lab)) in given_labels for t in neighbours[s])
    # about 1 label per sample on average (each neighbour has one label of 5 possible)
    assert 0.9 < len(sample) / 500 < 1.6


# ---------------------------------------------------------------------- the learner


def test_iced_raises_dawid_skene_minority_recall_over_the_real_labels_alone():
    recalls_ds, recalls_iced = [], []
    for seed in range(3):
        data, _, _ = imbalanced_crowd(seed)
        ds = DawidSkene().fit(data)
        tasks = np.arange(data.n_tasks)
        ds_accuracy, ds_recall = inference_scores(data.truth, ds.predict(), tasks)
        model = ICED(
            n_rounds=3,
            warmup_epochs=2,
            max_epochs=9,
            decoder_epochs=20,
            random_state=seed,
            device="cpu",
        ).fit(data, valid=None)
        # the "before" value is Dawid-Skene on the real labels alone
        assert model.ds_accuracy_before_ == pytest.approx(ds_accuracy)
        assert model.ds_minority_recall_before_ == pytest.approx(ds_recall)
        recalls_ds.append(ds_recall)
        recalls_iced.append(model.ds_minority_recall_final_)
        assert model.history_["n_synthetic"].iloc[-1] > 0
    assert np.mean(recalls_iced) > np.mean(recalls_ds) + 0.05, (recalls_ds, recalls_iced)
    assert sum(i > d for i, d in zip(recalls_iced, recalls_ds, strict=True)) >= 2


def test_outputs_history_and_synthetic_balance():
    data, X, y = imbalanced_crowd(0, n=200)
    model = fast(n_rounds=3, max_epochs=20).fit(data, valid=(X[:50], y[:50]))
    proba = model.predict_proba(X[:7])
    assert proba.shape == (7, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    assert model.predict(X[:7]).shape == (7,)
    history = model.history_
    assert history["round"].tolist() == [0, 1, 2, 3]  # stops after n_rounds
    assert list(history.columns) == [
        "round",
        "epoch",
        "n_synthetic",
        "ds_accuracy_real",
        "ds_minority_recall",
        "train_loss",
        "valid_acc",
    ]
    assert history["valid_acc"].between(0, 1).all()
    assert history.loc[0, "n_synthetic"] == 0
    assert history.loc[0, "ds_accuracy_real"] == model.ds_accuracy_before_
    assert history.loc[1, "ds_accuracy_real"] == model.ds_accuracy_first_
    assert history.loc[3, "ds_accuracy_real"] == model.ds_accuracy_final_
    # the synthetic samples fill the minority class up to the majority's inferred size
    counts = np.bincount(model.labels_, minlength=2)
    last = model.epoch_history_.iloc[-1]
    assert last["n_synthetic"] == len(model.synthetic_inputs_)
    assert model.synthetic_inputs_.shape[1:] == X.shape[1:]
    assert (model.synthetic_classes_ == 1).all()
    assert last["n_training_tasks"] == data.n_tasks + last["n_synthetic"]
    assert abs(last["n_synthetic"] + counts[1] - counts[0]) <= data.n_tasks // 10
    assert model.module_["decoder"] is not None


def test_warmup_strategies_train_on_the_certainty_groups():
    data, _, _ = imbalanced_crowd(1, n=200)
    counts = {}
    for warmup in ("iced", "trad-1", "trad-2"):
        model = fast(warmup=warmup, warmup_epochs=2, n_rounds=0, max_epochs=6).fit(
            data, valid=None
        )
        epochs = model.epoch_history_
        assert len(epochs) == 6 and (epochs["n_synthetic"] == 0).all()
        counts[warmup] = epochs["n_training_tasks"].tolist()
        groups = model.certainty_groups_
    size = [int(np.sum(groups == g)) for g in (HIGHEST, SECOND, THIRD)]
    assert counts["iced"] == [
        size[2],
        size[2],
        size[2] + size[1],
        size[2] + size[1],
        sum(size),
        sum(size),
    ]
    assert counts["trad-2"] == [sum(size)] * 6
    assert counts["trad-1"] == [data.n_tasks] * 6
    assert sum(size) < data.n_tasks  # the low-certainty group is left out


def test_three_classes_are_oversampled_to_the_largest():
    rng = np.random.default_rng(3)
    y = rng.choice(3, size=240, p=[0.7, 0.2, 0.1])
    X = (rng.normal(size=(240, 4)) + 2.0 * np.eye(3, 4)[y]).astype(np.float32)
    task = np.repeat(np.arange(240), 5)
    worker = np.tile(np.arange(5), 240)
    right = rng.random(len(task)) < 0.8
    label = np.where(right, y[task], (y[task] + rng.integers(1, 3, len(task))) % 3)
    data = CrowdData(task, worker, label, n_classes=3, features=X, truth=y)
    model = fast(n_rounds=1, max_epochs=4, random_state=2).fit(data, valid=None)
    assert set(np.unique(model.synthetic_classes_)) <= {0, 1, 2}
    assert model.predict_proba(X[:3]).shape == (3, 3)
    # the labels that chose the synthetic counts were Dawid-Skene's on the real labels
    before = DawidSkene(random_state=2).fit(data).predict()
    counts = np.bincount(before, minlength=3)
    expected = {c: counts.max() - counts[c] for c in range(3) if counts[c] < counts.max()}
    produced = np.bincount(model.synthetic_classes_, minlength=3)
    assert {c: produced[c] for c in expected} == expected


def test_same_seed_same_model_and_no_truth_gives_nan_scores():
    data, X, _ = imbalanced_crowd(2, n=150)
    first = fast().fit(data).predict_proba(X[:10])
    second = fast().fit(data).predict_proba(X[:10])
    np.testing.assert_array_equal(first, second)
    blind = fast().fit(data.with_truth(None))
    assert np.isnan(blind.ds_accuracy_before_) and np.isnan(blind.mv_accuracy_)
    assert blind.history_["ds_accuracy_real"].isna().all()


def test_save_and_load_round_trip(tmp_path):
    data, X, _ = imbalanced_crowd(4, n=150)
    model = fast().fit(data)
    path = tmp_path / "iced.pt"
    model.save(path)
    loaded = BaseLearner.load(path)
    assert isinstance(loaded, ICED) and loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    np.testing.assert_array_equal(loaded.labels_, model.labels_)
    assert loaded.ds_accuracy_final_ == model.ds_accuracy_final_
    assert loaded.history_.equals(without_timings(model.history_))
    assert loaded.epoch_history_.equals(without_timings(model.epoch_history_))


def test_resumed_run_ends_like_an_uninterrupted_one(tmp_path):
    data, X, _ = imbalanced_crowd(5, n=150)
    params = {"n_rounds": None, "checkpoint_dir": tmp_path}
    fast(max_epochs=5, **params).fit(data)
    resumed = fast(max_epochs=7, resume=True, **params).fit(data)
    straight = fast(max_epochs=7, n_rounds=None).fit(data)
    np.testing.assert_allclose(resumed.predict_proba(X), straight.predict_proba(X), atol=1e-6)
    assert resumed.ds_accuracy_final_ == straight.ds_accuracy_final_


def test_hard_em_uses_hard_counts_and_soft_keeps_the_posteriors():
    data, _, _ = imbalanced_crowd(3, n=200)
    hard = fast(hard_em=True, n_rounds=0, max_epochs=3).fit(data, valid=None)
    soft = fast(n_rounds=0, max_epochs=3).fit(data, valid=None)
    np.testing.assert_array_equal(hard.labels_, DawidSkene(hard=True).fit(data).predict())
    np.testing.assert_array_equal(soft.labels_, DawidSkene().fit(data).predict())
    # hard-count EM: one-hot posteriors; soft: graded ones
    assert set(np.unique(hard.label_probas_)) <= {0.0, 1.0}
    assert ((soft.label_probas_ > 0.01) & (soft.label_probas_ < 0.99)).any()
    # a given aggregator is made hard too
    given = fast(aggregator=paper_dawid_skene(hard=False), hard_em=True, n_rounds=0)
    given.fit(data, valid=None)
    np.testing.assert_array_equal(given.labels_, paper_dawid_skene().fit(data).predict())


def test_paper_dawid_skene_keeps_a_uniform_prior_and_counts_hard():
    data, _, _ = imbalanced_crowd(0)
    uniform = paper_dawid_skene().fit(data)
    np.testing.assert_allclose(uniform.priors_, 0.5, atol=1e-8)
    assert set(np.unique(uniform.predict_proba())) <= {0.0, 1.0}
    learned = paper_dawid_skene(uniform_prior=False).fit(data)
    assert learned.priors_[1] < 0.3  # a 10:1 crowd: the prior follows the counts
    params = uniform.get_params()
    assert params["smoothing"] == 0 and params["diagonal_prior"] == 0 and params["hard"]


def _synthetic_label_vectors(model, n_workers):
    synthetic = model._synthetic  # the last round's synthetic annotations
    vectors = np.full((len(synthetic["classes"]), n_workers), -1)
    vectors[synthetic["sample"], synthetic["worker"]] = synthetic["label"]
    return vectors


def test_synthesis_controls_duplicate_or_randomise_the_crowd_labels():
    data, _, _ = imbalanced_crowd(0, n=300)
    real = np.full((data.n_tasks, data.n_workers), -1)
    real[data.task, data.worker] = data.label
    duplicate = fast(synthetic_labels="duplicate").fit(data, valid=None)
    vectors = _synthetic_label_vectors(duplicate, data.n_workers)
    assert len(vectors) > 100
    # every synthetic sample carries the whole label vector of an inferred-minority task
    minority = {row.tobytes() for row in real[duplicate.labels_ == 1]}
    assert minority and all(row.tobytes() in minority for row in vectors)
    # one round: the kNN and random runs draw the same synthetic samples and labellers
    random = fast(synthetic_labels="random", n_rounds=1).fit(data, valid=None)._synthetic
    knn = fast(n_rounds=1).fit(data, valid=None)._synthetic
    np.testing.assert_array_equal(random["sample"], knn["sample"])
    np.testing.assert_array_equal(random["worker"], knn["worker"])
    assert len(knn["label"]) > 500
    # ... but the random labels are coin flips, independent of the neighbours' labels
    assert abs(random["label"].mean() - 0.5) < 0.06
    assert abs(np.mean(random["label"] == knn["label"]) - 0.5) < 0.06


def test_pretrained_decoder_is_trained_before_the_warmup_and_then_frozen():
    data, _, _ = imbalanced_crowd(1, n=150)

    def decoder_weights(**params):
        model = fast(**params).fit(data, valid=None)
        return torch.cat([p.detach().flatten() for p in model.module_["decoder"].parameters()])

    warmup_only = decoder_weights(decoder_pretrain=True, n_rounds=0, max_epochs=3)
    after_rounds = decoder_weights(decoder_pretrain=True, n_rounds=2)
    untrained = decoder_weights(n_rounds=0, max_epochs=3)
    refit = decoder_weights(n_rounds=2)
    torch.testing.assert_close(warmup_only, after_rounds)  # frozen during the rounds
    assert not torch.equal(warmup_only, untrained)  # pre-trained before the warm-up
    assert not torch.equal(refit, untrained)  # the default fits Q at the rounds


@pytest.mark.parametrize("warmup", ["iced", "trad-1", "trad-2"])
def test_equal_warmup_steps_for_every_strategy(warmup):
    data, _, _ = imbalanced_crowd(2, n=200)
    model = fast(warmup=warmup, warmup_epochs=2, warmup_steps=3, n_rounds=0, max_epochs=6)
    model.set_params(batch_size=16).fit(data, valid=None)
    # every warm-up epoch makes exactly 3 mini-batches of 16, whatever the stage's size
    assert model.epoch_history_["n_training_tasks"].tolist() == [48] * 6


def test_custom_aggregator_is_used():
    data, _, _ = imbalanced_crowd(6, n=150)
    model = fast(aggregator=MajorityVote(), n_rounds=1, max_epochs=4).fit(data)
    assert model.ds_accuracy_before_ == pytest.approx(model.mv_accuracy_)


@pytest.mark.parametrize(
    "params",
    [
        {"warmup": "curriculum"},
        {"interpolation": "midpoint"},
        {"k": 0},
        {"n_rounds": -1},
        {"epochs_per_round": 0},
        {"warmup_epochs": -1},
        {"oversample_to": 0.0},
        {"oversample_to": 1.5},
        {"eta": -0.1},
        {"certainty_eps": 0.0},
        {"decoder_hidden": (0,)},
        {"decoder_epochs": 1.5},
        {"aggregator": "ds"},
        {"warmup_epochs": 0, "n_rounds": 0},
        {"synthetic_labels": "copies"},
        {"warmup_steps": 0},
        {"hard_em": "yes"},
        {"decoder_pretrain": 1},
        {"hard_em": True, "aggregator": MajorityVote()},
    ],
)
def test_bad_parameters_raise(params):
    data, _, _ = imbalanced_crowd(0, n=60)
    with pytest.raises(ValueError):
        fast(**params).fit(data)


def test_bad_data_raise():
    data, _, _ = imbalanced_crowd(0, n=60)
    with pytest.raises(CrowdDataError, match="features"):
        fast().fit(data.with_features(None))
    with pytest.raises(CrowdDataError, match="worker"):
        fast().fit(data.anonymous())
    with pytest.raises(TypeError):
        fast().fit(data.features)
    with pytest.warns(UserWarning, match="max_epochs"):
        fast(n_rounds=5, max_epochs=4).fit(data)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_runs_on_cuda():
    data, X, _ = imbalanced_crowd(0, n=150)
    model = fast(device="cuda").fit(data)
    assert next(model.module_["classifier"].parameters()).is_cuda
    assert model.predict_proba(X[:5]).shape == (5, 2)
