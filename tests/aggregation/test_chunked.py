"""Chunked EM (``chunk_size``) gives the unchunked results; blocks cover every task once."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crowdlearn import CrowdData
from crowdlearn.aggregation import (
    GLAD,
    DawidSkene,
    MajorityVote,
    NaiveSoft,
    OneCoinDawidSkene,
    Wawa,
    vote_frequencies,
)
from crowdlearn.aggregation._blocks import BlockReader, task_blocks
from crowdlearn.simulate import independent_confusion


@pytest.fixture(scope="module")
def crowd():
    return independent_confusion(n_worker=20, n_task=400, n_classes=3, feedback=4, seed=7)


@pytest.fixture(scope="module")
def shuffled(crowd):
    """The same crowd with the annotation rows in random order (unsorted tasks)."""
    order = np.random.default_rng(0).permutation(crowd.n_annotations)
    return CrowdData.from_arrays(
        crowd.task[order], crowd.worker[order], crowd.label[order], truth=None
    )


@pytest.mark.parametrize("model", [DawidSkene, OneCoinDawidSkene])
@pytest.mark.parametrize("chunk_size", [1, 97, 1000, 10**9])
def test_chunked_fit_equals_one_block(crowd, shuffled, model, chunk_size):
    reference = model().fit(crowd)
    for data in (crowd, shuffled):
        chunked = model(chunk_size=chunk_size).fit(data)
        np.testing.assert_allclose(chunked.probas_, reference.probas_, rtol=0, atol=1e-12)
        assert chunked.n_iter_ == reference.n_iter_


def test_chunked_float32_and_options(crowd):
    reference = DawidSkene(dtype="float32", init="majority_vote", smoothing=0.5).fit(crowd)
    chunked = DawidSkene(dtype="float32", init="majority_vote", smoothing=0.5, chunk_size=150)
    chunked.fit(crowd)
    assert chunked.probas_.dtype == np.float32
    np.testing.assert_allclose(chunked.probas_, reference.probas_, atol=1e-5)


def test_chunked_gold_is_clamped(crowd):
    gold = np.full(crowd.n_tasks, -1)
    gold[:50] = crowd.truth[:50]
    model = DawidSkene(chunk_size=100).fit(crowd, gold=gold)
    reference = DawidSkene().fit(crowd, gold=gold)
    np.testing.assert_allclose(model.probas_, reference.probas_, atol=1e-12)
    np.testing.assert_array_equal(model.labels_[:50], crowd.truth[:50])


def test_blocks_cover_each_task_once_without_splitting(shuffled):
    ranges = task_blocks(shuffled, 37)
    assert ranges[0][0] == 0 and ranges[-1][1] == shuffled.n_tasks
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    seen = []
    for block in BlockReader(shuffled, 37):
        assert np.all(np.diff(block.task) >= 0)
        seen.append(np.column_stack([block.task + block.start, block.worker, block.label]))
    got = np.concatenate(seen)
    expected = np.column_stack([shuffled.task, shuffled.worker, shuffled.label])
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, expected.tolist()))


def test_sorted_data_blocks_are_views(crowd):
    assert np.all(np.diff(crowd.task) >= 0)
    for block in BlockReader(crowd, 100):
        assert np.shares_memory(block.worker, crowd.worker)


def test_bad_chunk_size(crowd):
    with pytest.raises(ValueError, match="chunk_size"):
        DawidSkene(chunk_size=0).fit(crowd)


def test_chunked_vote_frequencies(crowd, shuffled):
    for data in (crowd, shuffled):
        reference = NaiveSoft().fit(data).probas_
        np.testing.assert_array_equal(vote_frequencies(data, chunk_size=50), reference)


@pytest.mark.parametrize("model", [MajorityVote, Wawa])
@pytest.mark.parametrize("chunk_size", [1, 97, 10**9])
def test_chunked_votes_equal_unchunked(crowd, shuffled, model, chunk_size):
    for data in (crowd, shuffled):
        reference = model().fit(data)
        chunked = model(chunk_size=chunk_size).fit(data)
        np.testing.assert_allclose(chunked.probas_, reference.probas_, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(chunked.labels_, reference.labels_)
        if hasattr(reference, "skills_"):
            np.testing.assert_allclose(chunked.skills_, reference.skills_, atol=1e-12)


@pytest.mark.parametrize("chunk_size", [1, 97, 10**9])
def test_chunked_naive_soft_equals_unchunked(crowd, shuffled, chunk_size):
    for data in (crowd, shuffled):
        reference = NaiveSoft().fit(data)
        chunked = NaiveSoft(chunk_size=chunk_size).fit(data)
        np.testing.assert_allclose(chunked.probas_, reference.probas_, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(chunked.labels_, reference.labels_)


@pytest.mark.parametrize("class_prior", ["uniform", "learn"])
@pytest.mark.parametrize("chunk_size", [1, 97, 10**9])
def test_chunked_glad_equals_unchunked(crowd, shuffled, class_prior, chunk_size):
    for data in (crowd, shuffled):
        reference = GLAD(max_iter=15, class_prior=class_prior).fit(data)
        chunked = GLAD(max_iter=15, class_prior=class_prior, chunk_size=chunk_size).fit(data)
        np.testing.assert_allclose(chunked.probas_, reference.probas_, rtol=0, atol=1e-12)
        np.testing.assert_allclose(chunked.alphas_, reference.alphas_, rtol=0, atol=1e-12)
        np.testing.assert_allclose(chunked.betas_, reference.betas_, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            chunked.history_["objective"], reference.history_["objective"], rtol=1e-12
        )
        assert chunked.n_iter_ == reference.n_iter_


def test_chunked_glad_float32(crowd):
    reference = GLAD(max_iter=10, dtype="float32").fit(crowd)
    chunked = GLAD(max_iter=10, dtype="float32", chunk_size=150).fit(crowd)
    assert chunked.probas_.dtype == np.float32
    np.testing.assert_allclose(chunked.probas_, reference.probas_, atol=1e-5)


def test_glad_bad_chunk_size(crowd):
    with pytest.raises(ValueError, match="chunk_size"):
        GLAD(chunk_size=0).fit(crowd)
