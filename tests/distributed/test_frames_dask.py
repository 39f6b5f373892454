"""Issue 44: the Dask estimators take pandas and Dask DataFrames and answer as the
in-memory estimators do on the same frame (pandas objects keyed by the user's ids)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")

from crowdlearn import aggregation  # noqa: E402
from crowdlearn import distributed as dist  # noqa: E402
from crowdlearn.aggregation.comparisons import BradleyTerry as InMemoryBT  # noqa: E402
from crowdlearn.data import CrowdDataError  # noqa: E402
from crowdlearn.distributed.comparisons import BradleyTerry  # noqa: E402
from crowdlearn.simulate import independent_confusion, simulate_comparisons  # noqa: E402

METHODS = ["DawidSkene", "OneCoinDawidSkene", "MajorityVote", "NaiveSoft", "GLAD", "Wawa"]
ATOL = 1e-6


@pytest.fixture(scope="module")
def client():
    with distributed.Client(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as client:
        yield client


@pytest.fixture(scope="module")
def frame():
    """A (task, worker, label) frame with string ids, shuffled so that tasks straddle
    the partitions of a Dask frame made from it."""
    crowd = independent_confusion(n_worker=12, n_task=150, n_classes=3, feedback=3, seed=4)
    table = crowd.to_frame()[["task", "worker", "label"]]
    table["task"] = "t" + table["task"].astype(str).str.zfill(3)
    table["worker"] = "w" + table["worker"].astype(str)
    table["label"] = np.array(["cat", "dog", "emu"])[table["label"].to_numpy()]
    return table.sample(frac=1.0, random_state=2).reset_index(drop=True)


@pytest.fixture(scope="module")
def memory_fits(frame):
    return {name: getattr(aggregation, name)().fit(frame) for name in METHODS}


def _assert_same(actual, expected):
    """Same pandas type, index, columns and name; values equal to ``ATOL``."""
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, pd.Series):
        pd.testing.assert_series_equal(actual, expected, check_exact=False, atol=ATOL, rtol=0)
    else:
        pd.testing.assert_frame_equal(actual, expected, check_exact=False, atol=ATOL, rtol=0)


def _check_keyed_like_memory(model, memory):
    _assert_same(model.labels_, memory.labels_)
    _assert_same(model.probas_, memory.probas_)
    _assert_same(model.predict(), memory.predict())
    _assert_same(model.predict_proba(), memory.predict_proba())
    assert model.labels_.index.name == "task" and model.labels_.name == "label"
    for name in (*memory.worker_attributes, *memory.task_attributes, "priors_"):
        if hasattr(memory, name):
            _assert_same(getattr(model, name), getattr(memory, name))
    for name in ("classes_", "worker_ids_", "task_ids_"):
        np.testing.assert_array_equal(getattr(model, name), getattr(memory, name))


@pytest.mark.parametrize("name", METHODS)
def test_pandas_frame_fit_equals_in_memory_frame_fit(client, frame, memory_fits, name):
    model = getattr(dist, name)().fit(frame, client=client, npartitions=3)
    _check_keyed_like_memory(model, memory_fits[name])


@pytest.mark.parametrize("name", METHODS)
def test_dask_frame_fit_equals_in_memory_frame_fit(client, frame, memory_fits, name):
    model = getattr(dist, name)().fit(dd.from_pandas(frame, npartitions=3), client=client)
    _check_keyed_like_memory(model, memory_fits[name])


@pytest.mark.parametrize("name", ["DawidSkene", "MajorityVote"])
def test_fit_predict_and_fit_predict_proba_on_frames(client, frame, memory_fits, name):
    memory = memory_fits[name]
    estimator = getattr(dist, name)()
    _assert_same(estimator.fit_predict(frame, client=client), memory.labels_)
    lazy = dd.from_pandas(frame, npartitions=2)
    _assert_same(estimator.fit_predict_proba(lazy, client=client), memory.probas_)


def test_arrays_after_a_crowd_data_refit(client, frame):
    """A CrowdData (what the engine took before) still gives arrays, also after a fit
    on a DataFrame by the same estimator."""
    from crowdlearn import CrowdData

    crowd = CrowdData.from_frame(frame)
    model = dist.OneCoinDawidSkene()
    keyed = model.fit(frame, client=client).skills_
    assert isinstance(keyed, pd.Series)
    model.fit(crowd, client=client, npartitions=2)
    memory = aggregation.OneCoinDawidSkene().fit(crowd)
    for name in ("skills_", "confusions_", "priors_", "probas_", "labels_"):
        value = getattr(model, name)
        assert isinstance(value, np.ndarray), name
        np.testing.assert_allclose(value, getattr(memory, name), atol=ATOL)


def test_dask_frame_from_a_parquet_file(client, frame, memory_fits, tmp_path):
    path = tmp_path / "answers.parquet"
    frame.to_parquet(path, index=False)
    model = dist.DawidSkene().fit(dd.read_parquet(str(path)), client=client)
    _check_keyed_like_memory(model, memory_fits["DawidSkene"])
    # a Parquet path is what the CLI gives: arrays, as before
    by_path = dist.DawidSkene().fit(str(path), client=client)
    assert isinstance(by_path.predict_proba(), np.ndarray)
    assert isinstance(by_path.confusions_, np.ndarray)


def test_glad_betas_keyed_by_task(client, frame, memory_fits):
    model = dist.GLAD().fit(frame, client=client, npartitions=2)
    _assert_same(model.betas_, memory_fits["GLAD"].betas_)


def _one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize("lazy", [False, True])
def test_wrong_layout_refused_in_one_line(client, lazy):
    pairs = pd.DataFrame({"worker": ["w1"], "left": ["a"], "right": ["b"], "label": ["a"]})
    data = dd.from_pandas(pairs, npartitions=1) if lazy else pairs
    with pytest.raises(CrowdDataError) as error:
        dist.DawidSkene().fit(data, client=client)
    assert "task" in _one_line(error)
    classes = pd.DataFrame({"task": ["t1"], "worker": ["w1"], "label": ["a"]})
    data = dd.from_pandas(classes, npartitions=1) if lazy else classes
    with pytest.raises(CrowdDataError) as error:
        BradleyTerry().fit(data, client=client)
    assert "left" in _one_line(error)


# ------------------------------------------------------------------ comparisons


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(5)
    scores = pd.Series(rng.normal(size=25), index=[f"item-{i:02d}" for i in range(25)])
    data = simulate_comparisons(scores, n_comparisons=600, n_workers=8, random_state=5)
    return data.to_frame()


@pytest.mark.parametrize("lazy", [False, True])
def test_bradley_terry_frame_fit_equals_in_memory(client, pairs, lazy):
    memory = InMemoryBT().fit(pairs)
    data = dd.from_pandas(pairs, npartitions=3) if lazy else pairs
    model = BradleyTerry().fit(data, client=client, npartitions=2)
    _assert_same(model.scores_, memory.scores_)
    assert model.scores_.index.name == "item" and model.scores_.name == "score"
    _assert_same(BradleyTerry().fit_predict(data, client=client), memory.fit_predict(pairs))
    np.testing.assert_array_equal(model.item_ids_, memory.item_ids_)


def test_bradley_terry_steps_on_one_vector_again_and_a_refit(client, pairs):
    """Scattered with ``hash=True``, equal vectors (or partitions) got one key, and the
    release of the earlier copy cancelled the later step ("lost dependencies"): a
    refit on the same data failed now and then, a step on an equal vector nearly
    always. Each scatter now has a key of its own."""
    from crowdlearn.data import Comparisons
    from crowdlearn.distributed import comparisons as engine

    data = Comparisons.from_frame(pairs)
    parts, item_ids, _ = engine._scatter(data, client, 2)
    step = engine._DaskMMStep(client, parts, np.ones(len(item_ids)), 1.0)
    first = step.pair_sums(np.ones(len(item_ids)))
    for _ in range(20):
        np.testing.assert_array_equal(step.pair_sums(np.ones(len(item_ids))), first)
    scores = [BradleyTerry().fit(data, client=client).scores_ for _ in range(3)]
    for other in scores[1:]:
        np.testing.assert_array_equal(other, scores[0])
