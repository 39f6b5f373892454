"""The spans-aggregation benchmark, quick version (a simulated crowd, no real data)."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.spans.aggregation import PUBLISHED, REFERENCE, _continues, simulate_ner
from crowdlearn.aggregation.spans import SPAN_STRATEGIES
from crowdlearn.metrics import span_scores


def test_quick_run(tmp_path):
    report = run("spans-aggregation", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| dataset | method | precision | recall | F1 | spans | fit_s | time_vs_mv |" in text
    assert "Published figures (test split of the same crowd; not this val split)" in text
    raw = pd.read_csv(tmp_path / "spans-aggregation.csv")
    assert sorted(raw["method"]) == sorted(SPAN_STRATEGIES)
    for column in ("precision", "recall", "f1"):
        assert raw[column].between(0, 1).all(), column
    scores = raw.set_index("method")["f1"]
    # on the simulated crowd two of five workers mark nothing: the vote misses most
    # spans, the worker models do not
    for name in ("ds", "hmm", "bsc"):
        assert scores[name] > scores[REFERENCE] + 0.3, name
    assert raw.loc[raw["method"] == REFERENCE, "time_vs_mv"].eq(1.0).all()


def test_simulated_truth_is_what_the_scores_use():
    data = simulate_ner(n_tasks=5, seed=1)
    truth = data.truth.assign(
        task=data.task_ids[data.truth.task], label=data.labels[data.truth.label]
    )
    assert span_scores(truth, truth)["f1"] == 1.0
    assert data.n_workers == 5 and len(truth) > 0


def test_orphan_i_rule_of_the_control():
    import numpy as np

    # O I-X I-X B-X I-X: the orphan run does not continue a B; the last I does
    assert _continues(np.array([0, 2, 2, 1, 2])).tolist() == [False, False, False, False, True]


def test_published_rows_are_percentages_of_a_consistent_f1():
    for _, p, r, f in PUBLISHED:
        assert abs(2 * p * r / (p + r) - f) < 0.15, (p, r, f)


def test_first_seen_tie_rule_of_the_control():
    from benchmarks.spans.aggregation import _first_seen_codes
    from crowdlearn.data.spans import Spans

    data = Spans.from_tags(
        ["d", "d"], ["a", "b"], [["B-X", "O"], ["O", "O"]], tokens={"d": ["p", "q"]}
    )
    # token 0: B-X (a) against O (b), a tie: the first worker's tag wins
    assert _first_seen_codes(data, reverse=False)[0].tolist() == [1, 0]
    assert _first_seen_codes(data, reverse=True)[0].tolist() == [0, 0]
