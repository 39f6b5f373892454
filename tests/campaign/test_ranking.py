"""rank_tasks / next_labels: priorities, done tasks, routing, classifier mixing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData
from crowdlearn.aggregation import DawidSkene
from crowdlearn.campaign import learner_weights, next_labels, rank_tasks
from crowdlearn.data import CrowdDataError
from crowdlearn.simulate import hammer_spammer, independent_confusion


def _crowd(rows):
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    return CrowdData.from_frame(frame)


@pytest.fixture(scope="module")
def crowd():
    return hammer_spammer(n_worker=12, n_task=120, n_classes=3, ratio=0.4, feedback=3, seed=4)


def test_every_task_once_open_first_then_by_score(crowd):
    table = rank_tasks(crowd, target_confidence=0.9)
    assert sorted(table["task"]) == sorted(crowd.task_ids)
    done = table["done"].to_numpy()
    assert not (done[:-1] & ~done[1:]).any()  # no open task after a done one
    open_scores = table.loc[~table["done"], "score"].to_numpy()
    assert (np.diff(open_scores) <= 1e-15).all()
    assert (table.loc[table["done"], "score"] == 0).all()
    assert (table.loc[table["done"], "confidence"] >= 0.9).all()
    assert (table.loc[table["done"], "n_labels"] >= 2).all()


def test_labels_and_confidence_are_the_models(crowd):
    model = DawidSkene(progress=False).fit(crowd)
    table = rank_tasks(crowd, model).set_index("task").loc[crowd.task_ids]
    np.testing.assert_allclose(table["confidence"], model.probas_.max(axis=1))
    np.testing.assert_array_equal(table["label"], crowd.classes[model.probas_.argmax(axis=1)])
    np.testing.assert_array_equal(table["n_labels"], np.bincount(crowd.task))


def test_a_disputed_task_comes_before_an_agreed_one():
    rows = [("agreed", w, "a") for w in ("w1", "w2", "w3")]
    rows += [("disputed", "w1", "a"), ("disputed", "w2", "b"), ("disputed", "w3", "a")]
    rows += [(f"t{i}", w, "ab"[i % 2]) for i in range(20) for w in ("w1", "w2", "w3")]
    table = rank_tasks(_crowd(rows))
    position = {task: i for i, task in enumerate(table["task"])}
    assert position["disputed"] < position["agreed"]


def test_min_labels_keeps_lone_labels_open():
    rows = [(f"t{i}", f"w{i % 4}", "ab"[i % 2]) for i in range(40)]
    crowd = _crowd(rows)
    assert not rank_tasks(crowd, target_confidence=0.5)["done"].any()
    assert rank_tasks(crowd, target_confidence=0.5, min_labels=1)["done"].all()


def test_next_labels_takes_the_budget_from_the_top(crowd):
    table = rank_tasks(crowd, target_confidence=0.95)
    chosen = next_labels(crowd, 7, target_confidence=0.95)
    assert chosen["task"].tolist() == table["task"].head(7).tolist()
    assert len(next_labels(crowd, 10_000)) == crowd.n_tasks


@pytest.mark.parametrize("budget", [0, -3, 2.5, True])
def test_a_budget_that_is_not_a_positive_count_is_refused(crowd, budget):
    with pytest.raises(CrowdDataError, match="budget"):
        next_labels(crowd, budget)


@pytest.mark.parametrize("strategy", ["onecoin-ds", "glad", "naivesoft", "wawa"])
def test_other_crowd_models_rank_every_task(crowd, strategy):
    table = rank_tasks(crowd, strategy, score="accuracy")
    assert len(table) == crowd.n_tasks
    assert (table["score"] >= 0).all()


def test_hard_label_strategies_are_refused_with_the_alternatives(crowd):
    with pytest.raises(CrowdDataError, match=r"hard labels.*naivesoft"):
        rank_tasks(crowd, "mv")


def test_routing_suggests_good_workers_who_did_not_answer():
    data = hammer_spammer(n_worker=10, n_task=200, n_classes=2, ratio=0.3, feedback=4, seed=1)
    table = rank_tasks(data, route=3, stopped_workers=[data.worker_ids[0]])
    answered = pd.DataFrame(
        {"task": data.task_ids[data.task], "worker": data.worker_ids[data.worker]}
    )
    answered = answered.groupby("task")["worker"].apply(set)
    spammers = set(data.worker_ids[7:].tolist())  # hammer_spammer: hammers first
    for task, workers in zip(table["task"], table["workers"], strict=True):
        picks = [type(data.worker_ids[0])(w) for w in workers.split(";") if w]
        assert len(picks) == min(3, data.n_workers - 1 - len(answered[task]))
        assert not set(picks) & answered[task]
        assert data.worker_ids[0] not in picks
        assert not set(picks[:1]) & spammers  # the first suggestion is a hammer


def test_done_tasks_get_no_route(crowd):
    table = rank_tasks(crowd, target_confidence=0.8, route=2)
    assert (table.loc[table["done"], "workers"] == "").all()


def test_a_classifier_counts_most_where_labels_are_few():
    data = independent_confusion(n_worker=8, n_task=150, n_classes=2, feedback=2, seed=3)
    truth = np.asarray(data.truth)
    good = np.eye(2)[truth] * 0.9 + 0.05
    model_weight, annotator_weight = learner_weights(
        DawidSkene(progress=False).fit(data).probas_, good, data
    )
    assert model_weight > 0 and annotator_weight > 0
    plain = rank_tasks(data).set_index("task").loc[data.task_ids]
    mixed = rank_tasks(data, learner_probas=good).set_index("task").loc[data.task_ids]
    right = lambda t: (t["label"].to_numpy() == data.classes[truth]).mean()  # noqa: E731
    assert right(mixed) >= right(plain)
    useless = np.full((data.n_tasks, 2), 0.5)
    assert learner_weights(DawidSkene(progress=False).fit(data).probas_, useless, data)[0] == 0


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000))
def test_renaming_tasks_and_workers_does_not_change_the_ranking(seed):
    data = independent_confusion(n_worker=6, n_task=30, n_classes=3, feedback=3, seed=seed % 50)
    renamed = CrowdData.from_arrays(
        [f"t{999 - t:04d}" for t in data.task], [f"w{99 - w:03d}" for w in data.worker], data.label
    )
    a = rank_tasks(data, score="accuracy").set_index("task")
    b = rank_tasks(renamed, score="accuracy")
    b["task"] = b["task"].map(lambda t: 999 - int(t[1:]))
    b = b.set_index("task").loc[a.index]
    np.testing.assert_allclose(b["score"], a["score"], atol=1e-8)
    np.testing.assert_allclose(b["confidence"], a["confidence"], atol=1e-8)


def test_route_first_routes_only_the_top_open_tasks(crowd):
    full = rank_tasks(crowd, route=2)
    top = rank_tasks(crowd, route=2, route_first=5)
    assert top["workers"].head(5).tolist() == full["workers"].head(5).tolist()
    assert (top["workers"].iloc[5:] == "").all()
    chosen = next_labels(crowd, 5, route=2)
    assert chosen["workers"].tolist() == full["workers"].head(5).tolist()
