"""Spans through the command line: ``aggregate --kind spans`` (spans.csv, tags.conll,
--truth), ``identify --kind spans`` and ``report --kind spans`` on a tiny crowd in the
NER-MTurk folder layout (tests/cli/_spans.py)."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import crowdlearn.aggregation.spans as span_package
from crowdlearn.aggregation.spans import DEFAULT_SPAN_STRATEGY, SPAN_STRATEGIES, TokenMajorityVote
from crowdlearn.cli import cli
from crowdlearn.data.spans import Spans, tags_to_spans
from crowdlearn.io.conll_folders import read_conll_folders
from crowdlearn.metrics import span_scores
from tests.cli._spans import GOLD, write_folder

OVER = "--overwrite"


def run(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


@pytest.fixture
def folder(tmp_path):
    return write_folder(tmp_path / "ner")


def _read(path):
    return pd.read_csv(path, keep_default_na=False)


# ------------------------------------------------------------------ aggregate
def test_aggregate_uses_the_default_strategy(folder, tmp_path):
    out = tmp_path / "out"
    result = run("aggregate", folder, "--kind", "spans", "-o", out)
    assert result.exit_code == 0, result.output
    assert f"strategy {DEFAULT_SPAN_STRATEGY} (the default for spans)" in result.stderr
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "spans.csv", "summary.json", "tags.conll", "workers.json"
    ]  # fmt: skip
    spans = _read(out / "spans.csv")
    assert list(spans.columns) == ["task", "start", "end", "label", "score", "text"]
    expected = SPAN_STRATEGIES[DEFAULT_SPAN_STRATEGY]().fit(read_conll_folders(folder)).predict()
    assert spans[["task", "start", "end", "label"]].values.tolist() == (
        expected[["task", "start", "end", "label"]].values.tolist()
    )
    np.testing.assert_allclose(spans["score"], expected["score"])
    assert json.loads((out / "summary.json").read_text())["name"] == DEFAULT_SPAN_STRATEGY


def test_aggregate_writes_spans_and_tags(folder, tmp_path):
    out = tmp_path / "out"
    result = run("aggregate", folder, "--kind", "spans", "-s", "mv", "-o", out)
    assert result.exit_code == 0, result.output
    spans = _read(out / "spans.csv")
    # d1: w1 and w3 give Ada Lovelace PER, two of three give London LOC; d2: a 1-1 tie: O
    assert spans.values.tolist() == [
        ["d1", 0, 2, "PER", pytest.approx(5 / 6), "Ada Lovelace"],
        ["d1", 4, 5, "LOC", pytest.approx(2 / 3), "London"],
    ]
    assert (out / "tags.conll").read_text() == (
        "-DOCSTART- d1\nAda B-PER\nLovelace I-PER\nwrote O\nin O\nLondon B-LOC\n\n"
        "-DOCSTART- d2\nParis O\nis O\nbig O\n\n"
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unit"] == "token"
    assert summary["name"] == "mv"
    assert (summary["n_tasks"], summary["n_workers"], summary["n_spans"]) == (2, 3, 2)
    assert "truth" not in summary


def test_tags_conll_reads_back_as_the_spans(folder, tmp_path):
    """tags.conll is a CoNLL file: read back, its tags give the spans of spans.csv."""
    out = tmp_path / "out"
    assert run("aggregate", folder, "--kind", "spans", "-s", "mv", "-o", out).exit_code == 0
    spans = _read(out / "spans.csv")
    documents = (out / "tags.conll").read_text().split("-DOCSTART- ")[1:]
    found = []
    for document in documents:
        lines = [line for line in document.splitlines() if line]
        task, tags = lines[0], [line.split()[-1] for line in lines[1:]]
        assert [line.split()[0] for line in lines[1:]] == [t for t, _ in GOLD[task]]
        found += [[task, s, e, lab] for s, e, lab in tags_to_spans(tags)[0]]
    assert found == spans[["task", "start", "end", "label"]].values.tolist()


def test_a_registered_aggregator_is_reachable_with_its_parameters(folder, tmp_path, monkeypatch):
    """-s takes any name of SPAN_STRATEGIES (no CLI edit), with NAME[k=v] and --param;
    the aggregator's worker_scores_ go to workers.json."""

    class FirstWorker:
        """Every span of the task's first worker (a test aggregator)."""

        def __init__(self, floor: float = 0.0, tag: str = "x") -> None:
            self.floor = floor
            self.tag = tag

        def fit(self, data: Spans) -> FirstWorker:
            frame = data.to_frame()
            first = frame.groupby("task", sort=False)["worker"].transform("first")
            kept = frame[(frame["worker"] == first) & frame["label"].notna()]
            self.labels_ = kept[["task", "start", "end", "label"]].assign(score=self.floor)
            self.worker_scores_ = pd.DataFrame({"worker": data.worker_ids, "skill": [0.5] * 3})
            return self

        def predict(self) -> pd.DataFrame:
            return self.labels_

    monkeypatch.setitem(SPAN_STRATEGIES, "first", FirstWorker)
    out = tmp_path / "out"
    result = run("aggregate", folder, "--kind", "spans", "-s", "First[floor=0.25]",
                 "--param", "tag=y", "-o", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    spans = _read(out / "spans.csv")
    assert spans[["task", "start", "end", "label"]].values.tolist() == [
        ["d1", 0, 2, "PER", ], ["d1", 4, 5, "LOC"], ["d2", 0, 1, "LOC"]
    ]  # fmt: skip
    assert spans["score"].tolist() == [0.25] * 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["params"] == {"floor": 0.25, "tag": "y"}
    workers = json.loads((out / "workers.json").read_text())
    assert workers == {"skill": {"w1": 0.5, "w2": 0.5, "w3": 0.5}}
    listed = run("aggregate", "--list", "--kind", "spans")
    assert "first" in listed.output and "Every span of the task's first worker" in listed.output
    monkeypatch.setattr(span_package, "DEFAULT_SPAN_STRATEGY", "first", raising=False)
    result = run("aggregate", folder, "--kind", "spans", "-o", tmp_path / "default")
    assert result.exit_code == 0, result.output
    assert "strategy first (the default for spans)" in result.stderr


def test_list_shows_the_span_strategies(folder):
    result = run("aggregate", "--list")
    assert result.exit_code == 0, result.output
    assert (
        f"--kind spans (spans (sequence tags); default {DEFAULT_SPAN_STRATEGY})" in result.output
    )
    assert "Per token, the tag most workers of the task gave" in result.output


def test_truth_of_the_data_is_scored(folder, tmp_path):
    out = tmp_path / "out"
    result = run("aggregate", folder, "--kind", "spans", "-s", "mv", "-o", out, "--truth")
    assert result.exit_code == 0, result.output
    data = read_conll_folders(folder)
    predicted = TokenMajorityVote().fit(data).predict()
    rows = [
        [task, start, end, label]
        for task, pairs in GOLD.items()
        for start, end, label in tags_to_spans([tag for _, tag in pairs])[0]
    ]
    truth = pd.DataFrame(rows, columns=["task", "start", "end", "label"])
    expected = span_scores(predicted, truth)
    # 2 predicted, both right; 3 true spans (Paris LOC missed)
    assert (expected["n_correct"], expected["n_predicted"], expected["n_true"]) == (2, 2, 3)
    line = [line for line in result.stdout.splitlines() if line.startswith("strict span")]
    assert line == [
        "strict span scores against the data's truth: precision 1.0000, recall 0.6667, "
        "F1 0.8000 (2 correct of 2 predicted, 3 true spans)"
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["truth"]["f1"] == pytest.approx(expected["f1"])
    assert summary["truth"]["source"] == "the data's truth"


def test_truth_file_scores_the_tasks_it_holds(folder, tmp_path):
    """--truth FILE: CoNLL with -DOCSTART- TASK headers; only its tasks are scored, and
    its tokens are aligned to the reference tokens."""
    gold = tmp_path / "gold.conll"
    # d2 only, its truth says "Paris is" is one LOC; a token split in two (bi g)
    gold.write_text("-DOCSTART- d2\nParis B-LOC\nis I-LOC\n\nbi O\ng O\n")
    out = tmp_path / "out"
    result = run("aggregate", folder, "--kind", "spans", "-s", "mv", "-o", out, "--truth", gold)
    assert result.exit_code == 0, result.output
    assert (
        f"strict span scores against {gold} on 1 of 2 tasks: precision 0.0000, recall "
        "0.0000, F1 0.0000 (0 correct of 0 predicted, 1 true spans)"
    ) in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["truth"]["tasks"] == 1
    # the blank line is a sentence break, not the end of the document; the truth's
    # own file (d1's gold) scores 1.0 for the two spans the result has
    gold.write_text("-DOCSTART- d1\nAda B-PER\nLovelace I-PER\nwrote O\n\nin O\nLondon B-LOC\n")
    result = run(
        "aggregate", folder, "--kind", "spans", "-s", "mv", "-o", out, "--truth", gold, OVER
    )
    assert result.exit_code == 0, result.output
    assert "on 1 of 2 tasks: precision 1.0000, recall 1.0000, F1 1.0000" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("-DOCSTART- d9\nAda B-PER\n", "line 1: task 'd9' is not in the data"),
        ("-DOCSTART- d1\nAda B-PER\nLovelace X-PER\n", "line 3: unknown tag 'X-PER'"),
        ("Ada B-PER\n", "line 1: a token before any '-DOCSTART- TASK' line"),
        ("-DOCSTART- d1\n-DOCSTART- d2\nParis O\n", "line 1: task 'd1' has no tokens"),
        ("-DOCSTART- d2\nParis O\n-DOCSTART- d2\n", "line 3: task 'd2' appears twice"),
        ("", "no tokens"),
    ],
)
def test_a_bad_truth_file_is_one_error_and_nothing_written(folder, tmp_path, content, message):
    gold = tmp_path / "gold.conll"
    gold.write_text(content)
    out = tmp_path / "out"
    result = run("aggregate", folder, "--kind", "spans", "-o", out, "--truth", gold)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("crowdlearn: error: ")
    assert f"--truth {gold}" in result.stderr and message in result.stderr
    assert not out.exists()


