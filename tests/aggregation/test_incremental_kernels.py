"""The compiled passes of ``partial_fit`` (issue 46, incremental updates) give the
NumPy path's results.

Each kernel of :mod:`crowdlearn.aggregation._incremental_kernels` is compared with the
NumPy form it replaces; then whole sequences of updates (Dawid-Skene and one-coin with
``refresh`` 0 and 1, the vote methods) run twice, with the kernels forced on
(``_incremental_kernels.wanted`` true at any size) and off, and must agree: the same
labels, the same recomputed tasks, posteriors and margins to 1e-10.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from crowdlearn import CrowdData
from crowdlearn.aggregation import (
    DawidSkene,
    MajorityVote,
    NaiveSoft,
    OneCoinDawidSkene,
    Wawa,
    _kernels,
)
from crowdlearn.aggregation import _incremental_kernels as ik
from crowdlearn.aggregation._annotation_store import AnnotationStore
from crowdlearn.aggregation._base import break_ties_rows
from crowdlearn.aggregation._blocks import block_design, make_block
from crowdlearn.aggregation._design import normalise_log
from crowdlearn.aggregation._incremental_em import probas_margins, top_margins
from crowdlearn.aggregation.dawid_skene import confusion_statistics
from crowdlearn.aggregation.weighted_vote import vote_shares
from crowdlearn.data import CrowdDataError
from crowdlearn.simulate import independent_confusion

pytest.importorskip("numba")

TOL = 1e-10

#: The tests that call a kernel directly (with CROWDLEARN_NO_NUMBA=1 they return None).
needs_kernels = pytest.mark.skipif(
    _kernels.disabled_by_environment(), reason="CROWDLEARN_NO_NUMBA=1: the kernels are off"
)


@pytest.fixture
def forced(monkeypatch):
    """A context that turns the incremental kernels on (True) or off (False)."""

    def force(on: bool) -> None:
        monkeypatch.setattr(
            ik, "wanted", (lambda n: _kernels.available()) if on else (lambda n: False)
        )

    return force


# ------------------------------------------------------------------ kernel by kernel


def sorted_codes(seed: int, n_tasks: int = 500, n_workers: int = 30, k: int = 3):
    """Codes sorted by task, 0-7 labels per task (some tasks without any)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 8, n_tasks)
    task = np.repeat(np.arange(n_tasks, dtype=np.int32), sizes)
    pointer = np.zeros(n_tasks + 1, dtype=np.int64)
    np.cumsum(sizes, out=pointer[1:])
    offset = np.arange(len(task)) - np.repeat(pointer[:-1], sizes)  # distinct workers
    first = rng.integers(0, n_workers, n_tasks)
    worker = ((np.repeat(first, sizes) + 3 * offset) % n_workers).astype(np.int32)
    label = rng.integers(0, k, len(task)).astype(np.int32)
    return task, worker, label, pointer


@needs_kernels
def test_cell_sums_equal_the_design_product():
    task, worker, label, pointer = sorted_codes(1)
    k, n_workers = 3, 30
    values = np.random.default_rng(2).normal(size=n_workers * k)
    design = sp.csr_matrix(
        (np.ones(len(task)), worker.astype(np.int64) * k + label, pointer),
        shape=(len(pointer) - 1, n_workers * k),
    )
    sums = ik.cell_sums(pointer, worker, label, values, k)
    np.testing.assert_array_equal(sums, design @ values)


def test_probas_margins_equal_the_numpy_form(forced):
    probas = np.random.default_rng(3).dirichlet(np.ones(4), size=2000)
    probas[:10] = [1.0, 0.0, 0.0, 0.0]  # floored next class
    forced(False)
    reference = probas_margins(probas)
    forced(True)
    fused = probas_margins(probas)
    np.testing.assert_array_equal(fused, reference)  # the same ratios, the same log


