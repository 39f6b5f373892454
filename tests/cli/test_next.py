"""``crowdlearn next`` and ``crowdlearn replay``: the campaign loop from the command line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn import CrowdData
from crowdlearn.campaign import rank_tasks
from crowdlearn.cli import cli
from crowdlearn.io import read, write_csv
from crowdlearn.simulate import hammer_spammer


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def pool(tmp_path):
    data = hammer_spammer(n_worker=15, n_task=80, n_classes=2, ratio=0.3, feedback=8, seed=5)
    named = CrowdData.from_arrays(
        [f"task-{t}" for t in data.task],
        [f"w{w}" for w in data.worker],
        np.array(["no", "yes"])[data.label],
    )
    path = tmp_path / "pool.csv"
    write_csv(named, path)
    return path


def _first_round(pool, tmp_path):
    labels = tmp_path / "labels"
    labels.mkdir()
    result = run("replay", pool, "-o", labels / "round0.csv")
    assert result.exit_code == 0, result.output
    return labels


def test_next_writes_the_budget_in_the_python_order(pool, tmp_path):
    result = run("next", pool, "--budget", 12, "-o", tmp_path / "next.csv")
    assert result.exit_code == 0, result.output
    written = pd.read_csv(tmp_path / "next.csv")
    expected = rank_tasks(read(pool)).head(12)
    assert written["task"].tolist() == expected["task"].tolist()
    assert list(written.columns) == ["task", "label", "confidence", "score", "n_labels", "done"]
    assert set(written["label"]) <= {"no", "yes"}
    np.testing.assert_allclose(written["score"], expected["score"])


def test_in_sample_scores_as_the_python_option(pool, tmp_path):
    result = run("next", pool, "--budget", 80, "--in-sample", "-o", tmp_path / "next.csv")
    assert result.exit_code == 0, result.output
    written = pd.read_csv(tmp_path / "next.csv")
    expected = rank_tasks(read(pool), leave_one_out=False)
    default = rank_tasks(read(pool))
    assert written["task"].tolist() == expected["task"].tolist()
    np.testing.assert_allclose(written["score"], expected["score"])
    default = default.set_index("task").loc[expected["task"], "score"].to_numpy()
    assert not np.allclose(default, expected["score"], rtol=1e-3, atol=0)  # it matters here


@pytest.mark.parametrize("score", ["entropy", "accuracy"])
def test_score_option_as_the_python_option_on_three_classes(tmp_path, score):
    data = hammer_spammer(n_worker=12, n_task=60, n_classes=3, ratio=0.4, feedback=2, seed=6)
    path = tmp_path / "three.csv"
    write_csv(data, path)
    result = run("next", path, "--budget", 60, "--score", score, "-o", tmp_path / "next.csv")
    assert result.exit_code == 0, result.output
    written = pd.read_csv(tmp_path / "next.csv")
    expected = rank_tasks(read(path), score=score)
    np.testing.assert_allclose(written["score"], expected["score"])
    default = rank_tasks(read(path)).set_index("task").loc[expected["task"], "score"]
    assert not np.allclose(default.to_numpy(), expected["score"], rtol=1e-3, atol=0)


def test_next_all_and_target_confidence(pool, tmp_path):
    out = tmp_path / "all.csv"
    result = run("next", pool, "--budget", 1, "--all", "--target-confidence", 0.9, "-o", out)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert len(table) == 80
    assert (table.loc[table["done"], "confidence"] >= 0.9).all()
    assert "done at confidence >= 0.9" in result.output
    assert (table["to_target"] == 0).all() and "more label(s)" not in result.output


def test_target_confidence_says_the_labels_still_needed(tmp_path):
    few = tmp_path / "few.csv"
    write_csv(hammer_spammer(n_worker=15, n_task=80, n_classes=2, ratio=0.3, feedback=2), few)
    out = tmp_path / "all.csv"
    result = run("next", few, "--budget", 1, "--all", "--target-confidence", 0.95, "-o", out)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert 0 < table["done"].sum() < len(table)
    # none for done tasks, at least one for open ones, their sum on the summary line
    assert (table.loc[table["done"], "to_target"] == 0).all()
    assert (table.loc[~table["done"], "to_target"] >= 1).all()
    n_open = int((~table["done"]).sum())
    total = f"about {table['to_target'].sum():.0f} more label(s) expected to bring the {n_open}"
    assert total in result.output


def test_route_suggests_workers_who_have_not_answered(pool, tmp_path):
    out = tmp_path / "next.csv"
    result = run("next", pool, "--budget", 10, "--route", 2, "-o", out)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out, dtype=str, keep_default_na=False)
    answers = pd.read_csv(pool, dtype=str)
    for task, workers in zip(table["task"], table["workers"], strict=True):
        picks = [w for w in workers.split(";") if w]
        assert picks and not set(picks) & set(answers.loc[answers["task"] == task, "worker"])


@pytest.mark.parametrize("budget", ["0", "-5", "two"])
def test_a_budget_of_zero_or_less_fails_in_one_line(pool, tmp_path, budget):
    out = tmp_path / "next.csv"
    result = run("next", pool, "--budget", budget, "-o", out)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "--budget" in result.output
    assert not out.exists()


def test_next_refuses_hard_label_strategies_and_existing_outputs(pool, tmp_path):
    out = tmp_path / "next.csv"
    result = run("next", pool, "--budget", 3, "-s", "mv", "-o", out)
    assert result.exit_code == 2 and "hard labels" in result.output
    assert not out.exists()
    out.write_text("mine\n")
    result = run("next", pool, "--budget", 3, "-o", out)
    assert result.exit_code == 2 and "--overwrite" in result.output
    assert out.read_text() == "mine\n"


def test_features_mix_a_classifier_into_the_posteriors(tmp_path):
    data = hammer_spammer(n_worker=10, n_task=120, n_classes=2, ratio=0.3, feedback=2, seed=3)
    write_csv(data, tmp_path / "crowd.csv")
    rng = np.random.default_rng(0)
    features = rng.normal(size=(data.n_tasks, 4)) + np.asarray(data.truth)[:, None] * 2.0
    np.save(tmp_path / "x.npy", features)
    result = run(
        "next",
        tmp_path / "crowd.csv",
        "--budget",
        5,
        "--features",
        tmp_path / "x.npy",
        "-o",
        tmp_path / "next.csv",
    )
    assert result.exit_code == 0, result.output
    np.save(tmp_path / "short.npy", features[:10])
    result = run(
        "next",
        tmp_path / "crowd.csv",
        "--budget",
        5,
        "--features",
        tmp_path / "short.npy",
        "-o",
        tmp_path / "other.csv",
    )
    assert result.exit_code == 2 and "one row per task" in result.output
    assert not (tmp_path / "other.csv").exists()


def test_replay_never_gives_an_answer_twice_and_honours_routes(pool, tmp_path):
    labels = _first_round(pool, tmp_path)
    first = pd.read_csv(labels / "round0.csv", dtype=str)
    assert len(first) == 80 and first["task"].is_unique
    requests = pd.DataFrame({"task": ["task-3", "task-7"], "workers": ["", ""]})
    answers = pd.read_csv(pool, dtype=str)
    left = answers[
        (answers["task"] == "task-7")
        & ~answers["worker"].isin(first["worker"][first["task"] == "task-7"])
    ]
    requests.loc[1, "workers"] = left["worker"].iloc[-1]
    requests.to_csv(tmp_path / "requests.csv", index=False)
    result = run(
        "replay",
        pool,
        "--requests",
        tmp_path / "requests.csv",
        "--seen",
        labels,
        "--per-task",
        2,
        "-o",
        labels / "round1.csv",
    )
    assert result.exit_code == 0, result.output
    new = pd.read_csv(labels / "round1.csv", dtype=str)
    assert new["task"].value_counts().to_dict() == {"task-3": 2, "task-7": 2}
    assert new.loc[new["task"] == "task-7", "worker"].iloc[0] == left["worker"].iloc[-1]
    both = pd.concat([first, new])
    assert not both.duplicated(["task", "worker"]).any()
    assert both.merge(answers, on=["task", "worker", "label"]).shape[0] == len(both)


def test_replay_reads_a_pool_with_its_own_column_names(pool, tmp_path):
    """A finished export keeps its column names (--columns, like every reading command);
    the batches replay writes (task, worker, label) are read as such by --seen."""
    export = pd.read_csv(pool, dtype=str).rename(
        columns={"task": "orig_id", "worker": "!amt_worker_ids", "label": "response"}
    )
    export.insert(0, "annotation", [f"a{i}" for i in range(len(export))])
    export.to_csv(tmp_path / "export.tsv", sep="\t", index=False)
    columns = "task=orig_id,worker=!amt_worker_ids,label=response"
    labels = tmp_path / "labels"
    labels.mkdir()
    first = run("replay", tmp_path / "export.tsv", "--columns", columns, "-o", labels / "r0.csv")
    assert first.exit_code == 0, first.output
    pd.DataFrame({"task": ["task-3"]}).to_csv(tmp_path / "requests.csv", index=False)
    result = run(
        "replay",
        tmp_path / "export.tsv",
        "--columns",
        columns,
        "--requests",
        tmp_path / "requests.csv",
        "--seen",
        labels,
        "-o",
        labels / "r1.csv",
    )
    assert result.exit_code == 0, result.output
    r0, r1 = (pd.read_csv(labels / f"r{i}.csv", dtype=str) for i in (0, 1))
    assert list(r1.columns) == ["task", "worker", "label"] and len(r1) == 1
    assert r1["task"].iloc[0] == "task-3"
    assert r1["worker"].iloc[0] != r0.loc[r0["task"] == "task-3", "worker"].iloc[0]
    answers = pd.read_csv(pool, dtype=str)
    assert pd.concat([r0, r1]).merge(answers).shape[0] == len(r0) + 1
    # without --columns the export's columns are not task/worker/label: one clear error
    refused = run("replay", tmp_path / "export.tsv", "-o", tmp_path / "none.csv")
    assert refused.exit_code == 2 and "--columns" in refused.output
    assert not (tmp_path / "none.csv").exists()


def test_three_rounds_of_a_campaign(pool, tmp_path):
    labels = _first_round(pool, tmp_path)
    sizes = []
    for round_ in (1, 2, 3):
        result = run(
            "next",
            f"{labels}/*.csv",
            "--budget",
            20,
            "--target-confidence",
            0.95,
            "-o",
            tmp_path / "next.csv",
            "--overwrite",
        )
        assert result.exit_code == 0, result.output
        result = run(
            "replay",
            pool,
            "--requests",
            tmp_path / "next.csv",
            "--seen",
            labels,
            "-o",
            labels / f"round{round_}.csv",
        )
        assert result.exit_code == 0, result.output
        sizes.append(len(read(f"{labels}/*.csv").to_frame()))
    assert sizes == [100, 120, 140]


def test_next_ranks_from_a_state_file_as_from_the_data(pool, tmp_path):
    state = tmp_path / "run.state"
    result = run("aggregate", pool, "--state", state, "-o", tmp_path / "agg")
    assert result.exit_code == 0, result.output
    result = run("next", "--state", state, "--budget", 9, "-o", tmp_path / "from-state.csv")
    assert result.exit_code == 0, result.output
    result = run("next", pool, "--budget", 9, "-o", tmp_path / "from-data.csv")
    assert result.exit_code == 0, result.output
    from_state = pd.read_csv(tmp_path / "from-state.csv")
    from_data = pd.read_csv(tmp_path / "from-data.csv")
    assert from_state["task"].tolist() == from_data["task"].tolist()
    np.testing.assert_allclose(from_state["score"], from_data["score"], rtol=1e-9)


def test_next_state_refusals_write_nothing(pool, tmp_path):
    state = tmp_path / "run.state"
    assert run("aggregate", pool, "--state", state, "-o", tmp_path / "agg").exit_code == 0
    out = tmp_path / "next.csv"
    cases = [
        (["--state", state, "-s", "glad"], "holds a DawidSkene model"),
        ([pool, "--state", state], "not both"),
        ([], "not both"),
        (["--state", tmp_path / "missing.state"], "no such file"),
        (["--state", pool], "state"),
    ]
    for args, message in cases:
        result = run("next", *args, "--budget", 3, "-o", out)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert not out.exists()


def test_next_refuses_other_answer_kinds_in_one_line(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("worker,left,right,label\nw1,a,b,a\nw2,b,c,b\n")
    result = run("next", path, "--budget", 2, "-o", tmp_path / "next.csv")
    assert result.exit_code == 2
    assert "one class" in result.output and "comparisons" in result.output
    assert not (tmp_path / "next.csv").exists()


def test_replay_refuses_other_answer_kinds_in_one_line(tmp_path):
    """A pool of another kind (here comparisons): one line naming the kind, not a hint at
    an option replay does not have."""
    pool = tmp_path / "pairs.csv"
    pool.write_text("worker,left,right,label\nw1,a,b,a\nw2,b,c,b\n")
    result = run("replay", pool, "-o", tmp_path / "new.csv")
    assert result.exit_code == 2, result.output
    assert "one class" in result.output and "comparisons" in result.output, result.output
    assert "--kind" not in result.output
    assert not (tmp_path / "new.csv").exists()


def _no_shared_task_crowd(path):
    """One label a task, five tasks a worker, three classes with a skewed prior, the
    labels right 97 % of the time; and (since issue 43, where Dawid-Skene stopped
    relabelling lone labels of workers it knows nothing of) worker 'bad', who
    contradicts two agreeing workers on 30 tasks and gives 10 lone labels: Dawid-Skene
    reads it as confused and relabels those."""
    rng = np.random.default_rng(0)
    truth = rng.choice(3, size=150, p=[0.7, 0.2, 0.1])
    wrong = rng.random(150) >= 0.97
    label = np.where(wrong, (truth + 1) % 3, truth)
    task = np.arange(150)
    worker = (task // 5).astype(str)
    shared = np.arange(30)
    lone = np.arange(150, 160)
    task = np.concatenate([task, shared, shared, shared, lone])
    worker = np.concatenate([worker, ["good1"] * 30, ["good2"] * 30, ["bad"] * 30, ["bad"] * 10])
    label = np.concatenate(
        [label, truth[shared], truth[shared], (truth[shared] + 1) % 3, rng.choice(3, 10)]
    )
    write_csv(CrowdData.from_arrays(task, worker, np.array(["x", "y", "z"])[label]), path)


def test_next_says_on_how_many_one_label_tasks_the_model_changed_the_label(tmp_path):
    path = tmp_path / "lone.csv"
    _no_shared_task_crowd(path)
    from crowdlearn.campaign import fitted_model
    from crowdlearn.campaign.ranking import lone_label_disagreements

    crowd = read(path)
    changed = lone_label_disagreements(crowd, fitted_model(crowd).probas_)
    assert changed > 0  # the case the note is for (benchmarks: campaign-cold-start)
    result = CliRunner().invoke(
        cli, ["next", str(path), "--budget", "5", "-o", str(tmp_path / "n.csv")]
    )
    assert result.exit_code == 0, result.output
    assert (
        f"note: on {changed} task(s) with a single label the model's label is not the one given"
        in result.output
    )
    # a crowd whose tasks all have several labels gets no such note
    pooled = tmp_path / "pool.csv"
    data = hammer_spammer(n_worker=15, n_task=80, n_classes=2, ratio=0.3, feedback=8, seed=5)
    write_csv(data, pooled)
    result = run("next", pooled, "--budget", 5, "-o", tmp_path / "p.csv")
    assert result.exit_code == 0 and "is not the one given" not in result.output


def test_aggregate_and_its_state_say_the_same_of_single_label_tasks(tmp_path):
    """The campaign starts with `aggregate --state` on one label a task: its labels.csv
    holds the model's labels, so it says what next says; majority vote never relabels."""
    path = tmp_path / "lone.csv"
    _no_shared_task_crowd(path)
    from crowdlearn.campaign import fitted_model
    from crowdlearn.campaign.ranking import lone_label_disagreements

    crowd = read(path)
    changed = lone_label_disagreements(crowd, fitted_model(crowd).probas_)
    expected = f"note: on {changed} task(s) with a single label the model's label"
    for extra in (
        ["-o", tmp_path / "plain"],
        ["--state", tmp_path / "s.state", "-o", tmp_path / "s"],
    ):
        result = run("aggregate", path, "-s", "ds", *extra)
        assert result.exit_code == 0, result.output
        assert expected in result.output
    labels = pd.read_csv(tmp_path / "plain" / "labels.csv").set_index("task")["label"]
    frame = read(path).to_frame()
    single = frame.groupby("task")["label"].transform("size") == 1
    given = frame[single].set_index("task")["label"]
    assert (labels.loc[given.index].to_numpy() != given.to_numpy()).sum() == changed
    result = run("aggregate", path, "-s", "mv", "-o", tmp_path / "mv")
    assert result.exit_code == 0 and "with a single label" not in result.output


