"""The Boxes data type: building, round trips, "drew nothing" rows and row-naming errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlearn.data import Boxes, CrowdDataError


def frame():
    return pd.DataFrame(
        {
            "task": ["i1", "i1", "i1", "i2"],
            "worker": ["a", "b", "b", "a"],
            "label": ["cat", "dog", "cat", None],
            "x_min": [0.0, 1.0, 20.0, np.nan],
            "y_min": [0.0, 0.0, 20.0, np.nan],
            "x_max": [10.0, 11.0, 30.0, np.nan],
            "y_max": [10.0, 9.0, 30.0, np.nan],
        }
    )


def test_round_trip_keeps_every_row_and_codes_classes_sorted():
    data = Boxes.from_frame(frame())
    assert data.kind == "box"
    assert data.classes.tolist() == ["cat", "dog"]
    assert data.label.tolist() == [0, 1, 0, -1]
    assert data.n_boxes == 3 and data.n_annotations == 4 and data.n_tasks == 2
    back = data.to_frame()
    assert back["task"].tolist() == frame()["task"].tolist()
    assert Boxes.from_frame(back) == data
    assert not data.coords.flags.writeable


def test_several_boxes_of_one_worker_on_one_task_are_kept():
    data = Boxes.from_frame(frame())
    rows = (data.task == 0) & (data.worker == 1)
    assert rows.sum() == 2


@pytest.mark.parametrize(
    ("column", "row", "value", "message"),
    [
        ("x_max", 1, -5.0, "rows [1] have x_max < x_min"),
        ("y_max", 2, 0.0, "rows [2] have y_max < y_min"),
        ("x_min", 0, np.inf, "rows [0] have infinite coordinates"),
        ("y_min", 1, np.nan, "rows [1] have some coordinates missing"),
        ("label", 0, None, "boxes at rows [0] have no class"),
    ],
)
def test_bad_rows_are_named(column, row, value, message):
    bad = frame()
    bad.loc[row, column] = value
    with pytest.raises(CrowdDataError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Boxes.from_frame(bad)


def test_truth_in_user_ids_becomes_codes_and_unknown_tasks_are_refused():
    truth = pd.DataFrame(
        {"task": ["i1"], "label": ["dog"], "x_min": [0], "y_min": [0], "x_max": [5], "y_max": [5]}
    )
    data = Boxes.from_frame(frame(), truth=truth)
    assert data.truth[["task", "class"]].values.tolist() == [[0, 1]]
    with pytest.raises(CrowdDataError, match="unknown tasks"):
        Boxes.from_frame(frame(), truth=truth.assign(task=["nope"]))


def test_only_empty_rows_make_data_without_boxes():
    data = Boxes.from_arrays(["t"], ["w"], [None], [None], [None], [None], [None])
    assert data.n_boxes == 0 and data.n_classes == 0


# ---- issue 43: zero-area boxes


def test_zero_area_boxes_are_left_out_with_one_warning_and_their_workers_saw_the_task():
    from crowdlearn.data import CrowdDataWarning

    with pytest.warns(CrowdDataWarning, match=r"3 boxes of zero area .* rows \[0, 1, 3\]"):
        data = Boxes.from_arrays(
            ["i1", "i1", "i1", "i2", "i2"], ["w1", "w2", "w3", "w1", "w2"], ["cat"] * 5,
            [5, 5, 0, 0, 0], [5, 5, 0, 0, 0], [5, 9, 10, 10, 10], [5, 5, 10, 0, 10],
        )  # fmt: skip
    assert data.n_boxes == 2 and data.n_annotations == 5
    assert data.label.tolist() == [-1, -1, 0, -1, 0]
    assert np.isnan(data.coords[[0, 1, 3]]).all()
    # the workers of the left-out boxes still saw their task: w3's box is 1 worker of 3
    from crowdlearn.aggregation.boxes import make_aggregator

    groups = make_aggregator("majority").fit(data).groups_
    assert groups["n_seen"].tolist() == [3, 2]
