"""Ratings aggregators: contract, invariances (hypothesis), robustness, degenerate
inputs, references (pandas/scipy statistics, crowd-kit's RASA for CATD)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.aggregation.ratings import (
    CATD,
    DEFAULT_STRATEGY,
    LFCN,
    STRATEGIES,
    BaseRatingAggregator,
    Median,
    OrdinalDawidSkene,
    TrimmedMean,
    WorkerBias,
    make_aggregator,
)
from crowdlearn.data import CrowdData, CrowdDataError, Ratings
from crowdlearn.simulate.ratings import simulate_ratings

NUMERIC = sorted(name for name in STRATEGIES if name != "ordinal-ds")
#: Methods whose value of a task is a weighted mean of its ratings (no prior shrinkage,
#: no bias correction).
WITHIN_RANGE = [name for name in NUMERIC if name not in ("gtm", "bias")]


def _fit(name: str, data: Ratings) -> BaseRatingAggregator:
    return make_aggregator(name).fit(data)


@st.composite
def crowds(draw: st.DrawFn) -> Ratings:
    """Small crowds, every task rated at least once, integer-valued ratings."""
    n_tasks = draw(st.integers(1, 6))
    n_workers = draw(st.integers(1, 4))
    mask = np.array(
        draw(st.lists(st.booleans(), min_size=n_tasks * n_workers, max_size=n_tasks * n_workers))
    ).reshape(n_tasks, n_workers)
    mask[np.arange(n_tasks), draw(st.integers(0, n_workers - 1))] = True
    task, worker = np.nonzero(mask)
    value = draw(st.lists(st.integers(-20, 20), min_size=len(task), max_size=len(task)))
    return Ratings(
        task,
        worker,
        np.asarray(value, dtype=float),
        n_tasks=n_tasks,
        worker_ids=np.arange(n_workers),
    )


def _moved(data: Ratings, value: np.ndarray) -> Ratings:
    return Ratings(data.task, data.worker, value, n_tasks=data.n_tasks, worker_ids=data.worker_ids)


def test_registry_and_contract():
    assert DEFAULT_STRATEGY in STRATEGIES
    model = make_aggregator("trimmed-mean[proportion=0.25]")
    assert isinstance(model, TrimmedMean) and model.proportion == 0.25
    assert make_aggregator("CATD", alpha="0.1").alpha == 0.1
    with pytest.raises(CrowdDataError, match="unknown rating strategy"):
        make_aggregator("nope")
    crowd = CrowdData.from_arrays(["a"], ["w"], ["x"])
    for name in STRATEGIES:
        with pytest.raises(TypeError, match="Ratings"):
            make_aggregator(name).fit(crowd)
    data = simulate_ratings(n_tasks=5, n_workers=3, per_task=2)
    with pytest.raises(ValueError, match="proportion"):
        TrimmedMean(proportion=0.5).fit(data)
    with pytest.raises(ValueError, match="alpha"):
        CATD(alpha=1.5).fit(data)
    with pytest.raises(ValueError, match="max_iter"):
        LFCN(max_iter=-1).fit(data)
    with pytest.raises(CrowdDataError, match="ordinal"):
        OrdinalDawidSkene().fit(data)


@pytest.mark.parametrize("name", NUMERIC)
def test_fitted_attributes(name):
    data = simulate_ratings(n_tasks=40, n_workers=8, per_task=3, random_state=2)
    model = _fit(name, data)
    assert model.predict() is model.values_
    assert model.values_.shape == (40,) and np.isfinite(model.values_).all()
    if hasattr(model, "spread_"):
        assert model.spread_.shape == (40,) and (model.spread_ >= 0).all()
    for attribute in type(model).worker_attributes:
        array = getattr(model, attribute)
        assert array.shape[0] == data.n_workers and np.isfinite(array).all()
    assert list(model.task_ids_) == list(data.task_ids)


@pytest.mark.parametrize("name", NUMERIC)
@settings(max_examples=25, deadline=None)
@given(data=crowds(), shift=st.integers(-50, 50), factor=st.sampled_from([0.25, 2.0, 10.0]))
def test_shift_and_scale_equivariance(name, data, shift, factor):
    base = _fit(name, data).values_
    tol = 1e-4 * (1 + np.abs(base).max())
    shifted = _fit(name, _moved(data, data.value + shift)).values_
    np.testing.assert_allclose(shifted, base + shift, atol=tol)
    scaled = _fit(name, _moved(data, data.value * factor)).values_
    np.testing.assert_allclose(scaled, base * factor, atol=tol * factor)


@pytest.mark.parametrize("name", [*NUMERIC, "ordinal-ds"])
@settings(max_examples=20, deadline=None)
@given(data=crowds(), seed=st.integers(0, 1000))
def test_relabelling_tasks_and_workers_permutes_results(name, data, seed):
    if name == "ordinal-ds":
        data = Ratings(
            data.task,
            data.worker,
            data.value % 5,
            n_tasks=data.n_tasks,
            worker_ids=data.worker_ids,
            levels=np.arange(5),
        )
    rng = np.random.default_rng(seed)
    task_map = rng.permutation(data.n_tasks)
    worker_map = rng.permutation(data.n_workers)
    order = rng.permutation(data.n_annotations)
    relabelled = Ratings(
        task_map[data.task][order],
        worker_map[data.worker][order],
        data.value[order],
        n_tasks=data.n_tasks,
        worker_ids=data.worker_ids,
        levels=data.levels,
    )
    base, other = _fit(name, data), _fit(name, relabelled)
    tol = 1e-4 * (1 + np.abs(data.value).max())
    np.testing.assert_allclose(other.values_[task_map], base.values_, atol=tol)
    for attribute in type(base).worker_attributes:
        np.testing.assert_allclose(
            getattr(other, attribute)[worker_map], getattr(base, attribute), rtol=1e-3, atol=tol
        )


@pytest.mark.parametrize("name", WITHIN_RANGE)
@settings(max_examples=25, deadline=None)
@given(data=crowds())
def test_values_within_the_task_ratings(name, data):
    values = _fit(name, data).values_
    frame = pd.DataFrame({"task": data.task, "value": data.value}).groupby("task")["value"]
    assert (values >= frame.min().to_numpy() - 1e-9).all()
    assert (values <= frame.max().to_numpy() + 1e-9).all()


def test_statistics_match_pandas_and_scipy():
    rng = np.random.default_rng(0)
    n_tasks = 60
    per_task = rng.integers(1, 12, n_tasks)
    task = np.repeat(np.arange(n_tasks), per_task)
    worker = np.concatenate([rng.permutation(15)[:k] for k in per_task])
    value = rng.normal(size=len(task)).round(1)
    data = Ratings(task, worker, value)
    groups = [value[task == t] for t in range(n_tasks)]
    np.testing.assert_allclose(
        make_aggregator("mean").fit(data).values_, [g.mean() for g in groups]
    )
    median = Median().fit(data)
    np.testing.assert_allclose(median.values_, [np.median(g) for g in groups])
    np.testing.assert_allclose(
        median.spread_,
        [scipy.stats.median_abs_deviation(g, scale="normal") for g in groups],
    )
    for proportion in (0.1, 0.2, 0.3, 0.45):
        ours = TrimmedMean(proportion=proportion).fit(data).values_
        np.testing.assert_allclose(ours, [scipy.stats.trim_mean(g, proportion) for g in groups])


def test_median_and_trimmed_mean_resist_one_outlier_worker():
    rng = np.random.default_rng(1)
    truth = rng.uniform(0, 10, 30)
    task = np.repeat(np.arange(30), 6)
    worker = np.tile(np.arange(6), 30)
    value = truth[task] + rng.normal(0, 0.1, len(task))
    value[worker == 5] = 1e6  # one worker rates everything absurdly high
    data = Ratings(task, worker, value)
    for model in (Median(), TrimmedMean(proportion=0.2)):
        assert np.abs(model.fit(data).values_ - truth).max() < 0.5
    assert np.abs(make_aggregator("mean").fit(data).values_ - truth).min() > 1e4


@pytest.mark.parametrize("name", NUMERIC)
def test_degenerate_inputs(name):
    one_worker = Ratings(np.arange(5), np.zeros(5, int), np.arange(5.0))
    values = _fit(name, one_worker).values_
    assert np.isfinite(values).all()
    if name != "gtm":  # GTM's Gaussian prior shrinks a lone rating towards the mean
        np.testing.assert_allclose(values, np.arange(5.0), atol=1e-9)
    equal = Ratings(np.repeat(np.arange(4), 3), np.tile(np.arange(3), 4), np.full(12, 7.0))
    np.testing.assert_allclose(_fit(name, equal).values_, 7.0)
    single = Ratings(np.arange(6), np.arange(6) % 3, np.array([1.0, 5, 2, 8, 3, 4]))
    fitted = _fit(name, single)
    assert np.isfinite(fitted.values_).all()
    if name != "gtm":  # GTM's Gaussian prior shrinks a lone rating towards the mean
        np.testing.assert_allclose(fitted.values_, single.value, atol=1e-6)
    one = Ratings([0], [0], [3.0])
    np.testing.assert_allclose(_fit(name, one).values_, [3.0])
    unrated = Ratings([0, 0], [0, 1], [1.0, 2.0], n_tasks=2)
    result = _fit(name, unrated).values_
    assert np.isfinite(result[0]) and np.isnan(result[1])


def test_gtm_shrinks_lone_ratings_towards_the_mean():
    single = Ratings(np.arange(6), np.arange(6) % 3, np.array([1.0, 5, 2, 8, 3, 4]))
    values = make_aggregator("gtm").fit(single).values_
    centre = single.value.mean()
    assert (np.abs(values - centre) <= np.abs(single.value - centre) + 1e-12).all()


def test_worker_models_recover_the_simulated_workers():
    data, info = simulate_ratings(
        n_tasks=600,
        n_workers=15,
        per_task=6,
        spammers=0.0,
        bias_std=0.5,
        noise=(0.1, 1.0),
        random_state=4,
        return_info=True,
    )
    lfc = LFCN().fit(data)
    # LFC-N has no bias term: a worker's bias is part of its error
    error = info["noise"] ** 2 + info["bias"] ** 2
    assert scipy.stats.spearmanr(lfc.variance_, error)[0] > 0.8
    bias = WorkerBias().fit(data)
    centred = info["bias"] - np.mean(info["bias"][data.worker])
    assert np.abs(bias.bias_ - centred).max() < 0.15
    assert scipy.stats.spearmanr(bias.variance_, info["noise"] ** 2)[0] > 0.8
    mae = {name: np.abs(_fit(name, data).values_ - data.truth).mean() for name in NUMERIC}
    # modelling the biases beats every method that has none, on a crowd of biased workers
    assert mae["bias"] == min(mae.values())


def test_ordinal_dawid_skene():
    data = simulate_ratings(n_tasks=300, n_workers=12, per_task=5, levels=5, random_state=5)
    model = OrdinalDawidSkene().fit(data)
    np.testing.assert_allclose(model.probas_.sum(axis=1), 1.0)
    assert model.labels_.dtype.kind == "i" and set(model.labels_) <= set(range(5))
    np.testing.assert_allclose(model.values_, model.probas_ @ np.arange(5.0))
    accuracy = (model.labels_ == data.truth).mean()
    median_accuracy = (np.round(Median().fit(data).values_) == data.truth).mean()
    assert accuracy >= median_accuracy
    assert model.converged_


def test_catd_matches_crowdkit_rasa_on_one_dimensional_embeddings():
    rasa = pytest.importorskip("crowdkit.aggregation").RASA
    data = simulate_ratings(n_tasks=80, n_workers=8, per_task=4, noise=(0.5, 1.0), random_state=3)
    frame = pd.DataFrame({"task": data.task, "worker": data.worker, "output": data.value})
    frame["embedding"] = [np.array([v]) for v in data.value]
    theirs = rasa(n_iter=500, tol=1e-14).fit(frame)
    reference = np.array([theirs.aggregated_embeddings_[t][0] for t in range(data.n_tasks)])
    # crowd-kit starts from equal weights (the mean) and clips error sums at 1e-5
    ours = CATD(
        init="mean",
        tail="upper",
        tol=1e-12,
        max_iter=500,
        floor=1e-5 / np.var(data.value),
        leave_one_out=False,
    ).fit(data)
    np.testing.assert_allclose(ours.values_, reference, atol=1e-6)
    skills = theirs.skills_.sort_index().to_numpy()
    np.testing.assert_allclose(ours.weights_, skills, rtol=1e-4)


@pytest.mark.parametrize("model", [LFCN, CATD])
def test_leave_one_out_stops_the_runaway_weight(model):
    # five workers sharing all thirty tasks: the plain updates let one worker's weight
    # take everything; measured against the others' truth, no worker can
    data = simulate_ratings(
        n_tasks=30, n_workers=5, per_task=5, spammers=0.0, noise=(0.2, 1.0), random_state=0
    )

    def top_share(fitted: BaseRatingAggregator) -> float:
        weights = getattr(fitted, "precision_", None)
        weights = fitted.weights_ if weights is None else weights
        return float(weights.max() / weights.sum())

    plain = model(leave_one_out=False).fit(data)
    robust = model(leave_one_out=True).fit(data)
    assert top_share(plain) > 0.99 and top_share(robust) < 0.5
    error = {m: np.abs(m.values_ - data.truth).mean() for m in (plain, robust)}
    assert error[robust] < error[plain]


def test_leave_one_out_errors_match_a_direct_computation():
    from crowdlearn.aggregation.ratings._base import squared_errors

    data = simulate_ratings(n_tasks=25, n_workers=6, per_task=3, random_state=7)
    weight = np.random.default_rng(0).uniform(0.5, 2.0, data.n_annotations)
    errors, comparable = squared_errors(data, np.zeros(data.n_tasks), weight, True)
    for a in range(data.n_annotations):
        others = (data.task == data.task[a]) & (np.arange(data.n_annotations) != a)
        assert comparable[a] == others.any()
        if others.any():
            truth = np.average(data.value[others], weights=weight[others])
            assert errors[a] == pytest.approx((data.value[a] - truth) ** 2)


# ---- issue 43: ratings in huge or tiny units (squares beyond float64's range)


@pytest.mark.parametrize("name", NUMERIC)
@pytest.mark.parametrize("exponent", [1000, -1000])
def test_huge_and_tiny_units_give_the_scaled_results(name, exponent):
    """Ratings near 1e308 (or 1e-300) are aggregated as the same crowd in ordinary units:
    values and spreads are those of the ordinary crowd times the power of two (every
    strategy here is scale-equivariant), finite for every task."""
    data = simulate_ratings(n_tasks=40, n_workers=6, random_state=3)
    ordinary = make_aggregator(name).fit(data)
    scaled = _moved(data, np.ldexp(data.value, exponent))
    with np.errstate(all="raise"):  # no overflow, underflow or invalid value on the way
        model = make_aggregator(name).fit(scaled)
    assert np.all(np.isfinite(model.values_))
    np.testing.assert_allclose(np.ldexp(model.values_, -exponent), ordinary.values_, rtol=1e-9)
    if getattr(ordinary, "spread_", None) is not None:
        assert np.all(np.isfinite(model.spread_))
        np.testing.assert_allclose(
            np.ldexp(model.spread_, -exponent), ordinary.spread_, rtol=1e-9, atol=0
        )
    for attribute in type(model).worker_attributes:
        power = type(model).worker_units.get(attribute, 0)  # 0: unitless (CRH's weights)
        with np.errstate(over="ignore", under="ignore"):  # a variance of 2**2000: inf
            expected = np.ldexp(getattr(ordinary, attribute), power * exponent)
        np.testing.assert_allclose(getattr(model, attribute), expected, rtol=1e-9)


def test_ratings_near_the_largest_float_are_finite():
    """The sweep's case: ratings of 1e308 (their sum and squares overflow)."""
    value = np.array([1.0, 1.5, 0.9, 1.0, 1.2, 1.1]) * 1e308
    data = Ratings.from_arrays([0, 0, 0, 1, 1, 1], [0, 1, 2] * 2, value)
    for name in NUMERIC:
        model = make_aggregator(name).fit(data)
        assert np.all(np.isfinite(model.values_)), name
        assert np.all((model.values_ >= 0.9e308) & (model.values_ <= 1.5e308)), name
