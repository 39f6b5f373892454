"""Column mapping and recognition of common header spellings in ``CrowdData.from_frame``."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData
from crowdlearn.data import RECOGNISED_COLUMNS, ColumnsRecognizedWarning, CrowdDataError

ROWS = {"q": ["q1", "q1", "q2"], "w": ["w1", "w2", "w1"], "a": ["cat", "dog", "dog"]}


def frame(task: str, worker: str, label: str) -> pd.DataFrame:
    return pd.DataFrame({task: ROWS["q"], worker: ROWS["w"], label: ROWS["a"]})


def expected() -> CrowdData:
    return CrowdData.from_arrays(ROWS["q"], ROWS["w"], ROWS["a"])


def test_from_frame_columns_mapping_names_the_columns():
    df = frame("question", "worker", "answer")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a named mapping is used silently
        data = CrowdData.from_frame(
            df, columns={"task": "question", "worker": "worker", "label": "answer"}
        )
    assert data.equals(expected())


def test_from_frame_mapping_takes_precedence_over_keywords():
    df = frame("question", "annotator", "answer").assign(task="other")
    data = CrowdData.from_frame(
        df, task="task", columns={"task": "question", "worker": "annotator", "label": "answer"}
    )
    assert list(data.task_ids) == ["q1", "q2"]


def test_from_frame_mapping_truth_role_and_truth_column():
    df = frame("question", "worker", "answer").assign(gold=["dog", "dog", "cat"])
    by_role = CrowdData.from_frame(
        df, columns={"task": "question", "label": "answer", "truth": "gold"}
    )
    by_keyword = CrowdData.from_frame(
        df, columns={"task": "question", "label": "answer"}, truth_column="gold"
    )
    assert by_role.equals(by_keyword)
    assert list(by_role.classes[by_role.truth]) == ["dog", "cat"]


@pytest.mark.parametrize(
    ("task", "worker", "label"),
    [
        ("question", "worker", "answer"),
        ("item", "annotator", "response"),
        ("Question", "user", "annotation"),
        ("item_id", "performer", "value"),
    ],
)
def test_from_frame_recognises_common_spellings_with_a_note(task, worker, label):
    with pytest.warns(ColumnsRecognizedWarning, match="using columns") as record:
        data = CrowdData.from_frame(frame(task, worker, label))
    assert data.equals(expected())
    note = next(w.message for w in record if isinstance(w.message, ColumnsRecognizedWarning))
    assert note.columns == {"task": task, "worker": worker, "label": label}
    assert f"task={task}, worker={worker}, label={label}" in str(note)


def test_standard_names_are_used_without_a_note():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = CrowdData.from_frame(frame("task", "worker", "label").assign(answer="x"))
    assert data.equals(expected())


def test_ambiguous_spellings_are_an_error_listing_the_candidates():
    df = frame("question", "worker", "label").assign(item=ROWS["q"])
    with pytest.raises(CrowdDataError, match="several columns could be it: question, item"):
        CrowdData.from_frame(df)


def test_explicit_names_are_not_replaced_by_recognition():
    df = frame("question", "worker", "label")
    with pytest.raises(CrowdDataError, match=r"missing column\(s\) \['tid'\]"):
        CrowdData.from_frame(df, task="tid")


def test_bad_mappings_are_errors():
    df = frame("task", "worker", "label")
    with pytest.raises(CrowdDataError, match="unknown role"):
        CrowdData.from_frame(df, columns={"tsk": "task"})
    with pytest.raises(CrowdDataError, match="several roles"):
        CrowdData.from_frame(df, columns={"task": "worker"})
    with pytest.raises(CrowdDataError, match=r"missing column.*'gold'"):
        CrowdData.from_frame(df, truth_column="gold")


@settings(max_examples=40, deadline=None)
@given(
    task=st.sampled_from(RECOGNISED_COLUMNS["task"]),
    worker=st.sampled_from(RECOGNISED_COLUMNS["worker"]),
    label=st.sampled_from(RECOGNISED_COLUMNS["label"]),
    upper=st.booleans(),
)
def test_any_recognised_header_reads_like_the_standard_one(task, worker, label, upper):
    names = [n.upper() if upper else n for n in (task, worker, label)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ColumnsRecognizedWarning)
        data = CrowdData.from_frame(frame(*names))
    assert data.equals(expected())


def test_truth_named_twice_differently_is_an_error():
    df = frame("task", "worker", "label").assign(gold="dog", other="cat")
    with pytest.raises(CrowdDataError, match="truth is given twice"):
        CrowdData.from_frame(df, columns={"truth": "gold"}, truth="other")
