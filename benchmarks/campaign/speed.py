"""Benchmark ``campaign-speed``: what ranking the next labels costs beside the fit.

``crowdlearn next`` (and :func:`crowdlearn.campaign.rank_tasks`) fits Dawid-Skene,
or takes a fitted model from a state file, then scores every task. The scoring has
two costs on top of the fit's: the leave-one-task-out posteriors
(:func:`~crowdlearn.campaign.values.cavity_posteriors`, one pass over the labels) and
the look-ahead over the K answers (:func:`~crowdlearn.campaign.values.next_label_value`;
the ``decision`` score handles K columns per answer where ``entropy`` handles one).

Crowds: :func:`~crowdlearn.simulate.independent_confusion` (one Dawid-Skene confusion
matrix per worker), 5 labels per task, K = 2 and K = 10, at 100k and 1M annotations
(quick: 10k). For each crowd: the seconds of one Dawid-Skene fit (its defaults), then
the seconds of ``rank_tasks`` on that fitted model for each score with and without
leave-one-task-out, and with a target confidence (which adds the ``to_target``
estimate, :func:`~crowdlearn.campaign.labels_to_target`), the best of ``REPEATS``
runs, and each as a ratio to the fit (the machine's speed cancels in the ratio).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register
from crowdlearn.aggregation import DawidSkene
from crowdlearn.campaign import rank_tasks
from crowdlearn.simulate import independent_confusion

NAME = "campaign-speed"
SIZES = (100_000, 1_000_000)
QUICK_SIZES = (10_000,)
CLASSES = (2, 10)
LABELS_PER_TASK = 5
#: Annotations per worker (the number of workers grows with the crowd).
PER_WORKER = 500
REPEATS = 3
#: (score, leave_one_out, target_confidence) of each timed ranking; the first is the
#: default, the last adds the to_target estimate (``crowdlearn next --target-confidence``).
RANKINGS = (
    ("decision", True, None),
    ("decision", False, None),
    ("entropy", True, None),
    ("entropy", False, None),
    ("decision", True, 0.95),
)


def best_of(repeats: int, call: Any) -> tuple[float, Any]:
    """The shortest of ``repeats`` timed calls, and the last call's result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
    return best, result


def crowd_rows(n_annotations: int, n_classes: int, seed: int) -> list[dict[str, Any]]:
    data = independent_confusion(
        n_worker=max(LABELS_PER_TASK, n_annotations // PER_WORKER),
        n_task=n_annotations // LABELS_PER_TASK,
        n_classes=n_classes,
        feedback=LABELS_PER_TASK,
        seed=seed,
    )
    fit_seconds, model = best_of(1, lambda: DawidSkene(progress=False).fit(data))
    rows = []
    for score, leave_one_out, target in RANKINGS:
        seconds, table = best_of(
            REPEATS,
            lambda s=score, lo=leave_one_out, t=target: rank_tasks(
                data, model, score=s, leave_one_out=lo, target_confidence=t
            ),
        )
        assert len(table) == data.n_tasks and np.isfinite(table["score"]).all()
        rows.append(
            {
                "annotations": data.n_annotations,
                "tasks": data.n_tasks,
                "workers": data.n_workers,
                "classes": n_classes,
                "score": score,
                "leave_one_out": leave_one_out,
                "target": target,
                "fit_s": fit_seconds,
                "rank_s": seconds,
                "rank / fit": seconds / fit_seconds,
            }
        )
    return rows


@register(NAME, "the cost of ranking the next labels (rank_tasks) beside a Dawid-Skene fit")
def bench_campaign_speed(out: Path, quick: bool, seeds: int) -> BenchResult:
    sizes = QUICK_SIZES if quick else SIZES
    raw = pd.DataFrame(
        [row for size in sizes for k in CLASSES for row in crowd_rows(size, k, seed=0)]
    )
    table = raw.assign(
        **{
            "leave one task out": raw["leave_one_out"].map({True: "yes", False: "no"}),
            "target confidence": raw["target"].map(lambda v: "-" if pd.isna(v) else f"{v:g}"),
            "fit (s)": raw["fit_s"].map(lambda v: f"{v:.2f}"),
            "rank_tasks (s)": raw["rank_s"].map(lambda v: f"{v:.3f}"),
            "rank_tasks / fit": raw["rank / fit"].map(lambda v: f"{v:.3f}"),
        }
    )[
        [
            "annotations",
            "tasks",
            "workers",
            "classes",
            "score",
            "leave one task out",
            "target confidence",
            "fit (s)",
            "rank_tasks (s)",
            "rank_tasks / fit",
        ]
    ]
    default = raw[(raw["score"] == RANKINGS[0][0]) & raw["leave_one_out"] & raw["target"].isna()]
    largest = default[default["annotations"] == default["annotations"].max()]
    targeted = raw[raw["target"].notna() & (raw["annotations"] == raw["annotations"].max())]
    summary = (
        "rank_tasks with its defaults (decision score, leave one task out) costs "
        + ", ".join(
            f"{row['rank / fit']:.2f} of a Dawid-Skene fit at K = {row['classes']}"
            for _, row in largest.iterrows()
        )
        + f" on {int(largest['annotations'].iloc[0]):,} annotations; with a target "
        "confidence (the to_target estimate) "
        + ", ".join(
            f"{row['rank / fit']:.2f} at K = {row['classes']}" for _, row in targeted.iterrows()
        )
        + "."
    )
    notes = [
        f"crowds: independent_confusion (seed 0), {LABELS_PER_TASK} labels per task, one "
        f"worker per {PER_WORKER} annotations; fit: DawidSkene() with its defaults, timed "
        f"once; rank_tasks(data, fitted_model, score=..., leave_one_out=...): the best of "
        f"{REPEATS} runs; one process (numpy may use its threads); target confidence: "
        "rank_tasks(..., target_confidence=0.95), which adds the to_target column",
    ]
    return BenchResult(raw=raw, table=table, notes=notes, summary=summary)
