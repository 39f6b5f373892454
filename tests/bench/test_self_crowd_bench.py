"""The self-crowd benchmark: the quick run on LabelMe and the claim checks."""

from __future__ import annotations

import pandas as pd

from crowdlearn.bench import run
from crowdlearn.bench.self_crowd import QUICK, RULES, summary_tables, verdicts


def _rows(accuracy: dict[str, list[float]], r_selected: dict[str, float]) -> pd.DataFrame:
    """Raw rows of the rounds part: one seed, rounds 0..n, given accuracies per rule."""
    rows = []
    for rule, values in accuracy.items():
        for round_, value in enumerate(values):
            rows.append(
                {
                    "part": "rounds",
                    "rule": rule,
                    "seed": 0,
                    "removed": 0.0,
                    "round": round_,
                    "test_accuracy": value,
                    "R_selected": float("nan") if round_ == 0 else r_selected[rule],
                    "R_combined": 0.1,
                    "n_annotations": None,
                }
            )
    return pd.DataFrame(rows)


def test_verdicts_follow_the_numbers():
    held = _rows(
        {
            "balanced": [0.80, 0.82, 0.83],
            "confidence": [0.80, 0.75, 0.70],
            "random": [0.80, 0.79, 0.78],
        },
        {"balanced": 0.05, "confidence": 0.4, "random": 0.1},
    )
    notes = " ".join(verdicts(held))
    assert "at every round: **holds**" in notes
    assert "after round 2: **holds**" in notes
    assert "(confidence) **falls**" in notes and "(random) **falls**" in notes
    assert "lowest R of the selected pseudo-annotations at round 2: **holds**" in notes
    broken = _rows(
        {
            "balanced": [0.80, 0.78, 0.79],
            "confidence": [0.80, 0.81, 0.82],
            "random": [0.80, 0.80, 0.80],
        },
        {"balanced": 0.2, "confidence": 0.1, "random": 0.15},
    )
    notes = " ".join(verdicts(broken))
    assert "at every round: **does not hold**" in notes
    assert "after round 2: **does not hold**" in notes
    assert "(confidence) **does not fall**" in notes
    assert "lowest R of the selected pseudo-annotations at round 2: **does not hold**" in notes
    table, sweep = summary_tables(held)
    assert table["balanced acc"].tolist() == [
        "0.8000 ± 0.0000",
        "0.8200 ± 0.0000",
        "0.8300 ± 0.0000",
    ]
    assert sweep.empty


def test_quick_run_writes_both_tables_and_figures(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("self-crowd", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| round | balanced acc | confidence acc | random acc |" in text
    assert "**Sparsity sweep (Fig. 4)" in text and "| removed p | annotations |" in text
    for key in ("rounds", "sparsity"):
        assert (tmp_path / f"self-crowd-{key}.png").stat().st_size > 0
    raw = pd.read_csv(tmp_path / "self-crowd.csv")
    rounds = raw[raw["part"] == "rounds"]
    assert len(rounds) == QUICK["seeds"] * len(RULES) * (QUICK["rounds"] + 1)
    assert rounds["test_accuracy"].between(0, 1).all()
    # round 0 is the same Crowd Layer whatever the rule
    first = rounds[rounds["round"] == 0].groupby("seed")["test_accuracy"].nunique()
    assert (first == 1).all()
    sparse = raw[raw["part"] == "sparsity"]
    assert sorted(sparse["removed"].unique()) == list(QUICK["removed"])
    kept = sparse.groupby("removed")["n_annotations"].first()
    assert kept[0.5] == round(0.5 * kept[0.0])
    assert "claim (Fig. 4), balanced at or above the Crowd Layer alone" in text
