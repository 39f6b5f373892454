"""Weighted votes: WeightedMajorityVote, Wawa, ZeroBasedSkill, IWMV, TwoThird, PlantNet."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from cases import degenerate_cases
from sklearn.base import clone

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.aggregation.dswc import DSWC
from crowdlearn.aggregation.iwmv import IWMV
from crowdlearn.aggregation.plantnet import BASE_WEIGHT, PlantNet
from crowdlearn.aggregation.two_third import TwoThird
from crowdlearn.aggregation.wawa import Wawa
from crowdlearn.aggregation.weighted_vote import (
    WeightedMajorityVote,
    vote_shares,
    weighted_scores,
    worker_accuracy,
)
from crowdlearn.aggregation.zero_based_skill import ZeroBasedSkill
from crowdlearn.simulate import discrete_difficulty, hammer_spammer, independent_confusion

# ---------------------------------------------------------------------- shared helpers


def small_crowd() -> CrowdData:
    """t1: ann yes, bob no, cat no; t2: ann no, cat yes; t3: bob yes."""
    return CrowdData.from_arrays(
        ["t1", "t1", "t1", "t2", "t2", "t3"],
        ["ann", "bob", "cat", "ann", "cat", "bob"],
        ["yes", "no", "no", "no", "yes", "yes"],
    )


def test_weighted_scores_and_accuracy_by_hand():
    data = small_crowd()  # classes ["no", "yes"], workers ann, bob, cat
    # weights ann 3, bob 1, cat 0.5: t1 no 1 + 0.5, yes 3; t2 no 3, yes 0.5; t3 yes 1
    scores = weighted_scores(data, np.array([3.0, 1.0, 0.5]))
    np.testing.assert_allclose(scores, [[1.5, 3.0], [3.0, 0.5], [0.0, 1.0]])
    # against labels (yes, no, yes): ann 2/2 right, bob 1/2 (t3), cat 0/2
    np.testing.assert_allclose(worker_accuracy(data, np.array([1, 0, 1])), [1.0, 0.5, 0.0])


def test_vote_shares_rule_for_non_positive_scores():
    scores = np.array([[2.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [-2.0, -1.0, -3.0]])
    # positive part normalised; otherwise uniform over the top-scoring classes
    expected = [[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3], [0.0, 1.0, 0.0]]
    np.testing.assert_allclose(vote_shares(scores), expected)


# ---------------------------------------------------------------------- WeightedMajorityVote


def test_weighted_majority_vote_by_hand():
    data = small_crowd()
    model = WeightedMajorityVote(weights={"ann": 3.0, "bob": 1.0, "cat": 0.5}).fit(data)
    # t1: no 1.5, yes 3 -> (1/3, 2/3); t2: no 3, yes 0.5 -> (6/7, 1/7); t3: yes 1 -> (0, 1)
    np.testing.assert_allclose(model.probas_, [[1 / 3, 2 / 3], [6 / 7, 1 / 7], [0.0, 1.0]])
    np.testing.assert_array_equal(model.labels_, [1, 0, 1])
    np.testing.assert_allclose(model.weights_, [3.0, 1.0, 0.5])


def test_weighted_majority_vote_accepts_series_arrays_and_defaults():
    data = small_crowd()
    expected = WeightedMajorityVote(weights={"ann": 3.0, "bob": 1.0, "cat": 0.5}).fit(data)
    series = pd.Series({"cat": 0.5, "ann": 3.0, "bob": 1.0, "zed": 9.0})  # zed: not in data
    for weights, default in [
        (series, None),
        (np.array([3.0, 1.0, 0.5]), None),
        ({"ann": 3.0, "bob": 1.0}, 0.5),
        (np.array([3.0, 1.0, np.nan]), 0.5),
    ]:
        model = WeightedMajorityVote(weights=weights, default_weight=default).fit(data)
        np.testing.assert_allclose(model.probas_, expected.probas_)


def test_weighted_majority_vote_negative_and_zero_weights():
    data = small_crowd()
    # ann -1, bob 1, cat 1: t1 yes -1, no 2 -> (1, 0); t2 no -1, yes 1 -> (0, 1); t3 (0, 1)
    model = WeightedMajorityVote(weights={"ann": -1, "bob": 1, "cat": 1}).fit(data)
    np.testing.assert_allclose(model.probas_, [[1, 0], [0, 1], [0, 1]])
    # ann -1, bob 0, cat -2: t1 yes -1 > no -2 -> (0, 1); t2 no -1 > yes -2 -> (1, 0);
    # t3 yes 0, no 0 -> tie -> (1/2, 1/2)
    model = WeightedMajorityVote(weights={"ann": -1, "bob": 0, "cat": -2}).fit(data)
    np.testing.assert_allclose(model.probas_, [[0, 1], [1, 0], [0.5, 0.5]])


def test_weighted_majority_vote_without_weights_is_naive_soft():
    data = small_crowd()
    np.testing.assert_allclose(
        WeightedMajorityVote().fit(data).probas_, [[2 / 3, 1 / 3], [0.5, 0.5], [0.0, 1.0]]
    )


def test_weighted_majority_vote_errors_name_the_missing_workers():
    data = small_crowd()
    with pytest.raises(CrowdDataError, match=r"no weight for workers.*cat"):
        WeightedMajorityVote(weights={"ann": 1.0, "bob": 1.0}).fit(data)
    with pytest.raises(CrowdDataError, match="shape"):
        WeightedMajorityVote(weights=[1.0, 2.0]).fit(data)
    with pytest.raises(CrowdDataError, match="finite"):
        WeightedMajorityVote(weights=[1.0, np.inf, 1.0]).fit(data)
    with pytest.raises(CrowdDataError, match="numbers"):
        WeightedMajorityVote(weights={"ann": "x", "bob": 1, "cat": 1}).fit(data)
    with pytest.raises(CrowdDataError, match="anonymous"):
        WeightedMajorityVote().fit(data.anonymous())


def test_unannotated_workers_need_no_weight():
    data = CrowdData.from_arrays([0, 1], ["a", "a"], [0, 1], worker_ids=["a", "idle"])
    model = WeightedMajorityVote(weights={"a": 2.0}).fit(data)
    np.testing.assert_allclose(model.weights_, [2.0, 0.0])


# ---------------------------------------------------------------------- Wawa


def test_wawa_by_hand():
    data = CrowdData.from_arrays(
        task=[0, 0, 0, 1, 1, 1, 2, 2],
        worker=["a", "b", "c", "a", "b", "c", "a", "c"],
        label=[0, 0, 1, 1, 1, 1, 0, 1],
    )
    model = Wawa(tie_break="lowest").fit(data)
    # majority vote (ties to class 0): task 0 -> 0, task 1 -> 1, task 2 (1-1) -> 0;
    # skills: a 3/3, b 2/2, c 1/3 (right on task 1 only);
    # task 0: class 0 weight 2, class 1 weight 1/3 -> (6/7, 1/7); task 2: a 1 vs c 1/3
    np.testing.assert_allclose(model.skills_, [1.0, 1.0, 1 / 3])
    np.testing.assert_allclose(model.probas_, [[6 / 7, 1 / 7], [0.0, 1.0], [0.75, 0.25]])
    weighted = WeightedMajorityVote(weights=model.skills_).fit(data)
    np.testing.assert_allclose(weighted.probas_, model.probas_)


def crowdkit_probas(theirs, frame: pd.DataFrame, data: CrowdData) -> tuple[np.ndarray, ...]:
    """crowd-kit's fitted skills applied as its ``predict_proba`` does (its own
    ``predict_proba`` trips on scikit-learn's newer ``check_is_fitted``)."""
    from crowdkit.aggregation import MajorityVote as CrowdKitMV

    vote = CrowdKitMV().fit(frame, skills=theirs.skills_)
    probas = vote.probas_.reindex(index=data.task_ids, columns=data.classes).fillna(0.0)
    labels = vote.labels_.reindex(data.task_ids).to_numpy()
    return probas.to_numpy(), labels, theirs.skills_.reindex(data.worker_ids).to_numpy()


