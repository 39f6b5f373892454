"""The aggregation-speed benchmark: child runner, verdict logic and the quick run."""

from __future__ import annotations

import sys
import time

import pandas as pd
import pytest

from benchmarks import run
from benchmarks._child import run_child, thread_environment
from benchmarks.speed.aggregation import (
    TARGETS,
    geometric_prior,
    probe_baselines,
    target_verdicts,
)


def test_child_runner_reports_a_timeout_as_a_timeout():
    start = time.perf_counter()
    report = run_child([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert report["status"] == "timeout" and "0.5 s" in report["error"]
    assert time.perf_counter() - start < 10


def test_child_runner_returns_the_last_json_line_and_records_failures():
    printed = 'print(\'noise\'); print(\'{"status": "ok", "x": 1}\')'
    assert run_child([sys.executable, "-c", printed], timeout=30) == {"status": "ok", "x": 1}
    crashed = run_child([sys.executable, "-c", "raise SystemExit('boom')"], timeout=30)
    assert crashed["status"] == "error" and "boom" in crashed["error"]
    killed = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    assert run_child([sys.executable, "-c", killed], timeout=30)["status"] == "out of memory"


def test_child_memory_cap_turns_a_huge_allocation_into_memory_error():
    grab = "import numpy as np; np.ones(10**9)"  # 8 GB under a 1 GiB cap
    report = run_child([sys.executable, "-c", grab], timeout=60, memory_cap=2**30)
    assert report["status"] == "error" and "MemoryError" in report["error"]


def test_children_run_with_one_blas_thread_unless_told_otherwise(monkeypatch):
    show = "import json, os; print(json.dumps({'status': 'ok', 'n': os.environ['OMP_NUM_THREADS']"
    show += "}))"
    assert run_child([sys.executable, "-c", show], 30, env=thread_environment())["n"] == "1"
    monkeypatch.setenv("CROWDLEARN_BENCH_THREADS", "2")
    assert thread_environment()["OPENBLAS_NUM_THREADS"] == "2"


def test_missing_baseline_interpreter_means_not_installed():
    found = probe_baselines("/nonexistent/python")
    assert set(found) == {"crowd-kit", "peerannot"}
    assert all("no interpreter" in info["error"] for info in found.values())


def test_geometric_prior_has_the_requested_imbalance():
    prior = geometric_prior(10, 10.0)
    assert prior.sum() == pytest.approx(1.0) and prior[0] / prior[-1] == pytest.approx(10.0)
    assert (prior[:-1] > prior[1:]).all()


def _row(library, method, size, status="ok", seconds=1.0, peak=100, accuracy=0.9):
    return {
        "library": library,
        "method": method,
        "n_annotations": size,
        "n_classes": 10,
        "status": status,
        "fit_seconds": seconds if status == "ok" else None,
        "peak_fit_bytes": peak * 2**20 if status == "ok" else None,
        "accuracy": accuracy if status == "ok" else None,
        "n_iter": 10,
        "timeout_s": 3600.0,
    }


def test_verdicts_are_computed_from_the_rows():
    # Fabricated rows: a test of the verdict logic, not a result.
    rows = [
        # DS at 500k: 25x faster, same accuracy -> met
        _row("crowdlearn", "DawidSkene", 500_000, seconds=2.0, accuracy=0.9),
        _row("crowd-kit", "DawidSkene", 500_000, seconds=50.0, accuracy=0.9005),
        # DS at 5M: 30x faster but accuracy 0.01 below crowd-kit's -> not met
        _row("crowdlearn", "DawidSkene", 5_000_000, seconds=10.0, peak=500, accuracy=0.90),
        _row("crowd-kit", "DawidSkene", 5_000_000, seconds=300.0, peak=400, accuracy=0.91),
        # GLAD at 500k: crowd-kit timed out after 3600 s, ours 10 s -> ratio > 360: met
        _row("crowdlearn", "GLAD", 500_000, seconds=10.0),
        _row("crowd-kit", "GLAD", 500_000, status="timeout"),
        # MV at 5M: our peak below theirs
        _row("crowdlearn", "MajorityVote", 5_000_000, peak=50),
        _row("crowd-kit", "MajorityVote", 5_000_000, peak=900),
    ]
    verdicts = {v.target: v for v in target_verdicts(pd.DataFrame(rows))}
    assert verdicts[TARGETS[0].text].met is True
    assert verdicts[
        TARGETS[1].text
    ].met is False and "0.9000 vs 0.9100 (ours - crowd-kit's: -0.0100)" in (
        verdicts[TARGETS[1].text].detail
    )
    assert verdicts[TARGETS[2].text].met is True and "> 360.0" in verdicts[TARGETS[2].text].detail
    memory = {t: v for t, v in verdicts.items() if "peak memory" in t}
    assert memory["DawidSkene: our peak memory below crowd-kit's at 5,000,000"].met is False
    assert memory["MajorityVote: our peak memory below crowd-kit's at 5,000,000"].met is True


def test_higher_accuracy_than_crowdkit_does_not_fail_the_target():
    # Fabricated rows: ours 0.002 MORE accurate (crowd-kit stopped at its iteration cap).
    rows = [
        _row("crowdlearn", "DawidSkene", 500_000, seconds=1.0, accuracy=0.652),
        _row("crowd-kit", "DawidSkene", 500_000, seconds=30.0, accuracy=0.650),
    ]
    verdicts = {v.target: v for v in target_verdicts(pd.DataFrame(rows))}
    assert verdicts[TARGETS[0].text].met is True
    assert "+0.0020" in verdicts[TARGETS[0].text].detail


def test_verdict_names_the_untimed_imports_when_the_rows_have_them():
    # Fabricated rows: the verdict is on fit_seconds; the imports are reported beside it.
    rows = [
        {**_row("crowdlearn", "DawidSkene", 500_000, seconds=1.0), "import_seconds": 0.5},
        {**_row("crowd-kit", "DawidSkene", 500_000, seconds=25.0), "import_seconds": 1.25},
    ]
    verdict = {v.target: v for v in target_verdicts(pd.DataFrame(rows))}[TARGETS[0].text]
    assert verdict.met is True and "ratio 25.0" in verdict.detail
    assert "not timed: crowd-kit 1.25 s, ours 0.50 s" in verdict.detail
    rows[1].pop("import_seconds")  # a resumed row measured before the column existed
    verdict = {v.target: v for v in target_verdicts(pd.DataFrame(rows))}[TARGETS[0].text]
    assert "crowd-kit not recorded, ours 0.50 s" in verdict.detail
    without = [_row("crowdlearn", "DawidSkene", 500_000), _row("crowd-kit", "DawidSkene", 500_000)]
    verdict = {v.target: v for v in target_verdicts(pd.DataFrame(without))}[TARGETS[0].text]
    assert "imports" not in verdict.detail


def test_speed_below_the_factor_is_not_met_and_missing_runs_are_undetermined():
    rows = [
        _row("crowdlearn", "DawidSkene", 500_000, seconds=2.0),
        _row("crowd-kit", "DawidSkene", 500_000, seconds=20.0),  # only 10x
        _row("crowdlearn", "GLAD", 500_000, seconds=2.0),
        _row("crowd-kit", "GLAD", 500_000, status="error"),
    ]
    verdicts = target_verdicts(pd.DataFrame(rows))
    by_target = {v.target: v for v in verdicts}
    assert by_target[TARGETS[0].text].word == "not met"
    assert by_target[TARGETS[1].text].word == "undetermined"  # 5M not run
    assert by_target[TARGETS[2].text].word == "undetermined"  # crowd-kit failed
    assert by_target["our peak memory below crowd-kit's at 5,000,000"].word == "undetermined"


def test_quick_run_writes_every_row_and_the_table(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_BASELINE_PYTHON", sys.executable)
    report = run("aggregation-speed", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| annotations | method | crowdlearn s | crowd-kit s | peerannot s |" in text
    assert "crowd-kit / ours" in text and "target DawidSkene >= 20x" in text
    raw = pd.read_csv(tmp_path / "aggregation-speed.csv")
    assert not (tmp_path / "aggregation-speed-partial.jsonl").exists()
    ours = raw[(raw["library"] == "crowdlearn") & (raw["n_classes"] == 10)]
    assert sorted(ours["n_annotations"].unique()) == [2_000, 10_000]
    assert set(ours["method"]) == {"MajorityVote", "DawidSkene"}
    assert (ours["status"] == "ok").all() and ours["accuracy"].between(0, 1).all()
    assert (ours["peak_fit_bytes"] >= 0).all() and (ours["fit_seconds"] > 0).all()
    assert (ours["import_seconds"] > 0).all()  # timed apart from the fit
    large = raw[raw["n_classes"] == 2]
    assert len(large) == 1 and large["status"].iloc[0] == "ok"
    assert large["source"].iloc[0] == "simulated in the child"
    theirs = raw[raw["library"] == "crowd-kit"]
    assert len(theirs) == 2 and set(theirs["method"]) == {"DawidSkene"}
    assert set(theirs["status"]) <= {"ok", "not installed"}


def _job(library, method, n, command=None):
    from benchmarks.speed.aggregation import Job

    status = "" if command else "not installed"
    return Job(library, method, n, 10, 20, 0, "parquet", command, status, "")


def test_resume_reuses_measured_rows_and_runs_the_rest(tmp_path):
    import json

    from benchmarks.speed.aggregation import earlier_rows, run_jobs

    partial = tmp_path / "partial.jsonl"
    done = {"library": "crowd-kit", "method": "DawidSkene", "n_annotations": 5000}
    done.update(n_classes=10, seed=0, status="ok", fit_seconds=1.5, timeout_s=1800.0)
    timed_out = dict(done, n_annotations=50_000, status="timeout", fit_seconds=None)
    not_run = dict(done, method="GLAD", status="not installed")
    lines = [json.dumps(r) for r in (done, timed_out, not_run)] + ['{"library": "cut']
    partial.write_text("\n".join(lines))
    reuse = earlier_rows(partial)
    assert len(reuse) == 2  # the unfinished line and the row never run are dropped
    report = "import json; print(json.dumps({'status': 'ok', 'fit_seconds': 0.25}))"
    ok = [sys.executable, "-c", report]
    jobs = [
        _job("crowd-kit", "DawidSkene", 5000, ok),
        _job("crowd-kit", "DawidSkene", 50_000, ok),
        _job("crowd-kit", "DawidSkene", 500_000, ok),
        _job("crowd-kit", "GLAD", 5000, ok),
    ]
    partial.unlink()
    rows = run_jobs(jobs, timeout=60, memory_cap=2**33, partial=partial, reuse=reuse)
    assert rows[0]["fit_seconds"] == 1.5 and rows[0]["timeout_s"] == 1800.0
    assert rows[1]["status"] == "timeout"
    # a timeout found in the earlier run still stops the larger sizes of that method
    assert rows[2]["status"] == "skipped" and "timeout at 50,000" in rows[2]["error"]
    assert rows[3]["status"] == "ok" and rows[3]["fit_seconds"] == 0.25
    assert rows[3]["timeout_s"] == 60
    assert len(partial.read_text().splitlines()) == 4
