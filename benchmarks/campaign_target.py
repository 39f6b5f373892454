"""Benchmark ``campaign-target``: does the ``to_target`` estimate say what finishing a
campaign costs?

With a target confidence, :func:`crowdlearn.campaign.rank_tasks` (``crowdlearn next
--target-confidence``) gives each open task the labels it is expected to still need
(:func:`crowdlearn.campaign.labels_to_target`: a walk of its posterior under the
crowd's average worker). Their sum answers a campaign's question "how much budget is
left to reach the target?". This benchmark checks it on the real crowds of
campaign-replay.

On each order (campaign-replay's orders and rounds), the policy is replayed to
``START`` labels per task. There the estimate is taken twice: as the user gets it
(each task capped at ``TARGET_CAP`` labels) and capped at what is left of each task's
pool, which is what a replay can spend. The campaign then goes on as a user would run
it: each round refits Dawid-Skene, ranks with the target and buys one label for each
of the most valuable open tasks (5 % of the tasks a round, or every open task when
fewer), until no task is open or the open ones have no annotation left. The labels it
bought are the realized cost, to compare with the estimate capped at the pool.
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register
from benchmarks.campaign_control import posteriors_under
from benchmarks.campaign_replay import (
    DATASETS,
    MIN_BATCH_SHARE,
    QUICK_DATASETS,
    QUICK_MIN_BATCH_SHARE,
    annotation_positions,
    fit_ds,
    load_crowds,
    policy_chooser,
    replay,
    revealed_data,
)
from crowdlearn.campaign import labels_to_target, next_worker_confusion, rank_tasks
from crowdlearn.campaign.ranking import TARGET_CAP, TARGET_DRAWS, cavity_of, target_draws
from crowdlearn.data import CrowdData

NAME = "campaign-target"
TARGET = 0.95
MIN_LABELS = 2
#: Labels per task at which the estimate is taken.
STARTS = (1.5, 3.0)
QUICK_STARTS = (1.5,)
#: The fewest labels bought (mean over orders) for which the table gives a ratio.
MIN_BOUGHT = 20


def estimate(sub: CrowdData, model: Any, cap: Any, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``labels_to_target`` with rank_tasks' inputs (the model's posteriors, the crowd's
    average worker, the leave-one-task-out posteriors as the belief)."""
    probas = np.asarray(model.probas_, dtype=np.float64)
    n_labels = np.bincount(sub.task, minlength=sub.n_tasks)
    n_open = int(((probas.max(axis=1) < TARGET) | (n_labels < MIN_LABELS)).sum())
    return labels_to_target(
        probas,
        next_worker_confusion(model, sub),
        TARGET,
        n_labels=n_labels,
        min_labels=MIN_LABELS,
        belief=cavity_of(model, sub),
        cap=cap,
        draws=target_draws(n_open),
        random_state=seed,
    )


def finish(
    data: CrowdData, seed: int, revealed: np.ndarray, min_share: float, frozen: Any = None
) -> tuple[np.ndarray, int, int, float]:
    """Run the campaign on from ``revealed`` until no task is open or the open ones have
    nothing left: the labels bought per task, the rounds, the tasks left open and the
    accuracy of the tasks done then (against the truth, where known).

    ``frozen``, a fitted Dawid-Skene model: the control without refits; each round's
    posteriors are one E-step under its worker confusions and class prior."""
    positions = annotation_positions(data, seed)
    sizes = np.bincount(data.task, minlength=data.n_tasks)
    revealed = revealed.copy()
    bought = np.zeros(data.n_tasks, np.int64)
    batch = max(1, math.ceil(min_share * data.n_tasks))
    rounds = 0
    while True:
        sub = revealed_data(data, positions, revealed)
        if frozen is None:
            model = fit_ds(sub, seed)
        else:
            confusions, priors = np.asarray(frozen.confusions_), np.asarray(frozen.priors_)
            model = SimpleNamespace(
                probas_=posteriors_under(sub, confusions, priors),
                confusions_=confusions,
                priors_=priors,
            )
        table = rank_tasks(
            sub, model, target_confidence=TARGET, min_labels=MIN_LABELS, random_state=seed
        )
        ranked = table.loc[~table["done"], "task"].to_numpy(dtype=np.int64)
        buyable = ranked[revealed[ranked] < sizes[ranked]]
        if len(buyable) == 0:
            done = table.loc[table["done"], ["task", "label"]].to_numpy(dtype=np.int64)
            known = data.truth[done[:, 0]] >= 0
            right = data.truth[done[known, 0]] == done[known, 1]
            return bought, rounds, len(ranked), float(right.mean()) if len(right) else np.nan
        chosen = buyable[:batch]
        revealed[chosen] += 1
        bought[chosen] += 1
        rounds += 1


