"""The transcription-crowd simulator."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn.aggregation.texts import ROVER, WeightedROVER
from crowdlearn.data import Texts
from crowdlearn.metrics import word_error_rate
from crowdlearn.simulate import simulate_texts


def test_shape_truth_and_reproducibility():
    data, info = simulate_texts(
        n_tasks=40, n_workers=10, per_task=4, random_state=3, return_info=True
    )
    assert isinstance(data, Texts) and data.n_tasks == 40 and data.n_annotations == 160
    assert np.all(np.bincount(data.task) == 4)
    assert all(t.strip() for t in data.text.tolist()) and data.truth is not None
    assert simulate_texts(n_tasks=40, n_workers=10, per_task=4, random_state=3) == data
    assert info["word_error"].shape == (10,) and info["spammer"].dtype == bool


def test_honest_workers_err_at_their_rate_and_spammers_do_not_help():
    data = simulate_texts(
        n_tasks=300,
        n_workers=6,
        per_task=6,
        spammers=0.0,
        word_error=(0.1, 0.1),
        random_state=0,
    )
    truth = data.truth[data.task]
    # each error changes one word: a WER near the error probability
    assert word_error_rate(data.text, truth) == pytest.approx(0.1, abs=0.02)
    noisy = simulate_texts(n_tasks=100, n_workers=12, per_task=5, spammers=0.4, random_state=1)
    rover = word_error_rate(ROVER().fit(noisy).texts_, noisy.truth)
    weighted = word_error_rate(WeightedROVER().fit(noisy).texts_, noisy.truth)
    assert weighted <= rover


def test_bad_parameters():
    with pytest.raises(ValueError, match="per_task"):
        simulate_texts(n_workers=3, per_task=4)
    with pytest.raises(ValueError, match="within"):
        simulate_texts(spammers=1.5)
