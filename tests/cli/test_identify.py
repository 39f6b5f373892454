"""``crowdlearn identify``: score tables keyed by ids, agreement, pruning, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn import CrowdData
from crowdlearn.cli import cli
from crowdlearn.identify import compute, krippendorff_alpha
from crowdlearn.io import read, write_csv
from crowdlearn.simulate import hammer_spammer


@pytest.fixture
def crowd_csv(tmp_path):
    data = hammer_spammer(n_worker=12, n_task=80, n_classes=3, ratio=0.5, feedback=4, seed=2)
    renamed = CrowdData.from_arrays(
        [f"task-{t}" for t in data.task],
        [f"w{w}" for w in data.worker],
        np.array(["cat", "dog", "owl"])[data.label],
    )
    path = tmp_path / "crowd.csv"
    write_csv(renamed, path)
    return path, renamed


def run(*args):
    return CliRunner().invoke(cli, ["identify", *map(str, args)])


def test_identify_writes_task_and_worker_tables_keyed_by_ids(tmp_path, crowd_csv):
    path, data = crowd_csv
    out = tmp_path / "out"
    result = run(path, "-s", "spammer", "-s", "entropy", "-s", "trace", "-o", out)
    assert result.exit_code == 0, result.output
    workers = pd.read_csv(out / "workers.csv")
    tasks = pd.read_csv(out / "tasks.csv")
    assert list(workers.columns)[:3] == ["worker", "spammer", "trace"]
    assert list(workers.columns)[3:] == [
        "decision",
        "n_labels",
        "expected_correct",
        "accuracy",
        "accuracy_low",
        "accuracy_high",
        "chance",
    ]
    assert list(tasks.columns) == ["task", "entropy"]
    expected = compute(data, ["spammer", "entropy"])
    np.testing.assert_allclose(
        workers.set_index("worker")["spammer"].loc[data.worker_ids],
        expected["worker"]["spammer"].to_numpy(),
    )
    assert set(tasks["task"]) == set(data.task_ids)
    agreement = json.loads((out / "agreement.json").read_text())
    assert agreement["krippendorff_alpha"] == pytest.approx(krippendorff_alpha(data))
    assert set(agreement["class_agreement"]) == {"cat", "dog", "owl"}


def test_prune_drops_the_lowest_scored_workers_and_highest_entropy_tasks(tmp_path, crowd_csv):
    path, data = crowd_csv
    out = tmp_path / "out"
    result = run(path, "--prune", "spammer=0.25", "--prune", "entropy=0.1", "-o", out)
    assert result.exit_code == 0, result.output
    pruned = read(out / "pruned.csv")
    scores = pd.read_csv(out / "workers.csv").set_index("worker")["spammer"]
    dropped = set(data.worker_ids) - set(pruned.worker_ids)
    assert len(dropped) == 3
    assert scores.loc[sorted(dropped)].max() <= scores.drop(sorted(dropped)).min()
    entropy = pd.read_csv(out / "tasks.csv").set_index("task")["entropy"]
    gone = set(data.task_ids) - set(pruned.task_ids)
    assert len(gone) >= 8  # 10% of 80 tasks by entropy (+ tasks left with no label)
    assert entropy.loc[sorted(gone)].max() >= entropy.max() - 1e-12


def test_list_and_bad_input(tmp_path, crowd_csv):
    path, _ = crowd_csv
    listed = run(path, "--list")
    assert listed.exit_code == 0 and "waum" in listed.output and "spammer" in listed.output
    bad = run(path, "-s", "nope", "-o", tmp_path / "x")
    assert bad.exit_code == 2 and "unknown score" in bad.output
    assert not (tmp_path / "x").exists()
    bad_prune = run(path, "--prune", "spammer=1.5", "-o", tmp_path / "y")
    assert bad_prune.exit_code == 2 and "SCORE=FRACTION" in bad_prune.output
    no_features = run(path, "-s", "waum", "-o", tmp_path / "z")
    assert no_features.exit_code == 2 and "features" in no_features.output


def test_waum_pruning_on_labelme(tmp_path, shared_datasets):
    out = tmp_path / "out"
    result = run(
        "labelme",
        "--root",
        shared_datasets,
        "-s",
        "gold-accuracy",
        "--prune",
        "waum=0.1",
        "--max-epochs",
        "3",
        "-o",
        out,
        "--pruned-output",
        out / "kept.parquet",
    )
    assert result.exit_code == 0, result.output
    tasks = pd.read_csv(out / "tasks.csv")
    assert len(tasks) == 1000 and tasks["waum"].between(-1, 1).all()
    kept = read(out / "kept.parquet")
    assert kept.n_tasks == 900
    lowest = set(tasks.nsmallest(100, "waum")["task"].astype(str))
    assert not lowest & {str(t) for t in kept.task_ids}


def test_list_needs_no_data():
    from click.testing import CliRunner

    from crowdlearn.cli import cli
    from crowdlearn.identify import SCORES

    result = CliRunner().invoke(cli, ["identify", "--list"])
    assert result.exit_code == 0, result.output
    assert all(name in result.output for name in SCORES)
    missing = CliRunner().invoke(cli, ["identify", "-o", "out"])
    assert missing.exit_code == 2 and "DATA and --output are required" in missing.output
