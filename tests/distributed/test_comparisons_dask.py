"""Bradley-Terry on the Dask engine gives the in-memory estimator's scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from crowdlearn.aggregation.comparisons import BradleyTerry
from crowdlearn.data import Comparisons
from crowdlearn.distributed.comparisons import DaskBradleyTerry
from crowdlearn.simulate import simulate_comparisons
from distributed import Client, LocalCluster


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def crowd():
    rng = np.random.default_rng(3)
    scores = pd.Series(rng.normal(size=60), index=[f"item-{i:02d}" for i in range(60)])
    return simulate_comparisons(scores, n_comparisons=1500, n_workers=20, random_state=3)


@pytest.mark.parametrize("npartitions", [1, 3])
def test_dask_scores_equal_the_in_memory_ones(client, crowd, npartitions):
    memory = BradleyTerry(tol=1e-10, max_iter=5000).fit(crowd)
    dask = DaskBradleyTerry(tol=1e-10).fit(crowd, client=client, npartitions=npartitions)
    assert dask.converged_
    assert list(dask.item_ids_) == list(crowd.item_ids)
    np.testing.assert_allclose(dask.scores_, memory.scores_, atol=1e-6)


def test_parquet_input_and_ties(client, tmp_path, crowd):
    frame = crowd.to_frame()
    frame.loc[frame.index[:40], "label"] = "tie"
    frame.to_parquet(tmp_path / "pairs.parquet")
    with_ties = Comparisons.from_frame(frame, tie="tie")
    memory = BradleyTerry(tol=1e-10, max_iter=5000).fit(with_ties)
    dask = DaskBradleyTerry(tol=1e-10, tie="tie").fit(tmp_path / "pairs.parquet", client=client)
    np.testing.assert_allclose(dask.scores_, memory.scores_, atol=1e-6)
    # the ties matter: the fit without them differs
    assert not np.allclose(memory.scores_, BradleyTerry(tol=1e-10).fit(crowd).scores_, atol=1e-3)


def test_a_label_that_is_neither_item_fails_clearly(client):
    frame = pd.DataFrame({"worker": ["w"], "left": ["a"], "right": ["b"], "label": ["c"]})
    with pytest.raises(Exception, match="neither item"):
        DaskBradleyTerry().fit(frame, client=client)


def test_the_cli_fits_bradley_terry_on_dask_like_in_memory(tmp_path, crowd):
    from click.testing import CliRunner

    from crowdlearn.cli import cli

    crowd.to_frame().to_parquet(tmp_path / "pairs.parquet")
    crowd.to_frame().to_csv(tmp_path / "pairs.csv", index=False)
    runner = CliRunner()
    dask = runner.invoke(
        cli, ["aggregate", str(tmp_path / "pairs.parquet"), "--engine", "dask", "-s", "bt",
              "--local-workers", "1", "-o", str(tmp_path / "dask")],
    )  # fmt: skip
    assert dask.exit_code == 0, dask.output
    memory = runner.invoke(
        cli, ["aggregate", str(tmp_path / "pairs.csv"), "-s", "bt", "-o", str(tmp_path / "mem")]
    )
    assert memory.exit_code == 0, memory.output
    a = pd.read_csv(tmp_path / "dask" / "scores.csv").set_index("item")["score"]
    b = pd.read_csv(tmp_path / "mem" / "scores.csv").set_index("item")["score"]
    np.testing.assert_allclose(a.loc[b.index], b, atol=1e-4)
    wrong = runner.invoke(
        cli, ["aggregate", str(tmp_path / "pairs.parquet"), "--engine", "dask", "-s", "crowd-bt",
              "-o", str(tmp_path / "no")],
    )  # fmt: skip
    assert wrong.exit_code == 2 and "bt (Bradley-Terry) only" in wrong.stderr
