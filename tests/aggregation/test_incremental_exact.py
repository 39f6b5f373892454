"""``partial_fit(refresh=0)``: labels equal to a full E-step's, the appended tail of
annotations, and state files in the middle of a run of updates."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData
from crowdlearn.aggregation import (
    DawidSkene,
    OneCoinDawidSkene,
    _annotation_store,
    _base,
    _incremental,
    _incremental_em,
    load_state,
    save_state,
)
from crowdlearn.aggregation._annotation_store import AnnotationStore
from crowdlearn.aggregation._base import break_ties, break_ties_rows
from crowdlearn.simulate import independent_confusion

EM = (DawidSkene, OneCoinDawidSkene)


def full_e_step_labels(model: object) -> np.ndarray:
    """The labels of an E-step over all annotations under the model's parameters,
    computed here from ``confusions_`` and ``priors_`` annotation by annotation."""
    data = model.crowd_
    log_conf = np.log(model.confusions_)  # [worker, class, label]
    scores = np.tile(np.log(model.priors_), (data.n_tasks, 1))
    np.add.at(scores, data.task, log_conf[data.worker, :, data.label])
    scores -= scores.max(axis=1, keepdims=True)
    probas = np.exp(scores)
    probas /= probas.sum(axis=1, keepdims=True)
    return break_ties(probas, model.tie_break, model.random_state)


def batches_by_arrival(seed: int, n_batches: int, ordered: bool) -> list[CrowdData]:
    """A crowd split into a first batch and ``n_batches`` small ones: by task id
    (new tasks come last, plus late labels on held tasks) or in a random order."""
    data = independent_confusion(n_worker=30, n_task=600, n_classes=3, feedback=4, seed=seed)
    frame = data.to_frame()[["task", "worker", "label"]]
    rng = np.random.default_rng(seed)
    if ordered:
        late = rng.random(len(frame)) < 0.02
        key = np.where(late, rng.integers(0, len(frame), len(frame)), np.arange(len(frame)))
        frame = frame.iloc[np.argsort(key, kind="stable")]
    else:
        frame = frame.iloc[rng.permutation(len(frame))]
    n_small = max(len(frame) // 100, 1)
    first = len(frame) - n_batches * n_small
    bounds = [0, first, *[first + (i + 1) * n_small for i in range(n_batches)]]
    return [
        CrowdData.from_frame(frame.iloc[a:b].reset_index(drop=True))
        for a, b in itertools.pairwise(bounds)
    ]


def triples(data: CrowdData) -> np.ndarray:
    rows = np.stack(
        [data.task_ids[data.task], data.worker_ids[data.worker], data.classes[data.label]],
        axis=1,
    ).astype(np.int64)
    return rows[np.lexsort(rows.T[::-1])]


@settings(max_examples=10, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    ordered=st.booleans(),
    cls=st.sampled_from(EM),
    tie_break=st.sampled_from(["random", "lowest"]),
)
def test_refresh_0_labels_equal_a_full_e_step_after_every_update(seed, ordered, cls, tie_break):
    batches = batches_by_arrival(seed, 5, ordered)
    model = cls(progress=False, tie_break=tie_break).fit(batches[0])
    for batch in batches[1:]:
        model.partial_fit(batch, refresh=0)
        np.testing.assert_array_equal(model.labels_, full_e_step_labels(model))
        assert model.last_update_["n_recomputed"] <= model.crowd_.n_tasks


@pytest.mark.parametrize("cls", EM)
def test_the_bound_skips_tasks_and_stays_exact_over_many_updates(cls):
    batches = batches_by_arrival(3, 12, ordered=True)
    model = cls(progress=False).fit(batches[0])
    skipped = 0
    for batch in batches[1:]:
        model.partial_fit(batch, refresh=0)
        skipped += model.crowd_.n_tasks - model.last_update_["n_recomputed"]
        np.testing.assert_array_equal(model.labels_, full_e_step_labels(model))
    assert skipped > 0  # the bound does spare work


@pytest.mark.parametrize("cls", EM)
def test_appended_tail_and_its_compaction_hold_every_annotation(cls, monkeypatch):
    monkeypatch.setattr(_annotation_store, "COMPACT_SHARE", 0.025)
    batches = batches_by_arrival(5, 8, ordered=True)
    model = cls(progress=False).fit(batches[0])
    tails = []
    for number, batch in enumerate(batches[1:], start=2):
        model.partial_fit(batch, refresh=0)
        tails.append(len(model._store.tail[0]))
        held = CrowdData.from_arrays(
            np.concatenate([b.task_ids[b.task] for b in batches[:number]]),
            np.concatenate([b.worker_ids[b.worker] for b in batches[:number]]),
            np.concatenate([b.classes[b.label] for b in batches[:number]]),
        )
        # through the store's rows: crowd_ would merge the tail in
        store = model._store
        _local, worker, label = store.rows_of(np.arange(store.n_tasks))
        counts = store.task_counts()
        rebuilt = CrowdData.from_arrays(
            store.task_ids[np.repeat(np.arange(store.n_tasks), counts)],
            store.worker_ids[worker],
            store.classes[label],
        )
        np.testing.assert_array_equal(triples(rebuilt), triples(held))
    np.testing.assert_array_equal(triples(model.crowd_), triples(held))
    assert len(model._store.tail[0]) == 0  # crowd_ merged the tail into the base
    assert model._store.pointer is not None
    np.testing.assert_array_equal(np.diff(model._store.pointer), np.bincount(model.crowd_.task))
    assert max(tails) > 0  # the updates appended...
    assert 0 in tails  # ...and the tail was merged in


@pytest.mark.parametrize("cls", EM)
def test_a_state_file_in_a_run_of_refresh_0_updates_continues_exactly(tmp_path, cls):
    batches = batches_by_arrival(9, 4, ordered=True)
    model = cls(progress=False).fit(batches[0])
    for batch in batches[1:3]:
        model.partial_fit(batch, refresh=0)
    save_state(model, tmp_path / "state.npz")
    loaded = load_state(tmp_path / "state.npz")
    np.testing.assert_array_equal(loaded._margins, model._margins)
    for batch in batches[3:]:
        model.partial_fit(batch, refresh=0)
        loaded.partial_fit(batch, refresh=0)
    np.testing.assert_array_equal(loaded.labels_, model.labels_)
    np.testing.assert_array_equal(loaded.probas_, model.probas_)
    np.testing.assert_array_equal(loaded.labels_, full_e_step_labels(loaded))


def test_break_ties_of_some_rows_equals_break_ties_of_the_table():
    rng = np.random.default_rng(0)
    table = rng.integers(0, 3, (3000, 4)).astype(float)  # many ties
    rows = np.sort(rng.choice(3000, 1500, replace=False))
    expected = break_ties(table, "random", 7)[rows]
    np.testing.assert_array_equal(break_ties_rows(table[rows], rows, "random", 7), expected)
    few = rows[:20]
    np.testing.assert_array_equal(
        break_ties_rows(table[few], few, "random", 7), break_ties(table, "random", 7)[few]
    )


@pytest.mark.parametrize("per_worker", [False, True])
def test_cell_sums_by_segments_then_by_design_equal_a_direct_sum(per_worker):
    # a base in no particular order, with tasks that have no annotation, plus a tail
    rng = np.random.default_rng(5)
    k, n_tasks, n_workers = 3, 40, 7
    task = rng.integers(0, n_tasks, 300)
    task[task == 3] = 4  # task 3 has no annotation
    worker = rng.integers(0, n_workers, 300)
    label = rng.integers(0, k, 300)
    base = CrowdData(task, worker, label, n_tasks=n_tasks, n_workers=n_workers, n_classes=k,
                     duplicates="keep")  # fmt: skip
    store = AnnotationStore(base)
    tail = (
        np.array([1, 3, 3], np.int32),
        np.array([0, 2, 6], np.int32),
        np.array([2, 0, 1], np.int32),
    )
    store.tail = tail
    values = rng.random((n_workers, k))
    if per_worker:  # one value per worker, as one-coin's bound has
        values = np.repeat(values[:, :1], k, axis=1)
    expected = np.zeros(n_tasks)
    np.add.at(expected, task, values[worker, label])
    np.add.at(expected, tail[0], values[tail[1], tail[2]])
    first = store.cell_sums(values.ravel(), k)  # segment sums over the sorted base
    assert store.design is None
    second = store.cell_sums(values.ravel(), k)  # the design, built and kept
    assert store.design is not None
    np.testing.assert_allclose(first, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(second, expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 6),
    st.sampled_from([np.float64, np.float32]),
    st.integers(0, 2**31 - 1),
)
def test_row_maxima_walked_by_column_equal_numpy_reductions(n, k, dtype, seed):
    """The column walks (cache-sized chunks, here 7 rows) give argmax, the tie count,
    the top-two margin and the posterior margin bound of numpy's row reductions."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 4, (n, k)).astype(dtype)  # many ties
    table[rng.random((n, k)) < 0.3] = rng.random()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_incremental_em, "_MARGIN_CHUNK", 7)
        labels, count = _base._top_and_ties(table)
        best = table.max(axis=1, keepdims=True)
        np.testing.assert_array_equal(labels, table.argmax(axis=1))
        np.testing.assert_array_equal(count, (table >= best - 1e-12).sum(axis=1))
        margins = _incremental_em.top_margins(table)
        positive = table.astype(np.float64) + 0.5  # posteriors: rows sum to one
        probas = (positive / positive.sum(axis=1, keepdims=True)).astype(dtype)
        probas[rng.random(n) < 0.2, 0] = 0.0  # a class ruled out
        bounds = _incremental_em.probas_margins(probas, capacity=n + 3)
    if k == 1:
        assert np.isinf(margins).all() and np.isinf(bounds).all()
        return
    ordered = np.sort(table.astype(np.float64), axis=1)
    np.testing.assert_array_equal(margins, ordered[:, -1] - ordered[:, -2])
    top_two = np.sort(probas.astype(np.float64), axis=1)[:, -2:]
    floor = 1e-300 if dtype == np.float64 else 1e-37
    expected = np.log(top_two[:, 1]) - np.log(np.maximum(top_two[:, 0], floor))
    np.testing.assert_allclose(bounds, expected, rtol=1e-12, atol=1e-12)
    assert bounds.base is not None and len(bounds.base) == n + 3  # room to grow