def test_outputs_are_refused_then_replaced_with_overwrite(folder, tmp_path):
    out = tmp_path / "out"
    assert run("aggregate", folder, "--kind", "spans", "-o", out).exit_code == 0
    before = (out / "spans.csv").read_bytes()
    result = run("aggregate", folder, "--kind", "spans", "-o", out)
    assert result.exit_code == 2 and "--overwrite" in result.stderr
    result = run("aggregate", folder, "--kind", "spans", "-o", out, "--overwrite",
                 "--format", "parquet")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not (out / "spans.csv").exists()  # replaced as a whole
    assert pd.read_parquet(out / "spans.parquet").equals(pd.read_csv(io.BytesIO(before)))


def test_character_offsets_are_written_for_text_input(folder, tmp_path, monkeypatch):
    """The hook for text input: Spans with ``offsets`` (and ``texts``) get character
    offsets in spans.csv; tags.conll breaks sentences where the data keep ``breaks``."""
    import crowdlearn.cli._spans as cli_spans

    data = read_conll_folders(folder)
    texts = ["Ada Lovelace wrote in London", "Paris is big"]
    offsets = []
    for text, tokens in zip(texts, data.tokens, strict=True):
        starts = [text.index(t) for t in tokens]
        offsets.append(np.array([[s, s + len(t)] for s, t in zip(starts, tokens, strict=True)]))
    object.__setattr__(data, "offsets", offsets)
    object.__setattr__(data, "texts", texts)
    object.__setattr__(data, "breaks", [[0, 3], [0]])
    monkeypatch.setattr(cli_spans, "read_spans", lambda source, duplicates="error": data)
    out = tmp_path / "out"
    result = run("aggregate", folder, "--kind", "spans", "-s", "mv", "-o", out)
    assert result.exit_code == 0, result.output
    spans = _read(out / "spans.csv")
    assert spans[["task", "start", "end", "label", "text"]].values.tolist() == [
        ["d1", 0, 12, "PER", "Ada Lovelace"],
        ["d1", 22, 28, "LOC", "London"],
    ]
    assert json.loads((out / "summary.json").read_text())["unit"] == "character"
    assert (
        (out / "tags.conll")
        .read_text()
        .startswith("-DOCSTART- d1\nAda B-PER\nLovelace I-PER\nwrote O\n\nin O\nLondon B-LOC\n\n")
    )
    # a Spans method char_spans(task, start, end) is preferred over the offsets
    object.__setattr__(data, "char_spans", lambda task, start, end: (100 + start, 100 + end))
    result = run("aggregate", folder, "--kind", "spans", "-s", "mv", "-o", out, OVER)
    assert _read(out / "spans.csv")[["start", "end"]].values.tolist() == [[100, 102], [104, 105]]


