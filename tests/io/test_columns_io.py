"""``columns=`` / ``truth_column=`` in the long-file readers, and ``io.default_columns``."""

from __future__ import annotations

import warnings

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crowdlearn import CrowdData
from crowdlearn.data import ColumnsRecognizedWarning, CrowdDataError
from crowdlearn.io import default_columns, read, read_csv, read_parquet

TABLE = {
    "question": ["q1", "q1", "q2", "q2"],
    "worker": ["w1", "w2", "w1", "w2"],
    "answer": ["a", "b", "b", "b"],
    "gold": ["b", "b", "b", "b"],
}
MAPPING = {"task": "question", "worker": "worker", "label": "answer"}


def expected(truth: bool = False) -> CrowdData:
    return CrowdData.from_arrays(
        TABLE["question"],
        TABLE["worker"],
        TABLE["answer"],
        truth={"q1": "b", "q2": "b"} if truth else None,
    )


@pytest.fixture(params=["csv", "parquet"])
def answers(request, tmp_path):
    path = tmp_path / f"answers.{request.param}"
    if request.param == "csv":
        pd.DataFrame(TABLE).to_csv(path, index=False)
    else:
        pq.write_table(pa.table(TABLE), path)
    return path


def reader(path):
    return read_csv if path.suffix == ".csv" else read_parquet


def test_readers_take_a_columns_mapping_silently(answers):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = reader(answers)(answers, columns=MAPPING)
    assert data.equals(expected())


def test_readers_recognise_question_worker_answer_with_a_note(answers):
    with pytest.warns(
        ColumnsRecognizedWarning, match="task=question, worker=worker, label=answer"
    ):
        data = reader(answers)(answers)
    assert data.equals(expected())


def test_truth_column_is_read_and_must_exist(answers):
    data = reader(answers)(answers, columns=MAPPING, truth_column="gold")
    assert data.equals(expected(truth=True))
    with pytest.raises(CrowdDataError, match="missing truth column 'nope'"):
        reader(answers)(answers, columns=MAPPING, truth_column="nope")


def test_default_columns_apply_to_read_and_explicit_arguments_win(answers):
    with default_columns(MAPPING, truth_column="gold"):
        assert read(answers).equals(expected(truth=True))
        assert read(answers, truth_column=None).equals(expected())
    # Outside the block the defaults are gone: recognition applies again.
    with pytest.warns(ColumnsRecognizedWarning):
        read(answers)


def test_default_columns_apply_to_dataframes():
    with default_columns({"task": "question", "label": "answer"}):
        assert read(pd.DataFrame(TABLE)).equals(expected())


def test_unrecognised_header_names_the_mapping(tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text("qq,ww,aa\n1,2,3\n")
    with pytest.raises(CrowdDataError, match=r"missing column\(s\).*columns=\{"):
        read_csv(path)
