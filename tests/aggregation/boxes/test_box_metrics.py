"""Box metrics: IoU properties, VOC matching and all-point average precision."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from crowdlearn.metrics import (
    average_precision,
    box_iou,
    detection_scores,
    mean_average_precision,
)

coord = st.floats(-100, 100, allow_nan=False)


@st.composite
def boxes(draw):
    k = draw(st.integers(1, 6))
    corner = np.array(draw(st.lists(st.tuples(coord, coord), min_size=k, max_size=k)))
    size = np.array(
        draw(st.lists(st.tuples(st.floats(0.5, 50), st.floats(0.5, 50)), min_size=k, max_size=k))
    )
    return np.column_stack([corner, corner + size])


@settings(max_examples=40, deadline=None)
@given(boxes(), boxes(), coord, coord)
def test_iou_is_symmetric_bounded_shift_invariant_and_one_on_itself(a, b, dx, dy):
    iou = box_iou(a, b)
    assert np.allclose(iou, box_iou(b, a).T)
    assert ((iou >= 0) & (iou <= 1 + 1e-12)).all()
    shift = np.array([dx, dy, dx, dy])
    assert np.allclose(box_iou(a + shift, b + shift), iou, atol=1e-9)
    assert np.allclose(np.diag(box_iou(a, a)), 1.0)


def test_iou_of_half_overlapping_squares():
    # intersection 1x2 = 2, union 4 + 4 - 2 = 6
    assert np.isclose(box_iou([[0, 0, 2, 2]], [[1, 0, 3, 2]])[0, 0], 2 / 6)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=30))
def test_all_point_ap_bounds_sklearns_step_ap_when_every_truth_is_found(hits):
    hit = np.array(hits)
    n_true = int(hit.sum())
    if n_true == 0:
        assert average_precision(hit, 3) == 0.0
        return
    scores = np.linspace(1, 0, len(hit), endpoint=False)
    step = average_precision_score(hit, scores)  # non-interpolated: sum dR * P
    ours = average_precision(hit, n_true)
    assert step - 1e-12 <= ours <= 1 + 1e-12
    if np.all(np.diff(np.cumsum(hit) / np.arange(1, len(hit) + 1)) <= 0):
        assert np.isclose(ours, step)  # monotone precision: the envelope is itself


def table(task, cls, coords, score=None):
    out = pd.DataFrame({"task": task, "class": cls})
    for k, name in enumerate(["x_min", "y_min", "x_max", "y_max"]):
        out[name] = np.asarray(coords, dtype=float)[:, k]
    if score is not None:
        out["score"] = score
    return out


def test_perfect_predictions_and_a_wrong_class():
    truth = table([0, 0, 1], [0, 1, 0], [[0, 0, 10, 10], [20, 20, 30, 30], [0, 0, 5, 5]])
    perfect = truth.assign(score=[0.9, 0.8, 0.7])
    scores = detection_scores(perfect, truth)
    assert (scores["precision"], scores["recall"], scores["mean_iou"]) == (1.0, 1.0, 1.0)
    assert mean_average_precision(perfect, truth) == 1.0
    wrong = perfect.assign(**{"class": [1, 1, 0]})  # first box named dog: no match
    scores = detection_scores(wrong, truth)
    assert scores["n_matched"] == 2 and np.isclose(scores["precision"], 2 / 3)


def test_a_duplicate_prediction_is_a_false_positive():
    truth = table([0], [0], [[0, 0, 10, 10]])
    pred = table([0, 0], [0, 0], [[0, 0, 10, 10], [0, 0, 10, 9]], score=[0.9, 0.8])
    scores = detection_scores(pred, truth)
    assert scores["precision"] == 0.5 and scores["recall"] == 1.0


def test_iou_of_huge_and_tiny_boxes_is_that_of_the_same_boxes_in_ordinary_units():
    """Corners near 1e308 used to give NaN (the widths overflowed), near 1e-300 0 (the
    areas underflowed)."""
    a = np.array([[0.0, 0.0, 2.0, 2.0], [-1.0, -1.0, 1.0, 1.0]])
    b = np.array([[1.0, 0.0, 3.0, 2.0]])
    expected = box_iou(a, b)
    for exponent in (1022, 1000, -1000, -1060):
        with np.errstate(all="raise"):
            got = box_iou(np.ldexp(a, exponent), np.ldexp(b, exponent))
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    spanning = np.array([[-1.5e308, -1.5e308, 1.5e308, 1.5e308]])
    np.testing.assert_allclose(box_iou(spanning, spanning), [[1.0]])
