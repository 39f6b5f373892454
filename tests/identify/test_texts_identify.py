"""Worker and task scores for free texts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.data import CrowdData, Texts
from crowdlearn.identify.texts import task_scores, worker_scores
from crowdlearn.metrics import word_error_rate

WORDS = ["a", "b", "cat", "dog", "sat"]


def test_a_careless_worker_scores_worst():
    rng = np.random.default_rng(1)
    truth = [" ".join(rng.choice(WORDS, size=5)) for _ in range(20)]
    rows = []
    for t, sentence in enumerate(truth):
        rows += [(t, "good1", sentence), (t, "good2", sentence), (t, "good3", sentence)]
        rows.append((t, "careless", " ".join(rng.choice(WORDS, size=3))))
    data = Texts.from_arrays(*zip(*rows, strict=True))
    scores = worker_scores(data)
    careless = data.worker_ids.tolist().index("careless")
    for name in ("wer_to_consensus", "wer_to_others"):
        assert np.argmax(scores[name]) == careless
    # the consensus is the truth here: the careless worker's WER is its WER to the truth
    mine = data.worker == careless
    expected = word_error_rate(data.text[mine], [truth[t] for t in data.task[mine]])
    assert scores["wer_to_consensus"][careless] == pytest.approx(expected)
    assert scores["n_texts"].tolist() == [20, 20, 20, 20]


@settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
        min_size=1,
        max_size=5,
    )
)
def test_task_disagreement_is_the_mean_pairwise_wer(texts):
    data = Texts.from_arrays([0] * len(texts), list(range(len(texts))), texts)
    got = task_scores(data)["disagreement"][0]
    if len(texts) == 1:
        assert np.isnan(got)
        return
    pairs = [
        word_error_rate([a], [b])
        for i, a in enumerate(texts)
        for j, b in enumerate(texts)
        if i != j
    ]
    assert got == pytest.approx(np.mean(pairs))
    assert task_scores(data)["n_texts"].tolist() == [len(texts)]


def test_unanimous_tasks_have_no_disagreement_and_type_is_checked():
    data = Texts.from_arrays([0, 0, 1], [0, 1, 0], ["Hi there", "hi, there!", "x"])
    scores = task_scores(data)
    assert scores["disagreement"][0] == 0.0 and np.isnan(scores["disagreement"][1])
    assert np.isnan(worker_scores(data)["wer_to_others"]).tolist() == [False, False]
    with pytest.raises(TypeError, match="Texts"):
        worker_scores(CrowdData.from_arrays([0], [0], [0]))
