"""Benchmark ``campaign-target``: does the ``to_target`` estimate say what finishing a
campaign costs?

With a target confidence, :func:`crowdlearn.campaign.rank_tasks` (``crowdlearn next
--target-confidence``) gives each open task the labels it is expected to still need
(:func:`crowdlearn.campaign.labels_to_target`: a walk of its posterior under the
crowd's average worker). Their sum answers a campaign's question "how much budget is
left to reach the target?". This benchmark checks it on the real crowds of
campaign-replay.

On each order (campaign-replay's orders and rounds), the policy is replayed to each
of ``STARTS`` labels per task. There the estimate is taken twice: as the user gets it
(each task capped at ``TARGET_CAP`` labels) and capped at what is left of each task's
pool, which is what a replay can spend. The campaign then goes on as a user would run
it: each round refits Dawid-Skene, ranks with the target and buys one label for each
of the most valuable open tasks (5 % of the tasks a round, or every open task when
fewer), until no task is open or the open ones have no annotation left. The labels it
bought are the realized cost, to compare with the estimate capped at the pool.

Control: the same campaign without refits (each round's posteriors under the worker
confusions and class prior of the start, which is what the estimate's walk assumes).
The done-rule table runs the campaign on from ``RULE_START`` labels a task with each
of ``RULE_MIN_LABELS`` as ``--min-labels``, against uniform overlap with as many labels.
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
from benchmarks.campaign.control import posteriors_under
from benchmarks.campaign.replay import (
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
    uniform_chooser,
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
#: The done rule's table: from this many labels a task, these --min-labels.
RULE_START = 1.5
RULE_MIN_LABELS = (2, 3, 4)
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
    data: CrowdData,
    seed: int,
    revealed: np.ndarray,
    min_share: float,
    frozen: Any = None,
    min_labels: int = MIN_LABELS,
) -> dict[str, Any]:
    """Run the campaign on from ``revealed`` until no task is open or the open ones have
    nothing left. Returns the labels bought per task (``bought``), the ``rounds``, the
    tasks left open, and against the truth (where known) the accuracy of the tasks done
    then and of all the tasks.

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
            sub, model, target_confidence=TARGET, min_labels=min_labels, random_state=seed
        )
        ranked = table.loc[~table["done"], "task"].to_numpy(dtype=np.int64)
        buyable = ranked[revealed[ranked] < sizes[ranked]]
        if len(buyable) == 0:
            break
        chosen = buyable[:batch]
        revealed[chosen] += 1
        bought[chosen] += 1
        rounds += 1
    labels = np.empty(data.n_tasks, np.int64)
    labels[table["task"].to_numpy(dtype=np.int64)] = table["label"].to_numpy(dtype=np.int64)
    known = data.truth >= 0
    right = labels == data.truth
    done = np.zeros(data.n_tasks, bool)
    done[table.loc[table["done"], "task"].to_numpy(dtype=np.int64)] = True
    return {
        "bought": bought,
        "rounds": rounds,
        "left open": len(ranked),
        "accuracy of the done tasks": float(right[done & known].mean())
        if (done & known).any()
        else np.nan,
        "accuracy": float(right[known].mean()),
    }


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
        run = finish(data, seed, revealed, min_share)
        bought, frozen = run["bought"], finish(data, seed, revealed, min_share, model)["bought"]
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
                "rounds": run["rounds"],
                "left open": run["left open"],
                "accuracy of the done tasks": run["accuracy of the done tasks"],
                "rank correlation (open tasks)": _spearman(in_pool[open_now], bought[open_now]),
            }
        )
    return rows


def rule_rows(name: str, data: CrowdData, seed: int, min_share: float) -> list[dict[str, Any]]:
    """The done rule with more labels required (``RULE_MIN_LABELS``), from ``RULE_START``
    labels a task: labels spent, accuracy of the tasks done and of all the tasks, and
    uniform overlap's accuracy with as many labels (its replay on the same order)."""
    stop = math.ceil(RULE_START * data.n_tasks)
    sub, _ = replay(data, seed, policy_chooser(seed), min_share, 0.0, stop_at=stop).state
    revealed = np.bincount(sub.task, minlength=data.n_tasks)
    uniform = replay(data, seed, uniform_chooser, min_share, 0.0)
    rows = []
    for min_labels in RULE_MIN_LABELS:
        run = finish(data, seed, revealed, min_share, min_labels=min_labels)
        labels = int(revealed.sum() + run["bought"].sum())
        rows.append(
            {
                "dataset": name,
                "order": seed,
                "min labels": min_labels,
                "labels per task": labels / data.n_tasks,
                "accuracy of the done tasks": run["accuracy of the done tasks"],
                "accuracy": run["accuracy"],
                "uniform, same labels": float(np.interp(labels, uniform.labels, uniform.accuracy)),
                "left open": run["left open"],
            }
        )
    return rows


def rule_table(rows: pd.DataFrame) -> pd.DataFrame:
    mean = rows.groupby(["dataset", "min labels"], sort=False).mean(numeric_only=True)
    mean = mean.reset_index()
    gain = 100 * (mean["accuracy"] - mean["uniform, same labels"])
    return pd.DataFrame(
        {
            "dataset": mean["dataset"],
            "min labels": mean["min labels"],
            "labels per task": mean["labels per task"].map(lambda v: f"{v:.2f}"),
            "accuracy of the done tasks": mean["accuracy of the done tasks"].map(
                lambda v: f"{v:.3f}"
            ),
            "accuracy, all tasks": mean["accuracy"].map(lambda v: f"{v:.3f}"),
            "uniform, same labels": mean["uniform, same labels"].map(lambda v: f"{v:.3f}"),
            "all tasks - uniform (pts)": gain.map(lambda v: f"{v:+.2f}"),
            "left open": mean["left open"].round(1),
        }
    )


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
        jobs = [(name, data, seed) for name, data in loaded.items() for seed in range(seeds)]
        futures = [pool.submit(target_rows, *job, min_share, starts) for job in jobs]
        rules = [pool.submit(rule_rows, *job, min_share) for job in jobs]
        raw = pd.DataFrame([row for future in futures for row in future.result()])
        rule = pd.DataFrame([row for future in rules for row in future.result()])
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
        f"done rule table: from {RULE_START:g} labels a task, the campaign run on with "
        f"--min-labels {', '.join(str(m) for m in RULE_MIN_LABELS)} (the labels a task "
        "needs before it can be done); labels per "
        "task at the end, accuracy of the tasks done and of all the tasks (Dawid-Skene at "
        "the end), and uniform overlap's accuracy with as many labels (its replay on the "
        "same order, interpolated)",
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
    extra = {
        f"Done rule: more labels before a task can be done (from {RULE_START:g} labels a "
        f"task, target {TARGET})": rule_table(rule)
    }
    raw = pd.concat([raw.assign(part="estimate"), rule.assign(part="done rule")])
    return BenchResult(
        raw=raw, table=table, notes=notes, extra_tables=extra, summary=summary + "."
    )
