"""The platforms' own files through the command line: ``aggregate FILE -o OUT`` with no
option, ``inspect``, ``convert`` and ``--write-back`` (files in tests/io/platform_files)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.aggregation import DawidSkene
from crowdlearn.cli import cli
from crowdlearn.io import read

FILES = Path(__file__).parents[1] / "io" / "platform_files"


def run(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("mturk.csv", "Amazon Mechanical Turk"),
        ("toloka.tsv", "Toloka assignments"),
        ("labelstudio.json", "Label Studio JSON export"),
        ("prodigy.jsonl", "Prodigy JSONL"),
    ],
)
def test_aggregate_reads_each_export_with_no_option_and_says_how(tmp_path, name, said):
    result = run("aggregate", FILES / name, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert said in result.stderr
    assert "strategy ds (the default" in result.stderr
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    expected = DawidSkene().fit_predict(read(FILES / name).to_frame())
    assert sorted(labels["label"].astype(str)) == sorted(expected.astype(str))


def test_toloka_golden_answers_reach_dawid_skene_as_gold(tmp_path):
    result = run("aggregate", FILES / "toloka.tsv", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "gold: the export's known answers of 1 task(s)" in result.stderr
    probas = pd.read_csv(tmp_path / "out" / "probas.csv").set_index("task")
    assert probas.loc["http://a/2.png", "no"] == 1.0  # clamped to its gold answer


def test_a_folder_of_crowdflower_batches_of_label_sets(tmp_path):
    result = run("aggregate", FILES / "crowdflower", "-o", tmp_path / "out", "-s", "binary-mv")
    assert result.exit_code == 0, result.output
    assert "label sets" in result.stderr and "1 tainted" in result.stderr
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    assert list(labels.columns) == ["task", "CAUSES", "NONE", "SYMPTOM"]


def test_inspect_says_format_roles_counts_and_what_was_left_out(tmp_path):
    result = run("inspect", FILES / "mturk.csv")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "format: an Amazon Mechanical Turk batch results file" in out
    assert "columns: task=HITId, worker=WorkerId, label=Answer.category" in out
    assert "left out: 1 rejected assignments" in out
    assert "tasks: 2" in out and "annotations: 4" in out and "classes: cat, dog" in out
    assert not list(tmp_path.iterdir())  # nothing written anywhere


def test_inspect_a_compressed_semicolon_file(tmp_path):
    path = tmp_path / "crowd.csv.gz"
    path.write_bytes(gzip.compress(b"task;worker;label\n1;a;x\n1;b;y\n"))
    result = run("inspect", path)
    assert result.exit_code == 0, result.output
    assert "a gzip-compressed file" in result.stdout
    assert "separated by semicolons" in result.stdout
    assert "columns: task=task, worker=worker, label=label" in result.stdout


def test_several_answer_columns_fail_in_one_line_naming_them(tmp_path):
    path = tmp_path / "batch.csv"
    path.write_text("HITId,WorkerId,Answer.a,Answer.b\nH1,W1,x,y\n")
    result = run("aggregate", path, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0
    assert "Answer.a, Answer.b" in result.stderr and "--answer" in result.stderr
    assert not (tmp_path / "out").exists()
    ok = run("aggregate", path, "-o", tmp_path / "out", "--answer", "Answer.b", "-s", "mv")
    assert ok.exit_code == 0, ok.output


def test_write_back_gives_label_studio_predictions_and_a_toloka_table(tmp_path):
    out = tmp_path / "out"
    result = run(
        "aggregate", FILES / "labelstudio.json", "-o", out, "-s", "mv",
        "--write-back", "labelstudio", "--write-back", "toloka",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    tasks = json.loads((out / "labelstudio-predictions.json").read_text())
    assert [t["id"] for t in tasks] == [1, 2]
    assert tasks[0]["data"] == {"text": "good movie"}
    first = tasks[0]["predictions"][0]["result"][0]
    assert first["from_name"] == "sentiment" and first["value"]["choices"] == ["Positive"]
    table = pd.read_csv(out / "toloka-results.tsv", sep="\t")
    assert list(table.columns) == ["INPUT:task", "OUTPUT:result", "CONFIDENCE:result"]


def test_convert_writes_the_long_format(tmp_path):
    result = run("convert", FILES / "prodigy.jsonl", "-o", tmp_path / "long.csv")
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(tmp_path / "long.csv")
    assert list(frame.columns) == ["task", "worker", "label"] and len(frame) == 3
    sets = run("convert", FILES / "labelstudio-min.json", "-o", tmp_path / "sets.csv")
    assert sets.exit_code == 0, sets.output
    back = run("aggregate", tmp_path / "sets.csv", "--kind", "multilabel", "-s", "binary-mv",
               "-o", tmp_path / "agg")  # fmt: skip
    assert back.exit_code == 0, back.output


# ------------------------------------------------------------- issue 43: careless exports


def _one_line_error(result):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error:"), lines
    return lines[0]


def test_a_string_choice_is_one_class_and_mv_reads_it(tmp_path):
    # the sweep's reproduction: "choices": "cat" was the label set {a, c, t}, then -s mv
    # was refused as "a segmentation masks strategy"
    tasks = [
        {"id": 1, "annotations": [
            {"completed_by": 1, "result": [{"value": {"choices": "cat"}}]},
            {"completed_by": 2, "result": [{"value": {"choices": "cat"}}]},
            {"completed_by": 3, "result": [{"value": {"choices": ["dog"]}}]},
        ]},
        {"id": 2, "annotations": [{"completed_by": 1, "result": [{"value": {"choices": "dog"}}]}]},
    ]  # fmt: skip
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(tasks))
    result = run("aggregate", path, "-s", "mv", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    assert labels.set_index("task")["label"].to_dict() == {1: "cat", 2: "dog"}


def test_a_class_strategy_on_label_sets_names_the_class_kind_first(tmp_path):
    result = run("aggregate", FILES / "labelstudio-min.json", "-s", "mv", "-o", tmp_path / "out")
    line = _one_line_error(result)
    assert "unknown label sets strategy 'mv' (it is a one class per answer strategy: " in line
    assert "--kind class" in line
    assert not (tmp_path / "out").exists()


def test_padded_statuses_and_empty_worker_ids_are_left_out_with_a_note(tmp_path):
    path = tmp_path / "batch.csv"
    path.write_text(
        "HITId,WorkerId,AssignmentStatus,Answer.c\n"
        "H1,W1,Approved,cat\nH1,W2,Rejected ,dog\nH1,W3,REJECTED,dog\n"
        "H2,W1,Approved,dog\nH2,,Approved,cat\nH3,,Approved,cat\nH3,W2,approved,dog\n"
    )
    result = run("aggregate", path, "-s", "mv", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "left out 2 rejected assignments" in result.stderr
    assert "2 answers without a worker id" in result.stderr
    labels = pd.read_csv(tmp_path / "out" / "labels.csv").set_index("task")["label"]
    assert labels.to_dict() == {"H1": "cat", "H2": "dog", "H3": "dog"}
    workers = json.loads((tmp_path / "out" / "summary.json").read_text())["n_workers"]
    assert workers == 2


def test_prodigy_rejected_examples_are_noted_on_the_command_line(tmp_path):
    path = tmp_path / "p.jsonl"
    rows = [
        {"_input_hash": 1, "accept": ["POS"], "answer": "accept", "_annotator_id": "a"},
        {"_input_hash": 1, "accept": ["NEG"], "answer": "reject", "_annotator_id": "b"},
    ]
    path.write_text("\n".join(map(json.dumps, rows)) + "\n")
    result = run("aggregate", path, "-s", "mv", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "left out 1 rejected examples" in result.stderr


def test_a_null_jsonl_line_is_one_line_naming_file_and_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(
        json.dumps({"_input_hash": 1, "accept": ["POS"], "answer": "accept", "_annotator_id": "a"})
        + "\nnull\n"
    )
    line = _one_line_error(run("aggregate", path, "-s", "mv", "-o", tmp_path / "out"))
    assert "p.jsonl: line 2 is null, not a JSON object" in line
    assert not (tmp_path / "out").exists()
