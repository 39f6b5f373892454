"""The span-crowd simulator: truth valid, worker errors at their stated rates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.data import Spans
from crowdlearn.simulate.spans import simulate_spans

PERFECT = {"miss": 0, "boundary": 0, "type_confusion": 0, "false_spans": 0}


def _spans(data: Spans) -> pd.DataFrame:
    """Code-level span rows (no "marked nothing" rows)."""
    keep = data.label >= 0
    return pd.DataFrame(
        {"task": data.task[keep], "worker": data.worker[keep], "start": data.start[keep],
         "end": data.end[keep], "label": data.label[keep]}
    )  # fmt: skip


def _inside_sentences(frame: pd.DataFrame, data: Spans, starts: list[np.ndarray]) -> bool:
    """Whether no span of ``frame`` crosses a sentence start."""
    for task, s, e in frame[["task", "start", "end"]].itertuples(index=False):
        bounds = np.r_[starts[task], data.n_tokens[task]]
        sentence = np.searchsorted(bounds, s, side="right") - 1
        if e > bounds[sentence + 1]:
            return False
    return True


def _no_overlap(frame: pd.DataFrame, keys: list[str]) -> bool:
    ordered = frame.sort_values([*keys, "start"])
    same = (ordered[keys].shift() == ordered[keys]).all(axis=1)
    return bool((ordered["start"] >= ordered["end"].shift().where(same, -1)).all())


common = {
    "n_tasks": st.integers(1, 12),
    "per_task": st.integers(1, 4),
    "n_labels": st.integers(1, 6),
    "sentence_length": st.tuples(st.integers(1, 5), st.integers(5, 20)),
    "entity_rate": st.floats(0, 1),
    "mean_entity_length": st.floats(1, 4),
    "seed": st.integers(0, 2**16),
}


@settings(max_examples=40, deadline=None)
@given(**common)
def test_truth_and_worker_spans_are_valid(
    n_tasks, per_task, n_labels, sentence_length, entity_rate, mean_entity_length, seed
):
    data, info = simulate_spans(
        n_tasks, 5, per_task, n_labels, sentences=(1, 4), sentence_length=sentence_length,
        entity_rate=entity_rate, mean_entity_length=mean_entity_length,
        boundary=(0.3, 0.6), false_spans=(0.0, 1.0), random_state=seed, return_info=True,
    )  # fmt: skip
    truth = data.truth
    assert (truth["start"] < truth["end"]).all()
    assert (truth["end"] - truth["start"] <= 6).all()
    assert (truth["end"] <= data.n_tokens[truth["task"]]).all()
    assert _no_overlap(truth, ["task"])
    assert _inside_sentences(truth, data, info["sentence_starts"])
    spans = _spans(data)
    assert _no_overlap(spans, ["task", "worker"])
    assert _inside_sentences(spans, data, info["sentence_starts"])
    # every document seen by per_task distinct workers, each with its rows
    pairs = pd.DataFrame({"task": data.task, "worker": data.worker}).drop_duplicates()
    assert (pairs.groupby("task").size() == per_task).all() and len(pairs) == n_tasks * per_task


@settings(max_examples=40, deadline=None)
@given(**common)
def test_a_perfect_worker_reproduces_the_truth(
    n_tasks, per_task, n_labels, sentence_length, entity_rate, mean_entity_length, seed
):
    data = simulate_spans(
        n_tasks, 4, per_task, n_labels, sentence_length=sentence_length,
        entity_rate=entity_rate, mean_entity_length=mean_entity_length, random_state=seed,
        poor=0.5, **PERFECT,
    )  # fmt: skip
    spans = _spans(data)
    truth = data.truth
    for worker, mine in spans.groupby("worker"):
        seen = np.unique(data.task[data.worker == worker])
        expected = truth[truth["task"].isin(seen)]
        assert mine[["task", "start", "end", "label"]].values.tolist() == expected.values.tolist()
    assert len(spans) == len(truth) * per_task


@settings(max_examples=25, deadline=None)
@given(n_tasks=st.integers(1, 10), seed=st.integers(0, 2**16))
def test_miss_rate_one_gives_no_spans(n_tasks, seed):
    data = simulate_spans(
        n_tasks, 6, 3, entity_rate=0.3, miss=1.0, false_spans=0.0, random_state=seed
    )
    assert data.n_spans == 0 and (data.label == -1).all()
    assert data.n_annotations == 3 * n_tasks  # one "marked nothing" row per pair
    assert len(data.truth) > 0 or data.n_tokens.sum() < 50


def test_same_seed_same_crowd_and_ids():
    a = simulate_spans(n_tasks=15, random_state=4)
    assert a == simulate_spans(n_tasks=15, random_state=4)
    assert a != simulate_spans(n_tasks=15, random_state=5)
    assert a.task_ids[0] == "doc00000" and a.worker_ids[0] == "w000"
    assert list(a.task_ids) == sorted(a.task_ids)
    many = simulate_spans(n_tasks=3, n_labels=12, random_state=0)
    assert many.labels.tolist()[:2] == ["T01", "T02"] and len(many.labels) == 12


def _exact(data: Spans) -> tuple[pd.DataFrame, pd.DataFrame]:
    spans = _spans(data)
    merged = spans.merge(data.truth, on=["task", "start", "end"], how="left", suffixes=("", "_t"))
    return spans, merged


def test_each_error_happens_at_its_stated_rate():
    base = {"n_tasks": 300, "n_workers": 5, "per_task": 5, "poor": 0.0, "random_state": 1}
    # misses: the share of true entities a worker gives (with no other error) is 1 - miss
    data = simulate_spans(**base, **{**PERFECT, "miss": 0.3})
    spans = _spans(data)
    assert len(spans) / (5 * len(data.truth)) == pytest.approx(0.7, abs=0.01)
    # type confusion: exact bounds, another type, at the rate
    data = simulate_spans(**base, **{**PERFECT, "type_confusion": 0.2})
    _, merged = _exact(data)
    assert merged["label_t"].notna().all()
    assert (merged["label"] != merged["label_t"]).mean() == pytest.approx(0.2, abs=0.01)
    # boundaries: the type kept, the span moved for about the rate (less the extensions
    # that hit a sentence edge or a neighbouring entity)
    data = simulate_spans(**base, **{**PERFECT, "boundary": 0.5})
    _, merged = _exact(data)
    moved = merged["label_t"].isna().mean()
    assert 0.3 < moved <= 0.5
    # false spans: Poisson per sentence and worker (less those that overlap another)
    data, info = simulate_spans(
        **base, **{**PERFECT, "miss": 1.0, "false_spans": 0.2}, return_info=True
    )
    n_sentences = sum(len(s) for s in info["sentence_starts"])
    assert 0.8 * 0.2 < data.n_spans / (5 * n_sentences) <= 0.2 * 1.05


def test_poor_workers_are_worse():
    data, info = simulate_spans(n_tasks=200, n_workers=20, per_task=5, poor=0.3,
                                random_state=2, return_info=True)  # fmt: skip
    assert info["poor"].any() and not info["poor"].all()
    _, merged = _exact(data)
    hit = (merged["label"] == merged["label_t"]).groupby(merged["worker"]).mean()
    poor = info["poor"][hit.index]
    assert hit[poor].mean() < hit[~poor].mean()
    assert (info["miss"][info["poor"]] >= 0.15).all()  # 3 x at least 0.05


def test_token_vocabularies():
    data = simulate_spans(n_tasks=20, ambiguity=0.0, random_state=0)
    truth = data.truth
    inside = {(t, i) for t, s, e in truth[["task", "start", "end"]].values for i in range(s, e)}
    for t, tokens in enumerate(data.tokens):
        for i, token in enumerate(tokens):
            assert token[0].isupper() == ((t, i) in inside)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"per_task": 30}, "per_task=30 exceeds n_workers=20"),
        ({"miss": 1.5}, "miss must be in"),
        ({"miss": (0.4, 0.2)}, "low 0.4 exceeds high 0.2"),
        ({"sentences": (3,)}, "sentences must be a"),
        ({"mean_entity_length": 0.5}, "mean_entity_length must be in"),
        ({"confusion_matrix": np.eye(3)}, "must be 4 x 4"),
        ({"confusion_matrix": np.eye(4)}, "weight off its diagonal"),
        ({"n_labels": 1_000_000}, "n_labels must be at most 1000"),
    ],
)
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        simulate_spans(**kwargs)


def test_default_confusion_is_uniform_over_the_other_types():
    data = simulate_spans(n_tasks=400, n_labels=3, **{**PERFECT, "type_confusion": 1.0},
                          random_state=0)  # fmt: skip
    _, merged = _exact(data)
    pairs = pd.crosstab(merged["label_t"], merged["label"])
    assert (np.diag(pairs.to_numpy()) == 0).all()
    off = pairs.to_numpy()[~np.eye(3, dtype=bool)].reshape(3, 2)
    shares = off / off.sum(axis=1, keepdims=True)
    assert np.abs(shares - 0.5).max() < 0.05


def test_confusion_matrix_directs_the_wrong_types():
    matrix = np.zeros((4, 4))
    matrix[:, 0] = 1.0  # every confusion goes to type 0 (type 0's to type 1)
    matrix[0, 1] = 1.0
    data = simulate_spans(n_tasks=50, **{**PERFECT, "type_confusion": 1.0},
                          confusion_matrix=matrix, random_state=0)  # fmt: skip
    _, merged = _exact(data)
    expected = np.where(merged["label_t"] == 0, 1, 0)
    assert (merged["label"].to_numpy() == expected).all()
