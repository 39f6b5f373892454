"""Worker and task scores of spans (crowdlearn.identify.spans), checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from crowdlearn.aggregation.spans import TokenMajorityVote
from crowdlearn.data.spans import Spans
from crowdlearn.identify import spans as identify
from crowdlearn.metrics import span_scores

TOKENS = {"d1": ["Ada", "Lovelace", "met", "Babbage"], "d2": ["Rome", "fell"]}


def _data(truth: bool = True) -> Spans:
    rows = [
        ("d1", "a", ["B-PER", "I-PER", "O", "B-PER"]),
        ("d1", "b", ["B-PER", "I-PER", "O", "O"]),
        ("d1", "c", ["O", "O", "O", "O"]),
        ("d2", "a", ["B-LOC", "O"]),
    ]
    task, worker, tags = zip(*rows, strict=True)
    gold = {"d1": ["B-PER", "I-PER", "O", "B-PER"], "d2": ["B-LOC", "O"]}
    return Spans.from_tags(task, worker, tags, tokens=TOKENS, truth=gold if truth else None)


def test_pair_f1():
    assert identify.pair_f1(set(), set()) == 1.0
    assert identify.pair_f1({(0, 2, 0)}, set()) == 0.0
    assert identify.pair_f1({(0, 2, 0), (3, 4, 0)}, {(0, 2, 0)}) == 2 / 3


def test_worker_scores_pool_over_the_tasks_a_worker_answered():
    data = _data()
    # reference: d1 {Ada Lovelace PER}, d2 {Rome LOC}
    reference = {0: {(0, 2, data.labels.tolist().index("PER"))},
                 1: {(0, 1, data.labels.tolist().index("LOC"))}}  # fmt: skip
    scores = identify.worker_scores(data, reference)
    assert scores["n_tasks"].tolist() == [2, 1, 1]
    assert scores["n_spans"].tolist() == [3, 1, 0]
    np.testing.assert_allclose(scores["precision"][:2], [2 / 3, 1.0])
    np.testing.assert_allclose(scores["recall"], [1.0, 1.0, 0.0])
    assert math.isnan(scores["precision"][2])  # marked nothing: no precision
    assert math.isnan(scores["f1"][2])
    np.testing.assert_allclose(scores["f1"][0], 0.8)


def test_task_scores_agreement_is_the_mean_pairwise_span_f1():
    scores = identify.task_scores(_data())
    # d1: a-b 2*1/3, a-c 0, b-c 0 -> 2/9; d2: one worker -> NaN
    np.testing.assert_allclose(scores["agreement"][0], 2 / 9)
    assert math.isnan(scores["agreement"][1])
    assert scores["n_workers"].tolist() == [3, 1]
    assert scores["n_spans"].tolist() == [3, 1]


def test_reference_codes_and_truth_in_ids():
    data = _data()
    frame = pd.DataFrame(
        {"task": ["d1", "d1", "d9"], "start": [0, 3, 0], "end": [2, 4, 1],
         "label": ["PER", "ORG", "PER"]}
    )  # fmt: skip
    codes = identify.reference_codes(frame, data)
    per = data.labels.tolist().index("PER")
    # ORG is no label of the data: it matches no worker span; d9 is no task: dropped
    assert codes == {0: {(0, 2, per), (3, 4, -2)}}
    truth = identify.data_truth(data)
    assert truth.values.tolist() == [["d1", 0, 2, "PER"], ["d1", 3, 4, "PER"], ["d2", 0, 1, "LOC"]]
    assert identify.truth_codes(_data(truth=False)) is None
    assert identify.data_truth(_data(truth=False)) is None


def test_truth_scores_restricted_to_tasks_equal_span_scores_on_them():
    data = _data()
    predicted = TokenMajorityVote().fit(data).predict()
    truth = identify.data_truth(data)
    on_d1 = identify.truth_scores(predicted, truth, ["d1"])
    expected = span_scores(predicted[predicted.task == "d1"], truth[truth.task == "d1"])
    assert on_d1 == expected
    assert identify.truth_scores(predicted, truth) == span_scores(predicted, truth)


def test_worker_frame_joins_the_models_scores_by_worker_id():
    data = _data()
    model = TokenMajorityVote().fit(data)
    model.worker_scores_ = pd.DataFrame({"worker": ["c", "a"], "skill": [0.1, 0.9]})
    frame = identify.worker_frame(data, model, model.predict())
    assert frame["worker"].tolist() == ["a", "b", "c"]
    np.testing.assert_allclose(frame["model_skill"], [0.9, np.nan, 0.1])
    assert {"truth_precision", "truth_recall", "truth_f1"} <= set(frame.columns)
    tasks = identify.task_frame(data, model.predict())
    assert tasks["n_consensus_spans"].tolist() == [1, 1]
