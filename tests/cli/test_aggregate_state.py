"""``crowdlearn aggregate NEW_FILE --state FILE``: annotations as they arrive."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.aggregation import load_state
from crowdlearn.cli import cli
from crowdlearn.simulate import independent_confusion


def run(*args: object):
    return CliRunner().invoke(cli, ["aggregate", *map(str, args)])


@pytest.fixture
def days(tmp_path):
    """A crowd split in two arrival files (day 2: 3 % of the annotations, some new
    tasks) and the file of both."""
    data = independent_confusion(n_worker=30, n_task=1000, n_classes=3, feedback=5, seed=4)
    frame = data.to_frame()[["task", "worker", "label"]]
    frame["task"] = "task-" + frame["task"].astype(str)
    frame["worker"] = "w" + frame["worker"].astype(str)
    frame["label"] = np.array(["cat", "dog", "owl"])[frame["label"]]
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    late = frame.index >= len(frame) - 150
    paths = {}
    for name, part in (("day1", frame[~late]), ("day2", frame[late]), ("all", frame)):
        paths[name] = tmp_path / f"{name}.csv"
        part.to_csv(paths[name], index=False)
    return paths


def error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error: "), lines
    return lines[0]


def snapshot(path):
    return path.read_bytes() if path.exists() else None


@pytest.mark.parametrize("strategy", ["ds", "mv", "onecoin-ds"])
def test_two_calls_equal_aggregate_on_everything(tmp_path, days, strategy):
    state = tmp_path / "crowd.state"
    first = run(days["day1"], "--state", state, "-s", strategy, "-o", tmp_path / "out1")
    assert first.exit_code == 0, first.output
    assert state.exists() and "created" in first.stderr
    before = state.read_bytes()
    second = run(days["day2"], "--state", state, "-o", tmp_path / "out2", "--quiet")
    assert second.exit_code == 0, second.output
    assert "added 150 annotation(s)" in second.stderr
    assert state.read_bytes() != before  # replaced in place
    assert load_state(state).crowd_.n_annotations == 5000
    whole = run(days["all"], "-s", strategy, "-o", tmp_path / "all", "--quiet")
    assert whole.exit_code == 0, whole.output
    mine = pd.read_csv(tmp_path / "out2" / "probas.csv").set_index("task")
    theirs = pd.read_csv(tmp_path / "all" / "probas.csv").set_index("task")
    assert list(mine.index) == list(theirs.index) and list(mine.columns) == ["cat", "dog", "owl"]
    labels = pd.read_csv(tmp_path / "out2" / "labels.csv")["label"]
    refit_labels = pd.read_csv(tmp_path / "all" / "labels.csv")["label"]
    if strategy == "mv":  # vote counts: exact
        np.testing.assert_array_equal(mine.to_numpy(), theirs.to_numpy())
        assert labels.equals(refit_labels)
    else:  # the tolerance of incremental EM (see the estimators' docstrings)
        assert (labels == refit_labels).mean() >= 0.98
    summary = json.loads((tmp_path / "out2" / "summary.json").read_text())
    assert summary["n_annotations"] == 5000


def test_errors_leave_the_state_and_the_output_untouched(tmp_path, days):
    state = tmp_path / "crowd.state"
    assert run(days["day1"], "--state", state, "-o", tmp_path / "out1").exit_code == 0
    saved = state.read_bytes()
    out = tmp_path / "out"

    def refused(*args: object) -> str:
        line = error_line(run(*args, "-o", out))
        assert state.read_bytes() == saved and not out.exists()
        return line

    # a (task, worker) pair already in the state: day 1 again
    assert "already held" in refused(days["day1"], "--state", state)
    # a state of another method
    assert "holds a ds model" in refused(days["day2"], "--state", state, "-s", "glad")
    assert "parameters max_iter differ" in refused(
        days["day2"], "--state", state, "--param", "max_iter=7"
    )
    # a class the state does not know
    frame = pd.read_csv(days["day2"])
    frame.loc[0, "label"] = "emu"
    unknown = tmp_path / "unknown.csv"
    frame.to_csv(unknown, index=False)
    line = refused(unknown, "--state", state)
    assert "'emu'" in line and "--new-classes" in line
    # another dataset: nothing in common, or other columns
    other = pd.DataFrame({"task": ["x1", "x2"], "worker": ["v1", "v2"], "label": ["a", "b"]})
    other.to_csv(tmp_path / "other.csv", index=False)
    line = refused(tmp_path / "other.csv", "--state", state, "--new-classes")
    assert "another dataset" in line
    renamed = pd.read_csv(days["day2"]).rename(columns={"task": "item"})
    renamed.to_csv(tmp_path / "renamed.csv", index=False)
    columns = "task=item,worker=worker,label=label"
    line = refused(tmp_path / "renamed.csv", "--state", state, "--columns", columns)
    assert "another dataset" in line
    # files that are not state files, strategies and kinds that cannot update
    assert "not a crowdlearn state file" in refused(days["day2"], "--state", days["day1"])
    fresh = tmp_path / "n.st"
    assert "cannot update a state" in refused(days["day2"], "--state", fresh, "-s", "mace")
    assert "classes, not" in refused(days["day2"], "--state", state, "--kind", "rating")
    assert not (tmp_path / "n.st").exists()


def test_new_classes_are_added_with_the_flag(tmp_path, days):
    state = tmp_path / "crowd.state"
    assert run(days["day1"], "--state", state, "-o", tmp_path / "out1").exit_code == 0
    frame = pd.read_csv(days["day2"])
    frame.loc[:2, "label"] = "emu"
    frame.to_csv(tmp_path / "emu.csv", index=False)
    result = run(tmp_path / "emu.csv", "--state", state, "--new-classes", "-o", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert "1 new class(es)" in result.stderr
    probas = pd.read_csv(tmp_path / "o" / "probas.csv")
    assert list(probas.columns) == ["task", "cat", "dog", "emu", "owl"]
    assert list(load_state(state).classes_) == ["cat", "dog", "emu", "owl"]


def test_an_existing_output_needs_overwrite_and_new_classes_needs_state(tmp_path, days):
    state = tmp_path / "crowd.state"
    assert run(days["day1"], "--state", state, "-o", tmp_path / "out").exit_code == 0
    saved = state.read_bytes()
    assert "--overwrite" in error_line(run(days["day2"], "--state", state, "-o", tmp_path / "out"))
    assert state.read_bytes() == saved
    result = run(days["day2"], "--state", state, "-o", tmp_path / "out", "--overwrite")
    assert result.exit_code == 0, result.output
    line = error_line(run(days["all"], "--new-classes", "-o", tmp_path / "x"))
    assert "--new-classes goes with --state" in line
    inside = tmp_path / "o" / "s.state"
    line = error_line(run(days["day2"], "--state", inside, "-o", tmp_path / "o"))
    assert "inside the output folder" in line


def test_help_documents_state():
    result = CliRunner().invoke(cli, ["aggregate", "--help"])
    assert "--state FILE" in result.output and "--new-classes" in result.output
    assert "--refresh N" in result.output
    assert "partial_fit" in result.output


def test_refresh_0_updates_as_partial_fit_does_and_needs_state(tmp_path, days):
    from crowdlearn import CrowdData
    from crowdlearn.aggregation import DawidSkene

    state = tmp_path / "crowd.state"
    assert run(days["day1"], "--state", state, "-o", tmp_path / "out1").exit_code == 0
    result = run(days["day2"], "--state", state, "--refresh", 0, "-o", tmp_path / "out2")
    assert result.exit_code == 0, result.output
    day1, day2 = (CrowdData.from_frame(pd.read_csv(days[day])) for day in ("day1", "day2"))
    fitted = {r: DawidSkene(progress=False).fit(day1).partial_fit(day2, refresh=r) for r in (0, 1)}
    model = fitted[0]
    labels = pd.read_csv(tmp_path / "out2" / "labels.csv").set_index("task")["label"]
    expected = pd.Series(model.classes_[model.labels_], index=model.task_ids_)
    assert labels.sort_index().equals(expected.sort_index())
    probas = pd.read_csv(tmp_path / "out2" / "probas.csv").set_index("task")
    for r, close in ((0, True), (1, False)):
        other = pd.DataFrame(fitted[r].probas_, index=fitted[r].task_ids_)
        same = np.allclose(probas.loc[other.index].to_numpy(), other.to_numpy(), atol=1e-9)
        assert same is close  # the update of refresh 0, not a full E-step's
    line = error_line(run(days["all"], "--refresh", 0, "-o", tmp_path / "x"))
    assert "--refresh goes with --state" in line
    assert (
        run(days["day2"], "--state", state, "--refresh", -1, "-o", tmp_path / "y").exit_code == 2
    )
