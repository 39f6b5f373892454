"""Self-Crowd: quotas (eq. 4-5), R (eq. 6), selection without replacement, the rounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.data import CrowdDataError
from crowdlearn.learning import SelfCrowd
from crowdlearn.learning._base import without_timings
from crowdlearn.learning.self_crowd import class_quotas, select_pseudo
from crowdlearn.metrics import self_crowd_r
from crowdlearn.simulate import crowd_on_features


def test_quotas_are_inversely_proportional_to_the_candidate_counts():
    # t = (1/300, 1/100) / (4/300) = (1/4, 3/4): 8 -> (2, 6); a class without candidates gets 0
    assert class_quotas([300, 100, 0], 8).tolist() == [2, 6, 0]
    # exact (3.64, 3.64, 1.82, 0.91): floors (3, 3, 1, 0), the 3 left go to the largest
    # fractional parts: class 3 (.91), class 2 (.82), then class 0 (.64, first of the tie)
    assert class_quotas([100, 100, 200, 400], 10).tolist() == [4, 3, 2, 1]
    # exact (99.8, 0.2) -> (100, 0); a quota larger than the class's candidates is
    # capped, and the rest is not moved to the other class
    assert class_quotas([2, 1000], 100).tolist() == [2, 0]
    assert class_quotas([5, 5], 0).tolist() == [0, 0]
    assert class_quotas([0, 0], 7).tolist() == [0, 0]
    with pytest.raises(ValueError, match="non-negative"):
        class_quotas([-1, 3], 2)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 500), min_size=1, max_size=8),
    st.integers(0, 300),
)
def test_quota_invariants(counts, n_select):
    quotas = class_quotas(counts, n_select)
    counts = np.array(counts)
    assert (quotas >= 0).all() and (quotas <= counts).all()
    assert quotas.sum() <= n_select
    assert (quotas[counts == 0] == 0).all()
    if counts.sum() and (quotas < counts).all():  # no cap binds: the quotas use all of M
        assert quotas.sum() == n_select
    # a rarer class never gets a smaller uncapped quota than a more frequent one (+-1 rounding)
    for a in range(len(counts)):
        for b in range(len(counts)):
            if 0 < counts[a] < counts[b] and quotas[a] < counts[a]:
                assert quotas[a] >= quotas[b] - 1


def test_uniform_quotas_hand_case():
    # three classes with candidates share 9 equally; the class without any gets nothing
    assert class_quotas([300, 100, 0, 50], 9, quota="uniform").tolist() == [3, 3, 0, 3]
    # 10 over 4: floors (2, 2, 2, 2), the 2 left go to the rarer classes (ties to the rarer)
    assert class_quotas([400, 100, 200, 300], 10, quota="uniform").tolist() == [2, 3, 3, 2]
    # a class with too few candidates gives what it has; the rest is not moved
    assert class_quotas([1, 1000], 10, quota="uniform").tolist() == [1, 5]


@pytest.mark.parametrize("quota", ["equal", "Inverse", None, 1])
def test_quota_value_is_checked(quota):
    with pytest.raises(ValueError, match=r"quota must be 'inverse' .* or 'uniform'"):
        class_quotas([3, 4], 2, quota=quota)
    with pytest.raises(ValueError, match="quota must be"):
        select_pseudo(
            np.array([0, 1]),
            np.array([0.1, 0.2]),
            1,
            2,
            "balanced",
            np.random.default_rng(0),
            quota=quota,
        )


def _pool(counts, rng):
    """A synthetic candidate pool: ``counts[c]`` candidates of class c, random entropies,
    in shuffled order."""
    labels = rng.permutation(np.repeat(np.arange(len(counts)), counts))
    return labels, rng.random(len(labels))


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 400),
    st.lists(st.integers(0, 3000), min_size=2, max_size=8),
    st.integers(0, 2**32 - 1),
)
def test_inverse_quota_selected_shares_are_the_reciprocal_candidate_shares(m, extra, seed):
    """The module docstring's claim: with quota="inverse" and no cap binding (every
    class has at least M candidates), the selected share of class c is
    (1 / pi_c) / sum_k (1 / pi_k), pi the candidate shares, up to rounding (each count
    within 1 of M times it), and M_c N'_c is the same for every class up to N'_c."""
    rng = np.random.default_rng(seed)
    counts = np.array(extra) + m  # N'_c >= M >= M_c: no cap binds
    labels, entropy = _pool(counts, rng)
    picked = select_pseudo(labels, entropy, m, len(counts), "balanced", rng, quota="inverse")
    selected = np.bincount(labels[picked], minlength=len(counts))
    shares = counts / counts.sum()
    reciprocal = (1 / shares) / (1 / shares).sum()
    assert selected.sum() == m
    assert np.abs(selected - m * reciprocal).max() < 1
    # equivalently M_c N'_c = M / sum_k (1 / N'_k) for every class, up to the rounding of M_c
    assert (np.abs(selected * counts - m / (1 / counts).sum()) < counts).all()
    # and the selected ones are the most confident of their class
    for c in range(len(counts)):
        chosen = entropy[picked][labels[picked] == c]
        rest = np.setdiff1d(np.flatnonzero(labels == c), picked)
        if len(chosen) and len(rest):
            assert chosen.max() <= entropy[rest].min()


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 400),
    st.lists(st.integers(0, 3000), min_size=2, max_size=8),
    st.integers(0, 2**32 - 1),
)
def test_uniform_quota_gives_equal_counts_where_candidates_suffice(m, extra, seed):
    rng = np.random.default_rng(seed)
    counts = np.array(extra) + m
    labels, entropy = _pool(counts, rng)
    picked = select_pseudo(labels, entropy, m, len(counts), "balanced", rng, quota="uniform")
    selected = np.bincount(labels[picked], minlength=len(counts))
    assert selected.sum() == m
    assert selected.max() - selected.min() <= 1  # rounding of M / K
    if m % len(counts) == 0:
        assert (selected == m // len(counts)).all()
        assert self_crowd_r(labels[picked], len(counts)) == 0.0


def test_reciprocal_shares_can_make_r_higher_than_the_candidates():
    """The docstring's examples: eq. 5 reverses the imbalance, it does not remove it."""
    rng = np.random.default_rng(0)
    for counts, lower in (([500, 250, 250], True), ([400, 400, 200], False)):
        labels, entropy = _pool(np.array(counts), rng)
        picked = select_pseudo(labels, entropy, 100, 3, "balanced", rng)
        r_selected = self_crowd_r(labels[picked], 3)
        r_candidates = self_crowd_r(labels, 3)
        assert (r_selected < r_candidates) == lower
        assert r_selected == pytest.approx(0.2 if lower else 0.25)