def test_wawa_agrees_with_crowdkit():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    # Binary crowds with an odd number of labels per task: the first, unweighted vote
    # has no ties (crowd-kit breaks those by pandas' label order, we by the lowest code).
    for data in [
        independent_confusion(n_worker=30, n_task=600, n_classes=2, feedback=5, seed=1),
        hammer_spammer(n_worker=20, n_task=600, n_classes=2, ratio=0.4, feedback=3, seed=2),
        discrete_difficulty(n_worker=50, n_task=600, n_classes=2, feedback=7, seed=3),
    ]:
        frame = data.to_frame()
        ours = Wawa(tie_break="lowest").fit(data)
        probas, labels, skills = crowdkit_probas(crowdkit.Wawa().fit(frame), frame, data)
        assert np.mean(ours.labels_ == labels) >= 0.99
        np.testing.assert_allclose(ours.probas_, probas, atol=1e-12)
        np.testing.assert_allclose(ours.skills_, skills, atol=1e-12)


# ---------------------------------------------------------------------- ZeroBasedSkill


def test_zbs_learning_rate_schedule_and_first_step():
    data = independent_confusion(n_worker=15, n_task=150, n_classes=3, feedback=5, seed=4)
    model = ZeroBasedSkill().fit(data)
    # crowd-kit halves the rate at steps 20, 40, ...: 1 for steps 1-19, 1/2 for 20-39, ...
    expected = [1.0] * 19 + [0.5] * 20 + [0.25] * 20 + [0.125] * 20 + [0.0625] * 20 + [1 / 32]
    np.testing.assert_allclose(model.history_["learning_rate"], expected)
    assert model.n_iter_ == 100 and len(model.history_) == 100
    # with rate 1 the first step sets each skill to its accuracy against the first vote,
    # which (equal skills) is the majority vote: Wawa's skills
    first = ZeroBasedSkill(max_iter=1).fit(data)
    np.testing.assert_allclose(first.skills_, Wawa().fit(data).skills_)


