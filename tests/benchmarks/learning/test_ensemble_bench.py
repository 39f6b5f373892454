"""``python -m benchmarks ensemble``: its verdicts and a quick run without truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import run
from benchmarks.learning.ensemble import ENSEMBLE_METHODS, ensemble_verdicts
from crowdlearn.learning import make_learner
from crowdlearn.learning.ensemble import DEFAULT_MEMBERS


def summary(rows: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """spec -> (mean accuracy, mean ECE), as ``summarise`` makes it."""
    return pd.DataFrame(
        {
            "accuracy_mean": [a for a, _ in rows.values()],
            "ece_mean": [e for _, e in rows.values()],
        },
        index=list(rows),
    )


def test_verdicts_compare_the_ensemble_with_the_target_and_its_best_member():
    members = {spec: (0.70, 0.07) for spec in DEFAULT_MEMBERS}
    members["annot-mix"] = (0.72, 0.07)
    music = summary({**members, "ensemble": (0.745, 0.05)})
    labelme = summary({**members, "ensemble": (0.71, 0.09)})
    verdicts = {v.target: v for v in ensemble_verdicts({"music": music, "labelme": labelme})}
    assert verdicts["music: `ensemble` >= 0.74 (issue 15's best learner)"].met
    assert verdicts["music: `ensemble` >= its best member"].met
    assert "annot-mix 0.720" in verdicts["music: `ensemble` >= its best member"].detail
    assert not verdicts["labelme: `ensemble` >= its best member"].met
    assert not verdicts["labelme: `ensemble`'s ECE <= 0.08"].met
    below = summary({**members, "ensemble": (0.739, 0.05)})
    (target, *_) = ensemble_verdicts({"music": below})
    assert target.met is False and target.detail == "0.739"


def test_verdicts_judge_the_ensemble_named_against_its_own_members():
    rows = {
        "dl-em": (0.75, 0.05),
        "madl": (0.70, 0.05),
        "ensemble[members=dl-em/madl]": (0.74, 0.05),
    }
    (target, best, _) = ensemble_verdicts(
        {"music": summary(rows)}, "ensemble[members=dl-em/madl]", ("dl-em", "madl")
    )
    assert target.met and target.target.startswith("music: `ensemble[members=dl-em/madl]`")
    assert best.met is False and "dl-em 0.750" in best.detail
    assert ensemble_verdicts({"music": summary(rows)}) == []  # no default ensemble row
    (said, *_) = ensemble_verdicts(
        {"music": summary(rows)}, "ensemble[members=dl-em/madl]", ("dl-em", "madl"), "in-sample"
    )
    assert said.target.endswith("(issue 15's best learner; in-sample)")


def test_every_method_of_the_benchmark_is_a_valid_spec():
    for method in ENSEMBLE_METHODS:
        make_learner(method.spec)
    control = make_learner("ensemble[members=dl-em,n_seeds=4]")
    default = make_learner("ensemble")
    assert len(control._build_members()) == len(default._build_members()) == 4


def test_quick_run_scores_the_ensemble_and_its_members(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("ensemble", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "ensemble.csv")
    assert set(raw["spec"]) == {"ds+nn", "dl-em", "ensemble[members=dl-em/ds+nn]"}
    assert set(raw["dataset"]) == {"music", "labelme"} and (raw["status"] == "ok").all()
    text = report.read_text()
    assert "undetermined" in text and "ensemble" in text


def test_selection_rows_rank_ensemble_and_reference_from_the_fits():
    from benchmarks.learning.ensemble import selection_rows

    y = np.array([0, 1, 1, 0])
    right = np.eye(2)[y]
    wrong = np.eye(2)[1 - y]
    half = np.full((4, 2), 0.5) + np.array([[0.1, -0.1], [0.1, -0.1], [-0.1, 0.1], [-0.1, 0.1]])
    fits = [  # scores rank the worst learner first: a selection that misleads
        {"seed": 0, "spec": "a", "score": -1.0, "accuracy": 0.0, "proba": wrong},
        {"seed": 0, "spec": "b", "score": -2.0, "accuracy": 0.5, "proba": half},
        {"seed": 0, "spec": "c", "score": -3.0, "accuracy": 1.0, "proba": right},
    ]
    rows = selection_rows(fits, y)
    assert rows["Spearman(selection score, test accuracy)"] == [pytest.approx(-1.0)]
    assert rows["score rank of the most accurate candidate"] == [3.0]
    assert rows["ensemble of the top 1 by score: accuracy"] == [0.0]
    # top 2: wrong + half -> class 1 - y everywhere except where half leans right
    top2 = np.mean([wrong, half], axis=0).argmax(axis=1)
    assert rows["ensemble of the top 2 by score: accuracy"] == [float(np.mean(top2 == y))]
    assert "ensemble of the top 4 by score: accuracy" not in rows  # only 3 candidates
    assert rows["most accurate candidate (chosen on test; reference)"] == [1.0]
    assert "default ensemble (same fits): accuracy" not in rows  # its members are absent


def test_member_selection_quick_run(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("member-selection", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "member-selection.csv")
    assert set(raw["spec"]) == {"dl-em", "ds+nn", "mv+nn"} and len(raw) == 2 * 2 * 3
    assert raw["score"].lt(0).all()  # log-likelihoods per annotation
    assert "Spearman" in report.read_text()


def test_recipe_rows_keep_the_recipe_with_the_higher_score_seed_by_seed():
    from benchmarks.learning.ensemble import published_spec, recipe_rows

    pub = published_spec("dl-em")
    assert pub.startswith("dl-em[hidden=256/128,") and make_learner(pub).hidden == (256, 128)
    fits = [
        {"seed": 0, "spec": "dl-em", "score": -1.0, "accuracy": 0.70},
        {"seed": 0, "spec": pub, "score": -2.0, "accuracy": 0.75},
        {"seed": 1, "spec": "dl-em", "score": -3.0, "accuracy": 0.60},
        {"seed": 1, "spec": pub, "score": -2.5, "accuracy": 0.80},
    ]
    (row,) = recipe_rows(fits, ["dl-em", "conal"])  # conal has no fits: no row
    assert row["learner"] == "`dl-em`"
    assert row["our MLP"] == "0.650 ± 0.050" and row["published MLP"] == "0.775 ± 0.025"
    assert row["chosen by the score"] == "0.750 ± 0.050"  # seed 0: ours, seed 1: published
    assert row["published chosen"] == "1/2"
    assert row["better of the two (test; reference)"] == "0.775 ± 0.025"


def test_recipe_selection_quick_run(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("recipe-selection", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "recipe-selection.csv")
    assert len(raw) == 2 * 2 * 4 and set(raw["dataset"]) == {"music", "labelme"}
    assert "published chosen" in report.read_text()