def test_imbalance_ratio_hand_case():
    # counts (5, 3, 0, 2): (5 - 0) / 10
    assert self_crowd_r([0] * 5 + [1] * 3 + [3] * 2, n_classes=4) == 0.5
    assert self_crowd_r([0, 1, 2, 0, 1, 2], n_classes=3) == 0.0


def test_balanced_selection_takes_the_most_confident_of_each_class():
    rng = np.random.default_rng(0)
    labels = np.array([0, 0, 0, 0, 0, 0, 1, 1, 2, 2])
    entropy = np.array([0.9, 0.1, 0.5, 0.3, 0.2, 0.8, 0.7, 0.6, 0.4, 0.05])
    # counts (6, 2, 2) -> t = (1/6, 1/2, 1/2) / (7/6) -> 7 * (1/7, 3/7, 3/7) = (1, 3, 3),
    # capped at (6, 2, 2): one of class 0 (entropy .1), both of classes 1 and 2
    picked = select_pseudo(labels, entropy, 7, 3, "balanced", rng)
    assert sorted(picked.tolist()) == [1, 6, 7, 8, 9]
    confident = select_pseudo(labels, entropy, 3, 3, "confidence", rng)
    assert sorted(confident.tolist()) == [1, 4, 9]
    drawn = select_pseudo(labels, entropy, 6, 3, "random", rng)
    assert len(set(drawn.tolist())) == 6
    with pytest.raises(ValueError, match="selection"):
        select_pseudo(labels, entropy, 3, 3, "best", rng)


