"""``crowdlearn aggregate --engine stream``: the in-memory engine's results, out of core."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from click.testing import CliRunner

from crowdlearn.aggregation import DawidSkene
from crowdlearn.cli import cli
from crowdlearn.io import read_parquet
from crowdlearn.simulate import write_synthetic_parquet
from crowdlearn.stream import convert_parquet


def _aggregate(*args: str) -> None:
    result = CliRunner().invoke(cli, ["aggregate", *args, "--engine", "stream", "--quiet"])
    assert result.exit_code == 0, result.output


def test_stream_engine_writes_the_in_memory_posteriors(tmp_path):
    source = tmp_path / "crowd"
    write_synthetic_parquet(source, 8_000, n_classes=3, n_workers=30, chunk_annotations=3_000)
    out = tmp_path / "out"
    _aggregate(str(source), "-s", "fast-ds", "-o", str(out), "--param", "max_iter=30")
    expected = DawidSkene(hard=True, max_iter=30, progress=False).fit(read_parquet(source))
    written = pd.read_parquet(out / "posteriors")
    np.testing.assert_array_equal(written["task"], expected.task_ids_)
    np.testing.assert_array_equal(written["label"], expected.classes_[expected.labels_])
    probas = written[[f"proba_{c}" for c in expected.classes_]].to_numpy()
    np.testing.assert_allclose(probas, expected.probas_, rtol=0, atol=1e-10)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["engine"] == "stream" and summary["n_iter"] == expected.n_iter_
    assert summary["params"]["hard"] is True and summary["n_annotations"] == 8_000
    workers = json.loads((out / "workers.json").read_text())
    assert len(workers["confusions"]) == 30
    assert len(pd.read_csv(out / "history.csv")) == expected.n_iter_


def test_stream_engine_reads_a_code_store(tmp_path):
    source = tmp_path / "crowd"
    write_synthetic_parquet(source, 4_000, n_workers=20, chunk_annotations=1_000)
    convert_parquet(source, tmp_path / "store", progress=False)
    _aggregate(str(source), "-o", str(tmp_path / "a"))
    _aggregate(str(tmp_path / "store"), "-o", str(tmp_path / "b"))
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "a" / "posteriors"),
        pd.read_parquet(tmp_path / "b" / "posteriors"),
    )
