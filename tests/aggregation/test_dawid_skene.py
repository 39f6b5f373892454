"""Dawid-Skene, one-coin Dawid-Skene and GLAD: hand computations, recovery, options."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_expit

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.aggregation import GLAD, DawidSkene, MajorityVote, OneCoinDawidSkene
from crowdlearn.aggregation.glad import _QTerms, log_sigmoid
from crowdlearn.metrics import acc_train, individual_js
from crowdlearn.simulate import discrete_difficulty, hammer_spammer, independent_confusion

FLOOR = 1e-10


def tiny() -> CrowdData:
    """Task t0: both workers say 0; task t1: worker a says 0, worker b says 1."""
    return CrowdData.from_arrays(["t0", "t0", "t1", "t1"], ["a", "b", "a", "b"], [0, 0, 0, 1])


#: Maximum-likelihood EM without a prior (the default before aggregation-defaults).
NO_PRIOR = {"smoothing": 0.0, "diagonal_prior": 0.0}


def test_one_ds_iteration_by_hand():
    model = DawidSkene(max_iter=1, tie_break="lowest", **NO_PRIOR).fit(tiny())
    # Initial posteriors (vote frequencies): t0 = (1, 0), t1 = (0.5, 0.5); prior (0.75, 0.25).
    np.testing.assert_allclose(model.priors_, [0.75, 0.25])
    # Worker a answered 0 on t0 (posterior (1, 0)) and on t1 ((.5, .5)): counts per true
    # class of label 0 are (1.5, 0.5) and of label 1 zero (floored at 1e-10).
    np.testing.assert_allclose(
        model.confusions_[0], [[1, FLOOR / 1.5], [1, FLOOR / 0.5]], rtol=1e-6
    )
    # Worker b: label 0 on t0 gives (1, 0); label 1 on t1 gives (.5, .5).
    np.testing.assert_allclose(
        model.confusions_[1], [[2 / 3, 1 / 3], [FLOOR / 0.5, 1]], rtol=1e-6, atol=1e-12
    )
    # E-step, t0: 0.75 * 1 * 2/3 = 0.5 against 0.25 * 1 * 2e-10; t1: 0.75 * 1 * 1/3 = 0.25
    # against 0.25 * 1 * 1 = 0.25, a tie.
    np.testing.assert_allclose(model.probas_, [[1, 0], [0.5, 0.5]], atol=1e-9)
    expected_objective = (np.log(0.5 + 0.25 * 2e-10) + np.log(0.5)) / 4
    assert model.history_["objective"].iloc[0] == pytest.approx(expected_objective)


def test_one_ds_iteration_with_the_diagonal_prior_by_hand():
    model = DawidSkene(max_iter=1, smoothing=0.1, diagonal_prior=4.0).fit(tiny())
    # Worker a's counts (see above): rows = true class, [[1.5, 0], [0.5, 0]]; plus 0.1
    # everywhere and 4 on the diagonal: [[5.6, 0.1], [0.6, 4.1]].
    np.testing.assert_allclose(
        model.confusions_[0], [[5.6 / 5.7, 0.1 / 5.7], [0.6 / 4.7, 4.1 / 4.7]], rtol=1e-9
    )
    # Worker b: label 0 on t0 ((1, 0)) and label 1 on t1 ((.5, .5)) give counts
    # [[1, 0.5], [0, 0.5]]; with the prior [[5.1, 0.6], [0.1, 4.6]].
    np.testing.assert_allclose(
        model.confusions_[1], [[5.1 / 5.7, 0.6 / 5.7], [0.1 / 4.7, 4.6 / 4.7]], rtol=1e-9
    )


def test_negative_pseudo_counts_are_refused():
    for name in ("smoothing", "diagonal_prior", "prior_smoothing"):
        with pytest.raises(ValueError, match=name):
            DawidSkene(**{name: -0.5}).fit(tiny())


def test_ds_recovers_the_generating_confusion_matrices():
    data, info = independent_confusion(
        n_worker=40, n_task=20_000, n_classes=4, feedback=8, seed=1, return_info=True
    )
    model = DawidSkene().fit(data)
    assert model.converged_
    assert individual_js(info.confusions, model.confusions_) < 0.01
    assert acc_train(data, model.probas_) > acc_train(data, MajorityVote().fit(data).labels_)
    np.testing.assert_allclose(model.priors_, np.bincount(data.truth) / data.n_tasks, atol=0.02)


@pytest.mark.parametrize("model", [DawidSkene(), OneCoinDawidSkene(), GLAD()])
def test_the_em_objective_never_decreases(model):
    data = discrete_difficulty(n_worker=30, n_task=300, n_classes=3, feedback=5, seed=4)
    history = model.fit(data).history_
    assert len(history) >= 3
    assert (history["objective"].diff().dropna() > -1e-9).all()


def test_gold_labels_are_clamped_and_help():
    data = hammer_spammer(n_worker=8, n_task=400, n_classes=3, ratio=0.75, feedback=3, seed=3)
    gold = pd.Series(data.classes[data.truth[:100]], index=data.task_ids[:100])
    model = DawidSkene().fit(data, gold=gold)
    np.testing.assert_array_equal(model.labels_[:100], data.truth[:100])
    assert np.allclose(model.probas_[:100].max(axis=1), 1.0)

    # Gold helps the other tasks on average; on one crowd of 300 other tasks the gain is
    # within a few tasks of noise (either way, with or without a prior), so the
    # comparison is over five crowds.
    rest = slice(100, None)
    with_gold, without = [], []
    for seed in range(5):
        data = hammer_spammer(
            n_worker=8, n_task=400, n_classes=3, ratio=0.75, feedback=3, seed=seed
        )
        gold = pd.Series(data.classes[data.truth[:100]], index=data.task_ids[:100])
        with_gold.append(
            np.mean(DawidSkene().fit(data, gold=gold).labels_[rest] == data.truth[rest])
        )
        without.append(np.mean(DawidSkene().fit(data).labels_[rest] == data.truth[rest]))
    assert np.mean(with_gold) > np.mean(without)


def test_initial_confusions_assign_and_add():
    data = tiny()
    believed = np.array([[[0.9, 0.1], [0.1, 0.9]], [[0.6, 0.4], [0.4, 0.6]]])
    assigned = DawidSkene(max_iter=1, initial_confusion_strategy="assign").fit(
        data, initial_confusions=believed
    )
    np.testing.assert_allclose(assigned.confusions_, believed)
    # t1 = (a says 0, b says 1): class 0 scores 0.75 * 0.9 * 0.4, class 1 0.25 * 0.1 * 0.6
    scores = np.array([0.75 * 0.9 * 0.4, 0.25 * 0.1 * 0.6])
    np.testing.assert_allclose(assigned.probas_[1], scores / scores.sum())
    counts = np.full((2, 2, 2), 10.0)
    added = DawidSkene(max_iter=1, initial_confusion_strategy="add", **NO_PRIOR).fit(
        data, initial_confusions=counts
    )
    # worker a: estimated counts [[1.5, 0], [0.5, 0]] plus 10 everywhere
    np.testing.assert_allclose(
        added.confusions_[0], [[11.5 / 21.5, 10 / 21.5], [10.5 / 20.5, 10 / 20.5]]
    )
    with pytest.raises(CrowdDataError, match="shape"):
        DawidSkene().fit(data, initial_confusions=np.ones((3, 2, 2)))


EMPTY_ROWS = [
    (np.zeros((2, 2, 2)), "worker 'a'.*true class 0"),  # all zero
    (np.array([[[0.9, 0.1], [0.0, 0.0]], [[0.6, 0.4], [0.4, 0.6]]]), "worker 'a'.*class 1"),
    (np.array([[[0.9, 0.1], [0.1, 0.9]], [[0.0, 0.0], [0.4, 0.6]]]), "worker 'b'.*class 0"),
]


@pytest.mark.parametrize(
    "strategy, matrices, message",
    [("assign", m, msg) for m, msg in EMPTY_ROWS]
    + [
        (strategy, m, msg)
        for strategy in ("assign", "add")
        for m, msg in [
            (np.full((2, 2, 2), np.nan), "finite"),
            (-np.ones((2, 2, 2)), "non-negative"),
            (np.ones((2, 2)), "shape"),
        ]
    ],
)
def test_initial_confusions_without_a_row_are_refused(strategy, matrices, message):
    """Issue 43 item 4: all-zero or partial initial confusions (a true class whose row
    holds no count) used to be normalised to a floor and label every task alike.
    Assigned, such a row is refused; added (below), it adds nothing."""
    model = DawidSkene(initial_confusion_strategy=strategy)
    with pytest.raises(CrowdDataError, match=message):
        model.fit(tiny(), initial_confusions=matrices)
    assert not hasattr(model, "probas_")


def test_added_rows_of_zeros_add_nothing():
    """Issue 44: crowd-kit's "addition" takes all-zero or partial initial errors (a
    missing row is no prior count); added, a zero row leaves the estimated counts as
    they are, so the fit equals the fit without initial confusions."""
    zeros = np.zeros((2, 2, 2))
    plain = DawidSkene(**NO_PRIOR).fit(tiny())
    added = DawidSkene(initial_confusion_strategy="add", **NO_PRIOR).fit(
        tiny(), initial_confusions=zeros
    )
    np.testing.assert_allclose(added.probas_, plain.probas_)
    partial = np.array([[[5.0, 1.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])
    DawidSkene(initial_confusion_strategy="add", **NO_PRIOR).fit(
        tiny(), initial_confusions=partial
    )


def test_hard_em_gives_one_hot_posteriors():
    data = independent_confusion(n_worker=20, n_task=300, n_classes=3, feedback=5, seed=0)
    model = DawidSkene(hard=True).fit(data)
    assert set(np.unique(model.probas_)) <= {0.0, 1.0}
    soft = DawidSkene().fit(data)
    assert abs(acc_train(data, model.labels_) - acc_train(data, soft.labels_)) < 0.05


def test_smoothing_and_float32():
    data = independent_confusion(n_worker=20, n_task=500, n_classes=3, feedback=5, seed=2)
    single = DawidSkene(dtype="float32").fit(data)
    double = DawidSkene().fit(data)
    assert single.probas_.dtype == np.float32 and single.confusions_.dtype == np.float32
    assert np.mean(single.labels_ == double.labels_) > 0.99
    smoothed = DawidSkene(smoothing=1.0, max_iter=1).fit(data)
    assert smoothed.confusions_.min() > 1e-3  # every cell got a pseudo-count
    with pytest.raises(ValueError, match="float32 or float64"):
        DawidSkene(dtype="int8").fit(data)


def test_bad_options_are_refused():
    data = tiny()
    with pytest.raises(ValueError, match="init"):
        DawidSkene(init="random").fit(data)
    with pytest.raises(ValueError, match="initial_confusion_strategy"):
        DawidSkene(initial_confusion_strategy="replace").fit(data)
    with pytest.raises(ValueError, match="max_iter"):
        DawidSkene(max_iter=-1).fit(data)
    with pytest.raises(CrowdDataError, match="anonymous"):
        DawidSkene().fit(data.anonymous())


def test_one_coin_separates_hammers_from_spammers():
    data = hammer_spammer(n_worker=12, n_task=600, n_classes=4, ratio=0.5, feedback=4, seed=5)
    model = OneCoinDawidSkene().fit(data)
    hammers, spammers = model.skills_[:6], model.skills_[6:]
    assert hammers.min() > 0.95 and spammers.max() < 0.5
    np.testing.assert_allclose(model.confusions_.sum(axis=2), 1.0)
    np.testing.assert_allclose(
        np.diagonal(model.confusions_, axis1=1, axis2=2), model.skills_[:, None].repeat(4, axis=1)
    )


def test_glad_ranks_good_workers_and_easy_tasks():
    data, info = discrete_difficulty(
        n_worker=40, n_task=1500, n_classes=4, ratio=0.3, feedback=6, seed=7, return_info=True
    )
    model = GLAD().fit(data)
    good = info.worker_group == "good"
    assert model.alphas_[good].mean() > model.alphas_[~good].mean()
    easy = info.task_difficulty == "easy"
    assert np.median(model.betas_[easy]) > np.median(model.betas_[~easy])
    assert acc_train(data, model.probas_) >= acc_train(data, MajorityVote().fit(data).labels_)


def test_glad_q_derivatives_match_finite_differences():
    rng = np.random.default_rng(0)
    right = rng.random(40)
    terms = _QTerms(right, np.log(2.0))
    alpha, log_beta = rng.normal(size=40), rng.normal(size=40)
    h = 1e-4

    def by_alpha(a):
        return terms.by_alpha(a, np.exp(log_beta), derivatives=False)[0]

    def by_log_beta(b):
        return terms.by_log_beta(alpha, np.exp(b), derivatives=False)[0]

    for function, point, derivatives in [
        (by_alpha, alpha, terms.by_alpha(alpha, np.exp(log_beta))),
        (by_log_beta, log_beta, terms.by_log_beta(alpha, np.exp(log_beta))),
    ]:
        up, here, down = function(point + h), function(point), function(point - h)
        np.testing.assert_allclose(derivatives[0], here)
        np.testing.assert_allclose(derivatives[1], (up - down) / (2 * h), rtol=1e-5, atol=1e-7)
        # minus the exact second derivative
        np.testing.assert_allclose(
            derivatives[2], -(up - 2 * here + down) / h**2, rtol=1e-3, atol=1e-5
        )


def test_log_sigmoid_is_exact_and_stable():
    x = np.concatenate([np.linspace(-50, 50, 1001), [-1e4, 1e4, 0.0]])
    np.testing.assert_allclose(log_sigmoid(x), log_expit(x), rtol=1e-12, atol=1e-300)
    assert np.all(np.isfinite(log_sigmoid(x)))


# ---------------------------------------------------------------------- crowd-kit parity


def _compare_with_crowdkit(ours, theirs, data):
    frame = data.to_frame()
    mine = ours.fit(data).probas_
    other = (
        theirs.fit_predict_proba(frame)
        .reindex(index=data.task_ids, columns=data.classes)
        .to_numpy()
    )
    agreement = np.mean(mine.argmax(axis=1) == other.argmax(axis=1))
    gap = np.abs(mine - other).max()
    return agreement, gap


def test_agreement_with_crowdkit_ds_and_one_coin():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    data = independent_confusion(n_worker=25, n_task=800, n_classes=4, feedback=5, seed=11)
    for ours, theirs in [
        (
            DawidSkene(max_iter=200, tol=1e-9, **NO_PRIOR),
            crowdkit.DawidSkene(n_iter=200, tol=1e-9),
        ),
        (
            OneCoinDawidSkene(max_iter=200, tol=1e-9),
            crowdkit.OneCoinDawidSkene(n_iter=200, tol=1e-9),
        ),
    ]:
        agreement, gap = _compare_with_crowdkit(ours, theirs, data)
        assert agreement >= 0.99, f"{type(ours).__name__}: agreement {agreement}, gap {gap}"


def test_agreement_with_crowdkit_glad():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    # crowd-kit's GLAD takes about 0.3 s an iteration: 100 tasks and 15 iterations keep
    # it to a few seconds (200 and 40 took 14-20 s). The two still meet (largest
    # posterior gap 0.003), while GLAD without the 1/(K-1) of wrong answers, without
    # the task difficulties' update, with the alphas' prior centred on 0, learning the
    # class prior or with one Newton step per M-step is 0.12 to 1.0 away (or disagrees
    # on 8% of the tasks).
    data = independent_confusion(n_worker=15, n_task=100, n_classes=3, feedback=5, seed=3)
    # crowd-kit 1.4.2 stops GLAD as soon as its expected complete-data log-likelihood
    # drops, which happens after ~2 iterations; tol=-inf makes it run all n_iter, so
    # both implementations are compared at (near) the same fixed point.
    agreement, gap = _compare_with_crowdkit(
        GLAD(max_iter=15, tol=0), crowdkit.GLAD(n_iter=15, tol=-np.inf), data
    )
    assert agreement >= 0.99, f"GLAD: agreement {agreement}, largest posterior gap {gap}"
    assert gap < 0.02


# ------------------------------------------------------------ the default prior (regression)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_ds_beats_majority_vote_on_a_sparse_crowd_like_the_demo(seed):
    # The demo's crowd: 60 workers, ~2.5 labels per image, most workers with fewer
    # labels than the 100 cells of their confusion matrix. Without a prior EM fell
    # below majority vote there (bench aggregation-defaults); the default must not.
    from crowdlearn.demo import simulate_demo_crowd

    crowd, _, _ = simulate_demo_crowd(seed)
    mv = acc_train(crowd, MajorityVote(random_state=seed).fit(crowd).probas_)
    default = acc_train(crowd, DawidSkene(random_state=seed).fit(crowd).probas_)
    no_prior = acc_train(crowd, DawidSkene(random_state=seed, **NO_PRIOR).fit(crowd).probas_)
    assert default > mv
    assert default > no_prior
