"""``crowdlearn aggregate``: outputs keyed by the user's ids, options, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn import CrowdData
from crowdlearn.aggregation import GLAD, DawidSkene
from crowdlearn.cli import cli
from crowdlearn.io import write_csv
from crowdlearn.simulate import independent_confusion


@pytest.fixture
def crowd_csv(tmp_path):
    data = independent_confusion(n_worker=12, n_task=80, n_classes=3, feedback=4, seed=2)
    renamed = CrowdData.from_arrays(
        [f"task-{t}" for t in data.task],
        [f"w{w}" for w in data.worker],
        np.array(["cat", "dog", "owl"])[data.label],
    )
    path = tmp_path / "crowd.csv"
    write_csv(renamed, path)
    return path, renamed


def run(*args):
    return CliRunner().invoke(cli, ["aggregate", *map(str, args)])


def test_aggregate_writes_labels_probas_workers_history_keyed_by_ids(tmp_path, crowd_csv):
    path, data = crowd_csv
    result = run(path, "-s", "ds", "-o", tmp_path / "out", "--quiet")
    assert result.exit_code == 0, result.output
    expected = DawidSkene().fit(data)
    labels = pd.read_csv(tmp_path / "out" / "labels.csv").set_index("task")
    assert list(labels.index) == list(data.task_ids)
    assert list(labels["label"]) == list(data.classes[expected.labels_])
    np.testing.assert_allclose(labels["probability"], expected.probas_.max(axis=1))
    probas = pd.read_csv(tmp_path / "out" / "probas.csv").set_index("task")
    assert list(probas.columns) == ["cat", "dog", "owl"]
    np.testing.assert_allclose(probas.to_numpy(), expected.probas_)
    workers = json.loads((tmp_path / "out" / "workers.json").read_text())
    assert set(workers["confusions"]) == set(data.worker_ids)
    code = list(data.worker_ids).index("w3")  # ids sort as text: w0, w1, w10, w11, w2, ...
    np.testing.assert_allclose(workers["confusions"]["w3"], expected.confusions_[code])
    history = pd.read_csv(tmp_path / "out" / "history.csv")
    assert len(history) == expected.n_iter_
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["strategy"] == "DawidSkene" and summary["classes"] == ["cat", "dog", "owl"]


def test_parameters_parquet_output_and_task_attributes(tmp_path, crowd_csv):
    path, data = crowd_csv
    result = run(
        path,
        "-s",
        "glad",
        "--param",
        "max_iter=3",
        "--param",
        "tol=0",
        "-o",
        tmp_path / "out",
        "--format",
        "parquet",
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    labels = pd.read_parquet(tmp_path / "out" / "labels.parquet")
    expected = GLAD(max_iter=3, tol=0).fit(data)
    np.testing.assert_allclose(labels["betas"], expected.betas_)
    assert len(pd.read_parquet(tmp_path / "out" / "history.parquet")) == 3


def test_bracket_specs_and_gold(tmp_path, crowd_csv):
    path, data = crowd_csv
    gold = tmp_path / "gold.csv"
    pd.DataFrame({"task": data.task_ids[:5], "label": ["owl"] * 5}).to_csv(gold, index=False)
    result = run(
        path,
        "-s",
        "ds[max_iter=5,smoothing=0.5]",
        "--gold",
        gold,
        "-o",
        tmp_path / "out",
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    assert (labels["label"][:5] == "owl").all()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["params"]["smoothing"] == 0.5 and summary["n_iter"] <= 5


def test_list_shows_every_strategy():
    from crowdlearn.aggregation import STRATEGIES

    result = CliRunner().invoke(cli, ["aggregate", "--list"])
    assert result.exit_code == 0
    for name in STRATEGIES:
        assert name in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "nope"], "unknown strategy 'nope'"),
        (["-s", "ds", "--param", "max_iters=3"], "no parameter 'max_iters'"),
        (["-s", "ds", "--param", "max_iter=lots"], "expects a int"),
        (["-s", "mv", "--gold", "GOLD"], "does not take gold"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(tmp_path, crowd_csv, args, message):
    path, _ = crowd_csv
    gold = tmp_path / "gold.csv"
    gold.write_text("task,label\ntask-0,cat\n")
    args = [str(gold) if a == "GOLD" else a for a in args]
    result = run(path, *args, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (tmp_path / "out").exists()