def test_zbs_agrees_with_crowdkit():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    for data in [
        independent_confusion(n_worker=30, n_task=300, n_classes=5, feedback=5, seed=1),
        hammer_spammer(n_worker=20, n_task=300, n_classes=3, ratio=0.4, feedback=3, seed=2),
    ]:
        frame = data.to_frame()
        ours = ZeroBasedSkill(tie_break="lowest").fit(data)
        probas, labels, skills = crowdkit_probas(crowdkit.ZeroBasedSkill().fit(frame), frame, data)
        assert np.mean(ours.labels_ == labels) >= 0.99
        np.testing.assert_allclose(ours.probas_, probas, atol=1e-9)
        np.testing.assert_allclose(ours.skills_, skills, atol=1e-9)


# ---------------------------------------------------------------------- IWMV


def test_iwmv_with_one_round_is_wawa():
    # peerannot: IWMV with nb_iter=1 is WAWA
    data = independent_confusion(n_worker=20, n_task=200, n_classes=4, feedback=4, seed=5)
    one_round = IWMV(max_iter=1, tie_break="lowest").fit(data)
    wawa = Wawa(tie_break="lowest").fit(data)
    np.testing.assert_allclose(one_round.probas_, wawa.probas_)
    np.testing.assert_allclose(one_round.weights_, wawa.skills_)


def test_iwmv_converges_to_a_fixed_point():
    data = independent_confusion(n_worker=20, n_task=300, n_classes=4, feedback=4, seed=6)
    for weighting in ("accuracy", "li_yu"):
        model = IWMV(max_iter=50, weighting=weighting).fit(data)
        assert model.converged_ and model.n_iter_ < 50
        # the final labels are the weighted vote of weights measured against themselves
        skills = worker_accuracy(data, model.labels_)
        np.testing.assert_allclose(model.skills_, skills)
        weights = 4 * skills - 1 if weighting == "li_yu" else skills
        np.testing.assert_allclose(model.weights_, weights)
        np.testing.assert_allclose(model.probas_, vote_shares(weighted_scores(data, weights)))


