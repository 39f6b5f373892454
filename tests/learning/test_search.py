"""``crowdlearn.learning.search``: a grid search scored without ground truth."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.learning import BaseLearner, SearchResult, search
from crowdlearn.learning import _base as base_module
from crowdlearn.learning.search import expand_grid
from crowdlearn.simulate import crowd_on_features

#: Small and fast: every fit in this file trains a few epochs of a small MLP.
FAST = {"max_epochs": 2, "hidden": (16,), "progress": False}


@pytest.fixture(scope="module")
def crowd():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=120)
    X = (rng.normal(size=(120, 6)) + 2.0 * np.eye(3, 6)[y]).astype(np.float32)
    return crowd_on_features(X, y, n_workers=8, seed=1), X, y


@pytest.fixture(scope="module")
def found(crowd):
    data, _, _ = crowd
    # one held-out share and a refit (cross-fitted searches: test_cross_fitted_points...)
    grid = {"lr": [1e-3, 3e-2], "weight_decay": [0.0, 1e-3]}
    return search("crowdlayer", grid, data, crowd_folds=1, **FAST)


def _scores(result: SearchResult) -> pd.DataFrame:
    return result.results.drop(columns="seconds")


def test_one_row_per_point_ranked_by_score(found):
    table = found.results
    assert isinstance(found, SearchResult) and len(table) == 4
    assert list(table.columns) == [
        "rank", "lr", "weight_decay", "score", "selected_epoch", "validation", "seconds",
    ]  # fmt: skip
    assert table["rank"].tolist() == [1, 2, 3, 4]
    assert table["score"].is_monotonic_decreasing
    assert set(zip(table["lr"], table["weight_decay"], strict=True)) == {
        (1e-3, 0.0), (1e-3, 1e-3), (3e-2, 0.0), (3e-2, 1e-3),
    }  # fmt: skip
    assert (table["validation"] == "crowd").all() and (table["seconds"] > 0).all()
    assert found.best_score == table["score"].max()
    assert found.best_params == {
        "lr": table.loc[0, "lr"],
        "weight_decay": table.loc[0, "weight_decay"],
    }


def test_best_learner_is_fitted_with_the_best_params_and_predicts(found, crowd):
    _, X, _ = crowd
    model = found.best_learner
    assert isinstance(model, BaseLearner)
    assert model.lr == found.best_params["lr"]
    assert model.weight_decay == found.best_params["weight_decay"]
    # the learner's default refit=True: trained again on every task after the selection
    assert model.refit is True and model.selection_history_ is not None
    assert model.selected_epoch_ == found.results.loc[0, "selected_epoch"]
    probas = model.predict_proba(X[:7])
    assert probas.shape == (7, 3)
    np.testing.assert_allclose(probas.sum(axis=1), 1.0, atol=1e-5)
    assert model.predict(X[:7]).shape == (7,)


def test_a_point_scores_as_its_own_fit(found, crowd):
    from crowdlearn.learning import make_learner

    data, _, _ = crowd
    row = found.results.iloc[2]
    alone = make_learner(
        "crowdlayer",
        lr=row["lr"],
        weight_decay=row["weight_decay"],
        refit=False,
        crowd_folds=1,
        **FAST,
    ).fit(data)
    assert alone.selection_score_ == pytest.approx(row["score"], rel=1e-9)
    assert alone.selected_epoch_ == row["selected_epoch"]


def test_the_same_seed_gives_the_same_search(found, crowd):
    data, _, _ = crowd
    grid = {"lr": [1e-3, 3e-2], "weight_decay": [0.0, 1e-3]}
    again = search("crowdlayer", grid, data, crowd_folds=1, **FAST)
    pd.testing.assert_frame_equal(_scores(again), _scores(found))
    assert again.best_params == found.best_params


def test_the_truth_is_never_read(crowd):
    data, X, _ = crowd
    assert data.truth is not None
    grid = {"lr": [1e-3, 3e-2]}
    with_truth = search("crowdlayer", grid, data, refit=False, **FAST)
    hidden = search("crowdlayer", grid, data.with_truth(None), refit=False, **FAST)
    pd.testing.assert_frame_equal(_scores(hidden), _scores(with_truth))
    np.testing.assert_array_equal(
        hidden.best_learner.predict_proba(X), with_truth.best_learner.predict_proba(X)
    )


def test_every_point_holds_out_the_same_tasks(crowd, monkeypatch):
    data, _, _ = crowd
    held = []
    original = base_module.crowd_split

    def recording(data, share, seed, **kwargs):
        split = original(data, share, seed, **kwargs)
        held.append(split[1].held_tasks.tolist())
        return split

    monkeypatch.setattr(base_module, "crowd_split", recording)
    search("crowdlayer", {"lr": [1e-3, 1e-2, 3e-2]}, data, refit=False, crowd_folds=1, **FAST)
    assert len(held) == 3 and held[0] == held[1] == held[2]
    assert 0 < len(held[0]) < data.n_tasks


def test_every_cross_fitted_point_uses_the_same_folds(crowd, monkeypatch):
    data, _, _ = crowd
    folds = []
    original = base_module.crowd_folds

    def recording(data, n_folds, seed, **kwargs):
        split = original(data, n_folds, seed, **kwargs)
        folds.append([validator.held_tasks.tolist() for _, validator in split])
        return split

    monkeypatch.setattr(base_module, "crowd_folds", recording)
    search("crowdlayer", {"lr": [1e-3, 3e-2]}, data, crowd_folds=3, **FAST)
    assert len(folds) == 2 and folds[0] == folds[1] and len(folds[0]) == 3


def test_refit_false_keeps_the_winning_fit(crowd):
    data, _, _ = crowd
    result = search("crowdlayer", [{"lr": [1e-3]}, {"lr": [3e-2]}], data, refit=False, **FAST)
    model = result.best_learner
    assert model.refit is False and model.selection_history_ is None
    assert model.selection_score_ == result.best_score


def test_cross_fitted_points_keep_the_winning_fit(crowd):
    data, _, _ = crowd
    result = search("crowdlayer", {"lr": [1e-3, 3e-2]}, data, crowd_folds=3, **FAST)
    model = result.best_learner
    assert len(model.fold_epochs_) == 3  # no refit after a cross-fitted winner
    assert model.selection_score_ == result.best_score


def test_truth_validation_pairs_and_text_values(crowd):
    """With ``valid=(X, y)`` the seed may vary; text values convert like --param."""
    data, X, y = crowd
    result = search(
        "mv+nn", {"random_state": ["0", "1"], "lr": ["0.01"]}, data, valid=(X[:40], y[:40]), **FAST
    )
    assert (result.results["validation"] == "truth").all()
    assert sorted(result.results["random_state"]) == [0, 1]
    assert result.results["lr"].tolist() == [0.01, 0.01]
    assert 0.0 <= result.best_score <= 1.0  # the validation accuracy


@pytest.mark.parametrize(
    ("grid", "fixed", "error", "message"),
    [
        ({"nosuch": [1]}, {}, ValueError, "nosuch"),
        ({}, {}, ValueError, "empty"),
        ([], {}, ValueError, "empty"),
        ({"lr": []}, {}, ValueError, "'lr' has no values"),
        ({"lr": "0.1"}, {}, TypeError, "must be a list"),
        ({"lr": 0.1}, {}, TypeError, "must be a list"),
        ("lr=0.1", {}, TypeError, "dict of lists"),
        ({"lr": [0.1]}, {"lr": 0.2}, ValueError, "both in the grid"),
        ({"refit": [True, False]}, {}, ValueError, "refit"),
        ({"random_state": [0, 1]}, {}, ValueError, "random_state"),
        ({"valid_share": [0.2, 0.3]}, {}, ValueError, "valid_share"),
        ({"crowd_folds": [1, 3]}, {}, ValueError, "crowd_folds"),
    ],
)
def test_bad_grids_fail_before_any_fit(crowd, monkeypatch, grid, fixed, error, message):
    data, _, _ = crowd

    def no_fit(self, *args, **kwargs):
        raise AssertionError("a bad grid must fail before fitting")

    monkeypatch.setattr(BaseLearner, "fit", no_fit)
    with pytest.raises(error, match=message):
        search("crowdlayer", grid, data, **{**FAST, **fixed})


def test_valid_none_is_refused(crowd):
    data, _, _ = crowd
    with pytest.raises(ValueError, match="selection criterion"):
        search("crowdlayer", {"lr": [0.1]}, data, valid=None, **FAST)
    with pytest.raises(ValueError, match="'truth'"):
        search("crowdlayer", {"lr": [0.1]}, data, valid="truth", **FAST)


def test_too_small_for_crowd_validation_is_an_error(crowd):
    data, _, _ = crowd
    tiny = data.select_tasks(np.arange(8))
    with pytest.warns(UserWarning, match="too"), pytest.raises(ValueError, match="too small"):
        search("crowdlayer", {"lr": [0.1]}, tiny, **FAST)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["a", "b", "c", "d"]),
            st.lists(st.integers(), min_size=1, max_size=3),
            min_size=1,
        ),
        min_size=1,
        max_size=3,
    )
)
def test_expand_grid_is_the_union_of_products(grids):
    points = expand_grid(grids)
    assert len(points) == sum(math.prod(len(v) for v in g.values()) for g in grids)
    start = 0
    for grid in grids:
        part = points[start : start + math.prod(len(v) for v in grid.values())]
        start += len(part)
        for point in part:
            assert list(point) == list(grid)
            assert all(point[k] in grid[k] for k in grid)
    if len(grids) == 1:
        assert expand_grid(grids[0]) == points


def test_progress_bar_over_the_grid_points(crowd, capsys):
    data, _, _ = crowd
    search("crowdlayer", {"lr": [1e-3, 3e-2]}, data, refit=False, **{**FAST, "progress": True})
    shown = capsys.readouterr().err
    assert "search crowdlayer" in shown and "2/2" in shown
    with pytest.raises(ValueError, match="progress"):
        search("crowdlayer", {"lr": [1e-3]}, data, **{**FAST, "progress": "sometimes"})
