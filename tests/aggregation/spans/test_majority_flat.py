"""The vectorised token majority vote gives exactly the per-task definition's result."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.aggregation.spans import TokenMajorityVote
from crowdlearn.aggregation.spans._flat import (
    repair_bio_flat,
    spans_of_codes,
    task_offsets,
    token_votes,
)
from crowdlearn.aggregation.spans.majority import bio_to_spans, repair_bio
from crowdlearn.data.spans import Spans
from crowdlearn.simulate.spans import simulate_spans


def per_task_vote(data: Spans) -> tuple[list, list, pd.DataFrame]:
    """The definition, one task at a time (the former implementation of ``fit``)."""
    n_tags = 1 + 2 * data.n_labels
    counts = [np.zeros((int(n), n_tags), dtype=np.int64) for n in data.n_tokens]
    for (task, _worker), codes in data.bio_codes().items():
        np.add.at(counts[task], (np.arange(len(codes)), codes), 1)
    tags, marginals = [], []
    rows: dict[str, list] = {"task": [], "start": [], "end": [], "label": [], "score": []}
    for task, table in enumerate(counts):
        share = table / np.maximum(table.sum(axis=1, keepdims=True), 1)
        marginals.append(share)
        winners = table == table.max(axis=1, keepdims=True)
        chosen = np.where(winners.sum(axis=1) == 1, table.argmax(axis=1), 0)
        chosen = repair_bio(chosen.astype(np.int32))
        tags.append(chosen)
        for start, end, label in bio_to_spans(chosen):
            rows["task"].append(data.task_ids[task])
            rows["start"].append(start)
            rows["end"].append(end)
            rows["label"].append(data.labels[label])
            rows["score"].append(float(share[np.arange(start, end), chosen[start:end]].mean()))
    frame = pd.DataFrame(rows).astype({"start": np.int64, "end": np.int64, "score": np.float64})
    return tags, marginals, frame


def assert_same(data: Spans) -> TokenMajorityVote:
    tags, marginals, frame = per_task_vote(data)
    model = TokenMajorityVote().fit(data)
    assert len(model.tags_) == len(tags) == data.n_tasks
    for mine, theirs in zip(model.tags_, tags, strict=True):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
    for mine, theirs in zip(model.marginals_, marginals, strict=True):
        assert np.array_equal(mine, theirs)
    pd.testing.assert_frame_equal(model.labels_, frame, check_exact=True)
    return model


@settings(max_examples=30, deadline=None)
@given(
    n_tasks=st.integers(1, 15),
    per_task=st.integers(1, 6),
    n_labels=st.integers(1, 4),
    long=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_same_as_per_task_on_simulated_crowds(n_tasks, per_task, n_labels, long, seed):
    data = simulate_spans(
        n_tasks, 8, per_task, n_labels, sentence_length=(1, 25),
        mean_entity_length=4 if long else 1.5, max_entity_length=14 if long else 6,
        boundary=(0.0, 0.6), false_spans=(0.0, 0.6), random_state=seed,
    )  # fmt: skip
    assert_same(data)


def test_same_with_ties_orphans_and_task_edges():
    # token ties go to O; an I- voted after O is repaired; spans end at their task's end
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = Spans.from_tags(
            ["a", "a", "b", "b", "b", "c"],
            ["w1", "w2", "w1", "w2", "w3", "w1"],
            [["B-X", "I-X"], ["B-X", "O"], ["I-Y", "B-X", "I-X"], ["I-Y", "B-X", "I-X"],
             ["O", "O", "B-Y"], ["I-X"]],
            tokens={"a": ["1", "2"], "b": ["1", "2", "3"], "c": ["1"]},
        )  # fmt: skip
    model = assert_same(data)
    assert model.labels_[["task", "start", "end", "label"]].values.tolist() == [
        ["a", 0, 1, "X"], ["b", 0, 1, "Y"], ["b", 1, 3, "X"], ["c", 0, 1, "X"],
    ]  # fmt: skip


def test_overlapping_spans_of_one_worker_later_row_wins():
    frame = pd.DataFrame(
        {"task": ["d"] * 4, "worker": ["u", "u", "v", "v"], "start": [0, 2, 3, 1],
         "end": [4, 3, 6, 5], "label": ["A", "B", "A", "B"]}
    )  # fmt: skip
    data = Spans.from_frame(frame, tokens={"d": list("abcdef")})
    assert_same(data)
    codes = data.bio_codes()
    votes = token_votes(data)
    expected = np.zeros_like(votes)
    for (_task, _worker), tags in codes.items():
        expected[np.arange(len(tags)), tags] += 1
    assert np.array_equal(votes, expected)


def test_no_span_at_all():
    data = Spans.from_tags(["d", "d"], ["u", "v"], [["O", "O"], ["O", "O"]],
                           tokens={"d": ["x", "y"]}, labels=["PER"])  # fmt: skip
    model = assert_same(data)
    assert model.labels_.empty and list(model.labels_.columns)[-1] == "score"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), min_size=1, max_size=12), min_size=1, max_size=6))
def test_flat_repair_and_spans_match_per_task(tasks):
    offsets = task_offsets(np.array([len(t) for t in tasks]))
    flat = repair_bio_flat(np.concatenate(tasks).astype(np.int32), offsets)
    repaired = [repair_bio(np.array(t, dtype=np.int32)) for t in tasks]
    assert np.array_equal(flat, np.concatenate(repaired))
    task, start, end, label = spans_of_codes(flat, offsets)
    expected = [(t, *span) for t, codes in enumerate(repaired) for span in bio_to_spans(codes)]
    assert list(zip(task.tolist(), start.tolist(), end.tolist(), label.tolist(),
                    strict=True)) == expected  # fmt: skip


def test_same_on_ner_mturk_val(shared_datasets):
    from crowdlearn.io.conll_folders import read_conll_folders

    root = shared_datasets / "ner_mturk_rodrigues" / "val"
    if not root.is_dir():
        pytest.skip("NER-MTurk val split not here")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = read_conll_folders(root)
    assert_same(data)
