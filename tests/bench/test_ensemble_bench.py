"""``crowdlearn bench ensemble``: its verdicts and a quick run without truth."""

from __future__ import annotations

import pandas as pd

from crowdlearn.bench import run
from crowdlearn.bench.ensemble_bench import ENSEMBLE_METHODS, ensemble_verdicts
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
