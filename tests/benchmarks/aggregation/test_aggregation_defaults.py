"""The aggregation-defaults benchmark: quick runs on a real dataset and on the demo's
simulated crowd, and its reading sentence against its own table."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from benchmarks import run
from benchmarks.aggregation.defaults import (
    CANDIDATES,
    DEMO,
    MEAN,
    NAME,
    QUICK_DATASETS,
    reading,
)
from crowdlearn.aggregation import DawidSkene


def _reread(raw: pd.DataFrame) -> dict:
    """What the sentence should say, recomputed here from the raw rows."""
    means = raw.groupby(["dataset", "method"])["accuracy"].mean().round(3).unstack()
    real = means.drop(index=DEMO, errors="ignore")
    columns = [c.column for c in CANDIDATES]
    best_mean = real[columns].mean().round(3).max()
    best = next(c for c in columns if round(real[c].mean(), 3) == best_mean)
    reference = CANDIDATES[0].column
    return {
        "best": best,
        "mean": best_mean,
        "better": int((real[best] > real[reference]).sum()),
        "worse": int((real[best] < real[reference]).sum()),
        "n": len(real),
        "demo": means.loc[DEMO] if DEMO in means.index else None,
    }


def test_quick_run_on_a_real_dataset_and_the_demo_crowd(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run(NAME, tmp_path, quick=True, seeds=2)
    text = report.read_text()
    raw = pd.read_csv(tmp_path / f"{NAME}.csv")
    assert set(raw["dataset"]) == {*QUICK_DATASETS, DEMO}
    methods = ["MV", "one-coin DS", *[c.column for c in CANDIDATES], "crowd-kit DS"]
    assert list(dict.fromkeys(raw["method"])) == methods
    assert len(raw) == (len(QUICK_DATASETS) + 1) * 2 * len(methods)
    ours = raw[raw["method"] != "crowd-kit DS"]
    assert ours["accuracy"].between(0, 1).all()
    # exactly one candidate is the current default, and it is DawidSkene()'s setting
    marked = [c for c in CANDIDATES if c.column.endswith("(default)")]
    assert len(marked) == 1
    assert all(DawidSkene().get_params()[k] == v for k, v in marked[0].params.items())
    header = "| dataset | tasks | labels/task | " + " | ".join(methods) + " |"
    assert header in text
    assert f"| {MEAN} |" in text and f"| {DEMO} |" in text

    # the sentence right under the table agrees with the numbers
    sentence = reading(raw)
    assert f"\n\n{sentence}\n\n" in text
    expected = _reread(raw)
    n = expected["n"]
    assert sentence.startswith(f"Over the {n} real dataset{'s' if n > 1 else ''}, ")
    assert f"{expected['best']} has the highest mean accuracy ({expected['mean']:.3f})" in sentence
    assert (
        f"better on {expected['better']}, equal on {n - expected['better'] - expected['worse']} "
        f"and worse on {expected['worse']} datasets"
    ) in sentence
    demo = expected["demo"]
    assert f"on the demo crowd it scores {demo[expected['best']]:.3f}" in sentence

    # the demo controls: the model with the true confusions beats MV, and EM without a
    # prior reads the sparse workers as worse than they are
    controls = pd.read_csv(tmp_path / f"{NAME}-controls.csv")
    assert len(controls) == 2
    assert (controls["DS with the true confusions"] > controls["MV"]).all()
    assert (controls["sparse diag: DS no prior"] < controls["sparse diag: true"]).all()
    assert "**Demo controls (means over seeds)**" in text


def test_absent_data_root_still_runs_the_demo_crowd(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    report = run(NAME, tmp_path / "out", quick=True, seeds=1)
    text = report.read_text()
    for name in QUICK_DATASETS:
        assert f"- {name} skipped: dataset {name!r} is not in" in text
    raw = pd.read_csv(tmp_path / "out" / f"{NAME}.csv")
    assert set(raw["dataset"]) == {DEMO}
    assert "No real dataset was found" in text


def test_the_sentence_counts_wins_at_three_decimals():
    rows = []
    # two datasets: "diagonal 4" wins one by 0.02 and ties the other up to rounding
    # (0.9001 and 0.9004 are both 0.900 in the table, so the means are 0.850 and 0.860)
    values = {"a": (0.80, 0.82), "b": (0.9001, 0.9004)}
    for name, (plain, diag) in values.items():
        for candidate in CANDIDATES:
            accuracy = diag if candidate.label == "diagonal 4" else plain
            rows.append(
                {"dataset": name, "seed": 0, "method": candidate.column, "accuracy": accuracy}
            )
        rows.append({"dataset": name, "seed": 0, "method": "MV", "accuracy": 0.7})
    sentence = reading(pd.DataFrame(rows))
    best = next(c.column for c in CANDIDATES if c.label == "diagonal 4")
    assert sentence.startswith(
        f"Over the 2 real datasets, {best} has the highest mean accuracy (0.860)"
    )
    assert "+0.010 over" in sentence and "+0.160 over MV" in sentence
    assert "better on 1, equal on 1 and worse on 0 datasets" in sentence
    assert re.search(r"demo", sentence) is None


@pytest.mark.parametrize("label", [c.label for c in CANDIDATES])
def test_candidates_state_every_varied_parameter(label):
    candidate = next(c for c in CANDIDATES if c.label == label)
    assert set(candidate.params) == {"smoothing", "diagonal_prior", "max_iter", "tol"}
    assert candidate.description
