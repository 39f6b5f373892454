"""Free texts through the command line: a Toloka export of transcriptions is aggregated
with no option (kind told by the export) and ``--kind text -s NAME`` on a long table."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.aggregation.texts import DEFAULT_STRATEGY, ROVER, make_aggregator
from crowdlearn.cli import cli
from crowdlearn.data import Texts


def run(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


ROWS = [
    ("a.mp3", "the cat sat on the mat", 1),
    ("a.mp3", "the cat sat on a mat", 2),
    ("a.mp3", "the cat sat on the mat", 3),
    ("b.mp3", "a dog ran away", 1),
    ("b.mp3", "the dog ran away", 2),
    ("b.mp3", "a dog ran", 3),
]


def _texts() -> Texts:
    task, text, worker = zip(*ROWS, strict=True)
    return Texts.from_arrays(task, worker, text)


def test_a_transcription_export_is_aggregated_as_texts(tmp_path):
    path = tmp_path / "assignments.tsv"
    frame = pd.DataFrame(ROWS, columns=["INPUT:audio", "OUTPUT:text", "ASSIGNMENT:worker_id"])
    frame.to_csv(path, sep="\t", index=False)
    result = run("aggregate", path, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert f"strategy {DEFAULT_STRATEGY} (the default for free texts)" in result.stderr
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    assert list(labels.columns) == ["task", "text", "confidence"]
    data = _texts()
    expected = make_aggregator(DEFAULT_STRATEGY).fit(data).texts_.tolist()
    assert labels["text"].tolist() == expected
    workers = json.loads((tmp_path / "out" / "workers.json").read_text())
    assert set(workers["accuracy"]) == {"1", "2", "3"}


def test_kind_text_on_a_long_table(tmp_path):
    path = tmp_path / "answers.csv"
    pd.DataFrame(ROWS, columns=["task", "label", "worker"]).to_csv(path, index=False)
    result = run("aggregate", path, "--kind", "text", "-s", "rover", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    data = _texts()
    assert labels["text"].tolist() == ROVER().fit(data).texts_.tolist()


@pytest.mark.parametrize("cell", ['"   "', ""])
def test_an_empty_transcription_fails_in_one_line_and_writes_nothing(tmp_path, cell):
    path = tmp_path / "said.csv"
    path.write_text(f"task,worker,label\na,w1,the cat\na,w2,{cell}\n")
    result = CliRunner().invoke(
        cli, ["aggregate", str(path), "--kind", "text", "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error:"), lines
    assert "row" in lines[0]
    assert not (tmp_path / "out").exists()