def target_rows(
    name: str, data: CrowdData, seed: int, min_share: float, starts: tuple[float, ...]
) -> list[dict[str, Any]]:
    sizes = np.bincount(data.task, minlength=data.n_tasks)
    rows = []
    for start in starts:
        stop = math.ceil(start * data.n_tasks)
        sub, model = replay(data, seed, policy_chooser(seed), min_share, 0.0, stop_at=stop).state
        revealed = np.bincount(sub.task, minlength=data.n_tasks)
        as_given, reached = estimate(sub, model, TARGET_CAP, seed)
        in_pool, _ = estimate(sub, model, sizes - revealed, seed)
        bought, rounds, left_open, done_accuracy = finish(data, seed, revealed, min_share)
        frozen, *_ = finish(data, seed, revealed, min_share, frozen=model)
        open_now = as_given > 0
        rows.append(
            {
                "dataset": name,
                "order": seed,
                "start (labels per task)": start,
                "labels now": int(revealed.sum()),
                "open tasks": int(open_now.sum()),
                "estimate": float(as_given.sum()),
                "tasks unlikely within the cap": int((reached < 0.5).sum()),
                "estimate within the pool": float(in_pool.sum()),
                "bought": int(bought.sum()),
                "bought, no refits": int(frozen.sum()),
                "rounds": rounds,
                "left open": left_open,
                "accuracy of the done tasks": done_accuracy,
                "rank correlation (open tasks)": _spearman(in_pool[open_now], bought[open_now]),
            }
        )
    return rows


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    ranks = [pd.Series(v).rank().to_numpy() for v in (a, b)]
    return float(np.corrcoef(*ranks)[0, 1])


@register(NAME, "the to_target estimate against the labels a replayed campaign needed")
def bench_campaign_target(out: Path, quick: bool, seeds: int) -> BenchResult:
    names = QUICK_DATASETS if quick else DATASETS
    min_share = QUICK_MIN_BATCH_SHARE if quick else MIN_BATCH_SHARE
    starts = QUICK_STARTS if quick else STARTS
    loaded, skipped, root = load_crowds(names)
    with ProcessPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(target_rows, name, data, seed, min_share, starts)
            for name, data in loaded.items()
            for seed in range(seeds)
        ]
        raw = pd.DataFrame([row for future in futures for row in future.result()])
    notes = [
        f"target confidence {TARGET}, at least {MIN_LABELS} labels a task (rank_tasks' "
        f"done rule); orders 0-{seeds - 1}, campaign-replay's first labels and rounds "
        f"({min_share:.0%} of the tasks each) up to the start",
        f"estimate: the sum of rank_tasks' to_target column ({TARGET_DRAWS} draws a task, "
        f"each task capped at {TARGET_CAP} labels); within the pool: the same walk capped "
        "at what is left of each task's annotations; bought: the labels the campaign then "
        "bought until no task was open or the open ones had nothing left ('left open'); "
        f"ratio: estimate within the pool over bought (where {MIN_BOUGHT} labels or more "
        "were bought); rank correlation: Spearman's, over "
        "the tasks open at the start, between a task's estimate and its labels bought; "
        "no refits: the control, the same campaign with the posteriors of each round "
        "computed under the start's worker confusions and class prior (one E-step), as "
        "the estimate's walk assumes; "
        "accuracy of the done tasks: at the end, against the truth (the target asks for "
        f"{TARGET})",
        "mean over the orders",
        f"data root: {root} ($CROWDLEARN_DATA)",
        *skipped,
    ]
    if raw.empty:
        return BenchResult(raw=raw, table=pd.DataFrame(), notes=notes)
    keys = ["dataset", "start (labels per task)"]
    mean = raw.groupby(keys, sort=False).mean(numeric_only=True).reset_index()
    # a ratio of a handful of labels says nothing (a crowd nearly done, or out of labels)
    enough = mean["bought"] >= MIN_BOUGHT
    mean["ratio"] = (mean["estimate within the pool"] / mean["bought"]).where(enough)
    mean["ratio, no refits"] = (
        mean["estimate within the pool"] / mean["bought, no refits"]
    ).where(mean["bought, no refits"] >= MIN_BOUGHT)
    table = pd.DataFrame(
        {
            "dataset": mean["dataset"],
            "start (labels per task)": mean["start (labels per task)"],
            "open tasks": mean["open tasks"].map(lambda v: f"{v:.1f}"),
            "estimate": mean["estimate"].round(0).astype(int),
            "unlikely within the cap": mean["tasks unlikely within the cap"].round(1),
            "estimate within the pool": mean["estimate within the pool"].round(0).astype(int),
            "bought": mean["bought"].round(0).astype(int),
            "ratio": mean["ratio"].map(lambda v: "-" if np.isnan(v) else f"{v:.2f}"),
            "bought, no refits": mean["bought, no refits"].round(0).astype(int),
            "ratio, no refits": mean["ratio, no refits"].map(
                lambda v: "-" if np.isnan(v) else f"{v:.2f}"
            ),
            "left open": mean["left open"].round(1),
            "accuracy of the done tasks": mean["accuracy of the done tasks"].map(
                lambda v: f"{v:.3f}"
            ),
            "rank correlation": mean["rank correlation (open tasks)"].map(
                lambda v: "-" if np.isnan(v) else f"{v:.2f}"
            ),
        }
    )
    ratios = mean[enough].groupby("start (labels per task)")["ratio"]
    summary = "Estimate within the pool over the labels bought, by start: " + "; ".join(
        f"{start:g} labels a task: median {group.median():.2f} (range {group.min():.2f}-"
        f"{group.max():.2f}) over {len(group)} datasets"
        for start, group in ratios
    )
    frozen = mean["ratio, no refits"].dropna()
    summary += (
        f"; without refits (the control), median {frozen.median():.2f} (range "
        f"{frozen.min():.2f}-{frozen.max():.2f}) over {len(frozen)} datasets and starts"
    )
    accuracy = mean["accuracy of the done tasks"]
    summary += (
        f". Accuracy of the tasks called done at confidence {TARGET}: "
        f"{accuracy.min():.3f} to {accuracy.max():.3f} over the datasets and starts"
    )
    return BenchResult(raw=raw, table=table, notes=notes, summary=summary + ".")
