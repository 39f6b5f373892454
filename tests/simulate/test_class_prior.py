"""independent_confusion's optional class prior."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn.simulate import independent_confusion


def test_none_gives_exactly_the_crowd_drawn_before_the_parameter_existed():
    plain = independent_confusion(n_worker=20, n_task=300, n_classes=4, feedback=3, seed=7)
    explicit = independent_confusion(
        n_worker=20, n_task=300, n_classes=4, feedback=3, seed=7, class_prior=None
    )
    assert plain == explicit
    # The uniform draw is rng.integers on the seeded generator, as it always was.
    rng = np.random.default_rng(7)
    assert (plain.truth == rng.integers(4, size=300)).all()


def test_class_frequencies_follow_the_prior_on_a_large_sample():
    prior = np.array([0.5, 0.3, 0.15, 0.05])
    data = independent_confusion(
        n_worker=10, n_task=200_000, n_classes=4, feedback=1, class_prior=prior, seed=3
    )
    frequencies = np.bincount(data.truth, minlength=4) / data.n_tasks
    # 4 standard errors of a proportion at n = 200,000 are at most 0.0045
    np.testing.assert_allclose(frequencies, prior, atol=0.0045)


def test_prior_is_recorded_in_the_simulation_info():
    _, info = independent_confusion(
        n_task=50, n_classes=2, class_prior=(0.9, 0.1), seed=0, return_info=True
    )
    assert info.params["class_prior"] == [0.9, 0.1]


@pytest.mark.parametrize(
    ("prior", "message"),
    [
        ([0.5, 0.5], "class_prior has 2 entries but n_classes=3"),
        ([0.5, 0.6, -0.1], "class_prior entries must be in"),
        ([0.2, 0.2, 0.2], "class_prior must sum to 1"),
        (["a", 0.5, 0.5], "class_prior entries must be a number"),
    ],
)
def test_invalid_priors_are_refused(prior, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        independent_confusion(n_task=10, n_classes=3, class_prior=prior)
