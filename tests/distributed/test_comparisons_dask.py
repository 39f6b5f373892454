"""``crowdlearn aggregate --engine dask`` on comparisons: Bradley-Terry on a LocalCluster
gives the in-memory scores (the estimator itself: test_distributed_comparisons.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from crowdlearn.simulate import simulate_comparisons


@pytest.fixture(scope="module")
def crowd():
    rng = np.random.default_rng(3)
    scores = pd.Series(rng.normal(size=60), index=[f"item-{i:02d}" for i in range(60)])
    return simulate_comparisons(scores, n_comparisons=1500, n_workers=20, random_state=3)


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
