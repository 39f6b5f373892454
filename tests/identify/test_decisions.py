"""Keep / review / stop decisions per worker."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData
from crowdlearn.data import CrowdDataError
from crowdlearn.identify import decision_counts, worker_decisions
from crowdlearn.simulate import hammer_spammer


def test_hammers_are_kept_and_spammers_stopped():
    data = hammer_spammer(n_worker=20, n_task=400, n_classes=2, ratio=0.3, feedback=6, seed=0)
    table = worker_decisions(data)
    n_hammers = 14  # hammer_spammer: the first (1 - ratio) share are hammers
    assert (table["decision"].iloc[:n_hammers] == "keep").all()
    spammers = table["decision"].iloc[n_hammers:]
    assert (spammers != "keep").all()
    assert (spammers == "stop").sum() >= 5  # random answers near the bar may be reviewed
    counts = decision_counts(table)
    assert counts["keep"] == 14 and counts["review"] + counts["stop"] == 6


def test_the_counts_behind_each_decision_are_consistent():
    data = hammer_spammer(n_worker=12, n_task=150, n_classes=3, ratio=0.4, feedback=3, seed=1)
    table = worker_decisions(data)
    np.testing.assert_array_equal(table["n_labels"], np.bincount(data.worker))
    assert (table["expected_correct"] <= table["n_labels"] + 1e-9).all()
    assert (table["accuracy_low"] <= table["accuracy"]).all()
    assert (table["accuracy"] <= table["accuracy_high"]).all()
    bar = table["chance"] + 0.1
    stop = table["decision"] == "stop"
    keep = table["decision"] == "keep"
    assert (table.loc[stop, "accuracy_high"] < bar[stop]).all()
    assert (table.loc[keep, "accuracy_low"] >= bar[keep]).all()
    review = ~stop & ~keep
    assert (table.loc[review, "accuracy_low"] < bar[review]).all()
    assert (table.loc[review, "accuracy_high"] >= bar[review]).all()


def test_a_worker_with_few_labels_is_reviewed_not_judged():
    rows = [(f"t{i}", w, "ab"[i % 2]) for i in range(60) for w in ("w1", "w2", "w3")]
    rows += [("t0", "newcomer", "b"), ("t1", "newcomer", "b")]
    data = CrowdData.from_frame(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    table = worker_decisions(data)
    assert table.loc["newcomer", "decision"] == "review"
    assert (table.loc[["w1", "w2", "w3"], "decision"] == "keep").all()


def test_a_wider_margin_or_level_never_keeps_more():
    data = hammer_spammer(n_worker=15, n_task=100, n_classes=2, ratio=0.5, feedback=3, seed=2)
    base = decision_counts(worker_decisions(data))
    stricter = decision_counts(worker_decisions(data, margin=0.3, level=0.99))
    assert stricter["keep"] <= base["keep"]


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 1000))
def test_renaming_workers_does_not_change_decisions(seed):
    data = hammer_spammer(n_worker=8, n_task=60, n_classes=2, ratio=0.3, feedback=3, seed=seed)
    renamed = CrowdData.from_arrays(data.task, [f"x{99 - w:03d}" for w in data.worker], data.label)
    a = worker_decisions(data)
    b = worker_decisions(renamed)
    b.index = [99 - int(w[1:]) for w in b.index]
    pd.testing.assert_frame_equal(a, b.loc[a.index], check_names=False, atol=1e-8)


def test_bad_parameters_and_anonymous_data_are_refused():
    data = hammer_spammer(n_worker=5, n_task=20, n_classes=2, feedback=2, seed=0)
    with pytest.raises(CrowdDataError, match="margin"):
        worker_decisions(data, margin=1.5)
    with pytest.raises(CrowdDataError, match="level"):
        worker_decisions(data, level=1.0)
    with pytest.raises(CrowdDataError, match="anonymous"):
        worker_decisions(data.anonymous())
    with pytest.raises(CrowdDataError, match="shape"):
        worker_decisions(data, probas=np.ones((3, 2)))
