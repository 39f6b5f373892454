"""The spans-speed benchmark: its quick run and the logic of its table."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.spans.speed import goal_summary, n_tasks_for, run_all, speed_table
from crowdlearn.aggregation.spans import SPAN_STRATEGIES


def test_quick_spans_speed(tmp_path):
    report = run("spans-speed", tmp_path, quick=True, seeds=1)
    raw = pd.read_csv(tmp_path / "spans-speed.csv")
    assert (raw["status"] == "ok").all(), raw.get("error")
    assert set(raw["strategy"]) == set(SPAN_STRATEGIES)  # every aggregator, none forgotten
    assert (raw["fit_seconds"] > 0).all() and (raw["reference_seconds"] > 0).all()
    assert (raw["simulate_seconds"] > 0).all()
    assert raw["n_tokens"].between(4_000, 6_000).all() and (raw["peak_fit_bytes"] >= 0).all()
    assert raw["f1"].between(0, 1).all()
    mv = raw[raw["strategy"] == "mv"].iloc[0]
    assert mv["f1"] > 0.8  # five workers of the default mix: the vote is mostly right
    text = report.read_text()
    assert "| strategy | tokens | fit s | reference s | fit / reference | peak MiB |" in text
    assert "Goal (issue 45" in text


def _fake(failing: dict[tuple[str, int], str]):
    calls = []

    def fit(strategy: str, n_tasks: int, seed: int) -> dict:
        calls.append((strategy, n_tasks, seed))
        status = failing.get((strategy, n_tasks), "ok")
        if status != "ok":
            return {"status": status, "error": "no result within 300 s"}
        return {
            "status": "ok", "n_tokens": n_tasks * 175, "fit_seconds": n_tasks / 50 + seed,
            "reference_seconds": 0.5, "peak_fit_bytes": 2**20 * n_tasks, "f1": 0.9,
            "simulate_seconds": 0.1,
        }  # fmt: skip

    return fit, calls


def test_a_failure_skips_the_larger_sizes():
    fit, calls = _fake({("hmm", n_tasks_for(100_000)): "timeout"})
    raw = run_all((10_000, 100_000, 1_000_000), 2, ["mv", "hmm"], fit=fit)
    assert len(raw) == 12
    hmm = raw[raw["strategy"] == "hmm"].set_index(["target_tokens", "seed"])["status"]
    assert hmm[(10_000, 0)] == "ok" and hmm[(100_000, 0)] == "timeout"
    assert (hmm.loc[[(100_000, 1), (1_000_000, 0), (1_000_000, 1)]] == "skipped").all()
    assert ("hmm", n_tasks_for(1_000_000), 0) not in calls
    table = speed_table(raw, "mv")
    assert table["strategy"].tolist()[:3] == ["mv (default)"] * 3
    assert table.loc[table["strategy"] == "hmm", "status"].tolist() == [
        "ok", "timeout: no result within 300 s", "skipped: timeout at 100,000 tokens",
    ]  # fmt: skip
    # medians over seeds: 1M tokens -> 5714 documents, seeds 0 and 1 -> 114.28 + 0.5
    row = table[table["tokens"] == f"{n_tasks_for(1_000_000) * 175:,}"].iloc[0]
    assert row["fit s"] == n_tasks_for(1_000_000) / 50 + 0.5
    assert row["fit / reference"] == row["fit s"] / 0.5
    summary = goal_summary(raw, "mv", ["mv", "hmm"])
    assert "`mv` fits" in summary and "NOT under 60 s" in summary
    assert "`hmm`: skipped" in summary
