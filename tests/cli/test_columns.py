"""``--columns`` and ``--truth-column`` on the commands that read long files."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.io import read

TABLE = pd.DataFrame(
    {
        "question": ["q1", "q1", "q1", "q2", "q2", "q2", "q3", "q3"],
        "worker": ["w1", "w2", "w3", "w1", "w2", "w3", "w1", "w2"],
        "answer": ["a", "a", "b", "b", "b", "b", "a", "a"],
        "gold": ["a", "a", "a", "b", "b", "b", "a", "a"],
    }
)
NOTE = "crowdlearn: note: using columns task=question, worker=worker, label=answer"


@pytest.fixture
def answer_csv(tmp_path):
    path = tmp_path / "answer.csv"
    TABLE.to_csv(path, index=False)
    return path


def run(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


def test_aggregate_with_columns(tmp_path, answer_csv):
    result = run(
        "aggregate", answer_csv, "--columns", "task=question,worker=worker,label=answer",
        "-s", "ds", "-o", tmp_path / "out", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "note:" not in result.stderr
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    assert list(labels["task"]) == ["q1", "q2", "q3"]
    assert list(labels["label"]) == ["a", "b", "a"]


def test_aggregate_without_columns_prints_the_note(tmp_path, answer_csv):
    result = run("aggregate", answer_csv, "-s", "mv", "-o", tmp_path / "out", "--quiet")
    assert result.exit_code == 0, result.output
    assert NOTE in result.stderr.splitlines()
    assert list(pd.read_csv(tmp_path / "out" / "labels.csv")["label"]) == ["a", "b", "a"]


def test_convert_with_columns_and_truth_column(tmp_path, answer_csv):
    out = tmp_path / "long.csv"
    result = run(
        "convert", answer_csv, "-o", out,
        "--columns", "task=question,label=answer", "--truth-column", "gold",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = read(out)
    assert list(data.classes[data.truth]) == ["a", "b", "a"]


@pytest.mark.parametrize("command", ["identify", "report", "learn"])
def test_every_reading_command_has_the_options(command):
    result = run(command, "--help")
    assert "--columns" in result.output and "--truth-column" in result.output


def test_identify_reads_renamed_columns(tmp_path, answer_csv):
    result = run(
        "identify", answer_csv, "--columns", "task=question,worker=worker,label=answer",
        "-o", tmp_path / "scores",
    )  # fmt: skip
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("task", "expected ROLE=COLUMN"),
        ("tsk=question", "unknown role 'tsk'"),
        ("task=a,task=b", "named twice"),
    ],
)
def test_bad_columns_values_are_usage_errors(tmp_path, answer_csv, value, message):
    result = run("aggregate", answer_csv, "--columns", value, "-s", "mv", "-o", tmp_path / "o")
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "o").exists()


def test_ambiguous_header_is_one_line_naming_the_flag(tmp_path):
    path = tmp_path / "two.csv"
    TABLE.assign(item=TABLE["question"]).to_csv(path, index=False)
    result = run("aggregate", path, "-s", "mv", "-o", tmp_path / "o")
    assert result.exit_code == 2
    assert "several columns could be it: question, item" in result.stderr
    assert "--columns task=NAME" in result.stderr


def test_duplicate_pair_message_carries_the_keyword_to_translate(tmp_path):
    path = tmp_path / "dup.csv"
    pd.DataFrame({"task": [1, 1], "worker": [1, 1], "label": [0, 1]}).to_csv(path, index=False)
    result = run("aggregate", path, "-s", "mv", "-o", tmp_path / "o")
    assert result.exit_code == 2
    # The CLI's error boundary translates "duplicates=" into "--duplicates keep|first|last".
    assert "duplicates=" in result.stderr or "--duplicates" in result.stderr


def test_unknown_header_names_the_flag(tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text("qq,ww,aa\n1,2,3\n")
    result = run("aggregate", path, "-s", "mv", "-o", tmp_path / "o")
    assert result.exit_code == 2
    assert "--columns task=...,worker=...,label=..." in result.stderr


def test_dask_engine_refuses_columns_instead_of_ignoring_them(tmp_path, answer_csv):
    result = run(
        "aggregate", answer_csv, "--engine", "dask", "--columns", "task=question",
        "-s", "ds", "-o", tmp_path / "o",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "not supported with --engine dask" in result.output
