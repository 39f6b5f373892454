"""The script behind REFIT_SHARE and LARGE_BATCH (benchmarks/speed/_refit_share.py):
every row is an update (the thresholds lifted, even at a share past them), timed
against a refit in the same process."""

from __future__ import annotations

import pytest

import crowdlearn.aggregation._incremental as incremental
import crowdlearn.aggregation._incremental_em as incremental_em
from benchmarks.speed import _refit_share


def test_every_share_is_timed_as_an_update_against_a_refit(monkeypatch):
    threshold = max(incremental.REFIT_SHARE, incremental_em.LARGE_BATCH)
    # restored after the test: the script lifts both thresholds in its process
    monkeypatch.setattr(incremental, "REFIT_SHARE", incremental.REFIT_SHARE)
    monkeypatch.setattr(incremental, "VOTE_REFIT_SHARE", incremental.VOTE_REFIT_SHARE)
    monkeypatch.setattr(incremental_em, "LARGE_BATCH", incremental_em.LARGE_BATCH)
    rows = _refit_share.main(
        ["--sizes", "4000", "--shares", "0.02", "0.3", "--repeats", "1", "--workers", "60"]
    )
    names = [name for name, *_ in _refit_share.METHODS]
    assert [row["method"] for row in rows] == names * 2
    shares = sorted({round(row["share"], 2) for row in rows})
    assert len(shares) == 2 and shares[1] > threshold  # still an update
    for row in rows:
        assert row["ratio"] == pytest.approx(row["update_s"] / row["refit_s"])
        assert 0.0 <= row["labels_equal"] <= 1.0 and row["refit_path_s"] > 0
