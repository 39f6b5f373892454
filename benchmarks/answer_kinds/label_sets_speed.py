"""Benchmark ``label-sets-speed``: label-set aggregation at 1M annotations, ours
against crowd-kit 1.4.2's BinaryRelevance.

One simulated crowd (:func:`crowdlearn.simulate.simulate_label_sets`: 200,000 tasks x 5
labels from 2,000 workers, 8 classes; 1,000,000 label-set annotations) is written once
to an ``.npz`` file; each fit then runs in a fresh child process
(:mod:`benchmarks.answer_kinds._measure_label_sets`) that loads the file, resets its peak-memory
counter and times the fit alone, under the time limit and memory cap of
:mod:`benchmarks._child` and with one BLAS thread (``$CROWDLEARN_BENCH_THREADS``).
Compared: our default strategy and ``binary-ds`` against ``BinaryRelevance(DawidSkene())``
(crowd-kit's defaults: 100 iterations at most, tol 1e-5), and ``binary-mv`` against
``BinaryRelevance(MajorityVote())``. The ratio is crowd-kit's time over ours.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._child import (
    checkout_environment,
    memory_cap_bytes,
    run_child,
    thread_environment,
    timeout_seconds,
)
from benchmarks._registry import BenchResult, register
from crowdlearn.aggregation.label_sets import DEFAULT_STRATEGY
from crowdlearn.simulate.label_sets import simulate_label_sets

NAME = "label-sets-speed"
CROWD = {"n_tasks": 200_000, "n_workers": 2_000, "n_classes": 8, "labels_per_task": 5}
QUICK_CROWD = {"n_tasks": 2_000, "n_workers": 40, "n_classes": 4, "labels_per_task": 5}
#: (ours, crowd-kit's base aggregator): each pair is one row of the table.
PAIRS = (
    (DEFAULT_STRATEGY, "DawidSkene"),
    ("binary-ds", "DawidSkene"),
    ("binary-mv", "MajorityVote"),
)

#: --quick measures one pair (each child process costs ~2 s of imports).
QUICK_PAIRS = (("binary-ds", "DawidSkene"),)


def write_crowd(path: Path, crowd: dict, seed: int) -> int:
    data = simulate_label_sets(**crowd, random_state=seed)
    np.savez(path, task=data.task, worker=data.worker, answers=data.answers, truth=data.truth)
    return data.n_annotations


def measure(library: str, method: str, path: Path) -> dict:
    command = [
        sys.executable,
        "-m",
        "benchmarks.answer_kinds._measure_label_sets",
        "--library",
        library,
        "--method",
        method,
        "--npz",
        str(path),
    ]
    env = checkout_environment(thread_environment())
    return run_child(command, timeout_seconds(), memory_cap_bytes(), env)


@register(NAME, "label-set aggregation at 1M annotations: ours against crowd-kit, fresh processes")
def bench_label_sets_speed(out: Path, quick: bool, seeds: int) -> BenchResult:
    crowd = QUICK_CROWD if quick else CROWD
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for seed in range(seeds):
            path = Path(scratch) / f"crowd-{seed}.npz"
            n = write_crowd(path, crowd, seed)
            pairs = QUICK_PAIRS if quick else PAIRS
            methods = {("crowdlearn", ours) for ours, _ in pairs}
            methods |= {("crowd-kit", theirs) for _, theirs in pairs}
            for library, method in sorted(methods):
                report = measure(library, method, path)
                rows.append(
                    {
                        "library": library,
                        "method": method,
                        "seed": seed,
                        "n_annotations": n,
                        **report,
                    }
                )
    raw = pd.DataFrame(rows)
    return BenchResult(
        raw=raw,
        table=speed_table(raw, QUICK_PAIRS if quick else PAIRS),
        notes=[
            f"crowd: simulate_label_sets({', '.join(f'{k}={v}' for k, v in crowd.items())}), "
            f"seeds 0..{seeds - 1}; times and peaks are medians over seeds",
            "peak memory: the child's peak RSS during the fit minus its RSS just before it",
            "hamming: share of wrong task x class cells against the simulated truth",
            "ratio: crowd-kit's fit time / ours on the same file",
        ],
    )


def speed_table(raw: pd.DataFrame, pairs: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    ok = raw[raw["status"] == "ok"] if "status" in raw else raw.iloc[:0]
    medians = ok.groupby(["library", "method"])[
        ["fit_seconds", "peak_fit_bytes", "hamming"]
    ].median()
    rows = []
    for ours, theirs in PAIRS:
        if ("crowdlearn", ours) not in medians.index and (
            "crowd-kit",
            theirs,
        ) not in medians.index:
            continue
        mine = medians.loc[("crowdlearn", ours)] if ("crowdlearn", ours) in medians.index else None
        other = (
            medians.loc[("crowd-kit", theirs)] if ("crowd-kit", theirs) in medians.index else None
        )
        row = {"ours": ours, "crowd-kit": f"BinaryRelevance({theirs})"}
        for label, values in (("ours", mine), ("crowd-kit", other)):
            row[f"{label} s"] = float("nan") if values is None else values["fit_seconds"]
            row[f"{label} peak MiB"] = (
                float("nan") if values is None else values["peak_fit_bytes"] / 2**20
            )
            row[f"{label} Hamming"] = float("nan") if values is None else values["hamming"]
        row["ratio"] = row["crowd-kit s"] / row["ours s"]
        rows.append(row)
    return pd.DataFrame(rows).astype(object).fillna("n/a")
