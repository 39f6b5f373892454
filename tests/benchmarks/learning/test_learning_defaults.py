"""learning-defaults: every setting runs on the same learners and seeds."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.learning.defaults import SETTINGS


def test_quick_run_covers_every_setting(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("learning-defaults", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "learning-defaults.csv")
    assert list(raw["setting"]) == list(SETTINGS)
    assert raw["accuracy"].between(0, 1).all() and raw["ece"].between(0, 1).all()
    # the "last" settings keep their last epoch; crowd validation picks one of those run
    last = raw[raw["setting"].str.startswith("last")]
    assert (last["epoch"] == 2).all()
    assert (raw["epoch"] <= 2).all()
    assert "crowd 100 + refit: accuracy" in report.read_text()


def test_music_recipe_quick_run_compares_both_recipes(tmp_path, shared_datasets, monkeypatch):
    from benchmarks.learning.defaults import RECIPES

    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("music-recipe", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "music-recipe.csv")
    assert list(raw["recipe"]) == list(RECIPES)
    assert raw["accuracy"].between(0, 1).all()
    assert "published MLP, last 50: accuracy" in report.read_text()


def test_labelme_recipe_quick_run(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    run("labelme-recipe", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "labelme-recipe.csv")
    assert len(raw) == 2 and raw["accuracy"].between(0, 1).all()


def test_music_published_quick_run_sets_ours_beside_the_published_number(
    tmp_path, shared_datasets, monkeypatch
):
    from benchmarks.learning.defaults import RECIPES
    from benchmarks.learning.no_truth import ANNOT_MIX_MUSIC

    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("music-published", tmp_path, quick=True).read_text()
    raw = pd.read_csv(tmp_path / "music-published.csv")
    assert sorted(raw["recipe"]) == sorted(RECIPES)
    # the difference printed is ours (published MLP) minus the quoted number
    ours = raw.loc[raw["recipe"] == "published MLP, last 50", "accuracy"].mean()
    assert f"{ours - ANNOT_MIX_MUSIC['mv+nn']:+.3f}" in report
    assert f"{ANNOT_MIX_MUSIC['mv+nn']:.3f}" in report
