"""Issue 44: the counterparts crowd-kit had and crowdlearn lacked, natively:
GoldMajorityVote and the skill-weighted mask vote."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn import CrowdData
from crowdlearn.aggregation.gold_majority_vote import GoldMajorityVote, gold_accuracy
from crowdlearn.aggregation.masks import MaskMajorityVote
from crowdlearn.aggregation.masks.weighted_vote import WeightedMaskVote
from crowdlearn.data import CrowdDataError, Masks


def crowd() -> CrowdData:
    # g1, g2 are gold tasks (truth x, y); t is voted 2 to 1 against the reliable worker
    return CrowdData.from_arrays(
        ["g1", "g1", "g1", "g2", "g2", "g2", "t", "t", "t"],
        ["a", "b", "c", "a", "b", "c", "a", "b", "c"],
        ["x", "y", "y", "y", "x", "x", "x", "y", "y"],
    )


def test_skills_are_accuracies_on_gold_and_weight_the_vote():
    model = GoldMajorityVote(tie_break="lowest").fit(crowd(), gold={"g1": "x", "g2": "y"})
    np.testing.assert_allclose(model.skills_, [1.0, 0.0, 0.0])
    # only worker a has weight: task t goes to a's "x" although b and c say "y"
    assert model.classes_[model.labels_[2]] == "x"
    np.testing.assert_allclose(model.probas_[2], [1.0, 0.0])


def test_workers_without_gold_need_a_default_weight():
    data = CrowdData.from_arrays(["g", "t", "t"], ["a", "a", "b"], ["x", "x", "y"])
    with pytest.raises(CrowdDataError, match="no weight for workers"):
        GoldMajorityVote().fit(data, gold={"g": "x"})
    model = GoldMajorityVote(default_weight=0.5, tie_break="lowest").fit(data, gold={"g": "x"})
    assert np.isnan(gold_accuracy(data, np.array([0, -1]))[1])
    np.testing.assert_allclose(model.probas_[1], [1 / 1.5, 0.5 / 1.5])


def test_gold_is_required():
    with pytest.raises(CrowdDataError, match="gold"):
        GoldMajorityVote().fit(crowd())


def masks_crowd() -> Masks:
    rng = np.random.default_rng(0)
    masks, tasks, workers = [], [], []
    for t in range(3):
        for w in range(4):
            masks.append(rng.random((5, 6)) < 0.5)
            tasks.append(t)
            workers.append(f"w{w}")
    return Masks.from_arrays(tasks, workers, masks)


def test_equal_weights_give_the_majority_vote_and_a_dominant_worker_wins():
    data = masks_crowd()
    plain = MaskMajorityVote().fit(data)
    equal = WeightedMaskVote().fit(data)
    heavy = WeightedMaskVote(weights={"w0": 10.0, "w1": 1.0, "w2": 1.0, "w3": 1.0}).fit(data)
    for t in range(3):
        np.testing.assert_array_equal(equal.masks_(t), plain.masks_(t))
        workers, masks = data.task_masks(t)
        np.testing.assert_array_equal(heavy.masks_(t), masks[list(workers).index(0)])


def test_missing_mask_weights_need_a_default():
    with pytest.raises(CrowdDataError, match="no weight"):
        WeightedMaskVote(weights={"w0": 1.0}).fit(masks_crowd())
    WeightedMaskVote(weights={"w0": 1.0}, default_weight=1.0).fit(masks_crowd())
