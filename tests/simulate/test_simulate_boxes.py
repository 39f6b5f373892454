"""Simulated detection crowds: reproducible, valid boxes, the declared worker mix."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn.data import Boxes
from crowdlearn.simulate import simulate_boxes


def test_same_seed_same_crowd_and_every_task_seen_by_per_task_workers():
    a = simulate_boxes(n_tasks=30, n_workers=8, per_task=4, random_state=7)
    assert a == simulate_boxes(n_tasks=30, n_workers=8, per_task=4, random_state=7)
    assert a != simulate_boxes(n_tasks=30, n_workers=8, per_task=4, random_state=8)
    assert isinstance(a, Boxes) and a.truth is not None
    pairs = np.unique(a.task.astype(np.int64) * a.n_workers + a.worker)
    assert (np.bincount(pairs // a.n_workers, minlength=a.n_tasks) == 4).all()
    drawn = a.coords[a.drawn]
    assert (drawn[:, 2] >= drawn[:, 0]).all() and (drawn[:, 3] >= drawn[:, 1]).all()


def test_perfect_workers_copy_the_truth():
    data = simulate_boxes(
        n_tasks=20, n_workers=4, per_task=2, recall=(1, 1), false_boxes=(0, 0),
        noise=(0, 0), wrong_class=(0, 0), sloppy=0.0, random_state=1,
    )  # fmt: skip
    assert data.n_boxes == 2 * len(data.truth)
    truth = data.truth.sort_values(["task", "x_min"])
    frame = data.to_frame().dropna()
    one = frame[frame["worker"] == frame.groupby("task")["worker"].transform("min")]
    one = one.sort_values(["task", "x_min"])
    assert np.allclose(one[["x_min", "y_min", "x_max", "y_max"]], truth.iloc[:, 2:])


def test_info_and_bad_parameters():
    data, info = simulate_boxes(n_tasks=10, n_workers=6, per_task=3, return_info=True)
    assert set(info) == {"recall", "false_boxes", "noise", "wrong_class", "sloppy"}
    assert all(len(v) == data.n_workers for v in info.values())
    with pytest.raises(ValueError, match="per_task"):
        simulate_boxes(n_workers=3, per_task=4)
