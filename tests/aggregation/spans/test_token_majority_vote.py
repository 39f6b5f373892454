"""Token majority vote over spans, and strict span F1 (also on the real NER-MTurk val split)."""

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdlearn.aggregation.spans import TokenMajorityVote
from crowdlearn.aggregation.spans.majority import bio_to_spans, repair_bio
from crowdlearn.data import CrowdDataWarning
from crowdlearn.data.spans import Spans
from crowdlearn.metrics import span_f1, span_scores


def _fit(tags, tokens=("a", "b", "c")):
    workers = [f"w{i}" for i in range(len(tags))]
    data = Spans.from_tags(["d"] * len(tags), workers, tags, tokens={"d": list(tokens)})
    return TokenMajorityVote().fit(data)


def test_majority_per_token_and_ties_to_o():
    mv = _fit([["B-A", "I-A", "O"], ["B-A", "O", "B-B"], ["B-A", "I-A", "O"], ["O", "O", "B-C"]])
    # token 0: B-A 3 votes; token 1: I-A 2 vs O 2 -> tie -> O; token 2: O 2, B-B 1, B-C 1 -> O
    assert mv.predict().values.tolist() == [["d", 0, 1, "A", 0.75]]  # 3 of 4 workers
    np.testing.assert_allclose([m.sum(axis=1) for m in mv.marginals_], [[1.0, 1.0, 1.0]])


def test_result_is_repaired_to_valid_bio():
    with pytest.warns(CrowdDataWarning, match="3 I- tag"):  # the workers' orphan I-A
        mv = _fit([["O", "I-A", "I-A"], ["B-B", "I-A", "I-A"], ["O", "I-A", "O"]])
    # voted: O, I-A, I-A -> the orphan I-A opens a span
    # the score: mean of 3/3 (B-A on token 1) and 2/3 (I-A on token 2)
    assert mv.predict()[["task", "start", "end", "label"]].values.tolist() == [["d", 1, 3, "A"]]
    assert mv.predict()["score"].tolist() == pytest.approx([(1 + 2 / 3) / 2])


def test_repair_and_read_codes():
    codes = repair_bio(np.array([2, 2, 0, 4, 1, 2]))
    assert codes.tolist() == [1, 2, 0, 3, 1, 2]
    assert bio_to_spans(codes) == [(0, 2, 0), (3, 4, 1), (4, 6, 0)]


def test_span_scores_strict():
    truth = pd.DataFrame({"task": [0, 0, 1], "start": [0, 3, 0], "end": [2, 4, 1],
                          "label": ["P", "L", "P"]})  # fmt: skip
    pred = pd.DataFrame({"task": [0, 0, 1], "start": [0, 3, 0], "end": [2, 4, 1],
                         "label": ["P", "P", "P"]})  # fmt: skip
    s = span_scores(pred, truth)
    assert s["n_correct"] == 2 and s["precision"] == pytest.approx(2 / 3)
    assert span_f1(truth, truth) == 1.0
    assert span_f1(truth.iloc[:0], truth) == 0.0


def test_fit_refuses_other_kinds():
    with pytest.raises(TypeError, match="fits Spans"):
        TokenMajorityVote().fit(object())


def test_ner_mturk_val_token_majority_vote(shared_datasets):
    from crowdlearn.io.conll_folders import read_conll_folders

    root = shared_datasets / "ner_mturk_rodrigues" / "val"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = read_conll_folders(root)
    # PROVENANCE.md: 200 documents, 46 workers, 40,360 gold tokens, 5,276 gold entities.
    assert (data.n_tasks, data.n_workers, int(data.n_tokens.sum())) == (200, 46, 40360)
    assert len(data.truth) == 5276
    predicted = TokenMajorityVote().fit(data).predict()
    truth = data.truth.assign(
        task=data.task_ids[data.truth.task], label=data.labels[data.truth.label]
    )
    scores = span_scores(predicted, truth)
    print(f"NER-MTurk val, token MV: strict span {scores}")
    # The issue quotes F1 0.647 (P 0.806, R 0.540); the tie rule alone moves token MV
    # over 0.611-0.649 here (benchmark spans-aggregation's control), so the band is loose.
    assert 0.58 <= scores["f1"] <= 0.70
    assert scores["precision"] > scores["recall"]
