"""The Dask engine against the in-memory engine, on a 2-worker LocalCluster."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")

from crowdlearn import aggregation  # noqa: E402
from crowdlearn import distributed as dist  # noqa: E402
from crowdlearn.io import read_parquet  # noqa: E402
from crowdlearn.simulate import independent_confusion, write_synthetic_parquet  # noqa: E402

METHODS = ["DawidSkene", "OneCoinDawidSkene", "MajorityVote", "NaiveSoft", "GLAD"]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


@pytest.fixture(scope="module")
def crowd():
    return independent_confusion(n_worker=25, n_task=600, n_classes=3, feedback=4, seed=3)


@pytest.fixture(scope="module")
def dask_fit(client, crowd):
    """``dask_fit(name, npartitions, **params)``: ``dist.<name>(**params)`` fitted on
    ``crowd``, once per module for the same name, parameters and partitions (a Dask EM
    fit takes seconds: one round trip to the workers per step). The posteriors are
    collected to the client at once, so a later cluster restart does not lose them."""
    fits = {}

    def fit(name, npartitions, **params):
        model = getattr(dist, name)(**params)
        key = (name, npartitions, tuple(sorted(model.get_params().items())))
        if key not in fits:
            fits[key] = model.fit(crowd, client=client, npartitions=npartitions)
            fits[key].predict_proba()  # collected: kept client-side from now on
        return fits[key]

    return fit


@pytest.mark.parametrize("name", METHODS)
def test_posteriors_equal_in_memory(dask_fit, crowd, name):
    memory = getattr(aggregation, name)().fit(crowd)
    model = dask_fit(name, npartitions=3)
    np.testing.assert_array_equal(model.task_ids_, crowd.task_ids)
    np.testing.assert_allclose(model.predict_proba(), memory.probas_, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(model.predict(), memory.labels_)
    if hasattr(memory, "n_iter_"):
        assert model.n_iter_ == memory.n_iter_
        assert list(model.history_.columns) == list(memory.history_.columns)
        np.testing.assert_allclose(
            model.history_["objective"], memory.history_["objective"], rtol=1e-9
        )


@pytest.mark.parametrize("tie_break", ["random", "lowest"])
def test_wawa_equals_in_memory(client, crowd, tie_break):
    memory = aggregation.Wawa(tie_break=tie_break).fit(crowd)
    model = dist.Wawa(tie_break=tie_break).fit(crowd, client=client, npartitions=3)
    np.testing.assert_array_equal(model.task_ids_, crowd.task_ids)
    np.testing.assert_allclose(model.skills_, memory.skills_, rtol=0, atol=1e-6)
    np.testing.assert_allclose(model.predict_proba(), memory.probas_, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(model.predict(), memory.labels_)
    assert model.get_params() == memory.get_params()


def test_wawa_on_a_shuffled_dask_frame(client, crowd):
    frame = crowd.to_frame()[["task", "worker", "label"]]
    shuffled = frame.sample(frac=1.0, random_state=1)  # tasks spread over partitions
    from crowdlearn import CrowdData

    memory = aggregation.Wawa().fit(CrowdData.from_frame(shuffled))
    model = dist.Wawa().fit(dd.from_pandas(shuffled, npartitions=3), client=client)
    np.testing.assert_array_equal(model.task_ids_, memory.task_ids_)
    np.testing.assert_allclose(model.skills_, memory.skills_, rtol=0, atol=1e-6)
    np.testing.assert_allclose(model.predict_proba(), memory.probas_, rtol=0, atol=1e-6)


def test_parameters_equal_in_memory(client, crowd):
    memory = aggregation.DawidSkene(max_iter=7).fit(crowd)
    model = dist.DawidSkene(max_iter=7).fit(crowd, client=client)
    np.testing.assert_allclose(model.confusions_, memory.confusions_, atol=1e-9)
    np.testing.assert_allclose(model.priors_, memory.priors_, atol=1e-9)
    assert model.get_params() == memory.get_params()


@pytest.mark.parametrize("class_prior", ["uniform", "learn"])
def test_glad_parameters_equal_in_memory(dask_fit, crowd, class_prior):
    memory = aggregation.GLAD(class_prior=class_prior).fit(crowd)
    model = dask_fit("GLAD", npartitions=3, class_prior=class_prior)
    np.testing.assert_allclose(model.alphas_, memory.alphas_, atol=1e-9)
    np.testing.assert_allclose(model.betas_, memory.betas_, atol=1e-9)
    np.testing.assert_allclose(model.priors_, memory.priors_, atol=1e-9)
    np.testing.assert_allclose(model.predict_proba(), memory.probas_, atol=1e-6)


@pytest.mark.parametrize("npartitions", [1, 2, 5])
def test_partition_count_does_not_change_results(dask_fit, client, crowd, npartitions):
    reference = dask_fit("DawidSkene", npartitions=3).predict_proba()
    probas = dist.DawidSkene().fit(crowd, client=client, npartitions=npartitions)
    np.testing.assert_allclose(probas.predict_proba(), reference, rtol=0, atol=1e-9)


def test_dask_frame_with_string_ids_and_straddling_tasks(client, crowd):
    frame = crowd.to_frame()[["task", "worker", "label"]]
    frame["task"] = "t" + frame["task"].astype(str)
    frame["worker"] = "w" + frame["worker"].astype(str)
    shuffled = frame.sample(frac=1.0, random_state=0)  # tasks spread over partitions
    from crowdlearn import CrowdData

    memory = aggregation.DawidSkene().fit(CrowdData.from_frame(shuffled))
    model = dist.DawidSkene().fit(dd.from_pandas(shuffled, npartitions=4), client=client)
    np.testing.assert_array_equal(model.task_ids_, memory.task_ids_)
    np.testing.assert_allclose(model.predict_proba(), memory.probas_, atol=1e-6)


def test_parquet_directory_and_write_back(client, tmp_path):
    source = tmp_path / "crowd"
    write_synthetic_parquet(
        source, 20_000, n_classes=2, n_workers=40, chunk_annotations=6_000, seed=1
    )
    memory = aggregation.DawidSkene().fit(read_parquet(source))
    model = dist.DawidSkene().fit(str(source), client=client)
    assert model.crowd_.npartitions == 4
    np.testing.assert_allclose(model.predict_proba(), memory.probas_, atol=1e-6)
    out = model.write_parquet(tmp_path / "posteriors")
    written = pd.read_parquet(out).sort_values("task")
    np.testing.assert_array_equal(written["task"], memory.task_ids_)
    np.testing.assert_allclose(written[["proba_0", "proba_1"]], memory.probas_, atol=1e-6)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_restart_mid_fit_fails_cleanly_without_output(client, tmp_path):
    crowd = independent_confusion(n_worker=25, n_task=600, n_classes=3, feedback=4, seed=5)
    model = dist.DawidSkene(max_iter=100_000, tol=0.0)
    errors: list[BaseException] = []

    def fit() -> None:
        try:
            model.fit(crowd, client=client, npartitions=2)
        except BaseException as exc:  # recorded for the assertion below
            errors.append(exc)

    thread = threading.Thread(target=fit)
    thread.start()
    # restart once the fit is in its EM loop (the posteriors of a second step are being
    # computed; with tol=0 it never ends by itself), rather than after a fixed 3 s
    first = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and thread.is_alive():
        current = getattr(model, "posteriors_", None)
        if first is None:
            first = current
        elif current is not first:
            break
        time.sleep(0.05)
    assert thread.is_alive() and first is not None and current is not first
    client.restart()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], dist.DistributedFitError), errors
    with pytest.raises(dist.DistributedFitError):
        model.write_parquet(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []
    # the cluster is usable again afterwards
    again = dist.MajorityVote(tie_break="lowest").fit(crowd, client=client)
    assert again.predict().shape == (crowd.n_tasks,)


def test_killed_worker_during_write_leaves_no_directory(client, crowd, tmp_path, monkeypatch):
    model = dist.NaiveSoft().fit(crowd, client=client, npartitions=2)
    from crowdlearn.distributed import _estimators

    monkeypatch.setattr(_estimators, "_write_part", _failing_write)
    with pytest.raises(dist.DistributedFitError):
        model.write_parquet(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def _failing_write(part, state, counts, tie_break, seed, classes, path):
    pd.DataFrame({"task": part.task_ids}).to_parquet(path)  # a partial file, then death
    raise OSError("worker lost its disk")


def test_import_without_fit_needs_no_cluster():
    assert dist.STRATEGIES["ds"] is dist.DawidSkene
    assert dist.DawidSkene(max_iter=3).get_params()["max_iter"] == 3


def test_sparse_crowd_equals_in_memory(client):
    """Issue 43: lone labels (and workers sharing no task) follow the same rule on Dask
    as in memory (lone_labels="vote", the default), and the old rule ("em") too."""
    from tests.aggregation.test_ds_lone_labels import sparse_crowd

    data = sparse_crowd()
    for lone_labels in ("vote", "em"):
        memory = aggregation.DawidSkene(lone_labels=lone_labels).fit(data)
        model = dist.DawidSkene(lone_labels=lone_labels).fit(data, client=client, npartitions=4)
        np.testing.assert_allclose(model.predict_proba(), memory.probas_, rtol=0, atol=1e-6)
        np.testing.assert_allclose(model.confusions_, memory.confusions_, rtol=0, atol=1e-8)
        np.testing.assert_allclose(model.priors_, memory.priors_, rtol=0, atol=1e-8)
        assert model.n_iter_ == memory.n_iter_
