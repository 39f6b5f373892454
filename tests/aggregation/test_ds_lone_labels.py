"""Dawid-Skene where the data cannot identify the estimate (issue 43 item 3).

A label on a task nobody else labelled only agrees with itself: with ``lone_labels``
"vote" (the default) it feeds no confusion count and enters the class prior as its
own class. The rule must give the same result in memory, chunked, by ``partial_fit``
and on Dask (tests/distributed/test_distributed.py has the Dask half).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlearn import CrowdData
from crowdlearn.aggregation import DawidSkene
from crowdlearn.simulate import independent_confusion

#: The prior confusion row of the defaults: smoothing 0.1 everywhere, 4 more on the
#: diagonal.
SMOOTHING, DIAGONAL = 0.1, 4.0


def prior_confusion(k: int) -> np.ndarray:
    counts = SMOOTHING + DIAGONAL * np.eye(k)
    return counts / counts.sum(axis=1, keepdims=True)


def no_overlap_crowd(seed: int, n_tasks: int = 150, per_worker: int = 5) -> CrowdData:
    """One label a task, worker w labelling tasks ``w * per_worker`` onwards (no task
    shared); classes of prior 0.7, 0.2, 0.1, every worker right 97 % of the time.
    The crowd of benchmarks/campaign/cold_start.py's control."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(3, size=n_tasks, p=[0.7, 0.2, 0.1])
    wrong = rng.random(n_tasks) >= 0.97
    labels = np.where(wrong, (truth + rng.integers(1, 3, size=n_tasks)) % 3, truth)
    tasks = np.arange(n_tasks)
    return CrowdData.from_arrays(tasks, tasks // per_worker, labels, truth=truth)


def sparse_crowd(seed: int = 5) -> CrowdData:
    """A simulated crowd thinned to 1-3 labels a task (half of the tasks lone), plus
    three workers whose every label is lone (workers 'solo0'..'solo2')."""
    full = independent_confusion(n_worker=25, n_task=600, n_classes=3, feedback=4, seed=seed)
    rng = np.random.default_rng(seed)
    keep_per_task = rng.choice([1, 1, 1, 2, 3], size=full.n_tasks)
    order = np.lexsort((rng.random(full.n_annotations), full.task))
    rank = np.empty(full.n_annotations, dtype=np.int64)
    starts = np.searchsorted(full.task[order], np.arange(full.n_tasks))
    rank[order] = np.arange(full.n_annotations) - np.repeat(
        starts, np.bincount(full.task, minlength=full.n_tasks)
    )
    keep = rank < keep_per_task[full.task]
    frame = pd.DataFrame(
        {
            "task": full.task_ids[full.task[keep]].astype(str),
            "worker": full.worker_ids[full.worker[keep]].astype(str),
            "label": full.classes[full.label[keep]],
        }
    )
    solo = pd.DataFrame(
        {
            "task": [f"solo-task{i}" for i in range(12)],
            "worker": [f"solo{i % 3}" for i in range(12)],
            "label": [full.classes[i % 3] for i in range(12)],
        }
    )
    return CrowdData.from_frame(pd.concat([frame, solo], ignore_index=True))


def identified_mass(data: CrowdData) -> tuple[float, float]:
    """Labels on tasks with two labels or more, and annotated tasks: the masses of a
    fit's confusion counts and class-prior counts under the "vote" rule."""
    n_labels = np.bincount(data.task, minlength=data.n_tasks)
    return float(n_labels[n_labels > 1].sum()), float((n_labels > 0).sum())


@pytest.mark.parametrize("seed", range(4))
def test_lone_labels_are_kept_on_a_crowd_sharing_no_task(seed):
    """The defect: the old rule relabels right lone labels to the frequent class (its
    rarest class prior collapses); the default keeps every lone label, the workers
    keep the prior's confusion and the class prior is the labels' frequencies."""
    data = no_overlap_crowd(seed)
    model = DawidSkene().fit(data)
    np.testing.assert_array_equal(model.labels_, data.label[np.argsort(data.task)])
    np.testing.assert_allclose(
        model.confusions_, np.broadcast_to(prior_confusion(3), model.confusions_.shape)
    )
    frequencies = np.bincount(data.label, minlength=3) / data.n_annotations
    np.testing.assert_allclose(model.priors_, frequencies)
    np.testing.assert_allclose(model.probas_.sum(axis=1), 1.0)
    old = DawidSkene(lone_labels="em").fit(data)
    assert np.any(old.labels_ != model.labels_)  # what the issue reported
    assert old.priors_.min() < model.priors_.min()


def test_a_worker_sharing_no_task_keeps_the_prior_confusion():
    data = sparse_crowd()
    model = DawidSkene().fit(data)
    solo = [list(data.worker_ids).index(f"solo{i}") for i in range(3)]
    np.testing.assert_allclose(model.confusions_[solo], np.stack([prior_confusion(3)] * 3))
    shared = np.setdiff1d(np.arange(data.n_workers), solo)
    assert not np.allclose(model.confusions_[shared[0]], prior_confusion(3))
    old = DawidSkene(lone_labels="em").fit(data)
    assert not np.allclose(old.confusions_[solo[0]], prior_confusion(3))


def test_fit_statistics_leave_lone_labels_out_of_the_confusion_counts():
    data = sparse_crowd()
    model = DawidSkene().fit(data)
    counts, totals = model._statistics
    labels, tasks = identified_mass(data)
    assert labels < data.n_annotations  # the crowd has lone labels
    assert counts.sum() == pytest.approx(labels)
    assert totals.sum() == pytest.approx(tasks)


def test_a_lone_label_with_a_gold_class_is_counted():
    data = no_overlap_crowd(0)
    gold = {data.task_ids[0]: data.classes[data.label[data.task == 0][0]]}
    model = DawidSkene().fit(data, gold=gold)
    counts, _ = model._statistics
    assert counts.sum() == pytest.approx(1.0)  # the gold task's label, no other
    worker = int(data.worker[data.task == 0][0])
    assert not np.allclose(model.confusions_[worker], prior_confusion(3))


@pytest.mark.parametrize("chunk_size", [1, 97, 10**9])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_chunked_fit_equals_one_block_on_a_sparse_crowd(chunk_size, dtype):
    data = sparse_crowd()
    reference = DawidSkene().fit(data)
    model = DawidSkene(chunk_size=chunk_size, dtype=dtype).fit(data)
    atol = 1e-8 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(model.probas_, reference.probas_, rtol=0, atol=atol)
    np.testing.assert_allclose(model.confusions_, reference.confusions_, rtol=0, atol=atol)


def test_partial_fit_follows_the_rule_on_a_sparse_crowd():
    """A first round of lone labels, then batches that give some of those tasks a
    second label (they join the confusion counts) and bring new lone tasks: the
    update's statistics have the masses a fit's would have (exact), and its labels
    stay close to a refit's. On this thin crowd incremental EM is further from a refit
    than on the dense crowds of test_incremental.py under either rule (measured here:
    labels equal on 96.9 % of tasks with "vote", 98.4 % with "em"; refresh=3: 98.0 %
    and 97.5 %), hence 0.95 here, not the docstring's 0.98."""
    data = sparse_crowd()
    frame = data.to_frame()[["task", "worker", "label"]]
    rng = np.random.default_rng(1)
    order = rng.permutation(len(frame))
    head, tail = order[: int(0.9 * len(order))], order[int(0.9 * len(order)) :]
    model = DawidSkene().fit(CrowdData.from_frame(frame.iloc[head]))
    for batch in np.array_split(tail, 3):
        model.partial_fit(frame.iloc[batch])
        seen = CrowdData.from_frame(frame.iloc[np.concatenate([head, batch])])
        head = np.concatenate([head, batch])
        counts, totals = model._statistics
        labels, tasks = identified_mass(seen)
        assert counts.sum() == pytest.approx(labels)
        assert totals.sum() == pytest.approx(tasks)
    refit = DawidSkene().fit(model.crowd_)
    assert list(model.task_ids_) == list(refit.task_ids_)
    assert np.mean(model.labels_ == refit.labels_) >= 0.95
    np.testing.assert_allclose(model.probas_.sum(axis=1), 1.0)


def test_lone_labels_option_is_checked():
    with pytest.raises(ValueError, match="lone_labels"):
        DawidSkene(lone_labels="drop").fit(no_overlap_crowd(0))
    assert DawidSkene().get_params()["lone_labels"] == "vote"