@needs_kernels
def test_the_touched_block_and_the_pair_check_equal_the_numpy_path():
    task, worker, label, pointer = sorted_codes(4)
    store = AnnotationStore(
        CrowdData(task, worker, label, n_tasks=500, n_workers=30, n_classes=3), pointer
    )
    tasks = np.array([3, 7, 8, 100, 499])
    none = np.zeros(len(tasks), dtype=np.int64)
    empty = np.zeros(0, dtype=np.int32)
    local, codes, labels = store.rows_of(tasks)  # the NumPy path (not forced)
    fused = ik.gather(
        (pointer[tasks], pointer[tasks + 1], worker, label),
        (none, none, empty, empty),
        (none, none, empty, empty),
        None,
    )
    for got, want in zip(fused[:3], (local, codes, labels), strict=True):
        np.testing.assert_array_equal(got, want)
    assert not fused[3].any() and fused[4:] == (0, -1)
    # one new row per task: the task's first held worker (a repeated pair) on the
    # 2nd and 4th task, a worker it does not have on the others
    held = [set(worker[pointer[t] : pointer[t + 1]].tolist()) for t in tasks]
    new_worker = np.array(
        [
            worker[pointer[t]] if i in (1, 3) and held[i] else min(set(range(30)) - held[i])
            for i, t in enumerate(tasks)
        ],
        dtype=np.int32,
    )
    expected = [i for i in range(len(tasks)) if new_worker[i] in held[i]]
    assert expected
    starts = np.arange(len(tasks))
    fused = ik.gather(
        (pointer[tasks], pointer[tasks + 1], worker, label),
        (none, none, empty, empty),
        (starts, starts + 1, new_worker, np.zeros(len(tasks), np.int32)),
        30,
    )
    assert fused[4] == len(expected) and fused[5] == expected[0]
    assert fused[3].sum() == len(tasks)


@needs_kernels
def test_the_local_e_step_equals_the_softmax_of_the_scores():
    task, worker, label, pointer = sorted_codes(5)
    k, n_workers = 3, 30
    rng = np.random.default_rng(6)
    table = np.log(rng.dirichlet(np.ones(k), size=n_workers * k))
    log_prior = np.log(rng.dirichlet(np.ones(k)))
    columns = worker.astype(np.int64) * k + label
    design = sp.csr_matrix((np.ones(len(task)), columns, pointer), shape=(500, n_workers * k))
    scores = np.asarray(design @ table) + log_prior
    margins = top_margins(scores)
    probas, log_norm = normalise_log(scores.copy())
    fused = ik.local_e_step(pointer, columns, table, log_prior)
    np.testing.assert_allclose(fused[0], probas, rtol=0, atol=TOL)
    assert abs(fused[1] - log_norm.sum()) < TOL * abs(log_norm.sum())
    np.testing.assert_allclose(fused[2], margins, rtol=0, atol=TOL)


@needs_kernels
@pytest.mark.parametrize("n_new", [0, 1, 37])
def test_interleave_is_numpy_insert(n_new):
    rng = np.random.default_rng(n_new)
    old = rng.integers(0, 100, 400).astype(np.int32)
    new = rng.integers(0, 100, n_new).astype(np.int32)
    slots = np.sort(rng.integers(0, len(old) + 1, n_new))
    np.testing.assert_array_equal(ik.interleave(old, new, slots), np.insert(old, slots, new))


@needs_kernels
def test_row_keys_are_the_generators_draws_and_break_ties_rows_uses_them(forced):
    rows = np.array([0, 5, 6, 999, 40_000])
    keys = np.random.default_rng(11).random((40_001, 4))[rows]
    np.testing.assert_array_equal(ik.row_keys(11, rows, 4), keys)
    # many tied rows: break_ties_rows draws their keys by jump-ahead, same labels
    scores = np.zeros((3000, 3))
    rows = np.arange(0, 30_000, 10)
    forced(False)
    reference = break_ties_rows(scores, rows, "random", 7)
    forced(True)
    np.testing.assert_array_equal(break_ties_rows(scores, rows, "random", 7), reference)


@needs_kernels
def test_the_sorted_pointer_checks_the_order():
    task, _, _, pointer = sorted_codes(8)
    np.testing.assert_array_equal(ik.sorted_pointer(task, 500), pointer)
    shuffled = task.copy()
    shuffled[[3, -3]] = shuffled[[-3, 3]]
    assert ik.sorted_pointer(shuffled, 500) is None


# ------------------------------------------------------------------ whole updates