@pytest.fixture(scope="module")
def imbalanced():
    """A sparse crowd on an imbalanced 3-class problem (class 0 takes 70%)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 6)).astype(np.float32)
    score = X[:, 0] + 0.3 * X[:, 1]
    y = np.where(score < 0.5, 0, np.where(score < 1.2, 1, 2))
    crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=2, seed=3)
    return crowd, X, y


@pytest.mark.parametrize("selection", ["balanced", "confidence", "random"])
def test_rounds_never_pick_an_observed_or_repeated_pair(imbalanced, selection):
    crowd, _, _ = imbalanced
    model = SelfCrowd(n_per_round=150, n_rounds=3, selection=selection, max_epochs=3)
    model.fit(crowd, valid=None)
    pseudo = model.pseudo_
    per_round = model.history_["n_selected"].to_numpy()[1:]
    if selection == "balanced":  # the quotas can be capped by rare classes' candidates
        assert (per_round <= 150).all() and per_round.sum() > 0
    else:
        assert per_round.tolist() == [150, 150, 150]
    assert pseudo["round"].value_counts().sort_index().tolist() == per_round.tolist()
    pairs = pseudo["task"].to_numpy() * crowd.n_workers + pseudo["worker"].to_numpy()
    observed = crowd.task.astype(np.int64) * crowd.n_workers + crowd.worker
    assert len(np.unique(pairs)) == len(pairs)
    assert not np.isin(pairs, observed).any()
    history = model.history_
    assert history["round"].tolist() == [0, 1, 2, 3]
    assert history["n_pseudo"].tolist() == [0, *np.cumsum(per_round).tolist()]
    # the candidates shrink by exactly what was taken
    assert np.diff(history["n_candidates"].to_numpy()[1:]).tolist() == (-per_round[:-1]).tolist()
    assert history["n_candidates"].iloc[1] == crowd.n_tasks * crowd.n_workers - crowd.n_annotations
    for row in history.iloc[1:].itertuples():
        taken = pseudo[pseudo["round"] == row.round]
        counts = np.bincount(taken["label"], minlength=crowd.n_classes).tolist()
        assert counts == row.n_selected_per_class
        if selection == "balanced":
            expected = class_quotas(row.n_candidates_per_class, 150).tolist()
            assert row.n_selected_per_class == expected
        so_far = pseudo[pseudo["round"] <= row.round]["label"]
        assert row.R_selected == pytest.approx(self_crowd_r(so_far, crowd.n_classes))
        combined = np.concatenate([crowd.label, so_far])
        assert row.R_combined == pytest.approx(self_crowd_r(combined, crowd.n_classes))
    assert np.isnan(history["R_selected"].iloc[0])
    assert history["R_combined"].iloc[0] == pytest.approx(model.R_observed_)


def test_uniform_quota_in_the_rounds(imbalanced):
    crowd, _, _ = imbalanced
    model = SelfCrowd(n_per_round=90, n_rounds=2, quota="uniform", max_epochs=3, random_state=1)
    model.fit(crowd, valid=None)
    for row in model.history_.iloc[1:].itertuples():
        expected = class_quotas(row.n_candidates_per_class, 90, quota="uniform").tolist()
        assert row.n_selected_per_class == expected
        counts = np.array(row.n_candidates_per_class)
        plenty = counts >= 90  # classes with enough candidates for any share of M
        taken = np.array(row.n_selected_per_class)[plenty]
        assert len(taken) == 0 or taken.max() - taken.min() <= 1


def test_cli_spec_reaches_the_quota(tmp_path):
    from click.testing import CliRunner

    from crowdlearn.cli import cli
    from crowdlearn.learning import BaseLearner

    runner = CliRunner()
    sim = tmp_path / "sim"
    result = runner.invoke(
        cli, ["simulate", "crowd-on-features", "--n-worker", "6", "-o", str(sim)]
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    spec = "self-crowd[quota=uniform,n_per_round=40,n_rounds=1]"
    args = ["learn", str(sim), "-s", spec, "--epochs", "1", "-o", str(out), "--quiet"]
    args += ["--crowd-folds", "1"]  # one fit's history
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    model = BaseLearner.load(out / "model.pt")
    assert model.quota == "uniform" and model.history_["n_pseudo"].tolist() == [0, 40]
    args[3], args[7] = "self-crowd[quota=reciprocal]", str(tmp_path / "bad")
    result = runner.invoke(cli, args)
    assert result.exit_code != 0 and "quota must be 'inverse'" in result.output


def test_balanced_selection_is_more_balanced_than_confidence(imbalanced):
    crowd, _, _ = imbalanced
    fits = {
        rule: SelfCrowd(n_per_round=200, n_rounds=2, selection=rule, max_epochs=5).fit(crowd)
        for rule in ("balanced", "confidence")
    }
    r = {rule: fit.history_["R_selected"].iloc[-1] for rule, fit in fits.items()}
    assert r["balanced"] < r["confidence"]


def test_valid_stopping_keeps_the_best_round_and_round_models(imbalanced):
    crowd, X, y = imbalanced
    model = SelfCrowd(
        n_per_round=100,
        n_rounds=4,
        stopping="valid",
        round_patience=1,
        keep_round_models=True,
        max_epochs=3,
        calibrate=False,
    ).fit(crowd, valid=(X[:80], y[:80]))
    history = model.history_
    assert history["valid_acc"].notna().all()
    assert model.best_round_ == int(history["round"][history["valid_acc"].idxmax()])
    # stopped one round after the best, unless the best is the last one run
    assert len(history) - 1 <= model.best_round_ + 1
    assert len(model.round_models_) == len(history)
    kept = model.predict_proba(X[:30])
    np.testing.assert_allclose(kept, model.predict_proba_round(X[:30], model.best_round_))
    np.testing.assert_allclose(kept.sum(axis=1), 1.0, atol=1e-6)


def test_continue_retraining_and_checkpoints_per_round(imbalanced, tmp_path):
    crowd, X, _ = imbalanced
    model = SelfCrowd(
        n_per_round=50, n_rounds=2, retrain="continue", max_epochs=2, checkpoint_dir=tmp_path
    ).fit(crowd)
    # crowd validation (the default) trains one model per fold, each in ``fold-i``
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"fold-{i}" for i in range(5)]
    for fold in range(5):
        rounds = sorted(p.name for p in (tmp_path / f"fold-{fold}").iterdir())
        assert rounds == ["round-0", "round-1", "round-2"]
    assert model.confusions_.shape == (crowd.n_workers, 3, 3)
    again = SelfCrowd(
        n_per_round=50,
        n_rounds=2,
        retrain="continue",
        max_epochs=2,
        checkpoint_dir=tmp_path,
        resume=True,
    ).fit(crowd)
    np.testing.assert_allclose(again.predict_proba(X), model.predict_proba(X), atol=1e-6)
    assert again.pseudo_.equals(model.pseudo_)


def test_same_seed_same_result_and_save_load(imbalanced, tmp_path):
    crowd, X, _ = imbalanced
    first = SelfCrowd(n_per_round=60, n_rounds=1, max_epochs=2, random_state=5).fit(crowd)
    second = SelfCrowd(n_per_round=60, n_rounds=1, max_epochs=2, random_state=5).fit(crowd)
    assert first.pseudo_.equals(second.pseudo_)
    first.save(tmp_path / "m.pt")
    loaded = SelfCrowd.load(tmp_path / "m.pt")
    np.testing.assert_allclose(loaded.predict_proba(X), first.predict_proba(X), atol=1e-6)
    assert loaded.history_.equals(without_timings(first.history_))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"selection": "best"}, "selection"),
        ({"quota": "balanced"}, "quota must be 'inverse'"),
        ({"stopping": "valid"}, "validation data"),
        ({"retrain": "warm"}, "retrain"),
        ({"n_per_round": -1}, "n_per_round"),
        ({"round_patience": 0}, "round_patience"),
    ],
)
def test_bad_parameters_raise(imbalanced, params, message):
    crowd, _, _ = imbalanced
    with pytest.raises(ValueError, match=message):
        SelfCrowd(max_epochs=1, **params).fit(crowd, valid=None)


def test_anonymous_data_is_refused(imbalanced):
    crowd, _, _ = imbalanced
    with pytest.raises(CrowdDataError, match="worker ids"):
        SelfCrowd(max_epochs=1).fit(crowd.anonymous())