def test_iwmv_li_yu_votes_against_an_adversary():
    # h1 and h2 always give the truth of tasks 0-3 (0, 1, 0, 1), adv always the opposite;
    # task 4 has only adv's vote, 0. MV = truth on 0-3 and 0 on task 4, so adv's accuracy
    # is 1/5: weight 0.2 (accuracy) keeps task 4 at 0; 2 * 0.2 - 1 = -0.6 (Li & Yu) turns
    # it to 1, after which adv's accuracy is 0 (weight -1) and nothing changes.
    truth = [0, 1, 0, 1]
    tasks = [0, 1, 2, 3] * 3 + [4]
    workers = ["h1"] * 4 + ["h2"] * 4 + ["adv"] * 4 + ["adv"]
    labels = truth + truth + [1 - t for t in truth] + [0]
    data = CrowdData.from_arrays(tasks, workers, labels)
    by_accuracy = IWMV(tie_break="lowest").fit(data)
    np.testing.assert_array_equal(by_accuracy.labels_, [0, 1, 0, 1, 0])
    li_yu = IWMV(weighting="li_yu", tie_break="lowest").fit(data)
    np.testing.assert_array_equal(li_yu.labels_, [0, 1, 0, 1, 1])
    np.testing.assert_allclose(li_yu.weights_, [-1.0, 1.0, 1.0])  # adv, h1, h2
    np.testing.assert_allclose(li_yu.probas_[4], [0.0, 1.0])
    assert li_yu.n_iter_ == 2 and li_yu.converged_


def test_iwmv_rejects_bad_parameters():
    data = small_crowd()
    with pytest.raises(ValueError, match="weighting"):
        IWMV(weighting="log_odds").fit(data)
    with pytest.raises(ValueError, match="max_iter"):
        IWMV(max_iter=-1).fit(data)


# ---------------------------------------------------------------------- TwoThird


def test_two_third_by_hand():
    votes = {0: [1, 1], 1: [0, 0, 1], 2: [0, 0, 0, 1, 1], 3: [2, 2, 2, 2, 0, 1], 4: [1]}
    tasks = [t for t, labels in votes.items() for _ in labels]
    workers = [w for labels in votes.values() for w in range(len(labels))]
    labels = [label for labels in votes.values() for label in labels]
    data = CrowdData.from_arrays(tasks, workers, labels)
    model = TwoThird(tie_break="lowest").fit(data)
    # 2/2, 2/3 and 4/6 reach two thirds; 3/5 does not; a single vote never does
    np.testing.assert_array_equal(model.consensus_, [True, True, False, True, False])
    np.testing.assert_allclose(
        model.probas_,
        [[0, 1, 0], [1, 0, 0], [0.6, 0.4, 0], [0, 0, 1], [0, 1, 0]],
    )
    np.testing.assert_array_equal(model.labels_, [1, 0, 0, 2, 1])
    anonymous = TwoThird(tie_break="lowest").fit(data.anonymous())
    np.testing.assert_array_equal(anonymous.consensus_, model.consensus_)


# ---------------------------------------------------------------------- PlantNet


def plantnet_crowd() -> CrowdData:
    """e, a and b label tasks 0-3 with classes 0-3; task 4: e says 1, c says 0."""
    tasks = [0, 1, 2, 3] * 3 + [4, 4]
    workers = ["e"] * 4 + ["a"] * 4 + ["b"] * 4 + ["e", "c"]
    labels = [0, 1, 2, 3] * 3 + [1, 0]
    return CrowdData.from_arrays(tasks, workers, labels)


def test_plantnet_by_hand():
    data = plantnet_crowd()  # workers a, b, c, e
    model = PlantNet(taxa_votes_weight=1.0, tie_break="lowest").fit(data)
    # Start: every weight log(2.1) = 0.742. Tasks 0-3 have 3 agreeing votes: confidence
    # 2.23 > 2, accuracy 1 > 0.7: validated. Task 4 is a 1-1 tie (class 0), weight
    # 0.742 < 2: not validated. e, a, b identified 4 classes, c none, so
    # w = 4^0.5 - 4^0.2 + log(2.1) = 1.422 for a, b, e and log(2.1) for c. Second vote:
    # task 4 goes to e's class 1 (1.422 against 0.742), still not validated; the counts
    # are unchanged, so the fit stops after 2 iterations.
    strong = 2.0 - 4.0**0.2 + np.log(2.1)
    np.testing.assert_allclose(model.weights_, [strong, strong, np.log(2.1), strong])
    np.testing.assert_array_equal(model.valid_, [True, True, True, True, False])
    np.testing.assert_array_equal(model.labels_, [0, 1, 2, 3, 1])
    total = strong + np.log(2.1)
    np.testing.assert_allclose(model.probas_[4], [np.log(2.1) / total, strong / total, 0, 0])
    assert model.n_iter_ == 2 and model.converged_
    # peerannot's default weight 0.1 rounds 0.4 identified classes to 0: a plain vote
    default = PlantNet(tie_break="lowest").fit(data)
    np.testing.assert_allclose(default.weights_, BASE_WEIGHT)
    np.testing.assert_array_equal(default.labels_, [0, 1, 2, 3, 0])