def arrival_batches(seed: int, n_batches: int = 6) -> list[pd.DataFrame]:
    """A crowd fitted on its first 88 %, then batches of about 2 % each: new tasks
    (ids after the held ones, so that the store appends) and late labels."""
    data = independent_confusion(n_worker=40, n_task=1500, n_classes=3, feedback=5, seed=seed)
    frame = data.to_frame()[["task", "worker", "label"]]
    codes = pd.factorize(frame["task"], sort=True)[0]
    rng = np.random.default_rng(seed)
    late = codes >= int(0.9 * codes.max())
    labels = rng.random(len(frame)) < 0.02
    batch = np.where(
        late,
        1 + (codes - codes[late].min()) * n_batches // (codes.max() - codes[late].min() + 1),
        np.where(labels, rng.integers(1, n_batches + 1, len(frame)), 0),
    )
    return [frame[batch == b] for b in range(n_batches + 1)]


def run_updates(cls, batches, **options):
    model = cls(progress=False) if "progress" in cls().get_params() else cls()
    model.fit(CrowdData.from_frame(batches[0]))
    recomputed = []
    for batch in batches[1:]:
        model.partial_fit(batch, **options)
        recomputed.append(model.last_update_.get("n_recomputed"))
    return model, recomputed


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(
    ("cls", "refresh"),
    [(DawidSkene, 0), (DawidSkene, 1), (OneCoinDawidSkene, 0), (OneCoinDawidSkene, 1)],
)
def test_em_updates_on_the_kernels_equal_the_numpy_path(forced, cls, refresh, seed):
    batches = arrival_batches(seed)
    forced(False)
    reference, recomputed = run_updates(cls, batches, refresh=refresh)
    forced(True)
    fused, fused_recomputed = run_updates(cls, batches, refresh=refresh)
    assert fused_recomputed == recomputed
    np.testing.assert_array_equal(fused.labels_, reference.labels_)
    np.testing.assert_allclose(fused.probas_, reference.probas_, rtol=0, atol=TOL)
    if refresh == 0:
        np.testing.assert_allclose(fused._margins, reference._margins, rtol=1e-12, atol=TOL)
    assert fused.crowd_.n_annotations == reference.crowd_.n_annotations


@pytest.mark.parametrize("on", [False, True])
@pytest.mark.parametrize("cls", [MajorityVote, NaiveSoft, Wawa])
def test_vote_updates_on_the_appended_store_equal_a_refit(forced, cls, on):
    """The vote methods' updates on the appended store (touched rows of the counts;
    Wawa: the agreement counts and one weighted pass over base and tail), with the
    kernels and without: a refit's results."""
    batches = arrival_batches(3)
    forced(on)
    model, _ = run_updates(cls, batches)
    refit = cls().fit(CrowdData.from_frame(pd.concat(batches)))
    np.testing.assert_array_equal(model.labels_, refit.labels_)
    np.testing.assert_allclose(model.probas_, refit.probas_, rtol=0, atol=1e-12)
    if hasattr(refit, "vote_counts_"):
        np.testing.assert_array_equal(model.vote_counts_, refit.vote_counts_)
    if hasattr(refit, "skills_"):
        np.testing.assert_allclose(model.skills_, refit.skills_, rtol=0, atol=1e-12)
        assert model.crowd_.n_annotations == refit.crowd_.n_annotations


@pytest.mark.parametrize("cls", [DawidSkene, MajorityVote, Wawa])
def test_a_repeated_pair_is_refused_on_the_kernels_as_on_numpy(forced, cls):
    batches = arrival_batches(4)
    held = batches[0]
    repeat = pd.concat([batches[1], held.iloc[[3, 10]]])
    messages = []
    for on in (False, True):
        forced(on)
        model, _ = run_updates(cls, [held])
        with pytest.raises(CrowdDataError) as error:
            model.partial_fit(repeat)
        messages.append(str(error.value))
    assert messages[0] == messages[1] and messages[0].startswith("2 new annotation(s)")


def test_the_environment_variable_turns_the_incremental_kernels_off(monkeypatch):
    task, worker, label, pointer = sorted_codes(9)
    monkeypatch.setenv("CROWDLEARN_NO_NUMBA", "1")
    assert not ik.wanted(1 << 40)
    assert ik.cell_sums(pointer, worker, label, np.ones(90), 3) is None
    assert ik.sorted_pointer(task, 500) is None
    batches = arrival_batches(5, n_batches=2)
    model, _ = run_updates(DawidSkene, batches, refresh=0)  # the NumPy path runs
    assert model.crowd_.n_annotations == sum(len(b) for b in batches)


