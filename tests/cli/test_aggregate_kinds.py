"""``crowdlearn aggregate``, ``identify`` and ``report`` on label sets, ratings and
comparisons: the kind recognised or chosen, the default strategies, the files written,
and bad input failing in one line with nothing written."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.aggregation import comparisons, label_sets, ratings
from crowdlearn.cli import cli
from crowdlearn.io import read_kind


def run(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


@pytest.fixture
def comparison_csv(tmp_path):
    rng = np.random.default_rng(0)
    strength = {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}
    rows = []
    for i in range(300):
        left, right = rng.choice(list(strength), 2, replace=False)
        p = 1 / (1 + np.exp(strength[right] - strength[left]))
        rows.append((f"w{i % 7}", left, right, left if rng.random() < p else right))
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows, columns=["worker", "left", "right", "label"]).to_csv(path, index=False)
    return path


@pytest.fixture
def rating_csv(tmp_path):
    rng = np.random.default_rng(1)
    truth = rng.uniform(1, 5, 30)
    rows = [
        (f"t{t}", f"w{w}", round(float(truth[t] + rng.normal(0, 0.3)), 2))
        for t in range(30) for w in range(5)
    ]  # fmt: skip
    path = tmp_path / "ratings.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(path, index=False)
    return path, truth


@pytest.fixture
def label_set_csv(tmp_path):
    rows = []
    for t in range(20):
        true = ["cat", "dog"] if t % 2 else ["cat"]
        for w in range(4):
            answer = true if (t + w) % 5 else ["owl"]
            rows.append((t, f"w{w}", json.dumps(answer)))
    path = tmp_path / "sets.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(path, index=False)
    return path


def test_comparisons_are_recognised_from_left_and_right_and_need_no_option(
    tmp_path, comparison_csv
):
    result = run("aggregate", comparison_csv, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "reading pairwise comparisons" in result.stderr
    assert f"strategy {comparisons.DEFAULT_STRATEGY}" in result.stderr
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert list(scores.columns) == ["item", "score"]
    assert scores["item"].tolist() == ["a", "b", "c", "d"]  # descending by score
    assert np.all(np.diff(scores["score"]) <= 0)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["kind"] == "comparison" and summary["n_items"] == 4


@pytest.mark.parametrize("strategy", sorted(comparisons.STRATEGIES))
def test_every_comparison_strategy_runs_from_the_cli(tmp_path, comparison_csv, strategy):
    result = run("aggregate", comparison_csv, "-s", strategy, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert scores["item"].iloc[0] == "a" and np.isfinite(scores["score"]).all()


def test_ratings_write_task_value_and_match_the_python_api(tmp_path, rating_csv):
    path, truth = rating_csv
    result = run("aggregate", path, "--kind", "rating", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    assert list(labels.columns[:2]) == ["task", "value"]
    model = ratings.make_aggregator(ratings.DEFAULT_STRATEGY).fit(read_kind(path, "rating"))
    np.testing.assert_allclose(labels["value"], model.values_)
    order = np.argsort([int(t[1:]) for t in labels["task"]])
    assert np.corrcoef(labels["value"].to_numpy()[order], truth)[0, 1] > 0.95


def test_ordinal_ratings_write_the_category(tmp_path):
    path = tmp_path / "stars.csv"
    path.write_text("task,worker,label\na,w1,good\na,w2,good\nb,w1,bad\nb,w2,fair\n")
    result = run(
        "aggregate", path, "--kind", "rating", "--order", "bad,fair,good", "-s", "median",
        "-o", tmp_path / "out",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    labels = pd.read_csv(tmp_path / "out" / "labels.csv").set_index("task")
    assert labels.loc["a", "label"] == "good" and labels.loc["a", "value"] == 2


def test_label_sets_write_one_column_per_class(tmp_path, label_set_csv):
    result = run("aggregate", label_set_csv, "--kind", "multilabel", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert f"strategy {label_sets.DEFAULT_STRATEGY}" in result.stderr
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    probas = pd.read_csv(tmp_path / "out" / "probas.csv")
    assert list(labels.columns) == ["task", "cat", "dog", "owl"]
    assert list(probas.columns) == ["task", "cat", "dog", "owl"]
    assert set(np.unique(labels[["cat", "dog", "owl"]])) <= {0, 1}
    assert labels["cat"].all() and not labels["owl"].any()
    assert (labels["dog"] == labels["task"] % 2).all()


@pytest.fixture
def text_csv(tmp_path):
    path = tmp_path / "texts.csv"
    path.write_text(
        "task,worker,label\na,w1,the cat sat\na,w2,the cat sat\na,w3,a cat sat down\n"
        "b,w1,dogs bark\nb,w2,dogs bark loudly\nb,w3,dogs bark\n"
    )
    return path


@pytest.mark.parametrize(
    ("kind", "fixture"),
    [
        ("comparison", "comparison_csv"),
        ("rating", "rating_csv"),
        ("multilabel", "label_set_csv"),
        ("text", "text_csv"),
    ],
)
def test_identify_and_report_work_on_each_kind(tmp_path, request, kind, fixture):
    path = request.getfixturevalue(fixture)
    path = path[0] if isinstance(path, tuple) else path
    result = run("identify", path, "--kind", kind, "-o", tmp_path / "scores")
    assert result.exit_code == 0, result.output
    workers = pd.read_csv(tmp_path / "scores" / "workers.csv")
    assert workers["worker"].nunique() == len(workers) > 1 and workers.shape[1] > 1
    report = run("report", path, "--kind", kind, "-o", tmp_path / "report.html")
    assert report.exit_code == 0, report.output
    html = (tmp_path / "report.html").read_text()
    assert '<h2 id="workers">Workers</h2>' in html and "http" not in html.split("<body>")[0]


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ("worker,left,right,label\nw1,a,a,a\n", [], "compare an item with itself"),
        ("worker,left,right,label\nw1,a,b,c\n", [], "neither the left nor the right"),
        ("task,worker,label\n1,a,3\n1,b,x\n", ["--kind", "rating"], "are not numbers"),
        ("task,worker,label\n1,a,3\n1,b,9\n", ["--kind", "rating", "--order", "1,2,3"],
         "not in the declared order"),
        ('task,worker,label\n1,a,"[""x"",""y""]"\n1,b,"[x]]"\n', ["--kind", "multilabel"],
         "row 1: cannot parse the label set"),
        ("task,worker,label\n1,a,x\n", ["--kind", "rating", "--sep", "|"],
         "--sep applies to --kind multilabel"),
        ("task,worker,label\n1,a,x\n", ["--kind", "multilabel", "-s", "bt"],
         "it is a pairwise comparisons strategy"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, content, args, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    result = run("aggregate", path, "-o", tmp_path / "out", *args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error:"), lines
    assert message in lines[0]
    assert not (tmp_path / "out").exists()


def test_list_shows_every_kind_with_its_default():
    result = run("aggregate", "--list")
    assert result.exit_code == 0
    for kind, package in [
        ("multilabel", label_sets),
        ("rating", ratings),
        ("comparison", comparisons),
    ]:
        assert f"--kind {kind}" in result.output
        assert f"default {package.DEFAULT_STRATEGY}" in result.output
        for name in package.STRATEGIES:
            assert name in result.output


@pytest.mark.parametrize(
    ("strategy", "args", "kind"),
    [
        ("comparisons", ["--n-task", "25", "--n-comparisons", "400"], "comparison"),
        ("ratings", ["--n-task", "30", "--feedback", "4"], "rating"),
        ("ratings", ["--n-task", "30", "-K", "5"], "rating"),
        ("label-sets", ["--n-task", "30", "-K", "4"], "multilabel"),
    ],
)
def test_simulated_kinds_are_written_and_read_back(tmp_path, strategy, args, kind):
    result = run("simulate", strategy, *args, "-o", tmp_path / "sim", "--seed", "3")
    assert result.exit_code == 0, result.output
    (written,) = [
        p for p in (tmp_path / "sim").iterdir() if p.name != "truth.csv" and p.suffix == ".csv"
    ]
    options = ["--order", "1,2,3,4,5"] if "-K" in args and kind == "rating" else []
    answers = read_kind(written, kind, order=[1, 2, 3, 4, 5] if options else None)
    if kind == "comparison":
        truth = pd.read_csv(tmp_path / "sim" / "truth.csv")
        assert answers.n_items == len(truth) == 25 and answers.n_annotations == 400
    else:
        assert answers.n_tasks == 30 and answers.truth is not None
    again = run("simulate", strategy, *args, "-o", tmp_path / "again", "--seed", "3")
    assert again.exit_code == 0
    assert written.read_bytes() == (tmp_path / "again" / written.name).read_bytes()
    aggregated = run("aggregate", written, "--kind", kind, *options, "-o", tmp_path / "agg")
    assert aggregated.exit_code == 0, aggregated.output


# ---- issue 43: answer kinds


@pytest.mark.parametrize("strategy", sorted(set(ratings.STRATEGIES) - {"ordinal-ds"}))
def test_ratings_of_1e308_give_finite_values_and_strict_json(tmp_path, strategy):
    """The sweep's case: ratings near the largest float used to exit 0 with an empty
    value for every task (their sums and squares overflowed)."""
    path = tmp_path / "huge.csv"
    path.write_text(
        "task,worker,label\nt1,w1,1e308\nt1,w2,1.5e308\nt1,w3,0.9e308\n"
        "t2,w1,1e308\nt2,w2,1.2e308\nt2,w3,1.1e308\n"
    )
    result = run("aggregate", path, "--kind", "rating", "-s", strategy, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    assert np.all(np.isfinite(labels["value"])) and np.all(np.isfinite(labels["spread"]))
    assert labels["value"].between(0.9e308, 1.5e308).all()
    text = (tmp_path / "out" / "workers.json").read_text()
    assert "Infinity" not in text and "NaN" not in text  # strict JSON: null instead
    json.loads(text)


def test_a_text_tie_label_beside_integer_items_from_the_cli(tmp_path):
    """Items 1, 2, 3 are read as integers; the labels beside ``tie`` as text: both used
    to be refused ("the label ['1', '2'] is neither the left nor the right item")."""
    path = tmp_path / "pairs.csv"
    path.write_text("worker,left,right,label\nw1,1,2,1\nw2,1,2,tie\nw1,2,3,2\n")
    result = run("aggregate", path, "--tie", "tie", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "ties=1" in result.output
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert scores["item"].tolist() == [1, 2, 3]
