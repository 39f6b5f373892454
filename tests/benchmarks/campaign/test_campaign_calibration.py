"""The campaign-replay's calibration control: in-sample against leave-one-out confidence."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.campaign._calibration import STOPS, calibration_row
from benchmarks.campaign.replay import policy_state
from crowdlearn.aggregation import DawidSkene
from crowdlearn.campaign.ranking import cavity_of
from crowdlearn.simulate import independent_confusion


@pytest.fixture(scope="module")
def crowd():
    return independent_confusion(n_worker=15, n_task=80, n_classes=3, feedback=5, seed=2)


def test_the_rows_are_the_excess_confidence_of_each_posterior(crowd):
    model = DawidSkene(progress=False).fit(crowd)
    calls = []

    def replay_to(data, seed, labels):
        calls.append((seed, labels))
        return crowd, model  # every label revealed: a fixed state

    rows = calibration_row("toy", crowd, replay_to)
    assert [row["labels per task"] for row in rows] == [f"{stop:g}" for stop in STOPS]
    assert {labels for _, labels in calls} == {int(stop * crowd.n_tasks) for stop in STOPS}
    right = model.probas_.argmax(axis=1) == crowd.truth
    cavity = cavity_of(model, crowd)
    expected = cavity.max(axis=1).mean() - right.mean()  # every task has 2+ labels
    in_sample, left_out = rows[0]["excess confidence, 2+ labels"].split(" / ")
    assert float(left_out) == pytest.approx(expected, abs=5e-4)
    assert float(in_sample) == pytest.approx(
        model.probas_.max(axis=1).mean() - right.mean(), abs=5e-4
    )
    assert rows[0]["excess confidence, 1 label (in sample / left out)"] == "- / -"


def test_policy_state_stops_at_the_labels_asked(crowd):
    sub, model = policy_state(crowd, 0, int(1.5 * crowd.n_tasks), min_share=0.1)
    assert int(1.5 * crowd.n_tasks) <= sub.n_annotations < 1.5 * crowd.n_tasks + 8 + 1
    assert np.asarray(model.probas_).shape == (crowd.n_tasks, crowd.n_classes)