@needs_kernels
def test_the_store_votes_and_their_shares_equal_one_pass_over_the_merged_rows():
    task, worker, label, pointer = sorted_codes(12, k=4)
    rng = np.random.default_rng(13)
    tail_task = np.sort(rng.integers(0, 520, 300)).astype(np.int32)  # new tasks too
    tail_worker = rng.integers(0, 30, 300).astype(np.int32)
    tail_label = rng.integers(0, 4, 300).astype(np.int32)
    weights = rng.normal(0.3, 0.5, 30)  # some negative: rows without a positive score
    votes = ik.store_votes(
        pointer, worker, label, (tail_task, tail_worker, tail_label), weights, 520, 4
    )
    merged = np.concatenate([task, tail_task])
    order = np.argsort(merged, kind="stable")  # each task's base rows, then its tail rows
    cells = merged[order].astype(np.int64) * 4 + np.concatenate([label, tail_label])[order]
    rows = np.concatenate([worker, tail_worker])[order]
    expected = np.bincount(cells, weights=weights[rows], minlength=520 * 4).reshape(520, 4)
    np.testing.assert_array_equal(votes, expected)
    shares = ik.store_votes(
        pointer, worker, label, (tail_task, tail_worker, tail_label), weights, 520, 4, shares=True
    )
    np.testing.assert_allclose(shares, vote_shares(expected), rtol=0, atol=1e-15)


@needs_kernels
@pytest.mark.parametrize("lone_labels", ["em", "vote"])
def test_the_local_e_step_adds_dawid_skenes_statistics_of_its_posteriors(lone_labels):
    task, worker, label, pointer = sorted_codes(14)  # tasks with 0, 1 and more labels
    k, n_workers = 3, 30
    rng = np.random.default_rng(15)
    table = np.log(rng.dirichlet(np.ones(k), size=n_workers * k))
    log_prior = np.log(rng.dirichlet(np.ones(k)))
    columns = worker.astype(np.int64) * k + label
    probas, _, _, (counts, totals) = ik.local_e_step(
        pointer, columns, table, log_prior, lone_labels
    )
    block = make_block(0, 500, task, worker, label)
    design = block_design(block, n_workers, k, np.float64)
    want_counts, want_totals = confusion_statistics(design, block, probas, lone_labels)
    np.testing.assert_allclose(counts, want_counts, rtol=0, atol=TOL)
    np.testing.assert_allclose(totals, want_totals, rtol=0, atol=TOL)


def test_an_update_alone_loads_numba_only_for_very_large_data(monkeypatch):
    """Numba loaded (a fit ran): from 100k annotations; not loaded (a command-line
    update on a state file): only from LOAD_MIN, where the kernels repay loading."""
    monkeypatch.setattr(_kernels, "available", lambda: True)
    monkeypatch.setattr(_kernels, "_STATE", {**_kernels._STATE, "kernels": None})
    assert not ik.wanted(10_000_000) and ik.wanted(ik.LOAD_MIN)
    monkeypatch.setitem(_kernels._STATE, "kernels", object())
    assert ik.wanted(_kernels.MIN_LOADED) and not ik.wanted(_kernels.MIN_LOADED - 1)


@needs_kernels
@pytest.mark.parametrize("cls", [DawidSkene, OneCoinDawidSkene])
def test_the_store_e_step_gives_the_fused_e_step_of_the_merged_annotations(
    monkeypatch, forced, cls
):
    """refresh=1 without a merge (on the kernels): the same posteriors as the fit's
    compiled E-step over the merged annotations, bit for bit."""
    from crowdlearn.aggregation._incremental_em import IncrementalEMMixin

    monkeypatch.setattr(_kernels, "MIN_ANNOTATIONS", 0)  # the fits' kernels too
    batches = arrival_batches(6)
    forced(True)
    fused, _ = run_updates(cls, batches, refresh=1)
    assert fused._store.tail[0].size  # appended, not merged
    monkeypatch.setattr(IncrementalEMMixin, "_store_e_step_applies", lambda self: False)
    merged, _ = run_updates(cls, batches, refresh=1)
    assert not merged._store.tail[0].size
    np.testing.assert_array_equal(fused.probas_, merged.probas_)
    np.testing.assert_array_equal(fused.labels_, merged.labels_)
