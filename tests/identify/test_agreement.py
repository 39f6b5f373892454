"""Krippendorff's alpha, coincidences and per-class agreement on hand cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crowdlearn import CrowdData
from crowdlearn.identify import (
    class_agreement,
    coincidences,
    feedback_effort,
    krippendorff_alpha,
    workload,
)


def _crowd(units: dict[str, list[str]]) -> CrowdData:
    task, worker, label = [], [], []
    for unit, values in units.items():
        for j, value in enumerate(values):
            task.append(unit)
            worker.append(f"w{j}")
            label.append(value)
    return CrowdData.from_arrays(task, worker, label)


# u1: a a b (m=3), u2: a b, u3: b b b (m=3), u4: a (not pairable).
# Coincidences: u1 gives o_aa = (2*2 - 2)/2 = 1, o_ab = o_ba = 2*1/2 = 1;
# u2 gives o_ab = o_ba = 1; u3 gives o_bb = (3*3 - 3)/2 = 3.
# o = [[1, 2], [2, 3]], n_a = 3, n_b = 5, n = 8.
# alpha = 1 - (n - 1) * (o_ab + o_ba) / (2 n_a n_b) = 1 - 7 * 4 / 30 = 1 / 15.
HAND = {"u1": ["a", "a", "b"], "u2": ["a", "b"], "u3": ["b", "b", "b"], "u4": ["a"]}


def test_coincidences_match_the_hand_computation():
    np.testing.assert_allclose(coincidences(_crowd(HAND)), [[1, 2], [2, 3]])


def test_alpha_matches_the_hand_computed_value():
    assert krippendorff_alpha(_crowd(HAND)) == pytest.approx(1 / 15)


def test_alpha_is_one_under_full_agreement():
    data = _crowd({"u1": ["a", "a"], "u2": ["b", "b", "b"], "u3": ["c", "c"], "u4": ["a"]})
    assert krippendorff_alpha(data) == 1.0


def test_alpha_is_undefined_without_variation_or_pairs():
    assert np.isnan(krippendorff_alpha(_crowd({"u1": ["a", "a"], "u2": ["a", "a"]})))
    assert np.isnan(krippendorff_alpha(_crowd({"u1": ["a"], "u2": ["b"]})))


def _alpha_by_pairs(units: dict[str, list[str]]) -> float:
    """Krippendorff's alpha from ordered pairs of values within units (a second, loop-based
    formulation: D_o from within-unit pairs, D_e from all pairs of pairable values)."""
    pairable = [values for values in units.values() if len(values) >= 2]
    disagree, total = 0.0, 0.0
    for values in pairable:
        for i, j in itertools.permutations(range(len(values)), 2):
            weight = 1.0 / (len(values) - 1)
            total += weight
            disagree += weight * (values[i] != values[j])
    pooled = [value for values in pairable for value in values]
    pairs = list(itertools.permutations(range(len(pooled)), 2))
    expected = sum(pooled[i] != pooled[j] for i, j in pairs) / len(pairs)
    return 1.0 - (disagree / total) / expected


def test_alpha_matches_a_loop_formulation_on_random_sparse_data():
    rng = np.random.default_rng(3)
    units = {
        f"u{i}": list(rng.choice(["a", "b", "c"], size=rng.integers(1, 5), p=[0.6, 0.3, 0.1]))
        for i in range(40)
    }
    assert krippendorff_alpha(_crowd(units)) == pytest.approx(_alpha_by_pairs(units))


def test_class_agreement_and_counts():
    data = _crowd(HAND)
    np.testing.assert_allclose(class_agreement(data), [1 / 3, 3 / 5])
    np.testing.assert_array_equal(feedback_effort(data), [3, 2, 3, 1])
    np.testing.assert_array_equal(workload(data), [4, 3, 2])