def test_replay_never_replaces_a_batch_it_reads_as_seen(pool, tmp_path):
    """--seen is an input: -o onto one of its batches is refused, even with --overwrite
    (issue 43); a new batch beside them is the campaign loop and is written."""
    labels = _first_round(pool, tmp_path)
    saved = (labels / "round0.csv").read_bytes()
    for seen in (labels, f"{labels}/*.csv", labels / "round0.csv"):
        result = run("replay", pool, "--seen", seen, "-o", labels / "round0.csv", "--overwrite")
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "is the input" in lines[0], lines
        assert (labels / "round0.csv").read_bytes() == saved
    result = run("replay", pool, "--seen", labels, "-o", labels / "round1.csv")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("glob", [False, True])
def test_next_refuses_an_output_among_the_batches_it_reads(pool, tmp_path, glob):
    """next labels/ -o labels/next.csv would make the next `next labels/` read its own
    output as a batch of labels: refused in one line, nothing written (issue 43)."""
    labels = _first_round(pool, tmp_path)
    data = f"{labels}/*.csv" if glob else labels
    result = run("next", data, "--budget", 5, "-o", labels / "next.csv")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error: -o "), lines
    assert "reads as batches" in lines[0]
    assert sorted(p.name for p in labels.iterdir()) == ["round0.csv"]
    # outside the folder, or not matching the glob, is fine
    other = tmp_path / "next.csv" if not glob else labels / "next.parquet"
    result = run("next", data, "--budget", 5, "-o", other)
    assert result.exit_code == 0, result.output


def test_a_file_output_that_is_a_link_is_followed(pool, tmp_path):
    """-o LINK --overwrite writes the file the link names and keeps the link (issue 43:
    the link used to be replaced by a regular file, the target left old)."""
    real = tmp_path / "shared" / "batch.csv"
    real.parent.mkdir()
    real.write_text("task,worker,label\nold,old,old\n")
    link = tmp_path / "batch.csv"
    link.symlink_to(real)
    result = run("replay", pool, "-o", link, "--overwrite")
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert len(pd.read_csv(real)) == 80 and "old" not in real.read_text()
    assert sorted(p.name for p in real.parent.iterdir()) == ["batch.csv"]
