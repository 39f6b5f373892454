"""The campaign-control benchmark: its E-step under given worker confusions and its rows."""

from __future__ import annotations

import numpy as np

from benchmarks.campaign.control import SHARE, control_rows, posteriors_under
from crowdlearn.aggregation import DawidSkene
from crowdlearn.simulate import hammer_spammer, independent_confusion


def test_posteriors_under_a_fits_own_parameters_are_its_posteriors():
    data = independent_confusion(n_worker=15, n_task=80, n_classes=3, feedback=4, seed=2)
    model = DawidSkene(progress=False).fit(data)
    probas = posteriors_under(data, model.confusions_, model.priors_)
    np.testing.assert_allclose(probas, model.probas_, atol=1e-6)


def test_control_rows_replay_both_arms_to_the_share():
    data = hammer_spammer(n_worker=12, n_task=60, n_classes=2, ratio=0.3, feedback=8, seed=1)
    rows = control_rows("sim", data, seed=0, min_share=0.1)
    assert [row["arm"] for row in rows] == ["policy", "uniform"]
    for row in rows:
        assert SHARE <= row["share"] < SHARE + 0.1 + 1 / data.n_annotations
        for key in ("all labels", "own fit", "all labels' workers"):
            assert 0 <= row[key] <= 1
    assert rows[0]["all labels"] == rows[1]["all labels"]
