"""``crowdlearn simulate spans``: per-worker CoNLL folders that read back as simulated."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.data import CrowdDataError
from crowdlearn.io.conll_folders import read_conll_folders
from crowdlearn.io.conll_writer import write_conll_folders
from crowdlearn.simulate.spans import simulate_spans


def invoke(*args: object) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _same_crowd(read: object, simulated: object) -> None:
    """Same documents, tokens, truth and worker spans (by ids)."""
    assert read.task_ids.tolist() == simulated.task_ids.tolist()
    assert read.tokens == simulated.tokens
    assert read.labels.tolist() == simulated.labels.tolist()
    pd.testing.assert_frame_equal(read.truth, simulated.truth)

    def rows(data):
        frame = data.to_frame().astype({"task": str, "worker": str, "label": object})
        return frame.sort_values(["task", "worker", "start"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(rows(read), rows(simulated))


def test_simulate_spans_reads_back_as_simulated(tmp_path):
    out = tmp_path / "sim"
    args = ["--n-task", 40, "--n-worker", 6, "--feedback", 3, "--seed", 2, "--ratio", 0.5]
    result = invoke("simulate", "spans", "-o", out, *args)
    assert result.exit_code == 0, result.output
    assert "spans: Spans(n_tasks=40" in result.output
    simulated = simulate_spans(n_tasks=40, n_workers=6, per_task=3, poor=0.5, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same tokens everywhere: nothing aligned
        read = read_conll_folders(out)
    _same_crowd(read, simulated)
    details = json.loads((out / "simulation.json").read_text())
    assert details["params"] == {"n_tasks": 40, "n_workers": 6, "per_task": 3, "poor": 0.5,
                                 "seed": 2}  # fmt: skip
    assert set(details["workers"]) == {f"w00{i}" for i in range(6)}
    # sentences are separated by a blank line
    text = (out / "ground_truth" / "doc00000.txt").read_text()
    assert "\n\n" in text and text.endswith("\n")


def test_fixed_rates_from_the_command_line(tmp_path):
    out = tmp_path / "perfect"
    rates = ["--miss", 0, "--boundary", 0, "--type-confusion", 0, "--false-spans", 0]
    result = invoke("simulate", "spans", "-o", out, "--n-task", 10, *rates)
    assert result.exit_code == 0, result.output
    read = read_conll_folders(out)
    truth = read.truth.assign(task=read.task_ids[read.truth["task"]],
                              label=read.labels[read.truth["label"]])  # fmt: skip
    keys = ["task", "start", "end", "label"]
    for _worker, spans in read.to_frame().dropna().groupby("worker"):
        seen = truth[truth["task"].isin(spans["task"].unique())]
        assert spans[keys].astype(str).values.tolist() == seen[keys].astype(str).values.tolist()
    details = json.loads((out / "simulation.json").read_text())
    assert all(w["miss"] == 0 for w in details["workers"].values())


def test_silent_workers_get_a_file_of_o(tmp_path):
    data = simulate_spans(n_tasks=4, n_workers=3, per_task=2, miss=1.0, false_spans=0.0)
    write_conll_folders(data, tmp_path)
    files = sorted(tmp_path.glob("mturk_train_data/*/*.txt"))
    assert len(files) == 8
    assert all({line.split()[-1] for line in f.read_text().split("\n") if line} == {"O"}
               for f in files)  # fmt: skip
    _same_crowd(read_conll_folders(tmp_path), data)


def test_writer_refuses_ids_and_tokens_it_cannot_write(tmp_path):
    data = simulate_spans(n_tasks=2, n_workers=3, per_task=2)
    bad_ids = type(data)(
        data.task, data.worker, data.start, data.end, data.label, tokens=data.tokens,
        task_ids=np.array(["a/b", "c"], dtype=object), worker_ids=data.worker_ids,
        labels=data.labels,
    )  # fmt: skip
    with pytest.raises(CrowdDataError, match="'a/b' cannot name a file"):
        write_conll_folders(bad_ids, tmp_path)
    spaced = type(data)(
        data.task, data.worker, data.start, data.end, data.label,
        tokens=[("two words", *data.tokens[0][1:]), data.tokens[1]],
        task_ids=data.task_ids, worker_ids=data.worker_ids, labels=data.labels,
    )  # fmt: skip
    with pytest.raises(CrowdDataError, match="white space"):
        write_conll_folders(spaced, tmp_path)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--feedback", 30], "--feedback 30 exceeds --n-worker 20"),
        (["--workerload", 3], "--workerload: not an option of strategy 'spans'"),
    ],
)
def test_bad_options(tmp_path, args, message):
    result = CliRunner().invoke(cli, ["simulate", "spans", "-o", str(tmp_path / "o"),
                                      *map(str, args)])  # fmt: skip
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "o").exists()


def test_span_options_belong_to_spans(tmp_path):
    result = CliRunner().invoke(cli, ["simulate", "ratings", "-o", str(tmp_path / "o"),
                                      "--miss", "0.2"])  # fmt: skip
    assert result.exit_code == 2 and "--miss: not an option of strategy 'ratings'" in result.output
