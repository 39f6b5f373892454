"""The shared machinery: assigning distinct workers, drawing labels, confusion builders."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.simulate import _assign, _draw
from crowdlearn.simulate._assign import assign_workers, keep_random_quota
from crowdlearn.simulate._draw import draw_labels
from crowdlearn.simulate._matrices import (
    cyclic_derangements,
    dirichlet_rows,
    move_row_max_to_diagonal,
    spread_errors,
)


def check_assignment(task, worker, n_labels, n_workers, workerload=None):
    """Tasks in order, each with exactly its number of distinct workers, cap respected."""
    assert task.dtype == np.int32 and worker.dtype == np.int32
    assert np.all(np.diff(task) >= 0)
    np.testing.assert_array_equal(np.bincount(task, minlength=len(n_labels)), n_labels)
    assert worker.min(initial=0) >= 0 and worker.max(initial=0) < n_workers
    pairs = task.astype(np.int64) * n_workers + worker
    assert len(np.unique(pairs)) == len(pairs), "a task got the same worker twice"
    if workerload is not None:
        assert np.bincount(worker, minlength=n_workers).max(initial=0) <= workerload


@st.composite
def demands(draw):
    n_workers = draw(st.integers(1, 12))
    n_labels = draw(st.lists(st.integers(0, n_workers), min_size=1, max_size=60))
    return np.array(n_labels), n_workers


@settings(max_examples=60, deadline=None)
@given(demands(), st.integers(0, 2**32 - 1), st.booleans())
def test_every_task_gets_its_number_of_distinct_workers(demand, seed, weighted):
    n_labels, n_workers = demand
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.01, 5.0, n_workers) if weighted else None
    task, worker = assign_workers(n_labels, n_workers, rng, weights=weights)
    check_assignment(task, worker, n_labels, n_workers)


@settings(max_examples=60, deadline=None)
@given(demands(), st.integers(0, 2**32 - 1), st.integers(0, 3))
def test_workerload_is_respected_even_when_tight(demand, seed, slack):
    n_labels, n_workers = demand
    # From the tightest feasible cap (every worker full) up: all tasks fit in one chunk,
    # where a feasible demand is always met.
    workerload = max(1, -(-int(n_labels.sum()) // n_workers)) + slack
    rng = np.random.default_rng(seed)
    task, worker = assign_workers(n_labels, n_workers, rng, workerload=workerload)
    check_assignment(task, worker, n_labels, n_workers, workerload)


def test_workerload_is_respected_across_chunks(monkeypatch):
    monkeypatch.setattr(_assign, "CHUNK_KEYS", 7 * 5)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n_labels = rng.integers(0, 6, size=int(rng.integers(1, 80)))
        workerload = -(-3 * int(n_labels.sum()) // 10) + 1  # 50% slack on 5 workers
        task, worker = assign_workers(n_labels, 5, rng, workerload=workerload)
        check_assignment(task, worker, n_labels, 5, workerload)


def test_dense_demands_are_raced_in_chunks(monkeypatch):
    monkeypatch.setattr(_assign, "CHUNK_KEYS", 6 * 37)
    n_labels = np.random.default_rng(9).integers(4, 7, size=500)  # most of 6 workers
    task, worker = assign_workers(n_labels, 6, np.random.default_rng(10))
    check_assignment(task, worker, n_labels, 6)


def test_exactly_full_workers_on_a_larger_crowd():
    n_labels = np.full(3000, 9)
    task, worker = assign_workers(n_labels, 10, np.random.default_rng(0), workerload=2700)
    check_assignment(task, worker, n_labels, 10, 2700)
    np.testing.assert_array_equal(np.bincount(worker), np.full(10, 2700))


def test_impossible_demands_are_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="task 1 asks for 4 labels but there are only 3"):
        assign_workers(np.array([1, 4]), 3, rng)
    with pytest.raises(ValueError, match=r"workerload=2 can give at most 6"):
        assign_workers(np.full(4, 2), 3, rng, workerload=2)


def test_uniform_assignment_spreads_the_load_evenly():
    _, worker = assign_workers(np.full(20000, 3), 20, np.random.default_rng(1))
    load = np.bincount(worker, minlength=20)
    # Each load is Binomial-like around 3000 (sd ~ 53).
    assert np.abs(load - 3000).max() < 250


def test_weights_set_the_chance_of_being_drawn():
    weights = np.array([1.0, 2.0, 4.0, 8.0])
    _, worker = assign_workers(np.ones(40000, int), 4, np.random.default_rng(2), weights=weights)
    share = np.bincount(worker, minlength=4) / 40000
    np.testing.assert_allclose(share, weights / weights.sum(), atol=0.01)


def test_both_algorithms_sample_successively():
    """Two of four weighted workers: the exponential race (chosen here, as the heaviest
    worker holds over half the weight) and rejection draws give the exact inclusion
    probabilities of successive sampling."""
    weights = np.array([1.0, 2.0, 4.0, 8.0])
    total = weights.sum()
    second = (weights[:, None] / total) * (weights[None, :] / (total - weights[:, None]))
    np.fill_diagonal(second, 0.0)
    inclusion = weights / total + second.sum(axis=0)
    n_labels = np.full(40000, 2)
    _, raced = assign_workers(n_labels, 4, np.random.default_rng(8), weights=weights)
    _, rejected = _assign._successive_draws(n_labels, weights, np.random.default_rng(8))
    for worker in (raced, rejected):
        np.testing.assert_allclose(np.bincount(worker, minlength=4) / 40000, inclusion, atol=0.01)


def test_chunks_do_not_change_the_draw_of_labels(monkeypatch):
    rng = np.random.default_rng(3)
    confusions = dirichlet_rows(rng, 6, 4, 1.0)
    worker = rng.integers(6, size=5000)
    truth = rng.integers(4, size=5000)
    whole = draw_labels(confusions, worker, truth, np.random.default_rng(4))
    monkeypatch.setattr(_draw, "CHUNK_ENTRIES", 4 * 333)
    chunked = draw_labels(confusions, worker, truth, np.random.default_rng(4))
    np.testing.assert_array_equal(whole, chunked)


def test_labels_follow_the_confusion_rows():
    confusions = np.array([[[0.7, 0.3, 0.0], [0.0, 0.0, 1.0], [0.2, 0.2, 0.6]]])
    truth = np.repeat([0, 1, 2], 30000)
    labels = draw_labels(confusions, np.zeros(len(truth), int), truth, np.random.default_rng(5))
    counts = np.zeros((3, 3))
    np.add.at(counts, (truth, labels), 1)
    np.testing.assert_allclose(counts / 30000, confusions[0], atol=0.01)
    assert counts[0, 2] == 0 and counts[1, 0] == 0 and counts[1, 1] == 0


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(2, 7), st.floats(0.05, 3.0), st.integers(0, 2**32 - 1))
def test_row_maxima_move_to_the_diagonal(n_workers, n_classes, concentration, seed):
    rng = np.random.default_rng(seed)
    confusions = dirichlet_rows(rng, n_workers, n_classes, concentration)
    before = np.sort(confusions, axis=2)
    move_row_max_to_diagonal(confusions)
    np.testing.assert_array_equal(np.sort(confusions, axis=2), before)  # a permutation
    diagonal = np.diagonal(confusions, axis1=1, axis2=2)
    np.testing.assert_array_equal(diagonal, confusions.max(axis=2))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(2, 9), st.integers(0, 2**32 - 1))
def test_derangements_have_no_fixed_point(n_workers, n_classes, seed):
    target = cyclic_derangements(np.random.default_rng(seed), n_workers, n_classes)
    assert np.all(target != np.arange(n_classes))
    np.testing.assert_array_equal(
        np.sort(target, axis=1), np.tile(np.arange(n_classes), (n_workers, 1))
    )


def test_spread_errors_keeps_the_accuracy_on_the_diagonal():
    accuracy = np.array([0.9, 0.5, 0.0])
    confusions = spread_errors(np.random.default_rng(6), accuracy, 4, 1.0)
    np.testing.assert_allclose(confusions.sum(axis=2), 1.0)
    np.testing.assert_allclose(
        np.diagonal(confusions, axis1=1, axis2=2), np.repeat(accuracy, 4).reshape(3, 4)
    )


def test_random_quota_keeps_at_most_the_quota_per_value():
    values = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    keep = keep_random_quota(values, np.array([2, 5, 0]), np.random.default_rng(7))
    np.testing.assert_array_equal(np.bincount(values[keep], minlength=3), [2, 2, 0])
