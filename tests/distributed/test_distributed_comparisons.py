"""Bradley-Terry on Dask against the in-memory engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")

from crowdlearn.aggregation.comparisons import BradleyTerry as InMemory  # noqa: E402
from crowdlearn.data import Comparisons, CrowdDataError  # noqa: E402
from crowdlearn.distributed.comparisons import BradleyTerry  # noqa: E402
from crowdlearn.simulate import simulate_comparisons  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.Client(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as client:
        yield client


@pytest.fixture(scope="module")
def crowd():
    data = simulate_comparisons(np.linspace(0, 3, 60), 3000, 12, random_state=0)
    winner = np.asarray(data.winner).copy()
    winner[::9] = -1  # declared ties
    return Comparisons(
        data.worker,
        data.left,
        data.right,
        winner,
        item_ids=data.item_ids,
        worker_ids=data.worker_ids,
    )


@pytest.mark.parametrize("npartitions", [1, 4])
def test_scores_equal_in_memory_from_comparisons(client, crowd, npartitions):
    ours = BradleyTerry(prior=0.7).fit(crowd, client=client, npartitions=npartitions)
    reference = InMemory(prior=0.7).fit(crowd)
    np.testing.assert_allclose(ours.scores_, reference.scores_, atol=1e-9)
    assert ours.n_iter_ == reference.n_iter_ and ours.converged_
    assert list(ours.item_ids_) == list(reference.item_ids_)


def test_scores_equal_in_memory_from_a_dask_frame_with_ties(client, crowd):
    frame = crowd.to_frame()
    for column in ("left", "right", "label"):  # text ids, and "tie" for a declared tie
        frame[column] = ["tie" if v is None else f"item-{v}" for v in frame[column]]
    ours = BradleyTerry().fit(dd.from_pandas(frame, npartitions=3), client=client, tie="tie")
    in_memory = Comparisons.from_frame(frame, tie="tie")
    reference = InMemory().fit(in_memory)
    assert list(ours.item_ids_) == list(in_memory.item_ids)
    assert list(ours.worker_ids_) == list(in_memory.worker_ids)
    np.testing.assert_allclose(ours.scores_, reference.scores_, atol=1e-9)


def test_a_label_naming_neither_item_is_refused(client):
    frame = dd.from_pandas(
        pd.DataFrame(
            {"worker": ["w", "w"], "left": ["a", "b"], "right": ["b", "c"], "label": ["a", "x"]}
        ),
        npartitions=1,
    )
    with pytest.raises(CrowdDataError, match="neither"):
        BradleyTerry().fit(frame, client=client)


def test_other_inputs_are_refused(client):
    with pytest.raises(TypeError, match="Comparisons"):
        BradleyTerry().fit([1, 2, 3], client=client)
    with pytest.raises(ValueError):
        BradleyTerry(prior=-1.0).fit([1, 2, 3], client=client)