def test_ties_of_a_table_with_nan_fall_back_to_numpy():
    table = np.array([[np.nan, 1.0], [2.0, 2.0], [0.0, 1.0]])
    labels, count = _base._top_and_ties(table)
    np.testing.assert_array_equal(labels, table.argmax(axis=1))
    np.testing.assert_array_equal(count, [0, 2, 1])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(-50, 50), unique=True, max_size=12),
    st.lists(st.integers(-80, 120), unique=True, min_size=1, max_size=12),
)
def test_union_of_sorted_ids_keeps_every_code_consistent(old, new):
    """Merged ids hold every old and new id once and the maps point at them; the merge
    stays sorted when the fresh ids come sorted or all after the held ones (then in
    any order, and no held code moves)."""
    old_ids, new_ids = np.array(sorted(old), dtype=np.int64), np.array(new, dtype=np.int64)
    merged, old_map, new_map, fresh = _incremental._union_ids(old_ids, new_ids, "task")
    np.testing.assert_array_equal(merged[old_map], old_ids)
    np.testing.assert_array_equal(merged[new_map], new_ids)
    assert sorted(set(old) | set(new)) == sorted(merged.tolist())
    assert len(merged) == len(set(old) | set(new))
    assert set(fresh.tolist()) == set(new) - set(old)
    fresh_in_order = [i for i in new if i not in set(old)]
    after = len(old) == 0 or min(new) > max(old)
    if after or fresh_in_order == sorted(fresh_in_order):
        assert merged.tolist() == sorted(merged.tolist())
    if after:
        np.testing.assert_array_equal(old_map, np.arange(len(old)))


@pytest.mark.parametrize("model_class", EM)
def test_new_tasks_go_into_the_spare_rows_the_fit_left(model_class):
    """The fit's posterior table has spare rows: an update that adds tasks writes
    them there (no copy of the table), and the result equals a copied table's."""
    crowd = independent_confusion(n_worker=12, n_task=400, n_classes=3, feedback=4, seed=5)
    ids = crowd.task_ids[crowd.task]
    late = crowd.task >= 396
    old, new = (
        CrowdData.from_arrays(ids[rows], crowd.worker[rows], crowd.label[rows])
        for rows in (~late, late)
    )
    model = model_class(progress=False).fit(old)
    before = model.probas_
    assert before.base is not None and len(before.base) >= 400
    model.partial_fit(new, refresh=0)
    assert np.shares_memory(model.probas_, before)
    compact = model_class(progress=False).fit(old)
    compact.probas_ = compact.probas_.copy()  # no spare rows: the update copies
    compact.partial_fit(new, refresh=0)
    assert not np.shares_memory(compact.probas_, before)
    np.testing.assert_array_equal(compact.probas_, model.probas_)
    np.testing.assert_array_equal(compact.labels_, model.labels_)
