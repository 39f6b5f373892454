"""IoU and Dice: definitions, symmetry, the relation Dice = 2 IoU / (1 + IoU)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from crowdlearn.metrics import dice, iou

pairs = st.integers(1, 6).flatmap(lambda n: st.tuples(arrays(bool, (n, 3)), arrays(bool, (n, 3))))


@settings(max_examples=60, deadline=None)
@given(pair=pairs)
def test_symmetric_bounded_and_related(pair: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = pair
    j, d = iou(a, b), dice(a, b)
    assert j == iou(b, a) and d == dice(b, a)
    assert 0 <= j <= d <= 1
    assert d == pytest.approx(2 * j / (1 + j))
    assert iou(a, a) == 1.0
    if a.any():
        assert iou(a, ~a) == 0.0


def test_counts_and_shape_error() -> None:
    a = np.array([[1, 1, 1, 0]], bool)
    b = np.array([[0, 1, 1, 1]], bool)
    assert iou(a, b) == 2 / 4 and dice(a, b) == 4 / 6
    assert iou(np.zeros(3, bool), np.zeros(3, bool)) == 1.0
    with pytest.raises(ValueError, match="shape"):
        iou(a, a.T)
