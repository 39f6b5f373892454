"""Benchmark of the bounding-box aggregators on simulated detection crowds.

``boxes``: every strategy of :mod:`crowdlearn.aggregation.boxes` on crowds from
:func:`crowdlearn.simulate.boxes.simulate_boxes` (images with 0-4 objects of 3
classes; workers who miss objects, add false boxes, draw loose or shifted boxes and
name the wrong class; a share of sloppy workers), scored against the simulated truth
by :mod:`crowdlearn.metrics` (VOC matching at IoU 0.5): precision, recall and F1 of the
kept boxes, mean IoU of the matched pairs, and mAP@0.5 of every candidate group ranked
by its score (all-point interpolation). A reference row, ``one worker``, scores the
boxes of the first worker who saw each task, without aggregation. crowd-kit 1.4.2 has
no bounding-box aggregation, so there is nothing of it to compare with.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register
from crowdlearn.aggregation.boxes import DEFAULT_STRATEGY, STRATEGIES, make_aggregator
from crowdlearn.data.boxes import COORDINATES, Boxes
from crowdlearn.metrics import detection_scores, mean_average_precision
from crowdlearn.simulate.boxes import simulate_boxes

NAME = "boxes"
#: Scenario name -> simulate_boxes parameters.
SCENARIOS = {
    "300 images, 5 workers each, 20% sloppy": {"n_tasks": 300, "per_task": 5, "sloppy": 0.2},
    "300 images, 3 workers each, 20% sloppy": {"n_tasks": 300, "per_task": 3, "sloppy": 0.2},
    "300 images, 5 workers each, 50% sloppy": {"n_tasks": 300, "per_task": 5, "sloppy": 0.5},
    "20 images, 3 of 6 workers each": {"n_tasks": 20, "n_workers": 6, "per_task": 3},
}
QUICK = {"30 images, 3 workers each": {"n_tasks": 30, "n_workers": 8, "per_task": 3}}
REFERENCE = "one worker"


def one_worker(data: Boxes) -> pd.DataFrame:
    """The boxes of the lowest-coded worker who saw each task, score 1."""
    first = np.full(data.n_tasks, data.n_workers)
    np.minimum.at(first, data.task, data.worker)
    rows = data.drawn & (data.worker == first[data.task])
    frame = pd.DataFrame({"task": data.task[rows], "class": data.label[rows]})
    for k, name in enumerate(COORDINATES):
        frame[name] = data.coords[rows, k]
    frame["score"] = 1.0
    return frame


def score(kept: pd.DataFrame, ranked: pd.DataFrame, truth: pd.DataFrame) -> dict[str, float]:
    found = detection_scores(kept, truth)
    p, r = found["precision"], found["recall"]
    return {
        "precision": p,
        "recall": r,
        "f1": 2 * p * r / (p + r) if p + r > 0 else 0.0,
        "mean_iou": found["mean_iou"],
        "map50": mean_average_precision(ranked, truth),
    }


@register(NAME, "Bounding-box aggregation on simulated crowds: precision, recall, IoU, mAP@0.5")
def bench_boxes(out: Path, quick: bool, seeds: int) -> BenchResult:
    scenarios = QUICK if quick else SCENARIOS
    rows = []
    for scenario, params in scenarios.items():
        for seed in range(seeds):
            data = simulate_boxes(random_state=seed, **params)
            base = {"scenario": scenario, "seed": seed, "n_boxes": data.n_boxes}
            reference = one_worker(data)
            rows.append({**base, "method": REFERENCE, **score(reference, reference, data.truth)})
            for name in STRATEGIES:
                start = time.perf_counter()
                model = make_aggregator(name).fit(data)
                seconds = time.perf_counter() - start
                found = score(model.boxes_, model.groups_, data.truth)
                rows.append({**base, "method": name, **found, "fit_seconds": seconds})
    raw = pd.DataFrame(rows)
    table = _table(raw)
    notes = [
        "data: simulate_boxes (crowdlearn.simulate.boxes) with the scenario's parameters, "
        f"the rest at their defaults, seeds 0..{seeds - 1}; mean (sd) over the seeds",
        "precision / recall / F1: the kept boxes (boxes_) matched to the true boxes of the "
        "same image and class at IoU >= 0.5 (VOC rule, each true box once); mean IoU over "
        "the matched pairs; mAP@0.5: every candidate group (groups_) ranked by its score, "
        "VOC all-point AP per class, averaged over the 3 classes",
        f"{REFERENCE}: the boxes of one worker per image (no aggregation), for reference",
        "crowd-kit 1.4.2 has no bounding-box aggregation: no comparison with it",
        f"fit seconds: wall time of fit in this process; the default strategy is "
        f"{DEFAULT_STRATEGY!r}",
    ]
    summary = _summary(raw)
    return BenchResult(raw=raw, table=table, notes=notes, summary=summary)


def _cell(values: pd.Series, digits: int = 3) -> str:
    values = values.dropna()
    if values.empty:
        return ""
    if len(values) == 1:
        return f"{values.mean():.{digits}f}"
    return f"{values.mean():.{digits}f} ({values.std(ddof=1):.{digits}f})"


def _table(raw: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (scenario, method), group in raw.groupby(["scenario", "method"], sort=False):
        row = {"scenario": scenario, "method": method}
        for column, title in (
            ("precision", "precision@0.5"),
            ("recall", "recall@0.5"),
            ("f1", "F1@0.5"),
            ("mean_iou", "mean IoU"),
            ("map50", "mAP@0.5"),
        ):
            row[title] = _cell(group[column])
        seconds = group["fit_seconds"] if "fit_seconds" in group else pd.Series(dtype=float)
        row["fit s"] = "" if seconds.dropna().empty else f"{seconds.median():.3g}"
        rows.append(row)
    return pd.DataFrame(rows)


def _summary(raw: pd.DataFrame) -> str:
    mean = raw.groupby(["scenario", "method"], sort=False)[["f1", "map50", "mean_iou"]].mean()
    parts = []
    for scenario in dict.fromkeys(raw["scenario"]):
        part = mean.loc[scenario].drop(index=REFERENCE)
        best_f1 = part["f1"].idxmax()
        best_map = part["map50"].idxmax()
        parts.append(
            f"{scenario}: best F1@0.5 {best_f1} ({part.loc[best_f1, 'f1']:.3f}), best "
            f"mAP@0.5 {best_map} ({part.loc[best_map, 'map50']:.3f}), one worker F1 "
            f"{mean.loc[(scenario, REFERENCE), 'f1']:.3f}"
        )
    return "; ".join(parts) + "."
