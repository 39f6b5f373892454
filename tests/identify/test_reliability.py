"""Worker reliability scores on hand cases and on simulated workers."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn import CrowdData
from crowdlearn.aggregation import DawidSkene
from crowdlearn.identify import (
    agreement_with_labels,
    compute,
    confusion_trace,
    glad_ability,
    gold_accuracy,
    spammer_score,
    spammer_scores_of,
)
from crowdlearn.simulate import hammer_spammer

K = 4


def _crowd_with(behaviours: list[str], n_tasks: int = 300, seed: int = 0) -> CrowdData:
    """Every worker labels every task: 'perfect', 'constant' (always class 0), 'random',
    or 'good' (right with probability 0.7, else uniform)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(K, size=n_tasks)
    task, worker, label = [], [], []
    for j, behaviour in enumerate(behaviours):
        if behaviour == "perfect":
            given = truth
        elif behaviour == "constant":
            given = np.zeros(n_tasks, dtype=int)
        elif behaviour == "random":
            given = rng.integers(K, size=n_tasks)
        else:
            given = np.where(rng.random(n_tasks) < 0.7, truth, rng.integers(K, size=n_tasks))
        task.append(np.arange(n_tasks))
        worker.append(np.full(n_tasks, j))
        label.append(given)
    return CrowdData.from_arrays(
        np.concatenate(task),
        np.concatenate(worker),
        np.concatenate(label),
        classes=np.arange(K),
        truth=truth,
    )


def test_perfect_worker_has_trace_k_and_the_highest_spammer_score():
    perfect = np.eye(K)
    others = [
        np.full((K, K), 1 / K),
        0.7 * np.eye(K) + 0.3 / K,
        np.tile(np.eye(K)[0], (K, 1)),
        np.random.default_rng(0).dirichlet(np.ones(K), size=K),
    ]
    matrices = np.stack([perfect, *others])
    data = CrowdData.from_arrays(
        np.arange(5), np.arange(5), np.zeros(5, dtype=int), classes=np.arange(K)
    )
    assert confusion_trace(data, matrices)[0] == K
    scores = spammer_score(data, matrices)
    assert scores[0] == pytest.approx(1.0)
    assert scores[0] > scores[1:].max()


def test_constant_and_uniform_workers_score_zero():
    constant = np.tile(np.eye(K)[2], (K, 1))
    uniform = np.full((K, K), 1 / K)
    skewed = np.tile([0.1, 0.6, 0.2, 0.1], (K, 1))
    np.testing.assert_allclose(spammer_scores_of(np.stack([constant, uniform, skewed])), 0.0)


def test_spammer_score_is_the_pairwise_row_distance_formula():
    matrices = np.random.default_rng(1).dirichlet(np.ones(K), size=(6, K))
    pairwise = [
        sum(np.sum((m[c] - m[d]) ** 2) for c in range(K) for d in range(c + 1, K)) / (K * (K - 1))
        for m in matrices
    ]
    np.testing.assert_allclose(spammer_scores_of(matrices), pairwise)


def test_scores_from_dawid_skene_rank_simulated_workers():
    data = _crowd_with(["perfect", "good", "constant", "random", "good"])
    model = DawidSkene().fit(data)
    trace = confusion_trace(data, model)
    spam = spammer_score(data, model)
    # EM stops short of the exact identity (a few tasks keep a wrong posterior)
    assert trace[0] > K - 0.2 and trace.argmax() == 0
    assert spam.argmax() == 0
    assert spam[2] < 0.02 and spam[3] < 0.05
    assert min(spam[1], spam[4]) > max(spam[2], spam[3])
    accuracy = gold_accuracy(data)
    assert accuracy[0] == 1.0 and accuracy[2] == pytest.approx(np.mean(data.truth == 0))


def test_glad_ability_and_agreement_separate_hammers_from_spammers():
    data, info = hammer_spammer(
        n_worker=20, n_task=200, n_classes=3, ratio=0.5, feedback=5, seed=0, return_info=True
    )
    spammers = info.worker_group == "spammer"
    ability = glad_ability(data)
    assert ability[~spammers].min() > ability[spammers].max()
    agreement = agreement_with_labels(data, data.truth)
    np.testing.assert_allclose(agreement, gold_accuracy(data))


def test_gold_accuracy_needs_truth_and_leaves_unknown_out():
    data = CrowdData.from_arrays([0, 1, 1, 2], [0, 0, 1, 1], [0, 1, 0, 1], truth=[0, 1, None])
    np.testing.assert_allclose(gold_accuracy(data), [1.0, 0.0])
    with pytest.raises(ValueError, match="truth"):
        gold_accuracy(CrowdData.from_arrays([0], [0], [0]))


def test_compute_returns_frames_keyed_by_user_ids():
    data = _crowd_with(["perfect", "constant"], n_tasks=30)
    data = CrowdData.from_arrays(
        [f"t{t}" for t in data.task],
        [f"w{w}" for w in data.worker],
        data.label,
        classes=np.arange(K),
    )
    frames = compute(data, ["spammer", "entropy", "workload", "trace"])
    assert list(frames["worker"].index) == ["w0", "w1"]
    assert list(frames["worker"].columns) == ["spammer", "workload", "trace"]
    assert frames["task"].index.name == "task" and len(frames["task"]) == 30
    with pytest.raises(ValueError, match="unknown score"):
        compute(data, ["nope"])


def test_confusions_must_match_the_workers():
    data = CrowdData.from_arrays([0, 1], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="2 workers"):
        confusion_trace(data, np.stack([np.eye(2)] * 3))


def test_learned_confusion_models_and_cmm_groups():
    from crowdlearn.simulate import crowd_on_features

    rng = np.random.default_rng(0)
    y = rng.integers(3, size=300)
    X = rng.normal(size=(300, 4)) + 3.0 * np.eye(3, 4)[y]
    data, info = crowd_on_features(
        X,
        y,
        n_workers=12,
        groups={"expert": 0.5, "spammer": 0.5},
        labels_per_task=4,
        seed=0,
        return_info=True,
    )
    spammers = info.worker_group == "spammer"
    training = {"max_epochs": 15, "lr": 0.01}
    for model in ("crowdlayer", "cmm"):
        scores = compute(data, ["spammer", "cmm-group"], confusion_model=model, training=training)
        spam = scores["worker"]["spammer"].to_numpy()
        assert spam[~spammers].min() > spam[spammers].max(), model
        groups = scores["worker"]["cmm-group"].to_numpy()
        assert set(groups) <= {0, 1, 2}
