"""The ensemble learner: members, mean probabilities, persistence, specs and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from crowd_toys import noisy_crowd
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.data import CrowdDataError
from crowdlearn.learning import DLEM, BaseLearner, CrowdLayer, Ensemble, TwoStage, make_learner
from crowdlearn.learning._base import without_timings
from crowdlearn.learning.ensemble import SEED_STEP, member_specs


@pytest.fixture(scope="module")
def crowd():
    return noisy_crowd(seed=3, n_train=240)


@pytest.fixture(scope="module")
def fitted(crowd):
    data, _, _ = crowd
    return Ensemble(["dl-em", "ds+nn"], n_seeds=2, max_epochs=4, progress=False).fit(data)


def test_predicts_the_mean_of_its_members_calibrated_probabilities(crowd, fitted):
    _, X, _ = crowd
    members = fitted.members_
    assert [type(m) for m in members] == [DLEM, TwoStage, DLEM, TwoStage]
    expected = np.mean([m.predict_proba(X) for m in members], axis=0)
    probas = fitted.predict_proba(X)
    np.testing.assert_allclose(probas, expected, rtol=1e-12)
    np.testing.assert_allclose(probas.sum(axis=1), 1.0, rtol=1e-6)
    assert (fitted.predict(X) == expected.argmax(axis=1)).all()
    # each member chose its epoch and temperature on the crowd, without truth
    assert all(m.validation_ == "crowd" for m in members)
    assert fitted.validation_ == "crowd"
    assert fitted.selection_score_ == pytest.approx(np.mean([m.selection_score_ for m in members]))


def test_repetitions_use_offset_seeds_and_set_parameters_reach_every_member(fitted):
    seeds = [m.random_state for m in fitted.members_]
    assert seeds == [0, 0, SEED_STEP, SEED_STEP]
    assert all(m.max_epochs == 4 and m.progress is False for m in fitted.members_)
    # two repetitions of a member differ (other seed, other held-out tasks)
    first, second = fitted.members_[0], fitted.members_[2]
    assert not np.allclose(first.targets_, second.targets_)
    history = fitted.history_
    assert list(history.columns[:2]) == ["member", "spec"]
    assert sorted(history["member"].unique()) == [0, 1, 2, 3]


def test_parameters_left_at_their_defaults_keep_each_member_s_own():
    ensemble = Ensemble(["crowdlayer[variant=VW]"], lr=0.01, random_state=5)
    ((spec, member),) = ensemble._build_members()
    assert spec == "crowdlayer[variant=VW]" and isinstance(member, CrowdLayer)
    assert member.variant == "VW" and member.lr == 0.01 and member.random_state == 5
    assert member.max_epochs == CrowdLayer().max_epochs


def test_crowd_selection_never_reads_the_truth(crowd, fitted):
    data, X, _ = crowd
    hidden = Ensemble(["dl-em", "ds+nn"], n_seeds=2, max_epochs=4, progress=False)
    hidden.fit(data.with_truth(None))
    np.testing.assert_allclose(hidden.predict_proba(X), fitted.predict_proba(X))


def test_save_and_load_give_the_same_predictions(crowd, fitted, tmp_path):
    _, X, _ = crowd
    path = tmp_path / "ensemble.pt"
    fitted.save(path)
    loaded = BaseLearner.load(path)
    assert isinstance(loaded, Ensemble) and len(loaded.members_) == 4
    np.testing.assert_allclose(loaded.predict_proba(X), fitted.predict_proba(X))
    for name in ("best_epoch_", "selected_epoch_", "selection_score_", "validation_"):
        assert getattr(loaded, name) == getattr(fitted, name)
    assert loaded.history_.equals(without_timings(fitted.history_))


def test_a_spec_on_the_command_line_keeps_nested_member_parameters():
    model = make_learner(
        "ensemble[members=crowdlayer[variant=MW,init=dawid-skene]/dl-em,n_seeds=2]",
        max_epochs=3,
    )
    assert isinstance(model, Ensemble)
    assert model.members == ("crowdlayer[variant=MW,init=dawid-skene]", "dl-em")
    assert model.n_seeds == 2 and model.max_epochs == 3
    built = model._build_members()
    assert [spec for spec, _ in built] == [*model.members, *model.members]
    assert built[0][1].variant == "MW" and built[0][1].init == "dawid-skene"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.sampled_from(["dl-em", "ds+nn", "crowdlayer[variant=VW,init=paper]"]),
        min_size=1,
        max_size=4,
    )
)
def test_member_specs_read_back_what_was_joined(specs):
    assert member_specs("/".join(specs)) == tuple(specs)


@pytest.mark.parametrize(
    ("members", "n_seeds", "message"),
    [
        ([], 1, "at least one learner"),
        ("dl-em", 1, "sequence of learner specs"),
        (["dl-em", " "], 1, "at least one learner"),
        (["ensemble[members=dl-em]"], 1, "may not be ensembles"),
        (["dl-em"], 0, "positive integer"),
        (["dl-em"], 1.5, "positive integer"),
    ],
)
def test_bad_members_or_seeds_fail_before_any_fit(crowd, members, n_seeds, message):
    data, _, _ = crowd
    with pytest.raises(ValueError, match=message):
        Ensemble(members, n_seeds=n_seeds).fit(data)


def test_an_unknown_member_or_parameter_fails_before_any_fit(crowd):
    data, _, _ = crowd
    with pytest.raises(CrowdDataError, match="nope"):
        Ensemble(["dl-em", "nope"], progress=False).fit(data)
    with pytest.raises(CrowdDataError, match="colour"):
        Ensemble(["dl-em", "crowdlayer[colour=red]"], progress=False).fit(data)
    with pytest.raises(ValueError, match="empty learner spec"):
        member_specs("dl-em//max-mig")


def test_anonymous_data_need_members_without_worker_models(crowd):
    data, X, _ = crowd
    anonymous = data.anonymous()
    with pytest.raises(CrowdDataError, match="dl-em"):
        Ensemble(["mv+nn", "dl-em"], progress=False).fit(anonymous)
    model = Ensemble(["naivesoft+nn", "mv+nn"], max_epochs=2, progress=False).fit(anonymous)
    assert model.predict_proba(X).shape == (len(X), 3)


def test_unfitted_ensemble_refuses_to_predict(crowd):
    _, X, _ = crowd
    with pytest.raises(Exception, match="not fitted"):
        Ensemble().predict_proba(X)


def test_search_tunes_an_ensemble_on_the_crowd(crowd):
    from crowdlearn.learning import search

    data, X, _ = crowd
    found = search(
        "ensemble[members=dl-em/ds+nn]",
        {"lr": [1e-3, 1e-2]},
        data.with_truth(None),
        max_epochs=2,
        progress=False,
    )
    assert list(found.results["rank"]) == [1, 2]
    best = found.best_learner
    assert isinstance(best, Ensemble) and all(
        m.lr == found.best_params["lr"] for m in best.members_
    )
    assert found.best_score == pytest.approx(found.results["score"].max())
    assert best.predict_proba(X).shape == (len(X), 3)


def test_each_member_checkpoints_in_its_own_folder_and_resumes(crowd, tmp_path):
    data, X, _ = crowd
    params = dict(max_epochs=2, progress=False, checkpoint_dir=tmp_path)
    first = Ensemble(["dl-em", "ds+nn"], **params).fit(data)
    folders = [m.checkpoint_dir for m in first.members_]
    assert folders == [tmp_path / "member-0", tmp_path / "member-1"]
    assert all(any(folder.rglob("*")) for folder in folders)
    resumed = Ensemble(["dl-em", "ds+nn"], resume=True, **params).fit(data)
    np.testing.assert_allclose(resumed.predict_proba(X), first.predict_proba(X), rtol=1e-6)
