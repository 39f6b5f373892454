"""Long commands show progress bars by default on a terminal only, and never with
``--quiet`` (identify, bench, datasets fetch, report; learn is in test_learn.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from benchmarks import BENCHMARKS, BenchResult
from benchmarks._registry import Benchmark
from crowdlearn import CrowdData, _progress
from crowdlearn.cli import cli
from crowdlearn.io import write_csv
from crowdlearn.simulate import hammer_spammer


def invoke(*args: object) -> object:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def terminal(monkeypatch):
    """CliRunner's stderr is never a terminal: make the policy believe it is."""
    monkeypatch.setattr(_progress, "stderr_is_terminal", lambda: True)


@pytest.fixture
def crowd_csv(tmp_path):
    data = hammer_spammer(n_worker=8, n_task=40, n_classes=3, ratio=0.5, feedback=3, seed=0)
    named = CrowdData.from_arrays(
        [f"t{t}" for t in data.task], [f"w{w}" for w in data.worker], data.label
    )
    path = tmp_path / "crowd.csv"
    write_csv(named, path)
    return path


def test_identify_shows_the_fits_bars_on_a_terminal_unless_quiet(tmp_path, crowd_csv, terminal):
    shown = invoke("identify", crowd_csv, "-s", "spammer", "-o", tmp_path / "a")
    assert "DawidSkene" in shown.stderr
    quiet = invoke("identify", crowd_csv, "-s", "spammer", "-o", tmp_path / "b", "--quiet")
    assert "DawidSkene" not in quiet.stderr and "it/s" not in quiet.stderr
    assert (tmp_path / "b" / "workers.csv").read_text() == (
        tmp_path / "a" / "workers.csv"
    ).read_text()


def test_identify_is_silent_off_a_terminal(tmp_path, crowd_csv):
    result = invoke("identify", crowd_csv, "-s", "spammer", "-o", tmp_path / "a")
    assert "DawidSkene" not in result.stderr


@pytest.fixture
def fake_bench(monkeypatch):
    """A registered benchmark with its own bar and an aggregator fit (progress="auto")."""

    def function(out_dir: Path, quick: bool, seeds: int) -> BenchResult:
        from crowdlearn.aggregation import DawidSkene

        data = hammer_spammer(n_worker=5, n_task=20, n_classes=2, feedback=3, seed=0)
        for _ in _progress.progress_bar(range(2), progress="auto", desc="fake-bench"):
            DawidSkene().fit(data)
        table = pd.DataFrame({"x": [1.0]})
        return BenchResult(raw=table, table=table)

    monkeypatch.setitem(BENCHMARKS, "fake-progress", Benchmark("fake-progress", "test", function))


def test_bench_quiet_silences_the_bench_and_its_fits(tmp_path, fake_bench, terminal):
    shown = invoke("bench", "fake-progress", "--out", tmp_path / "a")
    assert "fake-bench" in shown.stderr and "DawidSkene" in shown.stderr
    quiet = invoke("bench", "fake-progress", "--out", tmp_path / "b", "--quiet")
    assert "fake-bench" not in quiet.stderr and "DawidSkene" not in quiet.stderr


def test_datasets_fetch_shows_a_bar_per_file_unless_quiet(tmp_path, shared_datasets, terminal):
    mirror = shared_datasets.as_uri()
    shown = invoke("datasets", "fetch", "bluebirds", "--root", tmp_path / "a", "--mirror", mirror)
    assert "labels.yaml" in shown.stderr
    quiet = invoke(
        "datasets", "fetch", "bluebirds", "--root", tmp_path / "b", "--mirror", mirror, "--quiet"
    )
    assert "labels.yaml" not in quiet.stderr
    assert sorted(p.name for p in (tmp_path / "b").rglob("*.yaml")) == ["gt.yaml", "labels.yaml"]


def test_report_is_silent_off_a_terminal_by_default(tmp_path, crowd_csv):
    result = invoke("report", crowd_csv, "-s", "mv", "-o", tmp_path / "r.html")
    assert "report:" not in result.stderr
    assert (tmp_path / "r.html").exists()
