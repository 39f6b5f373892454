"""Leave-one-task-out posteriors (crowdlearn.campaign.values.cavity_posteriors) and
their use by rank_tasks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData
from crowdlearn.aggregation import DawidSkene, OneCoinDawidSkene
from crowdlearn.campaign import next_label_value, next_worker_confusion, rank_tasks
from crowdlearn.campaign.values import cavity_posteriors
from crowdlearn.data import CrowdDataError


def _random_labels(seed: int, n: int, w: int, k: int, a: int):
    rng = np.random.default_rng(seed)
    probas = rng.dirichlet(np.ones(k), size=n)
    return probas, rng.integers(0, n, a), rng.integers(0, w, a), rng.integers(0, k, a)


def _by_loops(probas, task, worker, label, n_workers, smoothing, one_coin):
    """The definition, one task at a time: refit the worker model on the other tasks'
    posteriors (one M-step), then one E-step on the task's own labels."""
    n, k = probas.shape
    out = np.empty_like(probas)
    crowd_right = sum(probas[t, lab] for t, lab in zip(task, label, strict=True)) / len(task)
    crowd = np.full((k, k), (1 - crowd_right) / (k - 1))
    np.fill_diagonal(crowd, crowd_right)
    for i in range(n):
        prior = (probas.sum(axis=0) - probas[i] + 1) / (n - 1 + k)
        log_post = np.log(prior)
        for a in np.flatnonzero(task == i):
            j, lab = worker[a], label[a]
            others = [b for b in np.flatnonzero(worker == j) if b != a]
            if one_coin:
                right = sum(probas[task[b], label[b]] for b in others)
                skill = (right + smoothing * crowd_right) / (len(others) + smoothing)
                like = np.full(k, (1 - skill) / (k - 1))
                like[lab] = skill
            else:
                counts = np.zeros((k, k))
                for b in others:
                    counts[:, label[b]] += probas[task[b]]
                # the task's own other labels by j are "others" too (duplicates)
                like = (counts[:, lab] + smoothing * crowd[:, lab]) / (
                    counts.sum(axis=1) + smoothing
                )
            log_post = log_post + np.log(like)
        post = np.exp(log_post - log_post.max())
        out[i] = post / post.sum()
    return out


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 8),
    st.integers(1, 5),
    st.integers(2, 4),
    st.integers(1, 30),
    st.sampled_from([0.5, 1.0, 3.0]),
    st.booleans(),
)
def test_matches_the_definition_task_by_task(seed, n, w, k, a, smoothing, one_coin):
    probas, task, worker, label = _random_labels(seed, n, w, k, a)
    fast = cavity_posteriors(probas, task, worker, label, w, smoothing, one_coin)
    slow = _by_loops(probas, task, worker, label, w, smoothing, one_coin)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fast.sum(axis=1), 1.0)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_renaming_workers_and_classes_changes_nothing(seed, one_coin):
    n, w, k = 12, 5, 3
    probas, task, worker, label = _random_labels(seed, n, w, k, 40)
    rng = np.random.default_rng(seed + 1)
    workers, classes = rng.permutation(w), rng.permutation(k)
    base = cavity_posteriors(probas, task, worker, label, w, one_coin=one_coin)
    renamed = cavity_posteriors(
        probas[:, np.argsort(classes)], task, workers[worker], classes[label], w,
        one_coin=one_coin,
    )  # fmt: skip
    np.testing.assert_allclose(renamed[:, classes], base, atol=1e-12)


def test_lone_labels_no_longer_vouch_for_their_worker():
    # w1 and w2 agree on twelve tasks; w3 answers "b" on three tasks nobody else did
    rows = [(f"t{i}", w, "ab"[i % 3 == 0]) for i in range(12) for w in ("w1", "w2")]
    rows += [(f"u{i}", "w3", "b") for i in range(3)]
    crowd = CrowdData.from_frame(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    # the plain rule, where a lone label counts for its worker (the default,
    # lone_labels="vote", no longer counts it: issue 43)
    model = DawidSkene(lone_labels="em", progress=False).fit(crowd)
    cavity = cavity_posteriors(
        model.probas_, crowd.task, crowd.worker, crowd.label, crowd.n_workers
    )
    lone = np.isin(crowd.task_ids, ["u0", "u1", "u2"])
    # in sample, each of w3's labels is also evidence that w3 is reliable
    assert (cavity[lone].max(axis=1) < model.probas_[lone].max(axis=1) - 0.05).all()
    assert cavity[~lone].max(axis=1).min() > 0.99  # the checked tasks stay sure
    np.testing.assert_array_equal(cavity.argmax(axis=1), model.probas_.argmax(axis=1))


def test_tasks_without_labels_get_the_prior():
    probas = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    cavity = cavity_posteriors(probas, np.array([0, 1]), np.array([0, 0]), np.array([0, 1]), 1)
    np.testing.assert_allclose(cavity[2], (probas.sum(axis=0) - probas[2] + 1) / 4)
    empty = cavity_posteriors(probas, np.array([], int), np.array([], int), np.array([], int), 1)
    np.testing.assert_allclose(empty.sum(axis=1), 1.0)


def test_smoothing_must_be_positive():
    with pytest.raises(CrowdDataError, match="smoothing"):
        cavity_posteriors(np.full((1, 2), 0.5), np.array([0]), np.array([0]), np.array([0]), 1, 0)


def _crowd():
    from crowdlearn.simulate import hammer_spammer

    return hammer_spammer(n_worker=12, n_task=120, n_classes=3, ratio=0.4, feedback=2, seed=4)


@pytest.mark.parametrize(
    ("model_type", "one_coin"), [(DawidSkene, False), (OneCoinDawidSkene, True)]
)
def test_rank_tasks_scores_on_the_cavity_posteriors(model_type, one_coin):
    crowd = _crowd()
    model = model_type(progress=False).fit(crowd)
    confusion = next_worker_confusion(model, crowd)
    cavity = cavity_posteriors(
        model.probas_, crowd.task, crowd.worker, crowd.label, crowd.n_workers,
        one_coin=one_coin,
    )  # fmt: skip
    for leave_one_out, scored in ((True, cavity), (False, model.probas_)):
        table = rank_tasks(crowd, model, leave_one_out=leave_one_out)
        table = table.set_index("task").loc[crowd.task_ids]
        np.testing.assert_allclose(table["score"], next_label_value(scored, confusion, "decision"))
        np.testing.assert_allclose(table["confidence"], model.probas_.max(axis=1))


def test_models_without_worker_counts_rank_as_before():
    crowd = _crowd()
    with_cavity = rank_tasks(crowd, "glad", leave_one_out=True)
    without = rank_tasks(crowd, "glad", leave_one_out=False)
    pd.testing.assert_frame_equal(with_cavity, without)
