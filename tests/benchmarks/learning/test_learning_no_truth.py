"""The no-truth protocol: routing, verdicts, and quick runs that never give truth to a fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import BENCHMARKS, run
from benchmarks._registry import protocol_name
from benchmarks.learning.no_truth import (
    REAL_LEARNING_SKIP,
    board_published,
    budget_verdict,
    decided,
    end_to_end_verdicts,
    labelme_gap_verdicts,
    music_verdicts,
    real_learning_methods,
)
from benchmarks.speed.aggregation import Verdict
from crowdlearn.data import CrowdDataError
from crowdlearn.learning import LEARNERS


def summary(rows: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """A summary frame as benchmarks._learning.summarise makes it: spec -> (accuracy, ECE)."""
    return pd.DataFrame(
        {
            "status": ["ok"] * len(rows),
            "accuracy_mean": [a for a, _ in rows.values()],
            "ece_mean": [e for _, e in rows.values()],
        },
        index=list(rows),
    )


def test_protocol_routes_to_the_no_truth_benchmarks():
    assert protocol_name("music", "no-truth") == "music-no-truth"
    assert protocol_name("labelme", None) == "labelme"
    assert protocol_name("labelme", "valid") == "labelme"
    assert {"music-no-truth", "labelme-no-truth", "real-learning"} <= set(BENCHMARKS)
    assert protocol_name("leaderboard", "no-truth") == "leaderboard-no-truth"
    with pytest.raises(CrowdDataError, match="those that do: \\['labelme', 'leaderboard'"):
        protocol_name("iced", "no-truth")
    with pytest.raises(CrowdDataError, match="--protocol"):
        protocol_name("music", "oracle")


def test_music_verdicts_follow_the_issue_targets():
    good = summary(
        {
            "supervised": (0.79, 0.05),
            "ds+nn": (0.70, 0.05),
            "crowdlayer[variant=MW]": (0.71, 0.07),
            "dl-em": (0.745, 0.06),
        }
    )
    verdicts = music_verdicts(good)
    assert [v.met for v in verdicts] == [True, True, True, True]
    bad = summary(
        {
            "ds+nn": (0.70, 0.05),
            "crowdlayer[variant=MW]": (0.69, 0.20),
            "dl-em": (0.72, 0.06),
        }
    )
    words = {v.target: v.met for v in music_verdicts(bad)}
    assert words == {
        "best crowd learner >= 0.74": False,
        "Crowd Layer >= 0.7": False,
        "every end-to-end learner >= DS+NN": False,
        "ECE <= 0.08 for every learner": False,
    }
    # the gold-label network is never the "best crowd learner"
    gold_only_best = summary({"supervised": (0.9, 0.0), "ds+nn": (0.6, 0.0)})
    assert "ds+nn 0.600" in music_verdicts(gold_only_best)[0].detail


def test_verdicts_are_undetermined_unless_ten_seeds_of_the_full_recipe():
    verdicts = end_to_end_verdicts(summary({"ds+nn": (0.7, 0.01), "conal": (0.6, 0.01)}))
    assert verdicts[0].met is False
    assert all(v.met is None for v in decided(verdicts, quick=False, seeds=3))
    assert all(v.met is None for v in decided(verdicts, quick=True, seeds=10))
    assert decided(verdicts, quick=False, seeds=10)[0].met is False


def test_labelme_gap_compares_with_the_with_validation_run(tmp_path):
    rows = [
        {"spec": "conal", "status": "ok", "accuracy": 0.86},
        {"spec": "conal", "status": "ok", "accuracy": 0.88},
        {"spec": "dl-em", "status": "ok", "accuracy": 0.88},
        {"spec": "ds+nn", "status": "ok", "accuracy": 0.99},  # two-stage: not compared
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "labelme.csv", index=False)
    close = summary({"conal": (0.865, 0.0), "dl-em": (0.875, 0.0), "ds+nn": (0.5, 0.0)})
    (verdict,) = labelme_gap_verdicts(close, tmp_path / "labelme.csv")
    assert verdict.met is True and "conal -0.005" in verdict.detail
    far = summary({"conal": (0.85, 0.0), "dl-em": (0.875, 0.0)})
    assert labelme_gap_verdicts(far, tmp_path / "labelme.csv")[0].met is False
    missing = labelme_gap_verdicts(far, tmp_path / "nothing.csv")[0]
    assert isinstance(missing, Verdict) and missing.met is None


def test_real_learning_runs_every_registered_learner():
    specs = {method.spec for method in real_learning_methods()}
    assert {name for name in LEARNERS if name not in REAL_LEARNING_SKIP} <= specs
    assert "cmm[setting=global]" in specs
    # an alias is fitted once: geocrowdnet is geocrowdnet-f
    assert "geocrowdnet" not in specs and "geocrowdnet-f" in specs
    from crowdlearn.learning import make_learner

    assert make_learner("geocrowdnet").get_params() == make_learner("geocrowdnet-f").get_params()


def test_music_no_truth_quick_run_reads_no_truth(tmp_path, shared_datasets, monkeypatch):
    """The quick run gives no truth to the fits: hiding the training truth changes
    nothing in the raw rows (the test scores use the test split only)."""
    from crowdlearn import datasets

    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("music", tmp_path / "a", quick=True, protocol="no-truth")
    text = report.read_text()
    assert "## music-no-truth (quick)" in text
    assert "python -m benchmarks music --protocol no-truth --quick" in text
    assert "**undetermined** (--quick" in text
    first = pd.read_csv(tmp_path / "a" / "music-no-truth.csv")
    original = datasets.load

    def without_truth(name, *args, **kwargs):
        dataset = original(name, *args, **kwargs)
        object.__setattr__(dataset, "train", dataset.train.with_truth(None))
        return dataset

    monkeypatch.setattr(datasets, "load", without_truth)
    run("music", tmp_path / "b", quick=True, protocol="no-truth")
    second = pd.read_csv(tmp_path / "b" / "music-no-truth.csv")
    assert (first["status"] == "ok").all()
    np.testing.assert_allclose(first["accuracy"], second["accuracy"])
    np.testing.assert_allclose(first["ece"], second["ece"])


@pytest.mark.parametrize("name", ["leaderboard", "real-learning"])
def test_board_quick_run_has_methods_by_datasets(tmp_path, shared_datasets, monkeypatch, name):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run(name, tmp_path, quick=True)
    text = report.read_text()
    raw = pd.read_csv(tmp_path / f"{name}.csv")
    assert set(raw["dataset"]) == {"digits-sim", "music"}
    assert (raw["status"] == "ok").all()
    header = next(line for line in text.splitlines() if line.startswith("| method"))
    assert "digits-sim" in header and "music" in header and "published Music" in header
    assert "**macro-F1, ECE and fit seconds**" in text
    assert "**undetermined** (--quick" in text


def test_budget_verdict_is_the_wall_time_against_an_hour_and_needs_ten_seeds():
    assert budget_verdict(24, 4, 3599.0).met is True
    late = budget_verdict(24, 4, 3601.0)
    assert late.met is False and "60.0 min" in late.detail
    assert "24 methods x 4 datasets x 10 seeds" in late.target
    assert decided([budget_verdict(24, 4, 10.0)], False, 2)[0].met is None


def test_board_quotes_the_published_crowd_layer_for_the_default_variant():
    from crowdlearn.learning import make_learner

    assert make_learner("crowdlayer").variant == "MW"
    assert board_published()["crowdlayer"] == board_published()["crowdlayer[variant=MW]"]


def test_crowdlayer_init_quick_run_compares_both_starts(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("crowdlayer-init", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "crowdlayer-init.csv")
    assert set(raw["spec"]) == {"crowdlayer", "crowdlayer[init=dawid-skene]"}
    assert set(raw["dataset"]) == {"music", "labelme"} and (raw["status"] == "ok").all()
    assert "Dawid-Skene start" in report.read_text()
