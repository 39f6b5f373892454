"""``crowdlearn aggregate --engine dask``: same posteriors as the in-memory engine."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.aggregation import DawidSkene
from crowdlearn.cli import cli
from crowdlearn.io import read_parquet
from crowdlearn.simulate import write_synthetic_parquet

pytest.importorskip("distributed")


def test_dask_engine_writes_posteriors_keyed_by_task(tmp_path):
    source = tmp_path / "crowd"
    write_synthetic_parquet(source, 8_000, n_classes=3, n_workers=30, chunk_annotations=3_000)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "aggregate",
            str(source),
            "-s",
            "ds",
            "--engine",
            "dask",
            "--local-workers",
            "2",
            "--worker-memory",
            "1GB",
            "-o",
            str(out),
            "--quiet",
            "--param",
            "max_iter=30",
        ],
    )
    assert result.exit_code == 0, result.output
    expected = DawidSkene(max_iter=30).fit(read_parquet(source))
    written = pd.read_parquet(out / "posteriors").sort_values("task")
    np.testing.assert_array_equal(written["task"], expected.task_ids_)
    probas = written[[f"proba_{c}" for c in expected.classes_]].to_numpy()
    np.testing.assert_allclose(probas, expected.probas_, atol=1e-6)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["engine"] == "dask" and summary["n_iter"] == expected.n_iter_
    assert summary["params"]["max_iter"] == 30
    workers = json.loads((out / "workers.json").read_text())
    assert len(workers["confusions"]) == expected.confusions_.shape[0]


def test_dask_engine_refuses_a_strategy_it_does_not_have(tmp_path):
    source = tmp_path / "crowd"
    write_synthetic_parquet(source, 1_000, n_workers=20)
    result = CliRunner().invoke(
        cli,
        ["aggregate", str(source), "-s", "mace", "--engine", "dask", "-o", str(tmp_path / "o")],
    )
    assert result.exit_code != 0
    assert "no Dask engine" in result.output
    assert not (tmp_path / "o").exists()


def test_dask_engine_runs_wawa_like_the_in_memory_one(tmp_path):
    from crowdlearn.aggregation import Wawa

    source = tmp_path / "crowd"
    write_synthetic_parquet(source, 2_000, n_workers=20, seed=3)
    out = tmp_path / "o"
    result = CliRunner().invoke(
        cli,
        ["aggregate", str(source), "-s", "wawa", "--engine", "dask", "--local-workers", "1",
         "-o", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    expected = Wawa().fit(read_parquet(source))
    workers = json.loads((out / "workers.json").read_text())
    skills = workers["skills"]
    assert len(skills) == len(expected.skills_)
    got = [skills[str(w)] for w in read_parquet(source).worker_ids.tolist()]
    np.testing.assert_allclose(got, expected.skills_, atol=1e-9)