def test_conll_tokens_with_whitespace_stay_one_field():
    from crowdlearn.cli._spans import conll_text

    data = Spans.from_tags(["t"], ["w"], [["B-X", "O"]], tokens={"t": ["New York", ""]})
    spans = pd.DataFrame({"task": ["t"], "start": [0], "end": [1], "label": ["X"]})
    assert conll_text(spans, data) == "-DOCSTART- t\nNew_York B-X\n O\n\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "nosuch"], "unknown span strategy 'nosuch'; choose one of "),
        (["-s", "mv", "--param", "depth=2"], "span strategy 'mv' has no parameter 'depth'"),
        (["--gold", "GOLD"], "--gold is not supported for spans"),
        (["--write-back", "labelstudio"], "--write-back is not supported for spans"),
        (["--state", "s.state"], "--state aggregates classes, not spans (sequence tags)"),
    ],
)
def test_bad_options_are_one_error_and_nothing_written(folder, tmp_path, args, message):
    gold = tmp_path / "gold.csv"
    gold.write_text("task,label\nd1,x\n")
    args = [str(gold) if a == "GOLD" else a for a in args]
    out = tmp_path / "out"
    result = run("aggregate", folder, "--kind", "spans", "-o", out, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert not out.exists()


def test_truth_before_data_says_what_it_took(folder, tmp_path):
    result = run("aggregate", "--truth", folder, "--kind", "spans", "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert f"--truth took '{folder}' as its FILE and DATA is missing" in result.stderr
    assert not (tmp_path / "out").exists()


def test_truth_and_consensus_belong_to_spans(tmp_path):
    crowd = tmp_path / "crowd.csv"
    crowd.write_text("task,worker,label\nt1,w1,a\nt1,w2,b\n")
    result = run("aggregate", crowd, "-o", tmp_path / "out", "--truth")
    assert result.exit_code == 2 and "--truth applies to --kind spans, not to class" in (
        result.stderr
    )
    result = run("identify", crowd, "-o", tmp_path / "out", "--consensus", "mv")
    assert result.exit_code == 2 and "--consensus applies to --kind spans" in result.stderr


def test_a_file_is_not_spans_without_a_reader_for_it(tmp_path):
    from crowdlearn.io import KINDS

    if "spans" in KINDS:
        pytest.skip("crowdlearn.io reads spans files: its own tests cover them")
    crowd = tmp_path / "crowd.csv"
    crowd.write_text("task,worker,label\nt1,w1,a\nt1,w2,b\n")
    result = run("aggregate", crowd, "--kind", "spans", "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert f"{crowd}: --kind spans reads a folder of per-worker CoNLL files" in result.stderr
    result = run("aggregate", "-", "--kind", "spans", "-o", tmp_path / "out")
    assert result.exit_code == 2 and "not standard input" in result.stderr


def test_inspect_says_what_the_spans_are(folder):
    result = run("inspect", folder, "--kind", "spans")
    assert result.exit_code == 0, result.output
    for line in (
        "kind: spans (spans (sequence tags))",
        "tasks: 2",
        "workers: 3",
        "labels: LOC, ORG, PER",
        "tokens: 8",
        "spans marked: 7",
        "true spans: 3",
    ):
        assert line in result.output  # fmt: skip


# ------------------------------------------------------------------ identify
def test_identify_scores_workers_against_the_consensus_and_the_truth(folder, tmp_path):
    out = tmp_path / "id"
    result = run("identify", folder, "--kind", "spans", "--consensus", "mv", "-o", out)
    assert result.exit_code == 0, result.output
    workers = pd.read_csv(out / "workers.csv").set_index("worker")
    # consensus: d1 {Ada Lovelace PER, London LOC}, d2 {}
    # w1: d1 both right, d2 Paris LOC (not in the consensus): P 2/3, R 2/2
    # w2: d1 Ada PER (wrong bounds), London LOC: P 1/2, R 1/2
    # w3: d1 Ada Lovelace PER, London ORG: P 1/2, R 1/2
    assert workers["n_tasks"].tolist() == [2, 2, 1]
    assert workers["n_spans"].tolist() == [3, 2, 2]
    np.testing.assert_allclose(workers["precision"], [2 / 3, 1 / 2, 1 / 2])
    np.testing.assert_allclose(workers["recall"], [1, 1 / 2, 1 / 2])
    # truth: d1 as the consensus, d2 {Paris LOC}: w1 perfect, w2 R 1/3
    np.testing.assert_allclose(workers["truth_precision"], [1, 1 / 2, 1 / 2])
    np.testing.assert_allclose(workers["truth_recall"], [1, 1 / 3, 1 / 2])
    tasks = pd.read_csv(out / "tasks.csv").set_index("task")
    # d1: pairs w1-w2 0.5, w1-w3 0.5, w2-w3 0; d2: w1 {Paris} against w2 {}: 0
    np.testing.assert_allclose(tasks["agreement"], [1 / 3, 0])
    assert tasks["n_workers"].tolist() == [3, 2]
    assert tasks["n_consensus_spans"].tolist() == [2, 0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["consensus"] == "mv"
    assert summary["mean_agreement"] == pytest.approx(1 / 6)


def test_identify_adds_the_aggregators_own_worker_scores(folder, tmp_path, monkeypatch):
    class Scored(TokenMajorityVote):
        """Majority vote with a worker score (a test aggregator)."""

        def fit(self, data):
            super().fit(data)
            self.worker_scores_ = pd.DataFrame(
                {"skill": [0.9, 0.1, 0.5]}, index=pd.Index(data.worker_ids, name="worker")
            )
            return self

    monkeypatch.setitem(SPAN_STRATEGIES, "scored", Scored)
    out = tmp_path / "id"
    result = run("identify", folder, "--kind", "spans", "--consensus", "scored", "-o", out)
    assert result.exit_code == 0, result.output
    workers = pd.read_csv(out / "workers.csv")
    assert workers["model_skill"].tolist() == [0.9, 0.1, 0.5]
    result = run("identify", folder, "--kind", "spans", "--consensus", "nosuch", "-o", out)
    assert result.exit_code == 2 and "unknown span strategy 'nosuch'" in result.stderr


def test_identify_refuses_class_options_for_spans(folder, tmp_path):
    result = run("identify", folder, "--kind", "spans", "-s", "waum", "-o", tmp_path / "o")
    assert result.exit_code == 2 and "apply to classes" in result.stderr


# ------------------------------------------------------------------ report
def test_report_shows_the_least_agreeing_documents_with_each_workers_spans(folder, tmp_path):
    out = tmp_path / "r.html"
    result = run("report", folder, "--kind", "spans", "-s", "mv", "-o", out, "--truth")
    assert result.exit_code == 0, result.output
    page = out.read_text()
    # d2 (agreement 0) comes before d1 (1/3)
    assert page.index("<h3>d2: mean pairwise span F1 0.000") < page.index(
        "<h3>d1: mean pairwise span F1 0.333"
    )
    d1 = page[page.index("<h3>d1:") :]
    rows = d1[: d1.index("</table>")].split("<tr>")[2:]
    assert [r.split("</td>")[0].split(">")[-1] for r in rows] == [
        "result (mv)", "truth", "w1", "w2", "w3"
    ]  # fmt: skip
    assert '<mark title="PER">Ada <sub>PER</sub></mark> Lovelace wrote' in rows[3]  # w2
    assert '<mark title="ORG">London <sub>ORG</sub></mark>' in rows[4]  # w3
    assert "strict span P / R / F1 of mv against the truth" in page
    assert "1.000 / 0.667 / 0.800" in page


def test_report_takes_one_strategy(folder, tmp_path):
    result = run("report", folder, "--kind", "spans", "-s", "mv,mv2", "-o", tmp_path / "r.html")
    assert result.exit_code == 2 and "one strategy" in result.stderr
    result = run("report", folder, "--kind", "spans", "-s", "nosuch", "-o", tmp_path / "r.html")
    assert result.exit_code == 2 and "unknown span strategy 'nosuch'" in result.stderr
    assert not (tmp_path / "r.html").exists()


def test_marked_text_cuts_long_documents():
    from crowdlearn.report._spans import marked_text

    tokens = [f"t{i}" for i in range(10)]
    text = marked_text(tokens, [(2, 5, "X"), (8, 10, "Y")], cut=4)
    assert text == 't0 t1 <mark title="X">t2 t3 <sub>X</sub></mark> ... (6 more tokens)'
    assert marked_text(["<b>"], []) == "&lt;b&gt;"
