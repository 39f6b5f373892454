"""Worker and item scores for pairwise comparisons."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlearn.data import Comparisons, CrowdData
from crowdlearn.identify.comparisons import item_scores, worker_scores
from crowdlearn.simulate import simulate_comparisons


def test_worker_scores_separate_the_worker_types():
    data, types = simulate_comparisons(
        np.linspace(0, 5, 50),
        8000,
        16,
        worker_mix=(0.5, 0, 0.25, 0.25),
        random_state=2,
        return_info=True,
    )
    scores = worker_scores(data)
    assert set(scores) == {"agreement", "reliability", "n_comparisons"}
    for values in scores.values():
        assert values.shape == (data.n_workers,)
    assert scores["n_comparisons"].sum() == data.n_annotations
    by_type = pd.DataFrame(scores).groupby(types).mean()
    for column in ("agreement", "reliability"):
        assert by_type.loc["reliable", column] > 0.8 > 0.2 > by_type.loc["reversed", column]
        assert 0.35 < by_type.loc["spammer", column] < 0.65


def test_item_scores_count_comparisons_and_wins_with_ties_as_halves():
    data = Comparisons.from_arrays(
        worker=["u", "u", "v"],
        left=["a", "b", "a"],
        right=["b", "c", "c"],
        label=["a", "tie", "c"],
        tie="tie",
        item_ids=["a", "b", "c", "d"],
    )
    scores = item_scores(data)
    np.testing.assert_array_equal(scores["n_comparisons"], [2, 2, 2, 0])
    np.testing.assert_allclose(scores["win_rate"][:3], [0.5, 0.25, 0.75])
    assert np.isnan(scores["win_rate"][3])
    assert scores["score"].shape == (4,) and np.all(np.isfinite(scores["score"]))


def test_a_tie_only_worker_has_agreement_one_half():
    data = Comparisons.from_arrays(
        worker=["u", "u", "v", "v"],
        left=["a", "b", "a", "b"],
        right=["b", "c", "c", "a"],
        label=["a", "b", "tie", "tie"],
        tie="tie",
    )
    scores = worker_scores(data)
    assert scores["agreement"][1] == 0.5 and scores["agreement"][0] == 1.0


def test_other_data_types_are_refused():
    crowd = CrowdData.from_arrays(task=[0], worker=[0], label=[0])
    with pytest.raises(TypeError, match="Comparisons"):
        worker_scores(crowd)
    with pytest.raises(TypeError, match="Comparisons"):
        item_scores(crowd)
