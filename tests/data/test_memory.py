"""The memory guard and the class-code guard of crowdlearn.data._memory."""

from __future__ import annotations

import resource

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData
from crowdlearn.data import CrowdDataError, CrowdMemoryError
from crowdlearn.data._memory import (
    IMPLIED_CLASSES_LIMIT,
    IMPLIED_CLASSES_RATIO,
    MEMORY_LIMIT_ENV,
    array_bytes,
    available_memory,
    check_allocation,
    check_implied_classes,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 50_000), min_size=1, max_size=30))
def test_implied_classes_refused_exactly_when_far_above_the_codes_used(codes: list[int]) -> None:
    array = np.array(codes)
    implied = max(codes) + 1
    far = implied > IMPLIED_CLASSES_LIMIT and implied > IMPLIED_CLASSES_RATIO * len(set(codes))
    if far:
        with pytest.raises(CrowdDataError, match="n_classes"):
            check_implied_classes(array, "pass n_classes=")
    else:
        check_implied_classes(array, "pass n_classes=")


def test_implied_classes_ignore_unknown_truth_codes() -> None:
    check_implied_classes(np.array([-1, -1, 0, 1]), "x")
    check_implied_classes(np.array([], dtype=np.int64), "x")


def test_many_classes_that_are_all_used_are_accepted() -> None:
    codes = np.arange(5000)
    data = CrowdData(codes, np.zeros(5000, dtype=int), codes)
    assert data.n_classes == 5000


@given(st.lists(st.integers(0, 10**6), max_size=4), st.sampled_from([1, 4, 8]))
def test_array_bytes_is_the_exact_product(shape: list[int], itemsize: int) -> None:
    assert array_bytes(shape, itemsize) == int(np.prod(shape, dtype=object)) * itemsize


def test_environment_budget_lowers_the_available_memory(monkeypatch) -> None:
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1000")
    assert available_memory() == 1000
    with pytest.raises(CrowdMemoryError, match="1000 bytes is available"):
        check_allocation(1001, "the thing")
    check_allocation(1000, "the thing")


def test_available_memory_is_positive_on_this_machine(monkeypatch) -> None:
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    available = available_memory()
    assert available is None or available > 0


def test_address_space_limit_is_taken_into_account(monkeypatch) -> None:
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    # Below the current limit (both may be unlimited), far above what is in use.
    new = 64 * 2**30 if hard == resource.RLIM_INFINITY else min(hard, 64 * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (new, hard))
    try:
        available = available_memory()
        assert available is not None and available < new
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
