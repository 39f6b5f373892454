"""Crowd Layer: the Dawid-Skene initialisation of the MW layer."""

from __future__ import annotations

import numpy as np
import pytest
from crowd_toys import noisy_crowd

from crowdlearn.aggregation import DawidSkene
from crowdlearn.learning import CrowdLayer, make_learner


def test_dawid_skene_init_starts_each_annotator_at_its_dawid_skene_confusion():
    """With no epoch trained, a certain classifier's label distribution through the
    layer is Dawid-Skene's confusion row, for every annotator and class."""
    crowd, _, _ = noisy_crowd(seed=2, n_train=150)
    model = CrowdLayer("MW", init="dawid-skene", max_epochs=0).fit(crowd, valid=None)
    expected = DawidSkene().fit(crowd).confusions_
    np.testing.assert_allclose(model.confusions_, expected, atol=1e-5)
    paper = CrowdLayer("MW", max_epochs=0).fit(crowd, valid=None)
    k = crowd.n_classes
    flat = np.full((k, k), 1.0) + (np.e - 1.0) * np.eye(k)
    np.testing.assert_allclose(paper.confusions_[0], flat / flat.sum(1, keepdims=True), atol=1e-6)


def test_dawid_skene_init_trains_and_is_a_spec_parameter():
    crowd, X, _ = noisy_crowd(seed=3, n_train=200)
    model = make_learner("crowdlayer[init=dawid-skene]", max_epochs=3, random_state=0)
    proba = model.fit(crowd, valid=None).predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)
    assert model.init == "dawid-skene"


@pytest.mark.parametrize(
    "params",
    [
        {"init": "dawid-skene", "variant": "VW"},
        {"init": "dawid-skene", "on": "logits"},
        {"init": "ds"},
    ],
)
def test_bad_init_combinations_are_refused(params):
    crowd, _, _ = noisy_crowd(seed=4, n_train=60)
    with pytest.raises(ValueError, match="init"):
        CrowdLayer(max_epochs=1, **params).fit(crowd, valid=None)
