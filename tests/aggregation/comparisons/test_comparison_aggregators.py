"""The comparison aggregators: objectives, agreement with crowd-kit, invariances."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import check_grad
from scipy.stats import spearmanr

from crowdlearn.aggregation.comparisons import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    BradleyTerry,
    CrowdBT,
    NoisyBT,
    Thurstone,
    crowd_bt,
    make_aggregator,
    noisy_bt,
    thurstone,
)
from crowdlearn.aggregation.comparisons._base import comparison_rows
from crowdlearn.aggregation.comparisons.bradley_terry import best_shift
from crowdlearn.data import Comparisons, CrowdData, CrowdDataError
from crowdlearn.simulate.comparisons import simulate_comparisons

NAMES = sorted(STRATEGIES)


def small_crowd(seed: int = 0, n_items: int = 12, n: int = 300) -> Comparisons:
    return simulate_comparisons(np.linspace(0, 2, n_items), n, 8, random_state=seed)


def with_ties(data: Comparisons, every: int = 7) -> Comparisons:
    winner = np.asarray(data.winner).copy()
    winner[::every] = -1
    return Comparisons(
        data.worker,
        data.left,
        data.right,
        winner,
        item_ids=data.item_ids,
        worker_ids=data.worker_ids,
    )


# ------------------------------------------------------------------ objectives


@pytest.mark.parametrize(
    ("module", "extra", "size"),
    [
        (crowd_bt, (0.5, 4.0, 1.0), "items+workers"),
        (noisy_bt, (0.5, 0.1), "items+2workers"),
        (thurstone, (0.1,), "items"),
    ],
)
def test_analytic_gradients_match_finite_differences(module, extra, size):
    rows = comparison_rows(with_ties(small_crowd(n=80)))
    n = rows.n_items + size.count("workers") * rows.n_workers
    n += rows.n_workers if size == "items+2workers" else 0
    x = np.random.default_rng(0).normal(size=n)

    def value(x):
        return module.negative_log_posterior(x, rows, *extra)[0]

    def gradient(x):
        return module.negative_log_posterior(x, rows, *extra)[1]

    assert check_grad(value, gradient, x) < 1e-4 * max(1.0, np.abs(gradient(x)).max())


def test_bt_mm_reaches_the_maximum_of_its_penalised_likelihood():
    data = with_ties(small_crowd())
    fitted = BradleyTerry(prior=0.5, tol=1e-10).fit(data).scores_
    rows = comparison_rows(data)

    def objective(theta):  # minus the log-likelihood with the virtual item at 0
        d = theta[rows.winner] - theta[rows.loser]
        pairs = -np.dot(rows.weight, np.logaddexp(0, -d))
        virtual = -np.logaddexp(0, -theta) - np.logaddexp(0, theta)
        return -(pairs + 0.5 * virtual.sum())

    # scores_ are centred: the optimum is them plus the best shift for the virtual item
    optimum = best_shift(fitted, 0.5, steps=20)
    best = objective(optimum)
    rng = np.random.default_rng(1)
    for _ in range(5):
        assert objective(optimum + 1e-3 * rng.normal(size=len(optimum))) > best


# ------------------------------------------------------------------ crowd-kit


def test_bt_without_prior_equals_crowd_kit_bradley_terry():
    from crowdkit.aggregation import BradleyTerry as CrowdKitBT

    data = small_crowd(seed=3, n_items=30, n=1500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # tol=0: crowd-kit 1.4.2 compares p with an alias of itself and would stop early
        theirs = CrowdKitBT(n_iter=3000, tol=0.0).fit_predict(data.to_frame())
    log_theirs = np.log(theirs.reindex(data.item_ids).to_numpy(dtype=float))
    ours = BradleyTerry(prior=1e-9, tol=1e-11).fit(data).scores_
    np.testing.assert_allclose(ours, log_theirs - log_theirs.mean(), atol=1e-6)
    assert spearmanr(BradleyTerry().fit(data).scores_, log_theirs)[0] > 0.99


def test_noisy_bt_agrees_with_crowd_kit_noisy_bradley_terry():
    from crowdkit.aggregation import NoisyBradleyTerry

    data = simulate_comparisons(np.linspace(0, 3, 20), 600, 6, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = NoisyBradleyTerry(n_iter=200).fit_predict(data.to_frame())
    ours = NoisyBT().fit(data).scores_
    assert spearmanr(ours, theirs.reindex(data.item_ids).to_numpy(dtype=float))[0] > 0.9
    # and ours is at least as close to the truth
    theirs_rho = spearmanr(theirs.reindex(data.item_ids).to_numpy(dtype=float), data.truth)[0]
    assert spearmanr(ours, data.truth)[0] >= theirs_rho - 0.02


# ------------------------------------------------------------------ properties


@st.composite
def comparison_sets(draw, min_items: int = 3):
    n_items = draw(st.integers(min_items, 6))
    n_workers = draw(st.integers(1, 4))
    n = draw(st.integers(1, 25))
    left = np.array(draw(st.lists(st.integers(0, n_items - 1), min_size=n, max_size=n)))
    shift = np.array(draw(st.lists(st.integers(1, n_items - 1), min_size=n, max_size=n)))
    right = (left + shift) % n_items
    outcome = np.array(draw(st.lists(st.sampled_from([0, 1, 2]), min_size=n, max_size=n)))
    winner = np.where(outcome == 0, left, np.where(outcome == 1, right, -1))
    worker = np.array(draw(st.lists(st.integers(0, n_workers - 1), min_size=n, max_size=n)))
    return Comparisons(
        worker, left, right, winner, n_items=n_items, worker_ids=np.arange(n_workers)
    )


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None)
@given(data=comparison_sets(), seed=st.integers(0, 1000))
def test_relabelling_items_and_workers_permutes_the_scores(name, data, seed):
    rng = np.random.default_rng(seed)
    items = rng.permutation(data.n_items)  # new code of each old item
    workers = rng.permutation(data.n_workers)
    winner = np.where(data.winner >= 0, items[np.maximum(data.winner, 0)], -1)
    relabelled = Comparisons(
        workers[data.worker],
        items[data.left],
        items[data.right],
        winner,
        n_items=data.n_items,
        worker_ids=np.arange(data.n_workers),
    )
    before = make_aggregator(name).fit(data)
    after = make_aggregator(name).fit(relabelled)
    np.testing.assert_allclose(after.scores_[items], before.scores_, atol=1e-4)
    for attribute in type(before).worker_attributes:
        np.testing.assert_allclose(
            getattr(after, attribute)[workers], getattr(before, attribute), atol=1e-3
        )


@pytest.mark.parametrize("name", ["bt", "crowd-bt", "thurstone"])
@settings(max_examples=15, deadline=None)
@given(data=comparison_sets(), flip=st.lists(st.booleans(), min_size=25, max_size=25))
def test_swapping_left_and_right_changes_nothing(name, data, flip):
    flip = np.array(flip[: data.n_annotations])
    left = np.where(flip, data.right, data.left)
    right = np.where(flip, data.left, data.right)
    swapped = Comparisons(
        data.worker, left, right, data.winner, n_items=data.n_items, worker_ids=data.worker_ids
    )
    before = make_aggregator(name).fit(data).scores_
    np.testing.assert_allclose(make_aggregator(name).fit(swapped).scores_, before, atol=1e-4)


def test_noisy_bt_is_left_right_symmetric_when_every_row_is_mirrored():
    """NoisyBT models a preference for the left position, so a swap alone may change
    it; swapping every row mirrors the biases and leaves the scores unchanged."""
    data = small_crowd(n=150)
    swapped = Comparisons(
        data.worker,
        data.right,
        data.left,
        data.winner,
        item_ids=data.item_ids,
        worker_ids=data.worker_ids,
    )
    before, after = NoisyBT().fit(data), NoisyBT().fit(swapped)
    np.testing.assert_allclose(after.scores_, before.scores_, atol=1e-4)
    np.testing.assert_allclose(after.biases_, 1 - before.biases_, atol=1e-4)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None)
@given(data=comparison_sets(min_items=4), n_wins=st.integers(2, 6))
def test_an_item_that_beats_everyone_ranks_first(name, data, n_wins):
    # a new item that beats every other item n_wins times, by every worker
    top = data.n_items
    others = np.tile(np.arange(data.n_items), n_wins)
    worker = np.resize(np.arange(data.n_workers), len(others))
    extended = Comparisons(
        np.concatenate([data.worker, worker]),
        np.concatenate([data.left, np.full(len(others), top)]),
        np.concatenate([data.right, others]),
        np.concatenate([data.winner, np.full(len(others), top)]),
        n_items=top + 1,
        worker_ids=data.worker_ids,
    )
    scores = make_aggregator(name).fit(extended).scores_
    assert np.argmax(scores) == top
    assert scores[top] > np.max(scores[:top])


@pytest.mark.parametrize("name", NAMES)
def test_scores_stay_finite_for_items_never_beaten_seen_once_or_unseen(name):
    data = Comparisons.from_arrays(
        worker=["w"] * 4,
        left=["a", "a", "b", "c"],
        right=["b", "c", "c", "d"],
        label=["a", "a", "b", "c"],
        item_ids=["a", "b", "c", "d", "e"],
    )  # a never beaten, d seen once and never winning, e never seen
    scores = make_aggregator(name).fit(data).scores_
    assert np.all(np.isfinite(scores))
    assert scores[0] == scores.max() and scores[3] < scores[2]
    assert abs(scores.mean()) < 1e-9


@pytest.mark.parametrize("name", NAMES)
def test_a_tie_is_half_a_win_for_each_side(name):
    """D with a tie equals 2 x D with one win each way and every prior doubled."""
    base = small_crowd(n=60)
    tied = with_ties(base, every=5)
    ties = np.asarray(tied.winner) < 0
    n = tied.n_annotations
    index = np.concatenate([np.arange(n), np.arange(n)])
    winner = np.asarray(tied.winner)[index].copy()
    first, second = np.flatnonzero(ties), n + np.flatnonzero(ties)
    winner[first] = np.asarray(tied.left)[first]
    winner[second] = np.asarray(tied.right)[first]
    doubled = Comparisons(
        np.asarray(tied.worker)[index],
        np.asarray(tied.left)[index],
        np.asarray(tied.right)[index],
        winner,
        item_ids=tied.item_ids,
        worker_ids=tied.worker_ids,
    )
    model = make_aggregator(name)
    params = model.get_params()
    twice = {
        k: 2 * v
        for k, v in params.items()
        if k in ("prior", "l2", "worker_l2", "prior_agree", "prior_reverse")
    }
    one = model.fit(tied).scores_
    two = make_aggregator(name, **twice).fit(doubled).scores_
    np.testing.assert_allclose(two, one, atol=1e-3)


def test_crowd_bt_finds_spammers_and_reversed_workers():
    data, types = simulate_comparisons(
        np.linspace(0, 3, 40),
        6000,
        20,
        worker_mix=(0.5, 0.0, 0.25, 0.25),
        random_state=0,
        return_info=True,
    )
    model = CrowdBT().fit(data)
    eta = pd.Series(model.reliability_).groupby(types).mean()
    assert eta["reliable"] > 0.85 and eta["reversed"] < 0.15
    assert 0.35 < eta["spammer"] < 0.65
    assert (
        spearmanr(model.scores_, data.truth)[0]
        > spearmanr(BradleyTerry().fit(data).scores_, data.truth)[0]
    )


# ------------------------------------------------------------------ contract


@pytest.mark.parametrize("name", NAMES)
def test_wrong_data_type_is_a_type_error_naming_comparisons(name):
    crowd = CrowdData.from_arrays(task=[0, 1], worker=[0, 0], label=[0, 1])
    with pytest.raises(TypeError, match="Comparisons"):
        make_aggregator(name).fit(crowd)


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("bt[prior=0]", ValueError),
        ("bt[tol=-1]", ValueError),
        ("thurstone[l2=nan]", ValueError),
        ("crowd-bt[max_iter=-1]", ValueError),
        ("noisy-bt[worker_l2=-1]", ValueError),
    ],
)
def test_out_of_bounds_parameters_are_refused(spec, error):
    with pytest.raises(error):
        make_aggregator(spec).fit(small_crowd(n=20))


@pytest.mark.parametrize("name", NAMES)
def test_one_comparison_by_one_worker(name):
    data = Comparisons.from_arrays(worker=["w"], left=["x"], right=["y"], label=["y"])
    model = make_aggregator(name).fit(data)
    assert model.scores_[1] > model.scores_[0]
    assert list(model.item_ids_) == ["x", "y"]
    for attribute in type(model).worker_attributes:
        assert getattr(model, attribute).shape == (1,)


@pytest.mark.parametrize("name", NAMES)
def test_all_ties_give_equal_scores(name):
    data = Comparisons.from_arrays(
        worker=["u", "v", "u"],
        left=["a", "b", "c"],
        right=["b", "c", "a"],
        label=["tie"] * 3,
        tie="tie",
    )
    np.testing.assert_allclose(make_aggregator(name).fit(data).scores_, 0.0, atol=1e-6)


def test_registry_and_default():
    assert DEFAULT_STRATEGY in STRATEGIES
    assert set(STRATEGIES) == {"bt", "noisy-bt", "crowd-bt", "thurstone"}
    model = make_aggregator("crowd-bt[prior=2]", prior_reverse="0.5")
    assert isinstance(model, CrowdBT) and model.prior == 2.0 and model.prior_reverse == 0.5
    assert isinstance(make_aggregator("thurstone"), Thurstone)


def test_fit_predict_on_a_crowd_kit_frame_returns_scores_by_item_id():
    frame = pd.DataFrame(
        {
            "worker": ["w1", "w2", "w1"],
            "left": ["a", "b", "a"],
            "right": ["b", "c", "c"],
            "label": ["a", "b", "a"],
        }
    )
    scores = BradleyTerry().fit_predict(frame)
    assert list(scores.index) == ["a", "b", "c"]
    assert scores.idxmax() == "a" and scores.idxmin() == "c"
    with pytest.raises(Exception, match="not fitted"):
        BradleyTerry().predict()


# ---- issue 43: the tie label


def test_a_tie_label_that_is_also_an_item_is_refused():
    """``tie="a"`` beside an item ``a`` used to turn every win of ``a`` into a tie."""
    with pytest.raises(CrowdDataError, match="the tie label 'a' is also an item"):
        Comparisons.from_arrays(["w1", "w2"], ["a", "a"], ["b", "c"], ["a", "c"], tie="a")
    with pytest.raises(CrowdDataError, match="the tie label '1' is also an item"):
        Comparisons.from_arrays(["w1"], [1], [2], [1], tie="1")  # spelled like the item 1


def test_a_text_tie_label_beside_integer_items():
    """The command line's ``--tie`` is text: ``0`` in a column of integers, or ``tie`` in a
    column that is then read as text beside integer items."""
    zero = Comparisons.from_arrays(["w1", "w2", "w1"], [1, 1, 2], [2, 2, 3], [1, 0, 2], tie="0")
    assert zero.winner.tolist() == [0, -1, 1]
    text = Comparisons.from_arrays(
        ["w1", "w2", "w1"], [1, 1, 2], [2, 2, 3], ["1", "tie", "3"], tie="tie"
    )
    assert text.winner.tolist() == [0, -1, 2]
