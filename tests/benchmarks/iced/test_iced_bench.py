"""The ``iced`` benchmark: its quick run, the imbalanced data sets and the crowd recipe."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

import benchmarks.iced.protocol as iced_protocol
from benchmarks import run
from benchmarks.iced.benchmark import RAW_COLUMNS
from benchmarks.iced.protocol import (
    DATASETS,
    EQUAL_STEPS_EXPERIMENT,
    FAIL_CROWD,
    GRID,
    MAJORITY_ACCURACY,
    METHODS,
    MINORITY_ACCURACY,
    N_WORKERS,
    QUICK_METHODS,
    QUICK_SEEDS,
    TUNED,
    WARMUPS,
    balanced_accuracy,
    digits_syn,
    f1_minority,
    labelme_binary,
    mechanism_configs,
    method_params,
    search_candidates,
    simulate_crowd,
    usps_syn,
    usps_syn_u,
    worker_reliability,
)
from crowdlearn.aggregation import MajorityVote
from crowdlearn.learning.iced import inference_scores, paper_dawid_skene


def _rows_of(table: np.ndarray) -> set[bytes]:
    return {row.tobytes() for row in np.ascontiguousarray(table)}


def test_quick_run_writes_the_table_rows_and_figures(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    start = time.perf_counter()
    report = run("iced", tmp_path, quick=True, seeds=1)
    assert time.perf_counter() - start < 90  # the brief: about a minute
    text = report.read_text()
    assert text.startswith("## iced (quick)")
    # the section opens with the verdict table
    first_table = text.split("\n\n")[2]
    assert first_table.startswith("| paper claim | paper | ours | from | verdict |")
    assert "| Fig. 2: D&S-orig below 60 %, much worse than MV |" in first_table
    assert "claim does not follow from eq. 2.5" in first_table
    assert "| experiment | dataset | method | runs | test accuracy | test F1 (minority) |" in text
    for name in DATASETS:
        shown = f"{name} (extension, not in the paper)" if name == "LabelMe-bin" else name
        assert f"| Table 2 | {shown} | ICED | {QUICK_SEEDS} |" in text
        assert f"| Fig. 2 | {shown} | DS-orig | {QUICK_SEEDS} |" in text
        assert f"| Table 3 | {shown} | ICED-w | {QUICK_SEEDS} |" in text
        assert f"| {EQUAL_STEPS_EXPERIMENT} | {shown} | ICED-w | {QUICK_SEEDS} |" in text
    assert "| Fig. 2 (D&S fails) | USPS-Syn-U | control: random crowd labels | 1 |" in text
    assert "reference only: the paper's USPS-Syn row" in text
    assert "wall time of the whole benchmark" in text
    for key in ("accuracy", "inference"):
        assert (tmp_path / f"iced-{key}.png").stat().st_size > 0
    raw = pd.read_csv(tmp_path / "iced.csv")
    assert list(raw.columns) == RAW_COLUMNS
    per_dataset = QUICK_SEEDS * (len(QUICK_METHODS) + 2 * len(WARMUPS))
    mechanism = raw["experiment"] == "Mechanism"
    assert (~mechanism).sum() == len(DATASETS) * per_dataset
    assert mechanism.sum() == len(mechanism_configs(quick=True))  # one seed each
    # equal steps: every strategy makes the same number of Adam steps
    equal = raw[raw["experiment"] == EQUAL_STEPS_EXPERIMENT]
    assert equal.groupby("dataset")["adam_steps"].nunique().eq(1).all()
    assert (raw["status"] == "ok").all(), raw.loc[raw["status"] != "ok", "error"]
    assert raw["accuracy"].between(0, 1).all() and raw["f1_minority"].between(0, 1).all()
    iced = raw[(raw["method"] == "ICED") & ~mechanism]
    for column in ("ds_before", "ds_first", "ds_final", "mv_accuracy"):
        assert iced[column].between(0, 1).all()
    assert (iced["n_synthetic"] > 0).all()


def test_usps_syn_has_the_papers_sizes_and_a_weaker_crowd_on_the_minority(
    shared_datasets, monkeypatch
):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    task = usps_syn(seed=3)
    train = task.train
    assert np.bincount(train.truth).tolist() == [668, 66]  # Table 1: 734 = 668 + 66
    assert np.bincount(task.test[1]).tolist() == [166, 166]  # balanced, 332
    assert np.bincount(task.valid[1]).tolist() == [60, 60]
    assert train.features.shape == (734, 256) and task.test[0].shape == (332, 256)
    assert train.features.min() >= 0 and train.features.max() <= 1
    # 9 workers, each labels every training image once
    assert train.n_workers == N_WORKERS and train.n_annotations == 734 * N_WORKERS
    assert (np.bincount(train.worker) == 734).all()
    # training and validation images are different images of USPS's training group
    assert not _rows_of(train.features) & _rows_of(task.valid[0])
    # the recipe, measured on the simulated labels: less reliable on the minority class
    majority, minority = worker_reliability(train)
    assert MAJORITY_ACCURACY[0] - 0.03 < majority < MAJORITY_ACCURACY[1] + 0.03
    assert MINORITY_ACCURACY[0] - 0.06 < minority < MINORITY_ACCURACY[1] + 0.06
    assert majority - minority > 0.1
    truth = train.truth[train.task]
    right = train.label == truth
    per_worker = [
        [right[(train.worker == w) & (truth == c)].mean() for c in (0, 1)]
        for w in range(N_WORKERS)
    ]
    per_worker = np.array(per_worker)
    assert (per_worker[:, 0] > MAJORITY_ACCURACY[0] - 0.06).all()
    assert (per_worker[:, 1] < MINORITY_ACCURACY[1] + 0.15).all()
    assert per_worker[:, 0].mean() > per_worker[:, 1].mean() + 0.1
    # the same seed gives the same data, another seed other images
    again = usps_syn(seed=3)
    np.testing.assert_array_equal(again.train.features, train.features)
    np.testing.assert_array_equal(again.train.label, train.label)
    assert not np.array_equal(usps_syn(seed=4).train.features, train.features)


def test_simulated_crowd_matches_its_recipe():
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(20_000, dtype=int), np.ones(2_000, dtype=int)]
    task, worker, label, accuracy = simulate_crowd(y, rng)
    assert accuracy.shape == (N_WORKERS, 2)
    assert np.all((accuracy[:, 0] >= 0.70) & (accuracy[:, 0] <= 0.90))
    assert np.all((accuracy[:, 1] >= 0.45) & (accuracy[:, 1] <= 0.70))
    right = label == y[task]
    for w in range(N_WORKERS):
        for c, size in ((0, 20_000), (1, 2_000)):
            measured = right[(worker == w) & (y[task] == c)].mean()
            assert abs(measured - accuracy[w, c]) < 4 / np.sqrt(size)
    assert set(np.unique(label)) == {0, 1}


def test_digits_syn_parts_are_disjoint_and_sized():
    task = digits_syn(seed=0)
    assert np.bincount(task.train.truth).tolist() == [100, 10]
    assert np.bincount(task.valid[1]).tolist() == [25, 25]
    assert np.bincount(task.test[1]).tolist() == [50, 50]
    train, valid, test = (
        _rows_of(task.train.features),
        *map(_rows_of, (task.valid[0], task.test[0])),
    )
    assert not train & test and not valid & test and not train & valid


def test_labelme_binary_uses_real_labels_at_ten_to_one(shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    task = labelme_binary(seed=0)
    counts = np.bincount(task.train.truth)
    assert counts[1] == round(counts[0] / 10)
    assert set(np.unique(task.train.label)) == {0, 1}
    assert (task.train.feedback_effort > 0).all()
    test_counts = np.bincount(task.test[1])
    assert test_counts[0] == test_counts[1] > 100
    majority, minority = worker_reliability(task.train)
    assert majority > minority


def test_metrics_of_the_benchmark():
    y = np.array([0, 0, 0, 1, 1])
    assert f1_minority(y, np.array([0, 0, 1, 1, 0])) == pytest.approx(0.5)
    assert f1_minority(y, np.zeros(5, dtype=int)) == 0.0
    assert balanced_accuracy(y, np.array([0, 0, 0, 1, 0])) == pytest.approx(0.75)


def test_every_method_has_tuned_parameters_from_the_searched_candidates():
    for dataset in DATASETS:
        candidates = search_candidates(dataset)
        assert all(options[: len(GRID[m])] == GRID[m] for m, options in candidates.items())
        for method in (*METHODS, *WARMUPS):
            params = method_params(dataset, method, quick=False)
            key = "ICED" if method in WARMUPS else method
            assert params in candidates[key], (dataset, method)
    assert set(TUNED) == set(DATASETS)


def test_a_failing_method_is_reported_not_raised():
    task = digits_syn(seed=0)
    outcome = iced_protocol.evaluate("ICED", task, {"warmup_epochs": 1, "k": 0}, seed=0)
    assert outcome["status"] == "error" and "k must be" in outcome["error"]


def test_usps_syn_u_is_a_crowd_where_the_papers_dawid_skene_fails(shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    task = usps_syn_u(seed=0)
    train = task.train
    assert train.n_workers == FAIL_CROWD["n_workers"] == 7
    assert train.n_annotations == 734 * 7
    # the same images as USPS-Syn for the seed, another crowd
    np.testing.assert_array_equal(train.features, usps_syn(seed=0).train.features)
    # workers as reliable on both classes (recipe U(0.6, 0.7))
    majority, minority = worker_reliability(train)
    assert 0.57 < majority < 0.73 and 0.55 < minority < 0.75
    tasks = np.arange(train.n_tasks)
    ds, _ = inference_scores(train.truth, paper_dawid_skene().fit(train).predict(), tasks)
    mv, _ = inference_scores(train.truth, MajorityVote().fit(train).predict(), tasks)
    assert ds < 0.6 < mv - 0.1  # Fig. 2's setting: D&S below 60 %, much worse than MV


def test_mechanism_configurations_change_one_thing_from_the_base():
    configs = mechanism_configs(quick=False)
    tuned = method_params("USPS-Syn", "ICED", quick=False)
    for (dataset, _), config in configs.items():
        assert dataset in ("USPS-Syn", "USPS-Syn-U")
        assert {k: config[k] for k in tuned} == tuned  # USPS-Syn's tuned schedule
    # the D&S-fails crowd's base is the paper's D&S; the three Fig. 2 fits are there
    fig2 = [c for (d, _), c in configs.items() if d == "USPS-Syn-U" and c["aggregator"] == "paper"]
    assert {c.get("synthetic_labels", "knn") for c in fig2} == {"knn", "duplicate", "random"}