def test_plantnet_thresholds_are_strict():
    # 7 votes of 10 for class 0: accuracy exactly 0.7 (0.7000000000000001 in floating
    # point) is not above theta_acc = 0.7; 8 of 10 is
    data = CrowdData.from_arrays(
        [0] * 10 + [1] * 10, list(range(10)) * 2, [0] * 7 + [1] * 3 + [0] * 8 + [1] * 2
    )
    np.testing.assert_array_equal(PlantNet().fit(data).valid_, [False, True])


def test_plantnet_rejects_bad_parameters():
    for params in ({"alpha": np.nan}, {"taxa_votes_weight": -1.0}, {"max_iter": -1}):
        with pytest.raises(ValueError):
            PlantNet(**params).fit(small_crowd())


# ---------------------------------------------------------------------- every method


def every_method(tie_break: str = "random") -> list:
    return [
        WeightedMajorityVote(default_weight=1.0, tie_break=tie_break),
        Wawa(tie_break=tie_break),
        ZeroBasedSkill(max_iter=30, tie_break=tie_break),
        IWMV(tie_break=tie_break),
        IWMV(weighting="li_yu", tie_break=tie_break),
        TwoThird(tie_break=tie_break),
        PlantNet(tie_break=tie_break),
        PlantNet(taxa_votes_weight=1.0, tie_break=tie_break),
        DSWC(n_clusters=1, tie_break=tie_break),
        DSWC(n_clusters=2, tie_break=tie_break),
    ]


def check_output(model, data: CrowdData) -> None:
    probas = model.predict_proba()
    assert probas.shape == (data.n_tasks, data.n_classes)
    assert np.all(np.isfinite(probas)) and np.all(probas >= 0)
    np.testing.assert_allclose(probas.sum(axis=1), 1.0)
    labels = model.predict()
    assert np.all((labels >= 0) & (labels < data.n_classes))
    np.testing.assert_allclose(probas[np.arange(data.n_tasks), labels], probas.max(axis=1))
    for name in model.worker_attributes:
        values = getattr(model, name)
        assert len(values) == data.n_workers and np.all(np.isfinite(values))


@pytest.mark.parametrize("case", list(degenerate_cases()))
def test_degenerate_data_never_gives_nan_or_a_crash(case):
    data = degenerate_cases()[case]
    for model in every_method():
        if isinstance(model, DSWC) and model.n_clusters > data.n_workers:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no NaN arithmetic, no convergence warning
            model.fit(data)
        check_output(model, data)


def test_probabilities_on_a_simulated_crowd():
    data = independent_confusion(n_worker=20, n_task=200, n_classes=4, feedback=3, seed=8)
    for model in every_method():
        check_output(model.fit(data), data)
        assert np.mean(model.labels_ == data.truth) > 0.5


def test_renaming_tasks_and_workers_changes_nothing():
    data = independent_confusion(n_worker=12, n_task=150, n_classes=3, feedback=4, seed=9)
    task_names = np.array([f"task-{(7 * t) % data.n_tasks:03d}" for t in range(data.n_tasks)])
    worker_names = np.array([f"annotator-{11 - w:02d}" for w in range(data.n_workers)])
    renamed = CrowdData.from_arrays(
        task_names[data.task], worker_names[data.worker], data.classes[data.label]
    )
    rows = pd.Index(renamed.task_ids).get_indexer(task_names)
    for model in every_method(tie_break="lowest"):
        original = clone(model).fit(data)
        other = clone(model).fit(renamed)
        np.testing.assert_allclose(other.probas_[rows], original.probas_, atol=1e-6)
        np.testing.assert_array_equal(other.labels_[rows], original.labels_)


def test_estimator_contract():
    for model in every_method():
        params = model.get_params()
        assert clone(model).get_params() == params
        assert not [name for name in vars(model) if name.endswith("_")]  # no work in __init__
