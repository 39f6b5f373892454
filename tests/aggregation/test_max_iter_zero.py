"""Issue 44: ``max_iter=0`` (the initialisation alone) and ``tol=0`` (run to
``max_iter``) are accepted by every iterative aggregator, natively."""

from __future__ import annotations

import numpy as np
import pytest

import crowdlearn.simulate as sim
from crowdlearn.aggregation import (
    DSWC,
    GLAD,
    IWMV,
    KOS,
    MACE,
    MMSR,
    DawidSkene,
    OneCoinDawidSkene,
    PlantNet,
    ZeroBasedSkill,
    boxes,
    comparisons,
    masks,
    texts,
)
from crowdlearn.aggregation.majority_vote import vote_frequencies
from crowdlearn.aggregation.weighted_vote import majority_labels


def classes_crowd():
    return sim.independent_confusion(n_worker=8, n_task=60, n_classes=2, feedback=3, seed=3)


CLASS_METHODS = [
    DawidSkene,
    OneCoinDawidSkene,
    GLAD,
    DSWC,
    MACE,
    KOS,
    MMSR,
    ZeroBasedSkill,
    IWMV,
    PlantNet,
]


@pytest.mark.parametrize("cls", CLASS_METHODS, ids=lambda c: c.__name__)
def test_max_iter_zero_is_accepted(cls):
    model = cls(max_iter=0).fit(classes_crowd())
    assert model.probas_.shape == (60, 2)
    assert np.all(np.isfinite(model.probas_))
    if hasattr(model, "n_iter_"):
        assert model.n_iter_ == 0


def test_dawid_skene_max_iter_zero_is_the_initialisation_and_its_m_step():
    data = classes_crowd()
    model = DawidSkene(max_iter=0, smoothing=0.0, diagonal_prior=0.0, lone_labels="em")
    model.fit(data)
    shares = vote_frequencies(data)
    np.testing.assert_allclose(model.probas_, shares)
    np.testing.assert_allclose(model.priors_, shares.mean(axis=0))
    # the confusions are the M-step of those posteriors: worker j's expected counts
    counts = np.zeros((data.n_workers, 2, 2))
    np.add.at(counts, (data.worker, slice(None), data.label), shares[data.task])
    expected = counts / counts.sum(axis=2, keepdims=True)
    np.testing.assert_allclose(model.confusions_, expected, atol=1e-9)
    np.testing.assert_array_equal(model.labels_, majority_labels(data))


def test_max_iter_negative_is_refused():
    with pytest.raises(ValueError, match="max_iter"):
        DawidSkene(max_iter=-1).fit(classes_crowd())


@pytest.mark.parametrize("cls", [DawidSkene, OneCoinDawidSkene, GLAD], ids=lambda c: c.__name__)
def test_tol_zero_runs_to_max_iter(cls):
    model = cls(max_iter=7, tol=0.0).fit(classes_crowd())
    assert model.n_iter_ == 7
    assert not model.converged_


def other_kinds():
    cmp = sim.simulate_comparisons(np.linspace(-1, 1, 8), 200, 6, random_state=0)
    cases = [
        (cls, cmp)
        for cls in (
            comparisons.BradleyTerry,
            comparisons.NoisyBT,
            comparisons.CrowdBT,
            comparisons.Thurstone,
        )
    ]
    cases += [
        (cls, sim.simulate_masks(random_state=0))
        for cls in (masks.STAPLE, masks.SegmentationEM, masks.SegmentationRASA)
    ]
    cases += [(boxes.BoxEM, sim.simulate_boxes(random_state=0))]
    cases += [(texts.RASA, sim.simulate_texts(random_state=0))]
    return cases


@pytest.mark.parametrize("kw", [{"max_iter": 0}, {"max_iter": 3, "tol": 0.0}], ids=str)
@pytest.mark.parametrize(("cls", "data"), other_kinds(), ids=lambda v: type(v).__name__)
def test_other_kinds_accept_max_iter_zero_and_tol_zero(cls, data, kw):
    model = cls(**kw).fit(data)
    assert model is not None


def test_mask_rasa_max_iter_zero_is_the_vote():
    data = sim.simulate_masks(random_state=0)
    zero = masks.SegmentationRASA(max_iter=0).fit(data)
    vote = (
        masks.make_mask_aggregator("mv").fit(data)
        if hasattr(masks, "make_mask_aggregator")
        else masks.MaskMajorityVote().fit(data)
    )
    for a, b in zip(zero.predict(), vote.predict(), strict=True):
        np.testing.assert_array_equal(a, b)
